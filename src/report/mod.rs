//! Views of result files: tables, charts, HTML, Markdown, CSV and JSON exporters, and
//! the commands that read result files (report, compare, predict, plan). Views import
//! the result model (`results`); nothing below imports a view.

pub mod advice;
pub mod chart;
pub mod combine;
pub mod commands;
pub mod compare;
pub mod csv;
pub mod export;
pub mod html;
pub mod json;
pub mod markdown;
pub mod pack;
pub mod table;

use crate::results::ResultSet;
use crate::units::sig3;

pub use commands::{
    CompareConfig, PlanConfig, PredictConfig, ReportConfig, TreeInput, run_compare, run_plan, run_predict, run_report,
};

/// One line per model with a directory-size term: d, and what it adds at the largest
/// directory the model saw (for the tables, Markdown and HTML).
pub fn dir_entry_notes(rs: &ResultSet) -> Vec<String> {
    use crate::units::fmt_secs;
    rs.models
        .iter()
        .filter(|m| m.model.per_dir_entry_s > 0.0)
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
                m.target,
                sig3(c.per_dir_entry_s * 1e9),
                sig3(c.per_dir_entry_se * 1e9),
                fmt_secs(c.per_dir_entry_s * n * n),
                n
            )
        })
        .collect()
}
