//! Output of `predict` and `plan`: tables with every figure's interval, the
//! extrapolation warnings, the recommendation and where the model came from.

use crate::analysis::model::Prediction;
use crate::results::plan::Plan;
use crate::results::predict::{PredictionRow, Shape};
use crate::units::{fmt_secs, fmt_size, sig3};
use comfy_table::presets::UTF8_BORDERS_ONLY;
use comfy_table::{CellAlignment, Table};

fn new_table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_style(UTF8_BORDERS_ONLY);
    t.set_header(header.to_vec());
    t
}

fn right(t: &mut Table, cols: std::ops::Range<usize>) {
    for i in cols {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
}

/// `1.23 s (0.98 s … 1.51 s)`, or the value alone when there is no interval.
pub fn fmt_prediction(p: &Prediction) -> String {
    match p.interval95 {
        Some([lo, hi]) => format!("{} ({} … {})", fmt_secs(p.seconds), fmt_secs(lo), fmt_secs(hi)),
        None => format!("{} (no interval: as many points as coefficients)", fmt_secs(p.seconds)),
    }
}

pub fn shape_line(s: &Shape) -> String {
    format!(
        "{} files, {} in {} directories (mean file size {})",
        s.files,
        fmt_size(s.bytes as f64),
        s.dirs,
        fmt_size(s.bytes as f64 / s.files.max(1) as f64)
    )
}

pub fn predictions(
    rows: &[PredictionRow],
    shape: &Shape,
    model_line: &str,
    model: &crate::results::ResultSet,
    ahead: crate::results::predict::Ahead,
) -> String {
    let (runs_ahead, level) = (ahead.runs, ahead.level_text());
    let what = if runs_ahead <= 1 {
        format!("predicted time of one run ({level} interval)")
    } else {
        format!("predicted median of {runs_ahead} runs ({level} interval)")
    };
    let mut t = new_table(&["op", "target", &what, "calibrated range"]);
    let mut notes = Vec::new();
    for r in rows {
        let target = super::target_name(model, &r.target);
        let range = if r.extrapolation.is_empty() {
            "inside".to_string()
        } else {
            notes.push(format!("{} on {target}: extrapolation: {}", r.op, r.extrapolation.join("; ")));
            "OUTSIDE (extrapolation)".to_string()
        };
        let op = match r.op.as_str() {
            "copy" => "copy (onto the target)".to_string(),
            "stat" => "scan (stat)".to_string(),
            "walk" => "scan (walk + statx)".to_string(),
            "rm" => "rm (the whole tree)".to_string(),
            o => o.to_string(),
        };
        // A model that missed its own left-out trees predicts nothing: said instead.
        let figure = match &r.not_usable {
            Some(why) => {
                notes.push(format!(
                    "{op} on {target}: no prediction: the model is {}",
                    why.replacen("not fitted", "not usable", 1)
                ));
                "not usable (see below)".to_string()
            }
            None => fmt_prediction(&r.shown()),
        };
        t.add_row(vec![op, target.clone(), figure, range]);
        if let Some([rp, hi]) = r.recovery_point_s {
            notes.push(format!(
                "{} on {target}: recovery point (worst case: interval + sync time) {} (up to {})",
                r.op,
                fmt_secs(rp),
                fmt_secs(hi)
            ));
        }
    }
    right(&mut t, 2..3);
    let mut out = format!("tree: {}\n{t}\n", shape_line(shape));
    for n in notes {
        out.push_str(&format!("warning: {n}\n"));
    }
    out.push_str(&format!(
        "interval: run-to-run noise (of one run, or the median of --runs-ahead K), the model's misfit and its \
         coefficients' uncertainty (leave-one-cell-out, terms chosen again in every fold; Student t, {level}); not in \
         it: drift between the calibration and your run\n",
    ));
    out.push_str(model_line);
    out.push('\n');
    out
}

pub fn plan(p: &Plan, model_line: Option<&str>) -> String {
    let timed = p.rows.iter().any(|r| r.write_time.is_some());
    let mut header = vec!["cluster", "allocated", "slack (wasted)", "slack %"];
    if timed {
        header.push("predicted write time (95% interval)");
    }
    let mut t = new_table(&header);
    for r in &p.rows {
        let mut row = vec![
            fmt_size(r.cluster_bytes as f64),
            fmt_size(r.allocated_bytes as f64),
            fmt_size(r.slack_bytes as f64),
            format!("{}%", sig3(r.slack_share * 100.0)),
        ];
        if timed {
            row.push(match (&r.write_time, &r.model_target) {
                (Some(w), Some(t)) => format!("{} on {t}", fmt_prediction(w)),
                _ => "— (no model for this cluster size)".into(),
            });
        }
        t.add_row(row);
    }
    right(&mut t, 0..5);
    let mut out = format!("tree: {}\n{t}\n", shape_line(&p.shape));
    use crate::storage::allocation::Layout;
    out.push_str(match p.layout {
        Layout::Files => {
            "allocated: every file rounded up to whole clusters (an empty file takes none; directories and metadata not \
             counted: name the file system with --fs exfat|ntfs for what df will show); slack % = share of the allocation not holding data\n"
        }
        Layout::Exfat => {
            "allocated: what df will show after the copy onto a fresh exFAT: every file in whole clusters (an empty one \
             takes none) and every directory at least one cluster of 32-byte entries; slack % = share not holding data\n"
        }
        Layout::Ntfs => {
            "allocated: what df will show after the copy onto a fresh NTFS (ntfs-3g): files in whole clusters unless they fit \
             in their 1 KiB MFT record, a record per file and directory, 4 KiB index blocks for large directories; slack % = share not holding data\n"
        }
    });
    match p.recommended_cluster {
        Some(c) => out.push_str(&format!("recommendation: {} — {}\n", fmt_size(c as f64), p.reasoning)),
        None => out.push_str(&format!("no recommendation: {}\n", p.reasoning)),
    }
    if let Some(m) = model_line {
        out.push_str(m);
        out.push('\n');
    }
    out
}
