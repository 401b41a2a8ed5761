//! The warnings that change what a number means, grouped by kind with counts, for the
//! views to show before anything else under a table (issue 40: a fit that explained
//! nothing was printed as the answer while its warning sat behind `… and 30 more
//! warnings`). Three kinds:
//! - **fit quality**: fitted costs that are no answer (their left-out error above the
//!   threshold, `analysis::model::check`), each with why and what to do;
//! - **disturbance**: runs other processes disturbed, the cells that had to keep them,
//!   the medians they moved;
//! - **budget cut**: adaptive cells the budget (or an interrupt) stopped before their
//!   precision.
//!
//! Every other warning is one of [`ResultSet::other_warnings`]; views may shorten that list.

use super::{ResultSet, derive};
use crate::units::fmt_secs;

/// One kind of warning: its name, how many things it counts (fits, cells), and its lines.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    pub kind: &'static str,
    pub count: usize,
    /// What `count` counts, e.g. `of 3 fits` or `cells of 33`.
    pub of: String,
    pub lines: Vec<String>,
}

impl Group {
    /// `fit quality: 2 of 3 fits`: the group's heading.
    pub fn heading(&self) -> String {
        format!("{}: {} {}", self.kind, self.count, self.of)
    }
}

/// Is `w` a warning one of the groups shows (so the views do not show it twice)?
pub fn grouped(w: &str) -> bool {
    w.contains(NOT_FITTED) || w.ends_with(derive::TOO_DISTURBED) || w.ends_with(derive::MOVED_MEDIAN)
}

/// What a fit warning holds: `create (dir): not fitted: …`.
pub const NOT_FITTED: &str = "): not fitted: ";

impl ResultSet {
    /// The groups with something in them, in the order above.
    pub fn meaning_groups(&self) -> Vec<Group> {
        [self.fit_group(), self.disturbance_group(), self.budget_group()].into_iter().flatten().collect()
    }

    /// The warnings no group shows, in their order.
    pub fn other_warnings(&self) -> Vec<&String> {
        self.warnings.iter().filter(|w| !grouped(w)).collect()
    }

    fn fit_group(&self) -> Option<Group> {
        let unfit: Vec<String> = self
            .models
            .iter()
            .filter_map(|m| m.check().why_not.map(|why| format!("{} ({}): {why}", m.op, m.target)))
            .collect();
        (!unfit.is_empty()).then(|| Group {
            kind: "fit quality",
            count: unfit.len(),
            of: format!(
                "of {} fitted costs not shown as figures (their left-out error is above {}, or unknown)",
                self.models.len(),
                crate::analysis::model::check::pct(crate::analysis::model::check::MAX_LEFT_OUT_ERROR)
            ),
            lines: unfit,
        })
    }

    fn disturbance_group(&self) -> Option<Group> {
        let sums = &self.summaries;
        let cells: Vec<&super::SummaryRow> = sums.iter().filter(|s| s.disturbed > 0).collect();
        if cells.is_empty() {
            return None;
        }
        let runs: usize = sums.iter().map(|s| s.runs.max(s.stats.n)).sum();
        let disturbed: usize = cells.iter().map(|s| s.disturbed).sum();
        let left_out: usize = cells.iter().map(|s| s.disturbed_s.len()).sum();
        let mut lines = vec![format!(
            "{disturbed} of {runs} runs were disturbed by other processes (more than {} cores busy besides this one, or others' storage traffic above {} MiB/s); {left_out} left out of the statistics",
            crate::measure::machine::DISTURBED_CORES,
            crate::measure::machine::DISTURBED_IO_BPS / 1048576.0
        )];
        let kept: Vec<&&super::SummaryRow> = cells.iter().filter(|s| s.disturbed_s.is_empty()).collect();
        if !kept.is_empty() {
            let why = if self.experiment.adaptive.is_some() {
                "fewer than 6 undisturbed runs, too many to leave out"
            } else {
                "--runs N keeps every run"
            };
            lines.push(format!(
                "{} cells kept their disturbed runs ({why}): their figures measure the neighbours too: {}",
                kept.len(),
                cell_list(self, kept.iter().map(|s| (s.op.as_str(), s.tree_files, s.target.as_str())))
            ));
        }
        let moved: Vec<&String> = self.warnings.iter().filter(|w| w.ends_with(derive::MOVED_MEDIAN)).collect();
        if !moved.is_empty() {
            lines.push(format!(
                "{} medians moved past their own interval when the disturbed runs were left out (each in the JSON warnings)",
                moved.len()
            ));
        }
        Some(Group { kind: "disturbance", count: cells.len(), of: format!("of {} cells", sums.len()), lines })
    }

    fn budget_group(&self) -> Option<Group> {
        let a = self.experiment.adaptive?;
        let cut: Vec<&super::SummaryRow> = self
            .summaries
            .iter()
            .filter(|s| s.stopped.as_deref().is_some_and(|w| w.starts_with("budget spent") || w.starts_with("stopped")))
            .collect();
        if cut.is_empty() {
            return None;
        }
        let interrupted = cut.iter().any(|s| s.stopped.as_deref().is_some_and(|w| w.starts_with("stopped")));
        let by = if interrupted { "were stopped (interrupted)" } else { "ran out of the budget" };
        let line = format!(
            "{} cells {by} before ±{} (budget {}, took {}): their intervals are wider than asked — a longer --max-time: {}",
            cut.len(),
            crate::analysis::model::check::pct(a.precision),
            a.budget_text(),
            fmt_secs(a.spent_s),
            cell_list(self, cut.iter().map(|s| (s.op.as_str(), s.tree_files, s.target.as_str())))
        );
        Some(Group {
            kind: "budget cut",
            count: cut.len(),
            of: format!("of {} cells", self.summaries.len()),
            lines: vec![line],
        })
    }
}

/// `create 1, 4, 16 files; read 1 file` (per op, target named when there are several).
fn cell_list<'a>(rs: &ResultSet, cells: impl Iterator<Item = (&'a str, u64, &'a str)>) -> String {
    let many = rs.targets.len() > 1;
    let mut by: Vec<(String, Vec<u64>)> = Vec::new();
    for (op, files, target) in cells {
        let key = if many { format!("{op} ({target})") } else { op.to_string() };
        match by.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(files),
            None => by.push((key, vec![files])),
        }
    }
    by.iter()
        .map(|(k, v)| {
            let n: Vec<String> = v.iter().map(u64::to_string).collect();
            format!("{k} {} file{}", n.join(", "), if v == &[1] { "" } else { "s" })
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_take_their_warnings_out_of_the_rest() {
        let mut rs = super::super::testing::one_cell(&[1.0; 6]);
        rs.warnings = vec![
            "create (dir): not fitted: the runs scatter more than the model explains".into(),
            format!("read on t (dir): 9 of 12 runs were disturbed by other processes (x){}", derive::TOO_DISTURBED),
            "something else".into(),
        ];
        assert_eq!(rs.other_warnings(), vec!["something else"]);
        assert!(rs.meaning_groups().is_empty(), "no model, no disturbed cell, no adaptive run");
        rs.summaries[0].disturbed = 2;
        let g = rs.meaning_groups();
        assert_eq!(g.len(), 1);
        assert_eq!(g[0].kind, "disturbance");
        assert_eq!(g[0].count, 1);
        assert!(g[0].lines[0].starts_with("2 of 6 runs were disturbed"), "{:?}", g[0].lines);
        assert!(g[0].lines[1].contains("--runs N keeps every run"), "{:?}", g[0].lines);
    }
}
