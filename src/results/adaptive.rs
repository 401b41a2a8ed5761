//! The adaptive-runs settings (`--precision`, `--min-runs`, `--max-runs`,
//! `--max-time`) and how the budget went, as a result file records them. The rounds
//! that use them are the experiment driver's (`experiment::rounds`).

use serde::{Deserialize, Serialize};

/// The budget without `--max-time`: 3 minutes.
pub const DEFAULT_MAX_TIME_S: f64 = 180.0;

/// How far a default budget stretches for the minimum runs: 3× the budget, 9 minutes.
/// On the VM disk a round of the default ladder's 39 cells took 33–46 s, so 3 minutes
/// gave cells 4–7 runs and 141 of 195 cell-invocations had no interval (issue 40); 6
/// rounds take about 4 minutes there.
pub const DEFAULT_STRETCH_S: f64 = 540.0;

/// The adaptive settings, as recorded in the results.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Adaptive {
    /// Target relative half-width of the median's 95% interval (0.05 = ±5%).
    pub precision: f64,
    pub min_runs: u32,
    pub max_runs: u32,
    /// Budget for the whole experiment, seconds.
    pub max_time_s: f64,
    /// When `--max-time` was not given: the budget gives way to the minimum runs up to
    /// this many seconds (`--min-runs` runs are the fewest with an interval; a default
    /// budget that cut them left a slow target's cells without one). None: the budget
    /// is a promise (`--max-time` given, or a caller's own budget).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stretch_s: Option<f64>,
    /// The stretch let in trials the budget alone would have cut.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stretched: bool,
    /// The budget stopped at least one cell before its precision.
    #[serde(default)]
    pub budget_spent: bool,
    /// Wall time the trials took, seconds.
    #[serde(default)]
    pub spent_s: f64,
}

impl Adaptive {
    /// The defaults: ±5%, 6 to 30 runs (6: the fewest for an interval of the median;
    /// issue 27), 3 minutes, a budget that is a promise (no stretch).
    pub fn default_settings() -> Adaptive {
        Adaptive {
            precision: 0.05,
            min_runs: 6,
            max_runs: 30,
            max_time_s: DEFAULT_MAX_TIME_S,
            stretch_s: None,
            stretched: false,
            budget_spent: false,
            spent_s: 0.0,
        }
    }

    /// The defaults of an experiment run without `--max-time`: the 3-minute budget
    /// stretches for the minimum runs, up to [`DEFAULT_STRETCH_S`].
    pub fn default_budget() -> Adaptive {
        Adaptive { stretch_s: Some(DEFAULT_STRETCH_S), ..Adaptive::default_settings() }
    }

    /// The budget as the footers say it: `3m`, or `3m, stretched to 3m48s for the
    /// minimum runs` when a default budget gave way to them.
    pub fn budget_text(&self) -> String {
        let budget = crate::units::fmt_secs(self.max_time_s);
        match self.stretch_s {
            Some(_) if self.stretched => {
                format!("{budget}, stretched to {} for the minimum runs", crate::units::fmt_secs(self.spent_s))
            }
            _ => budget,
        }
    }

    /// The time minimum runs may take: the stretch when there is one, else the budget.
    pub fn min_runs_budget_s(&self) -> f64 {
        self.stretch_s.map_or(self.max_time_s, |s| s.max(self.max_time_s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_footer_says_stretched_only_when_the_stretch_let_trials_in() {
        let mut a = Adaptive { spent_s: 181.0, ..Adaptive::default_budget() };
        // The last trial ran a second past the budget: not a stretch.
        assert_eq!(a.budget_text(), crate::units::fmt_secs(180.0));
        a.stretched = true;
        a.spent_s = 242.0;
        assert_eq!(
            a.budget_text(),
            format!(
                "{}, stretched to {} for the minimum runs",
                crate::units::fmt_secs(180.0),
                crate::units::fmt_secs(242.0)
            )
        );
        assert_eq!(a.min_runs_budget_s(), 540.0);
        assert_eq!(Adaptive::default_settings().min_runs_budget_s(), 180.0, "a budget given holds");
    }
}
