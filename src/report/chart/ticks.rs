//! Axis ticks and their labels: ratio axes (round ratios around 1×), log axes (a tick on
//! every decade), counts as integers with k/M/G, times as round figures.

use crate::units::sig3;

/// Ticks for a ratio axis over [lo, hi]: 1× and round ratios on both sides of it, the
/// coarsest first (×/÷ 2 and 10, then 1.25, 5 and 20, then 1.1 and 1.5 …), as many
/// tiers as keep it at most 9 ticks (at least one tier beyond 1×).
pub fn ratio_ticks(lo: f64, hi: f64) -> Vec<f64> {
    const TIERS: [&[f64]; 4] = [
        &[1.0],
        &[0.01, 0.1, 0.5, 2.0, 10.0, 100.0],
        &[0.02, 0.05, 0.2, 0.8, 1.25, 5.0, 20.0, 50.0],
        &[0.33, 0.67, 0.9, 1.1, 1.5, 3.0],
    ];
    let mut keys: Vec<f64> = Vec::new();
    for (i, tier) in TIERS.iter().enumerate() {
        let more: Vec<f64> = tier.iter().copied().filter(|t| *t >= lo && *t <= hi).collect();
        if i >= 2 && keys.len() >= 3 && keys.len() + more.len() > 9 {
            break;
        }
        keys.extend(more);
    }
    keys.sort_by(f64::total_cmp);
    keys
}

/// `0.5×`, `1×`, `1.25×`: a ratio with 3 significant digits, trailing zeros dropped.
pub fn ratio_label(v: f64) -> String {
    format!("{}×", trim_zeros(&sig3(v)))
}

/// `10.0` → `10`, `1.50` → `1.5`: a decimal without the zeros that say nothing.
fn trim_zeros(s: &str) -> &str {
    if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.') } else { s }
}

/// A time tick: `1 ms`, `10 ms`, `250 µs` (3 significant digits, trailing zeros dropped).
pub fn secs_label(v: f64) -> String {
    let s = crate::units::fmt_secs(v);
    match s.split_once(' ') {
        Some((num, unit)) => format!("{} {unit}", trim_zeros(num)),
        None => s,
    }
}

/// A count tick, as an integer with k, M, G for thousands: `1`, `10`, `100`, `1k`,
/// `20k`, `1.5M` (below 1, where an axis's margin reaches: `0.7`).
pub fn count_label(v: f64) -> String {
    let a = v.abs();
    if a < 1.0 {
        return trim_zeros(&sig3(v)).to_string();
    }
    let (scaled, suffix) = match a {
        _ if a >= 1e9 => (v / 1e9, "G"),
        _ if a >= 1e6 => (v / 1e6, "M"),
        _ if a >= 1e3 => (v / 1e3, "k"),
        _ => (v.round(), ""),
    };
    format!("{}{suffix}", trim_zeros(&sig3(scaled)))
}

/// Key points of a log axis over [lo, hi]: every power of ten inside it, so every decade
/// is labelled (plotters' own pick skips decades and adds unround ticks between them);
/// where the range holds fewer than two, 2× and 5× of them too, then 1.5×, 3× and 7×.
pub fn decade_ticks(lo: f64, hi: f64) -> Vec<f64> {
    const TIERS: [&[f64]; 3] = [&[1.0], &[2.0, 5.0], &[1.5, 3.0, 7.0]];
    if !(lo > 0.0 && hi > lo && hi.is_finite()) {
        return Vec::new();
    }
    let (first, last) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    let mut keys: Vec<f64> = Vec::new();
    for tier in TIERS {
        for e in first..=last {
            // Exact powers of ten (10f64.powi(-3) is 0.0010000000000000002).
            let decade = if e >= 0 { 10f64.powi(e) } else { 1.0 / 10f64.powi(-e) };
            keys.extend(tier.iter().map(|m| m * decade).filter(|k| *k >= lo && *k <= hi));
        }
        if keys.len() >= 2 {
            break;
        }
    }
    keys.sort_by(f64::total_cmp);
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratio_axis_ticks_span_the_ratios() {
        // A forest plot's range always holds 1 with margins of 1.6× around it.
        assert_eq!(ratio_ticks(0.6, 1.7), vec![0.67, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5]);
        assert_eq!(ratio_ticks(0.3, 3.5), vec![0.5, 0.8, 1.0, 1.25, 2.0]);
        assert_eq!(ratio_ticks(0.05, 20.0), vec![0.1, 0.5, 1.0, 2.0, 10.0]);
        let labels: Vec<String> = [0.5, 0.8, 1.0, 1.25, 2.0, 10.0].map(ratio_label).to_vec();
        assert_eq!(labels, ["0.5×", "0.8×", "1×", "1.25×", "2×", "10×"]);
    }

    #[test]
    fn log_axes_label_every_decade_and_counts_as_integers() {
        // A ladder's file axis (1 … 65,536 files with the chart's 1.6× margins).
        let x = decade_ticks(1.0 / 1.6, 65536.0 * 1.6);
        assert_eq!(x, vec![1.0, 10.0, 100.0, 1e3, 1e4, 1e5]);
        let labels: Vec<String> = x.iter().map(|v| count_label(*v)).collect();
        assert_eq!(labels, ["1", "10", "100", "1k", "10k", "100k"]);
        assert_eq!([2e3, 1.5e6, 0.0, 20.0, 3e9].map(count_label), ["2k", "1.5M", "0", "20", "3G"]);
        // A create chart's time axis (2 ms … 5 s): the 10–100 ms decade has its label.
        let y = decade_ticks(0.002 / 1.6, 5.0 * 1.6);
        assert_eq!(y, vec![0.01, 0.1, 1.0]);
        let labels: Vec<String> = y.iter().map(|v| secs_label(*v)).collect();
        assert_eq!(labels, ["10 ms", "100 ms", "1 s"]);
        assert_eq!([0.001, 1e-4, 0.25, 60.0].map(secs_label), ["1 ms", "100 µs", "250 ms", "60 s"]);
        // Less than a decade: 2× and 5× of it too, or finer.
        assert_eq!(decade_ticks(0.6, 3.0), vec![1.0, 2.0]);
        assert_eq!(decade_ticks(2.1, 5.4), vec![3.0, 5.0]);
        assert_eq!(decade_ticks(1.1, 2.9).len(), 2);
        assert!(decade_ticks(0.0, 1.0).is_empty());
    }
}
