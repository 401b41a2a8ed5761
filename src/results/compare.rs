//! A/B comparison of two result sets: for every cell measured in both, the ratio of
//! times B/A with a 95% CI and a verdict, so a storage regression can gate a pipeline.
//!
//! With 6 runs or more on both sides the ratio is of the medians, on a log scale, and
//! its interval combines the medians' distribution-free intervals ([`log_ratio`]). With
//! fewer runs there is no such interval: the ratio is of the means, its interval by the
//! delta method on its logarithm (the `basis` field says which). Either way the verdict
//! follows the printed interval — "slower"/"faster" exactly when it excludes 1, and the
//! p-value (mean basis) is of the same statistic — so a line never shows an interval
//! that excludes 1 beside "no significant difference". Every verdict is per cell at the
//! 95% level: among N cells about N/20 may differ by chance, which the table says.

use crate::analysis::stats::{Summary, log_ratio, t_quantile_975};
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
    /// The interval lies within the `--equivalence` margin: the same within it.
    Equivalent,
    NoSignificantDifference,
    /// Fewer than 2 runs on a side: no test possible.
    TooFewRuns,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::Equivalent => "same within the margin",
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

/// The verdict an interval of B/A gives: slower or faster when it excludes 1, the same
/// within `equivalence` (a fraction: 0.05 = ±5%) when it lies inside
/// [1/(1 + e), 1 + e], else no significant difference.
pub fn verdict_of(ci: Option<[f64; 2]>, equivalence: Option<f64>) -> Verdict {
    let Some([lo, hi]) = ci else { return Verdict::TooFewRuns };
    if lo > 1.0 {
        Verdict::Slower
    } else if hi < 1.0 {
        Verdict::Faster
    } else if equivalence.is_some_and(|e| lo >= 1.0 / (1.0 + e) && hi <= 1.0 + e) {
        Verdict::Equivalent
    } else {
        Verdict::NoSignificantDifference
    }
}

/// Mean basis: the two-sided p-value of the log ratio of the means, the statistic whose
/// interval [`ratio_ci`] prints (t = ln ratio / se with the same df), so p < 0.05
/// exactly when that interval excludes 1. `None` without an interval.
pub fn ratio_p(a: &Summary, b: &Summary) -> Option<f64> {
    if a.n < 2 || b.n < 2 || a.mean_s <= 0.0 || b.mean_s <= 0.0 {
        return None;
    }
    let ua = a.stddev_s.powi(2) / (a.n as f64 * a.mean_s * a.mean_s);
    let ub = b.stddev_s.powi(2) / (b.n as f64 * b.mean_s * b.mean_s);
    let se2 = ua + ub;
    let lr = (b.mean_s / a.mean_s).ln();
    if se2 <= 0.0 {
        return Some(if lr == 0.0 { 1.0 } else { 0.0 });
    }
    let df = (se2 * se2 / (ua * ua / (a.n - 1) as f64 + ub * ub / (b.n - 1) as f64)).floor().max(1.0);
    let dist = StudentsT::new(0.0, 1.0, df).ok()?;
    Some((2.0 * (1.0 - dist.cdf(lr.abs() / se2.sqrt()))).clamp(0.0, 1.0))
}

/// Every (target, op, tree) summarised in both sets. Targets are matched by id; when
/// no id is shared and each set has one target, those two are compared (A/B of two
/// storage systems measured apart).
pub fn compare(a: &ResultSet, b: &ResultSet, equivalence: Option<f64>) -> Vec<Comparison> {
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
        let (basis, ratio, ratio_ci95, p_value) = match median_ratio(&x.stats, &y.stats) {
            Some((r, ci, _)) => ("median", r, Some(ci), None),
            None => {
                let (r, ci) = ratio_ci(&x.stats, &y.stats);
                ("mean", r, ci, ratio_p(&x.stats, &y.stats))
            }
        };
        let verdict = verdict_of(ratio_ci95, equivalence);
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

/// Comparisons whose interval says B is slower by more than `pct` percent: the lower end
/// of B/A's 95% interval is past 1 + pct/100.
pub fn regressions(cs: &[Comparison], pct: f64) -> Vec<&Comparison> {
    cs.iter().filter(|c| c.ratio_ci95.is_some_and(|[lo, _]| (lo - 1.0) * 100.0 > pct)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::stats::summarize;

    #[test]
    fn verdicts_on_known_differences() {
        let base = [1.00, 1.02, 0.98, 1.01, 0.99];
        let a = summarize(&base).unwrap();
        let slow = summarize(&base.map(|x| x * 1.3)).unwrap();
        let fast = summarize(&base.map(|x| x * 0.7)).unwrap();
        let same = summarize(&[1.01, 0.99, 1.00, 1.02, 0.98]).unwrap();
        let v = |a: &Summary, b: &Summary| verdict_of(ratio_ci(a, b).1, None);
        assert_eq!(v(&a, &slow), Verdict::Slower);
        assert_eq!(v(&a, &fast), Verdict::Faster);
        assert_eq!(v(&a, &same), Verdict::NoSignificantDifference);
        assert_eq!(verdict_of(ratio_ci(&a, &same).1, Some(0.05)), Verdict::Equivalent);
        assert_eq!(verdict_of(ratio_ci(&a, &slow).1, Some(0.05)), Verdict::Slower);
        let (r, ci) = ratio_ci(&a, &slow);
        let [lo, hi] = ci.unwrap();
        assert!((r - 1.3).abs() < 1e-12 && lo < 1.3 && hi > 1.3 && lo > 1.2 && hi < 1.4, "{lo} {hi}");
        assert_eq!(v(&a, &summarize(&[2.0]).unwrap()), Verdict::TooFewRuns);
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

    #[test]
    fn the_verdict_and_p_follow_the_printed_interval() {
        // A target 32 times faster with few, scattered runs (issue 27: the interval
        // 0.003 … 0.285 excluded 1 while Welch on the means said "no difference").
        let a = summarize(&[0.9, 3.1, 0.2]).unwrap();
        let b = summarize(&[0.01, 0.06, 0.056]).unwrap();
        let (_, ci) = ratio_ci(&a, &b);
        let [lo, hi] = ci.unwrap();
        let p = ratio_p(&a, &b).unwrap();
        assert_eq!(hi < 1.0, p < ALPHA, "{lo} … {hi}, p {p}");
        assert_eq!(verdict_of(ci, None) == Verdict::Faster, hi < 1.0);
        // Over many random pairs, interval and p never disagree.
        let mut x: u64 = 7;
        let mut r = || {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 11) as f64 / (1u64 << 53) as f64
        };
        for _ in 0..2000 {
            let n = 2 + (r() * 4.0) as usize;
            let scale = 0.5 + 2.0 * r();
            let xs: Vec<f64> = (0..n).map(|_| 1.0 + 0.5 * r()).collect();
            let ys: Vec<f64> = (0..n).map(|_| scale * (1.0 + 0.5 * r())).collect();
            let (a, b) = (summarize(&xs).unwrap(), summarize(&ys).unwrap());
            let [lo, hi] = ratio_ci(&a, &b).1.unwrap();
            let p = ratio_p(&a, &b).unwrap();
            let excludes = lo > 1.0 || hi < 1.0;
            // At the boundary itself rounding may go either way.
            if (p - ALPHA).abs() > 1e-9 {
                assert_eq!(excludes, p < ALPHA, "{xs:?} {ys:?}: {lo} … {hi}, p {p}");
            }
        }
    }

    #[test]
    fn the_gate_fires_on_the_interval_not_the_point() {
        let c = |ratio: f64, lo: f64, hi: f64| Comparison {
            target_a: "a".into(),
            target_b: "a".into(),
            op: "create".into(),
            tree_key: "t".into(),
            mean_a_s: 1.0,
            mean_b_s: ratio,
            median_a_s: 1.0,
            median_b_s: ratio,
            n_a: 10,
            n_b: 10,
            basis: "median",
            ratio,
            ratio_ci95: Some([lo, hi]),
            p_value: None,
            verdict: verdict_of(Some([lo, hi]), None),
        };
        // 20% slower but the interval reaches down to 1.08: not past 10%.
        let cs = [c(1.2, 1.08, 1.35), c(1.3, 1.12, 1.5), c(0.8, 0.7, 0.9)];
        let bad: Vec<f64> = regressions(&cs, 10.0).iter().map(|c| c.ratio).collect();
        assert_eq!(bad, vec![1.3]);
        assert_eq!(regressions(&cs, 0.0).len(), 2);
    }
}
