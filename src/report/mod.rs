//! Views of result files: the general tables (`table.rs`, `grid.rs`), charts and HTML
//! frame, each experiment's own view (`views/`), the exporters (`export/`: JSON, CSV,
//! Markdown), and the commands that read result files (report, compare, predict, plan).
//! Views import the result model (`results`); nothing below imports a view, and no
//! general file here imports an experiment's.

pub mod advice;
pub mod chart;
pub mod combine;
pub mod commands;
pub mod compare;
pub mod compare_html;
pub mod export;
pub mod grid;
pub mod html;
pub mod markup;
pub mod predict_html;
pub mod ranks;
pub mod table;
pub mod views;

use crate::results::ResultSet;
use crate::units::sig3;

pub use commands::{
    CheckOn, CompareConfig, PlanConfig, PredictConfig, PredictParts, ReportConfig, TreeInput, run_compare, run_plan,
    run_predict, run_report,
};

/// How every view names target `id`: its label (`/var/tmp (ext4 on vda)`, `ext4@ram`,
/// the user's `--label`; see [`crate::storage::TargetInfo::shown`]), or the id itself
/// when no target has it.
pub fn target_name(rs: &ResultSet, id: &str) -> String {
    rs.targets.iter().find(|t| t.id == id).map(|t| t.shown()).unwrap_or_else(|| id.to_string())
}

/// A warning or detection text (they name targets by id, in parentheses) with every
/// target named by its label.
pub fn named(rs: &ResultSet, text: &str) -> String {
    let mut out = text.to_string();
    for t in &rs.targets {
        let label = t.shown();
        if label != t.id {
            out = out.replace(&format!("({})", t.id), &format!("({label})"));
        }
    }
    out
}

/// A detection as the views print it: targets named by their labels.
pub fn detection_text(rs: &ResultSet, d: &crate::analysis::detect::Detection) -> String {
    use crate::analysis::detect::Detection;
    match d {
        Detection::Crossover { .. } => {
            let mut d = d.clone();
            if let Detection::Crossover { faster_below, faster_above, .. } = &mut d {
                *faster_below = target_name(rs, faster_below);
                *faster_above = target_name(rs, faster_above);
            }
            d.text()
        }
        _ => named(rs, &d.text()),
    }
}

/// One line per model with a directory-size term: d, and what it adds at the largest
/// directory the model saw (for the tables, Markdown and HTML).
pub fn dir_entry_notes(rs: &ResultSet) -> Vec<String> {
    use crate::units::fmt_secs;
    rs.models
        .iter()
        .filter(|m| m.model.per_dir_entry_s > 0.0 && m.usable())
        .map(|m| {
            let c = &m.model;
            let n = m.max_files_per_dir_range[1] as f64;
            let aicc = match (c.aicc_plain, c.aicc_dir_entry) {
                (Some(p), Some(d)) => format!("; AICc {} against {} without it", sig3(d), sig3(p)),
                _ => String::new(),
            };
            format!(
                "directory-size cost: {} ({}): d = {} ± {} ns per pair of files in one directory (d·Σn²): {} of extra time at {} files in one directory{aicc}",
                m.op,
                target_name(rs, &m.target),
                sig3(c.per_dir_entry_s * 1e9),
                sig3(c.per_dir_entry_se * 1e9),
                fmt_secs(c.per_dir_entry_s * n * n),
                n
            )
        })
        .collect()
}
