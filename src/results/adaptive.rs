//! The adaptive-runs settings (`--precision`, `--min-runs`, `--max-runs`,
//! `--max-time`) and how the budget went, as a result file records them. The rounds
//! that use them are the experiment driver's (`experiment::rounds`).

use serde::{Deserialize, Serialize};

/// The adaptive settings, as recorded in the results.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Adaptive {
    /// Target relative half-width of the median's 95% interval (0.05 = ±5%).
    pub precision: f64,
    pub min_runs: u32,
    pub max_runs: u32,
    /// Budget for the whole experiment, seconds.
    pub max_time_s: f64,
    /// The budget stopped at least one cell before its precision.
    #[serde(default)]
    pub budget_spent: bool,
    /// Wall time the trials took, seconds.
    #[serde(default)]
    pub spent_s: f64,
}

impl Adaptive {
    /// The defaults: ±5%, 6 to 30 runs (6: the fewest for an interval of the median;
    /// issue 27), 3 minutes.
    pub fn default_settings() -> Adaptive {
        Adaptive { precision: 0.05, min_runs: 6, max_runs: 30, max_time_s: 180.0, budget_spent: false, spent_s: 0.0 }
    }
}
