//! A/B comparison of two result sets: for every cell measured in both, the ratio of
//! times B/A with a 95% CI and a verdict, so a storage regression can gate a pipeline.
//!
//! With 6 runs or more on both sides the ratio is of the medians, on a log scale, and
//! its interval combines the medians' distribution-free intervals ([`log_ratio`]): the
//! verdict is "slower"/"faster" when that interval excludes 1. With fewer runs there is
//! no such interval, and the ratio of the means with Welch's t-test decides (the
//! `basis` field says which).

use super::stats::{Summary, log_ratio, t_quantile_975};
use crate::results::ResultSet;
use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Two-sided significance level of the verdict.
pub const ALPHA: f64 = 0.05;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Faster,
    Slower,
    NoSignificantDifference,
    /// Fewer than 2 runs on a side: no test possible.
    TooFewRuns,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::NoSignificantDifference => "no significant difference",
            Verdict::TooFewRuns => "too few runs to tell",
        }
    }
}

/// One cell measured in both sets.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// Target in A and in B (the same id, or the only target of each set).
    pub target_a: String,
    pub target_b: String,
    pub op: String,
    pub tree_key: String,
    pub mean_a_s: f64,
    pub mean_b_s: f64,
    pub median_a_s: f64,
    pub median_b_s: f64,
    pub n_a: usize,
    pub n_b: usize,
    /// `median` (both sides have 6 runs or more) or `mean`.
    pub basis: &'static str,
    /// B / A of the basis: above 1 means B is slower.
    pub ratio: f64,
    /// 95% CI of the ratio: medians' intervals combined on a log scale, or (basis
    /// mean) the delta method on the log ratio with Welch–Satterthwaite df.
    pub ratio_ci95: Option<[f64; 2]>,
    /// Basis mean: Welch's two-sided p-value for equal means.
    pub p_value: Option<f64>,
    pub verdict: Verdict,
}

/// Ratio B/A of the medians with its interval and the verdict it gives, when both
/// sides have a median interval.
pub fn median_ratio(a: &Summary, b: &Summary) -> Option<(f64, [f64; 2], Verdict)> {
    let (r, ci) = log_ratio(b.median_s, b.median_ci95_s, a.median_s, a.median_ci95_s);
    let [lo, hi] = ci?;
    let v = if lo > 1.0 {
        Verdict::Slower
    } else if hi < 1.0 {
        Verdict::Faster
    } else {
        Verdict::NoSignificantDifference
    };
    Some((r, [lo, hi], v))
}

/// Welch's t-test: (t, df, two-sided p) for equal means, or `None` with fewer than 2
/// samples on a side or zero variance on both.
pub fn welch(a: &Summary, b: &Summary) -> Option<(f64, f64, f64)> {
    if a.n < 2 || b.n < 2 {
        return None;
    }
    let (va, vb) = (a.stddev_s.powi(2) / a.n as f64, b.stddev_s.powi(2) / b.n as f64);
    let se2 = va + vb;
    if se2 <= 0.0 || !se2.is_finite() {
        return None;
    }
    let t = (b.mean_s - a.mean_s) / se2.sqrt();
    let df = se2 * se2 / (va * va / (a.n - 1) as f64 + vb * vb / (b.n - 1) as f64);
    let dist = StudentsT::new(0.0, 1.0, df).ok()?;
    let p = 2.0 * (1.0 - dist.cdf(t.abs()));
    Some((t, df, p.clamp(0.0, 1.0)))
}

/// Ratio B/A and its 95% CI: exp(log ratio ± t·se), se² = sa²/(na·ma²) + sb²/(nb·mb²),
/// with the Welch–Satterthwaite df (rounded down, so the interval is not too narrow).
pub fn ratio_ci(a: &Summary, b: &Summary) -> (f64, Option<[f64; 2]>) {
    let ratio = b.mean_s / a.mean_s;
    if a.n < 2 || b.n < 2 || a.mean_s <= 0.0 || b.mean_s <= 0.0 {
        return (ratio, None);
    }
    let ua = a.stddev_s.powi(2) / (a.n as f64 * a.mean_s * a.mean_s);
    let ub = b.stddev_s.powi(2) / (b.n as f64 * b.mean_s * b.mean_s);
    let se2 = ua + ub;
    if se2 <= 0.0 {
        return (ratio, Some([ratio, ratio]));
    }
    let df = se2 * se2 / (ua * ua / (a.n - 1) as f64 + ub * ub / (b.n - 1) as f64);
    let half = t_quantile_975(df.floor().max(1.0) as usize) * se2.sqrt();
    (ratio, Some([ratio * (-half).exp(), ratio * half.exp()]))
}

/// Verdict for one pair of summaries.
pub fn verdict(a: &Summary, b: &Summary) -> (Option<f64>, Verdict) {
    match welch(a, b) {
        None if a.n >= 2 && b.n >= 2 && a.mean_s != b.mean_s => {
            // Both without scatter and different: the difference is certain.
            (Some(0.0), if b.mean_s > a.mean_s { Verdict::Slower } else { Verdict::Faster })
        }
        None if a.n >= 2 && b.n >= 2 => (Some(1.0), Verdict::NoSignificantDifference),
        None => (None, Verdict::TooFewRuns),
        Some((t, _, p)) if p < ALPHA => (Some(p), if t > 0.0 { Verdict::Slower } else { Verdict::Faster }),
        Some((_, _, p)) => (Some(p), Verdict::NoSignificantDifference),
    }
}

/// Every (target, op, tree) summarised in both sets. Targets are matched by id; when
/// no id is shared and each set has one target, those two are compared (A/B of two
/// storage systems measured apart).
pub fn compare(a: &ResultSet, b: &ResultSet) -> Vec<Comparison> {
    let shared = a.summaries.iter().any(|x| b.summaries.iter().any(|y| y.target == x.target));
    let single = a.targets.len() == 1 && b.targets.len() == 1;
    let mut out = Vec::new();
    for x in &a.summaries {
        let Some(y) = b
            .summaries
            .iter()
            .find(|y| y.op == x.op && y.tree_key == x.tree_key && (y.target == x.target || (!shared && single)))
        else {
            continue;
        };
        let (basis, ratio, ratio_ci95, p_value, verdict) = match median_ratio(&x.stats, &y.stats) {
            Some((r, ci, v)) => ("median", r, Some(ci), None, v),
            None => {
                let (r, ci) = ratio_ci(&x.stats, &y.stats);
                let (p, v) = verdict(&x.stats, &y.stats);
                ("mean", r, ci, p, v)
            }
        };
        out.push(Comparison {
            target_a: x.target.clone(),
            target_b: y.target.clone(),
            op: x.op.clone(),
            tree_key: x.tree_key.clone(),
            mean_a_s: x.stats.mean_s,
            mean_b_s: y.stats.mean_s,
            median_a_s: x.stats.median_s,
            median_b_s: y.stats.median_s,
            n_a: x.stats.n,
            n_b: y.stats.n,
            basis,
            ratio,
            ratio_ci95,
            p_value,
            verdict,
        });
    }
    out
}

/// Comparisons that are significantly slower by more than `pct` percent.
pub fn regressions(cs: &[Comparison], pct: f64) -> Vec<&Comparison> {
    cs.iter().filter(|c| c.verdict == Verdict::Slower && (c.ratio - 1.0) * 100.0 > pct).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::stats::summarize;

    #[test]
    fn welch_matches_a_textbook_value() {
        // Two samples with known Welch statistics (computed by hand):
        // a: mean 20, var 10 (n 5), b: mean 24, var 40 (n 5): se² = 2 + 8 = 10,
        // t = 4/√10 = 1.2649, df = 100 / (4/4 + 64/4) = 5.882.
        let a = summarize(&[16.0, 18.0, 20.0, 22.0, 24.0]).unwrap(); // var 10
        let b = summarize(&[16.0, 20.0, 24.0, 28.0, 32.0]).unwrap(); // var 40
        let (t, df, p) = welch(&a, &b).unwrap();
        assert!((t - 1.264_911).abs() < 1e-5, "{t}");
        assert!((df - 5.882_353).abs() < 1e-5, "{df}");
        assert!(p > 0.2 && p < 0.3, "{p}");
    }

    #[test]
    fn verdicts_on_known_differences() {
        let base = [1.00, 1.02, 0.98, 1.01, 0.99];
        let a = summarize(&base).unwrap();
        let slow = summarize(&base.map(|x| x * 1.3)).unwrap();
        let fast = summarize(&base.map(|x| x * 0.7)).unwrap();
        let same = summarize(&[1.01, 0.99, 1.00, 1.02, 0.98]).unwrap();
        assert_eq!(verdict(&a, &slow).1, Verdict::Slower);
        assert_eq!(verdict(&a, &fast).1, Verdict::Faster);
        assert_eq!(verdict(&a, &same).1, Verdict::NoSignificantDifference);
        let (r, ci) = ratio_ci(&a, &slow);
        let [lo, hi] = ci.unwrap();
        assert!((r - 1.3).abs() < 1e-12 && lo < 1.3 && hi > 1.3 && lo > 1.2 && hi < 1.4, "{lo} {hi}");
        assert_eq!(verdict(&a, &summarize(&[2.0]).unwrap()).1, Verdict::TooFewRuns);
    }

    #[test]
    fn medians_decide_from_six_runs() {
        let base = [1.00, 1.02, 0.98, 1.01, 0.99, 1.03, 0.97, 1.0, 1.01, 0.99];
        let a = summarize(&base).unwrap();
        // One wild run on B does not move its median: a heavy tail does not hide a 30% slowdown.
        let mut slow = base.map(|x| x * 1.3);
        slow[2] = 40.0;
        let b = summarize(&slow).unwrap();
        let (r, [lo, hi], v) = median_ratio(&a, &b).unwrap();
        assert!((r - 1.3).abs() < 0.02 && lo > 1.0 && hi < 1.7, "{r} {lo} {hi}");
        assert_eq!(v, Verdict::Slower);
        let (_, _, v) = median_ratio(&a, &summarize(&base.map(|x| x * 0.7)).unwrap()).unwrap();
        assert_eq!(v, Verdict::Faster);
        let same = [1.01, 0.99, 1.0, 1.02, 0.98, 1.0, 1.01, 0.97, 1.03, 1.0];
        let (_, _, v) = median_ratio(&a, &summarize(&same).unwrap()).unwrap();
        assert_eq!(v, Verdict::NoSignificantDifference);
        assert!(median_ratio(&a, &summarize(&[1.0, 1.1, 0.9]).unwrap()).is_none(), "n < 6: no median interval");
    }
}
