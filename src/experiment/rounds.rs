//! Which trials run, in which order: a fixed number of runs (`--runs N`), or adaptive
//! runs to a precision (`--precision`, `--min-runs`, `--max-runs`, `--max-time`).
//!
//! Adaptive: the experiment runs in rounds. A round holds one trial of every cell
//! (a tree on a target) still short of its precision, in the interleaved order, so
//! drift still hits every cell alike. A cell is done when the 95% interval of the
//! median of every op it times is within ±precision of the median; that interval
//! is distribution-free (order statistics) and needs 6 runs that were not disturbed
//! (see `measure::machine`), so precision is judged from the 6th such run on.
//! Disturbed runs are left out of the statistics (once 6 undisturbed ones remain; see
//! `results::split_disturbed`) and replaced by one more run each: they do not count
//! toward `--max-runs`, and a cell never runs more than twice `--max-runs`. Every cell gets `--min-runs` runs whatever the budget; past them, a
//! trial is not started when the time it took last round would take the experiment
//! past `--max-time`.
//!
//! Under MPI every rank must run the same trials: rank 0 decides each round and
//! every rank follows (the machine activity and clocks of ranks differ).

use crate::results::adaptive::Adaptive;
use crate::results::{Measurement, ResultSet};
use std::time::Duration;

/// Fixed or adaptive.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Runs {
    Fixed(u32),
    Adaptive(Adaptive),
}

impl Runs {
    /// `adaptive` when set, else exactly `runs`.
    pub fn of(runs: u32, adaptive: Option<Adaptive>) -> Runs {
        adaptive.map_or(Runs::Fixed(runs), Runs::Adaptive)
    }

    /// The number of runs a cell may get (for labels and the results' `runs`).
    pub fn max(&self) -> u32 {
        match self {
            Runs::Fixed(n) => *n,
            Runs::Adaptive(a) => a.max_runs,
        }
    }
}

/// Where one cell stands.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CellState {
    /// Trials run (recorded ones).
    pub runs: u32,
    /// Runs some op of which was disturbed.
    pub disturbed: u32,
    /// The worst precision over the cell's ops (None: some op has no interval yet).
    pub precision: Option<f64>,
    /// Wall time of the cell's last trial.
    pub last: Duration,
}

impl CellState {
    /// From the recorded measurements of one cell (every op it times).
    pub fn of(ms: &[&Measurement], until: crate::results::Until, ops: &[String]) -> CellState {
        let runs = ms.iter().map(|m| m.run).max().unwrap_or(0);
        let mut disturbed_runs: Vec<u32> = ms.iter().filter(|m| m.result.disturbed()).map(|m| m.run).collect();
        disturbed_runs.sort_unstable();
        disturbed_runs.dedup();
        let mut precision = Some(0.0f64);
        for op in ops {
            let of_op: Vec<&Measurement> = ms.iter().copied().filter(|m| &m.op == op && m.result.complete()).collect();
            let xs: Vec<f64> =
                crate::results::split_disturbed(&of_op, true).0.iter().map(|m| m.seconds(until)).collect();
            let p = crate::analysis::stats::summarize(&xs).and_then(|s| s.precision());
            precision = match (precision, p) {
                (Some(a), Some(b)) => Some(a.max(b)),
                _ => None,
            };
        }
        CellState { runs, disturbed: disturbed_runs.len() as u32, precision, last: Duration::ZERO }
    }

    /// The cell needs no more runs: its precision is reached (after min_runs), or it
    /// used its runs.
    pub fn done(&self, a: &Adaptive) -> bool {
        let counted = self.runs.saturating_sub(self.disturbed);
        if self.runs < a.min_runs {
            return false;
        }
        self.precision.is_some_and(|p| p <= a.precision) || counted >= a.max_runs || self.runs >= 2 * a.max_runs
    }
}

/// What to run next.
pub enum Next {
    /// These cells (tree, target), one trial each, in this order.
    Round(Vec<(usize, usize)>),
    /// Nothing left; `budget_spent` when the budget ended it before every precision.
    Finished { budget_spent: bool },
}

/// The next round of an adaptive experiment. `cells[target][tree]`; `elapsed` is the
/// time the experiment has run; `sequential`: finish one target before the next.
pub fn next_round(a: &Adaptive, cells: &[Vec<CellState>], elapsed: Duration, sequential: bool) -> Next {
    let budget = Duration::from_secs_f64(a.max_time_s.max(0.0));
    let mut round = Vec::new();
    let mut spent = false;
    let mut predicted = elapsed;
    for (gi, per_tree) in cells.iter().enumerate() {
        for (ti, c) in per_tree.iter().enumerate() {
            if c.done(a) {
                continue;
            }
            // min_runs are owed whatever the budget; past them, the budget decides.
            if c.runs >= a.min_runs && predicted + c.last > budget {
                spent = true;
                continue;
            }
            predicted += c.last;
            round.push((ti, gi));
        }
        if sequential && !round.is_empty() {
            break;
        }
    }
    // Interleaved order within a round: run k of every tree on every target.
    round.sort_by_key(|&(ti, gi)| if sequential { (gi, ti) } else { (ti, gi) });
    if round.is_empty() { Next::Finished { budget_spent: spent } } else { Next::Round(round) }
}

/// The cells' states from the results so far (`last` kept from `prev`).
pub fn states(rs: &ResultSet, targets: &[String], trees: &[String], prev: &[Vec<CellState>]) -> Vec<Vec<CellState>> {
    let ops: Vec<String> = {
        let mut v: Vec<String> = Vec::new();
        for m in &rs.measurements {
            if !v.contains(&m.op) {
                v.push(m.op.clone());
            }
        }
        v
    };
    targets
        .iter()
        .enumerate()
        .map(|(gi, t)| {
            trees
                .iter()
                .enumerate()
                .map(|(ti, k)| {
                    let ms: Vec<&Measurement> =
                        rs.measurements.iter().filter(|m| &m.target == t && &m.tree_key == k).collect();
                    let cell_ops: Vec<String> =
                        ops.iter().filter(|o| ms.iter().any(|m| &m.op == *o)).cloned().collect();
                    let mut s = CellState::of(&ms, rs.experiment.until, &cell_ops);
                    s.last = prev.get(gi).and_then(|p| p.get(ti)).map_or(Duration::ZERO, |p| p.last);
                    s
                })
                .collect()
        })
        .collect()
}

/// A synthetic timing source for tests of the statistics and the adaptive driver (a
/// hidden `--mock-timing` flag, as hyperfine has): every recorded phase's time is
/// replaced by a draw around 1 ms + 5 µs per file + 2 ns per byte, lognormal with
/// coefficient of variation `cv`, `slow` of the runs three times slower, `disturbed`
/// of them marked disturbed (and twice slower). Deterministic in `seed` and the
/// measurement's position.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MockTiming {
    pub seed: u64,
    pub cv: f64,
    pub slow: f64,
    pub disturbed: f64,
}

impl MockTiming {
    /// `cv=0.1,slow=0.1,disturbed=0.05,seed=7` (every key optional).
    pub fn parse(s: &str) -> Result<MockTiming, String> {
        let mut m = MockTiming { seed: 1, cv: 0.1, slow: 0.0, disturbed: 0.0 };
        for kv in s.split(',').filter(|x| !x.is_empty()) {
            let (k, v) = kv.split_once('=').ok_or_else(|| format!("'{kv}': expected KEY=VALUE"))?;
            let num = || v.parse::<f64>().map_err(|_| format!("'{v}' is not a number"));
            match k {
                "seed" => m.seed = v.parse().map_err(|_| format!("'{v}' is not a seed"))?,
                "cv" => m.cv = num()?,
                "slow" => m.slow = num()?,
                "disturbed" => m.disturbed = num()?,
                _ => return Err(format!("unknown key '{k}' (seed, cv, slow, disturbed)")),
            }
        }
        if !(m.cv >= 0.0 && (0.0..=1.0).contains(&m.slow) && (0.0..=1.0).contains(&m.disturbed)) {
            return Err("cv must be >= 0, slow and disturbed between 0 and 1".into());
        }
        Ok(m)
    }

    /// Replace the phase's times (the work still ran; only its figures are synthetic).
    pub fn apply(&self, r: &mut crate::measure::PhaseResult, files: u64, bytes: u64, position: u64) {
        use crate::tree::rng::{hash3, unit_f64};
        let u = |stream: u64| unit_f64(hash3(self.seed, position, stream)).max(f64::MIN_POSITIVE);
        // Box–Muller from two uniforms.
        let normal = (-2.0 * u(1).ln()).sqrt() * (2.0 * std::f64::consts::PI * u(2)).cos();
        let sigma = (1.0 + self.cv * self.cv).ln().sqrt();
        let mut t = (1e-3 + files as f64 * 5e-6 + bytes as f64 * 2e-9) * (sigma * normal).exp();
        if u(3) < self.slow {
            t *= 3.0;
        }
        let disturbed = u(4) < self.disturbed;
        if disturbed {
            t *= 2.0;
        }
        r.elapsed_s = t;
        r.returned_s = r.returned_s.map(|_| t);
        r.flush_s = r.flush_s.map(|_| 0.0);
        let m = r.machine.get_or_insert_with(Default::default);
        m.disturbed = disturbed;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(runs: u32, disturbed: u32, precision: Option<f64>, last_s: f64) -> CellState {
        CellState { runs, disturbed, precision, last: Duration::from_secs_f64(last_s) }
    }

    #[test]
    fn cells_stop_at_precision_max_runs_or_twice_max() {
        let a = Adaptive::default_settings();
        assert!(!cell(2, 0, Some(0.01), 0.0).done(&a), "min runs first");
        assert!(cell(6, 0, Some(0.04), 0.0).done(&a));
        assert!(!cell(6, 0, Some(0.06), 0.0).done(&a));
        assert!(!cell(6, 0, None, 0.0).done(&a));
        assert!(cell(30, 0, Some(0.2), 0.0).done(&a));
        assert!(!cell(30, 3, Some(0.2), 0.0).done(&a), "disturbed runs are replaced");
        assert!(cell(60, 40, None, 0.0).done(&a), "but never past twice --max-runs");
    }

    #[test]
    fn rounds_keep_interleaved_order_and_the_budget() {
        let a = Adaptive { max_time_s: 10.0, ..Adaptive::default_settings() };
        // 2 targets × 2 trees; target 1 tree 0 is done.
        let cells = vec![
            vec![cell(3, 0, Some(0.2), 1.0), cell(3, 0, None, 1.0)],
            vec![cell(8, 0, Some(0.01), 1.0), cell(3, 0, Some(0.1), 1.0)],
        ];
        match next_round(&a, &cells, Duration::from_secs(2), false) {
            Next::Round(r) => assert_eq!(r, vec![(0, 0), (1, 0), (1, 1)]),
            Next::Finished { .. } => panic!("work left"),
        }
        // 8.5 s spent: one more 1 s trial fits, the next would not.
        match next_round(&a, &cells, Duration::from_secs_f64(8.5), false) {
            Next::Round(r) => assert_eq!(r, vec![(0, 0)]),
            Next::Finished { .. } => panic!("one fits"),
        }
        match next_round(&a, &cells, Duration::from_secs(11), false) {
            Next::Finished { budget_spent } => assert!(budget_spent),
            Next::Round(r) => panic!("over budget: {r:?}"),
        }
        // Owed minimum runs run even past the budget.
        let owed = vec![vec![cell(1, 0, None, 5.0)]];
        assert!(matches!(next_round(&a, &owed, Duration::from_secs(60), false), Next::Round(_)));
        // Sequential: target 0's cells first.
        match next_round(&a, &cells, Duration::ZERO, true) {
            Next::Round(r) => assert_eq!(r, vec![(0, 0), (1, 0)]),
            Next::Finished { .. } => panic!("work left"),
        }
        let done = vec![vec![cell(6, 0, Some(0.01), 1.0)]];
        assert!(matches!(next_round(&a, &done, Duration::ZERO, false), Next::Finished { budget_spent: false }));
    }

    /// Coverage of the median interval when cells stop adaptively (stopping when the
    /// interval is narrow could favour intervals that happen to be narrow): 1,000
    /// simulated cells per distribution, adaptive to ±5% within 6…30 runs.
    #[test]
    fn adaptive_stopping_keeps_the_coverage() {
        use crate::analysis::stats::summarize;
        use crate::tree::rng::{hash3, unit_f64};
        let a = Adaptive::default_settings();
        let sigma = (1.0f64 + 0.3 * 0.3).ln().sqrt();
        // (name, draw(u1, u2, u3) → time, true median)
        let normal = |u1: f64, u2: f64| (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
        type Draw = Box<dyn Fn(f64, f64, f64) -> f64>;
        let cases: [(&str, Draw, f64); 3] = [
            ("normal cv 5%", Box::new(move |u1, u2, _| 1.0 + 0.05 * normal(u1, u2)), 1.0),
            ("lognormal cv 30%", Box::new(move |u1, u2, _| (sigma * normal(u1, u2)).exp()), 1.0),
            (
                "10% of runs 3x slower",
                Box::new(move |u1, u2, u3| {
                    let x = 1.0 + 0.05 * normal(u1, u2);
                    if u3 < 0.1 { 3.0 * x } else { x }
                }),
                1.0 + 0.05 * 0.139_710_298_881_862,
            ),
        ];
        for (ci, (name, draw, truth)) in cases.iter().enumerate() {
            let mut hits = 0;
            let cells = 1000;
            for cell in 0..cells {
                let mut xs = Vec::new();
                let s = loop {
                    let i = xs.len() as u64;
                    let u = |k: u64| unit_f64(hash3(0xC0FE + ci as u64, cell * 64 + i, k)).max(1e-300);
                    xs.push(draw(u(1), u(2), u(3)));
                    let s = summarize(&xs).unwrap();
                    let state = CellState {
                        runs: xs.len() as u32,
                        disturbed: 0,
                        precision: s.precision(),
                        last: Duration::ZERO,
                    };
                    if state.done(&a) && s.median_ci95_s.is_some() || xs.len() >= a.max_runs as usize {
                        break s;
                    }
                };
                let [lo, hi] = s.median_ci95_s.unwrap();
                hits += (lo <= *truth && *truth <= hi) as usize;
            }
            let c = hits as f64 / cells as f64;
            eprintln!("adaptive stopping, {name}: coverage {c}");
            assert!((0.93..=0.97).contains(&c), "{name}: coverage {c}");
        }
    }

    #[test]
    fn mock_timing_parses_and_is_deterministic() {
        let m = MockTiming::parse("cv=0.3,slow=0.1,seed=9").unwrap();
        assert_eq!((m.seed, m.cv, m.slow, m.disturbed), (9, 0.3, 0.1, 0.0));
        assert!(MockTiming::parse("cv=x").is_err() && MockTiming::parse("speed=1").is_err());
        assert!(MockTiming::parse("slow=2").is_err());
        let mut a = crate::measure::PhaseResult::default();
        let mut b = a.clone();
        m.apply(&mut a, 100, 0, 3);
        m.apply(&mut b, 100, 0, 3);
        assert_eq!(a.elapsed_s, b.elapsed_s);
        assert!(a.elapsed_s > 0.0);
    }
}
