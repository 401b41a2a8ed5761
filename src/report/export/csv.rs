//! CSV: one row per measurement with its raw figures (spreadsheets, pandas, R).

use super::Exporter;
use crate::results::ResultSet;

pub struct CsvExporter;

const HEADER: [&str; 25] = [
    "experiment",
    "target",
    "label",
    "fs_type",
    "block_size",
    "op",
    "tree",
    "tree_files",
    "tree_bytes",
    "tree_dirs",
    "run",
    "order",
    "elapsed_s",
    "files",
    "bytes",
    "dirs",
    "threads",
    "cpu_user_s",
    "cpu_sys_s",
    "errors",
    "interrupted",
    "latency_p50_us",
    "latency_p99_us",
    "space_used_bytes",
    "host",
];

#[test]
fn the_header_is_the_mark_outputs_look_for() {
    assert!(HEADER.join(",").starts_with(crate::fs::output::CSV_HEADER_START));
}

impl Exporter for CsvExporter {
    fn render(&self, rs: &ResultSet) -> Result<Vec<u8>, String> {
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(HEADER).map_err(|e| e.to_string())?;
        for m in &rs.measurements {
            let t = rs.targets.iter().find(|t| t.id == m.target);
            let r = &m.result;
            let opt = |v: Option<i64>| v.map(|x| x.to_string()).unwrap_or_default();
            w.write_record([
                m.experiment.clone(),
                m.target.clone(),
                crate::report::target_name(rs, &m.target),
                t.map(|t| t.managed.as_ref().map_or(t.fs_type.clone(), |d| d.fs_type.clone())).unwrap_or_default(),
                t.map(|t| t.block_size.to_string()).unwrap_or_default(),
                m.op.clone(),
                m.tree_key.clone(),
                m.tree_files.to_string(),
                m.tree_bytes.to_string(),
                m.tree_dirs.to_string(),
                m.run.to_string(),
                m.order.to_string(),
                r.elapsed_s.to_string(),
                r.files.to_string(),
                r.bytes.to_string(),
                r.dirs.to_string(),
                r.threads.to_string(),
                r.cpu_user_s.to_string(),
                r.cpu_sys_s.to_string(),
                r.errors.to_string(),
                r.interrupted.to_string(),
                r.latency_us.p50.to_string(),
                r.latency_us.p99.to_string(),
                opt(r.space_used_bytes),
                rs.provenance.host.clone(),
            ])
            .map_err(|e| e.to_string())?;
        }
        w.into_inner().map_err(|e| e.to_string())
    }
}
