//! The dirsize preset: keep adding files to one directory, portion by portion, and find
//! the knee where the per-file cost jumps (published: a folder slows by ≥ 23.7% past
//! 200–300 k files).

use crate::analysis::stats::median;
use crate::report::ResultSet;
use crate::tree::{Layout, SizeDist, TreeSpec};
use crate::units::sig3;
use serde::Serialize;

/// Per-file cost must rise this much, and stay up, to count as a knee.
pub const KNEE_RISE: f64 = 0.20;

pub fn tree(max: u64, size: u64, shape: &TreeSpec) -> TreeSpec {
    TreeSpec { files: max, size: SizeDist::Fixed { bytes: size }, layout: Layout::Flat, ..shape.clone() }
}

/// Seconds per portion for one measurement: time between the points where the running
/// total crosses k·portion (linear interpolation inside a recorded portion).
pub fn per_portion(portions: &[crate::measure::Portion], portion: u64, total: u64) -> Vec<f64> {
    let mut cum = vec![(0u64, 0.0f64)];
    let mut t = 0.0;
    for p in portions {
        t += p.elapsed_s;
        cum.push((p.end_files, t));
    }
    let at = |f: u64| -> f64 {
        let i = cum.partition_point(|c| c.0 < f);
        if i >= cum.len() {
            return cum.last().map_or(0.0, |c| c.1);
        }
        if i == 0 || cum[i].0 == f {
            return cum[i].1;
        }
        let (a, b) = (cum[i - 1], cum[i]);
        a.1 + (b.1 - a.1) * (f - a.0) as f64 / (b.0 - a.0).max(1) as f64
    };
    let n = total / portion.max(1);
    (1..=n).map(|k| at(k * portion) - at((k - 1) * portion)).collect()
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Knee {
    /// Files already in the directory when the cost rose.
    pub at_files: u64,
    pub before_us_per_file: f64,
    pub after_us_per_file: f64,
    pub rise: f64,
}

/// The first portion from which the per-file cost stays ≥ KNEE_RISE above the first
/// portions' (median of the first three), judged by the median of the rest.
pub fn knee(per_file_s: &[f64], portion: u64) -> Option<Knee> {
    if per_file_s.len() < 4 {
        return None;
    }
    let base = median(&per_file_s[..3]);
    for k in 3..per_file_s.len() {
        let after = median(&per_file_s[k..]);
        if per_file_s[k] > base * (1.0 + KNEE_RISE) && after > base * (1.0 + KNEE_RISE) {
            return Some(Knee {
                at_files: k as u64 * portion,
                before_us_per_file: base * 1e6,
                after_us_per_file: after * 1e6,
                rise: after / base - 1.0,
            });
        }
    }
    None
}

/// Per target: per-file cost by portion (median over runs), and the knee.
pub fn report(rs: &ResultSet, portion: u64) -> String {
    let mut out = String::new();
    for target in &rs.targets {
        let runs: Vec<Vec<f64>> = rs
            .measurements
            .iter()
            .filter(|m| m.op == "create" && m.target == target.id && m.result.complete())
            .map(|m| per_portion(&m.result.portions, portion, m.tree_files))
            .collect();
        let Some(n) = runs.iter().map(Vec::len).min() else { continue };
        if n == 0 {
            continue;
        }
        let per_file: Vec<f64> =
            (0..n).map(|k| median(&runs.iter().map(|r| r[k]).collect::<Vec<_>>()) / portion as f64).collect();
        let mut t = comfy_table::Table::new();
        t.load_style(comfy_table::presets::UTF8_BORDERS_ONLY);
        t.set_header(vec!["files in dir", "µs per file (median of runs)", "min … max of runs"]);
        // At most ~25 rows: every k-th portion.
        let stride = n.div_ceil(25).max(1);
        for k in (0..n).step_by(stride) {
            let vals: Vec<f64> = runs.iter().map(|r| r[k] / portion as f64 * 1e6).collect();
            let lo = vals.iter().cloned().fold(f64::INFINITY, f64::min);
            let hi = vals.iter().cloned().fold(0.0, f64::max);
            t.add_row(vec![
                format!("{} … {}", k as u64 * portion, (k as u64 + 1) * portion),
                sig3(per_file[k] * 1e6),
                format!("{} … {}", sig3(lo), sig3(hi)),
            ]);
        }
        out.push_str(&format!("target {} ({} runs)\n{t}\n", target.id, runs.len()));
        match knee(&per_file, portion) {
            Some(k) => out.push_str(&format!(
                "knee: past {} files the per-file cost rises {}% ({} → {} µs per file, medians)\n",
                k.at_files,
                sig3(k.rise * 100.0),
                sig3(k.before_us_per_file),
                sig3(k.after_us_per_file)
            )),
            None => out.push_str(&format!(
                "no knee: the per-file cost never stays {}% above the first portions' up to {} files\n",
                (KNEE_RISE * 100.0) as u32,
                n as u64 * portion
            )),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::Portion;

    #[test]
    fn per_portion_resamples_uneven_portions() {
        let p = vec![
            Portion { files: 150, elapsed_s: 1.5, end_files: 150 },
            Portion { files: 50, elapsed_s: 0.5, end_files: 200 },
            Portion { files: 100, elapsed_s: 2.0, end_files: 300 },
        ];
        let v = per_portion(&p, 100, 300);
        assert_eq!(v.len(), 3);
        assert!((v[0] - 1.0).abs() < 1e-9 && (v[1] - 1.0).abs() < 1e-9 && (v[2] - 2.0).abs() < 1e-9, "{v:?}");
    }

    #[test]
    fn finds_a_sustained_knee_only() {
        let mut v = vec![1e-6; 10];
        v.extend(vec![1.5e-6; 10]);
        let k = knee(&v, 1000).unwrap();
        assert_eq!(k.at_files, 10_000);
        assert!((k.rise - 0.5).abs() < 1e-9);
        let mut spike = vec![1e-6; 20];
        spike[12] = 5e-6; // one slow portion is noise, not a knee
        assert!(knee(&spike, 1000).is_none());
        assert!(knee(&[1e-6, 2e-6], 1000).is_none());
    }
}
