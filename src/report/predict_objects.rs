//! `predict --fs s3…` (`azblob…`, `--on s3://…`, `azblob://…`): the object-store engines' commands for the tree (upload, scan,
//! download, rm; `results::predict_objects`) as a table — time with its interval, the
//! requests by kind, their price — and the check lines that run them on the same kind of
//! target as printed: the store brought up by `manyfiles mount` in a fresh directory,
//! the engines reaching it with `--s3-via`, everything taken down after.

use super::commands::{CheckOn, PredictConfig, fresh_name, shell_word};
use crate::error::Result;
use crate::results::predict::Shape;
use crate::results::predict_objects::{self, ObjectPrediction, ObjectTree};
use crate::results::prices::{PriceTable, fmt_amount};
use crate::tree::inventory::Inventory;
use crate::units::fmt_secs;

/// The key prefix the check writes under, in the mount's bucket.
const CHECK_PREFIX: &str = "check";

/// The tree as the upload would send it: walked when its path is known (exact), else
/// from the inventory.
pub fn object_tree(cfg: &PredictConfig, inv: &Inventory) -> Result<ObjectTree> {
    match &cfg.tree_path {
        Some(p) => ObjectTree::walk(p),
        None => Ok(ObjectTree::from_inventory(inv)),
    }
}

/// The section `predict` prints for an object store (`--fs s3…`/`azblob…` or a URL), and
/// the same as JSON (`predict --json`'s `objects`).
pub fn section(cfg: &PredictConfig, inv: &Inventory, on: &CheckOn) -> Result<(String, serde_json::Value)> {
    let spec = match on {
        CheckOn::ObjectSpec(s) | CheckOn::ObjectUrl(s, _) => s.as_str(),
        CheckOn::Dir(_) | CheckOn::Spec(_) => unreachable!("the object section is for object stores"),
    };
    let tree = object_tree(cfg, inv)?;
    let provider = on.object_provider().unwrap_or_default();
    let prices = cfg.prices.clone().unwrap_or_else(|| PriceTable::list_prices(provider));
    let (shape, setup) = (Shape::from(inv), &cfg.object_setup_s);
    let rows = predict_objects::predict(&cfg.model, (&tree, &shape, provider), setup, &prices, cfg.runs_ahead);
    let in_flight = cfg.check_threads.unwrap_or(crate::engine::object::DEFAULT_IN_FLIGHT);
    let mut text = format!(
        "the engines on {spec} with up to {in_flight} requests in flight: {} objects ({}); requests {} (as the engines \
         send them), priced at {}; time from the calibration's {}\n",
        tree.objects,
        crate::units::fmt_size(tree.bytes as f64),
        match &tree.estimate {
            None => "exact".to_string(),
            Some(why) => format!("estimated ({why})"),
        },
        prices.label(),
        predict_objects::CALIBRATION_OPS.join(", "),
    );
    text.push_str(&table(&rows, provider));
    text.push_str(
        "  (time: the client's setup as timed here and the requests as calibrated — the sum of the parts' \
         predictions and of their intervals' bounds; not in it: the single LISTs around them, the local walk, reads \
         and writes)\n",
    );
    let storage = prices.storage_month(tree.bytes);
    text.push_str(&format!(
        "  storing it: {} ({:.3} GB) at {} a GB-month: {} a month (storage alone; the requests above are once)\n",
        crate::units::fmt_size(tree.bytes as f64),
        tree.bytes as f64 / 1e9,
        fmt_amount(prices.storage_gb_month, &prices.currency),
        fmt_amount(storage.amount, &storage.currency)
    ));
    text.push_str(&check_lines(cfg, inv, &tree, on));
    let json = serde_json::json!({ "target": spec, "in_flight": in_flight, "tree": tree, "prices": prices,
        "commands": rows, "storage_per_month": storage });
    Ok((text, json))
}

/// One row per command: time [interval], requests by kind (in `provider`'s words), price.
fn table(rows: &[ObjectPrediction], provider: crate::storage::object_stack::Provider) -> String {
    let mut out = String::new();
    let mut notes = String::new();
    for r in rows {
        let time = match (&r.time, &r.no_time) {
            (Some(p), _) => match p.interval95 {
                Some([lo, hi]) => format!("{} [{} – {}]", fmt_secs(p.seconds), fmt_secs(lo), fmt_secs(hi)),
                None => format!("{} (no interval: too few trees)", fmt_secs(p.seconds)),
            },
            (None, Some(why)) => {
                notes.push_str(&format!("  no time for {}: {why}\n", r.command.name()));
                "no time (see below)".into()
            }
            (None, None) => "no time".into(),
        };
        out.push_str(&format!(
            "  {:<9} {:<28} requests {}  price {}\n",
            r.command.name(),
            time,
            crate::engine::object::fmt_requests_of(&r.requests, provider),
            fmt_amount(r.cost.amount, &r.cost.currency)
        ));
    }
    out + &notes
}

/// The check, one line each, to paste into a shell as printed: upload the tree under a
/// fresh prefix, scan it, download it into a fresh directory, rm the prefix, remove the
/// download. On `--fs SPEC` around them: mount the same spec in a fresh directory (the
/// engines reach it with `--s3-via`), umount it after.
fn check_lines(cfg: &PredictConfig, inv: &Inventory, tree: &ObjectTree, on: &CheckOn) -> String {
    let absolute = |p: &std::path::Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let path = cfg.tree_path.as_deref().map_or("PATH".to_string(), |p| shell_word(&absolute(p).to_string_lossy()));
    let tmp = std::env::temp_dir();
    let down = fresh_name(&tmp, "manyfiles-check-down");
    let d = shell_word(&down.to_string_lossy());
    let flight = cfg.check_threads.map(|n| format!(" --in-flight {n}")).unwrap_or_default();
    let (mut before, url, via, mut after) = match on {
        CheckOn::ObjectUrl(url, via) => {
            let name = format!("manyfiles-check-{}", std::process::id());
            let via = via.as_ref().map(|v| format!(" --s3-via {}", shell_word(&absolute(v).to_string_lossy())));
            (Vec::new(), shell_word(&format!("{url}{name}")), via.unwrap_or_default(), Vec::new())
        }
        _ => {
            let mnt = fresh_name(&tmp, "manyfiles-check");
            let m = shell_word(&mnt.to_string_lossy());
            // The export holds the bucket: the calibration's size, or more where the tree
            // needs room twice over.
            let calibrated = cfg.model.targets.iter().filter_map(|t| t.managed.as_ref()).map(|m| m.image_bytes);
            let need = inv.total_bytes.saturating_mul(2) + (inv.files + inv.dirs) * 4096;
            let size = calibrated.max().unwrap_or(0).max(need).max(256 << 20);
            let (spec, scheme) = match on {
                CheckOn::ObjectSpec(s) => (s.as_str(), on.object_provider().unwrap_or_default().name()),
                _ => ("s3", "s3"),
            };
            let up = vec![
                format!("mkdir {m}"),
                format!("manyfiles mount --size {}MiB {} {m}", size.div_ceil(1 << 20), shell_word(spec)),
            ];
            // Both stacks' bucket (container) has the same name.
            let url = format!("{scheme}://{}/{CHECK_PREFIX}", crate::storage::object_stack::BUCKET);
            (up, url, format!(" --s3-via {m}"), vec![format!("manyfiles umount {m}"), format!("rmdir {m}")])
        }
    };
    before.extend([
        format!("manyfiles copy{flight} --lossy {path} {url}{via}"),
        format!("manyfiles scan {url}{via}"),
        format!("manyfiles copy{flight} {url} {d}{via}"),
        format!("manyfiles rm{flight} {url}{via}"),
        format!("manyfiles rm {d}"),
    ]);
    before.append(&mut after);
    let mut text = String::from(match on {
        CheckOn::ObjectUrl(..) => {
            "check, one run each, on the store under a fresh prefix (the copy makes it, the rm removes it; each \
             command prints its requests and time):\n"
        }
        _ => {
            "check, one run each, on the same kind of target (mount brings it up, umount takes it down; each command \
             prints its requests and time):\n"
        }
    });
    for l in before {
        text.push_str(&format!("  {l}\n"));
    }
    if cfg.tree_path.is_none() {
        text.push_str("  (PATH: the tree the inventory was taken of)\n");
    }
    text.push_str(&format!(
        "  (--lossy: the check keeps nothing, so what an object cannot hold — modes, owners, xattrs, hard links{} — \
         is accepted as lost, not a failure)\n",
        match tree.losses {
            0 => String::new(),
            n => format!("; here {n} symlinks, special files, empty directories or names no key can hold, not sent"),
        }
    ));
    text
}
