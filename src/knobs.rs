//! TEMPORARY (issue 15 A/B experiments, removed before merging): engine variants chosen
//! by environment variables so one binary can be measured both ways, interleaved.

use std::sync::OnceLock;

fn get(cell: &'static OnceLock<bool>, name: &str, default: bool) -> bool {
    *cell.get_or_init(|| match std::env::var(name) {
        Ok(v) => v == "1",
        Err(_) => default,
    })
}

macro_rules! knob {
    ($f:ident, $name:literal, $default:expr) => {
        pub fn $f() -> bool {
            static C: OnceLock<bool> = OnceLock::new();
            get(&C, $name, $default)
        }
    };
}

knob!(inode_order, "MF_INODE_ORDER", true);
knob!(chunk_par, "MF_CHUNK_PAR", true);
knob!(cfr_small, "MF_CFR_SMALL", false);
knob!(empty_mknod, "MF_EMPTY_MKNOD", true);
