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
pub mod predict_objects;
pub mod ranks;
pub mod table;
pub mod views;

use crate::results::ResultSet;

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

/// One line per fitted model whose trees' folder sizes are known: the directory-size cost
/// d with its 95% interval and what it means (one folder against ten), that it is ≈ 0,
/// or why it is not resolved (`analysis::model::dir_cost`); none for a fit that is no
/// answer (its row says why). For the tables, Markdown and HTML.
pub fn dir_entry_notes(rs: &ResultSet) -> Vec<String> {
    rs.models
        .iter()
        .filter(|m| m.usable())
        .filter_map(|m| {
            let verdict = crate::analysis::model::dir_cost::dir_cost(&m.model)?;
            Some(format!("directory-size cost, {} on {}: {}", m.op, target_name(rs, &m.target), verdict.text()))
        })
        .collect()
}
