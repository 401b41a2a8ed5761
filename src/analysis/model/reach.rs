//! How far a tree lies from the trees a model was calibrated on, judged jointly.
//!
//! Every tree is a point of four log features: ln files, ln bytes, ln directories
//! (below the root) and ln of the file-weighted mean directory size Σn²/files (how many
//! files a file shares its directory with). The calibrated cells are a cloud of such
//! points; a tree's distance from the cloud's centre is its Mahalanobis distance
//! `D(u) = √((u − ū)ᵀ(C + δ²I)⁻¹(u − ū))` (C the cells' covariance; the leverage of a
//! linear model on these features is `1/m + D²/m`). The tree is an extrapolation when
//! `D` exceeds 1.1 × the largest `D` of a cell: every point inside the cells' convex hull
//! has a `D` at most the largest cell's (D² is convex), so nothing inside is flagged,
//! and the 10% spares a tree barely past the outermost cell (issue 27: 1.01× the
//! calibrated size flagged every row).
//!
//! δ = ln 1.1: the ridge keeps C invertible when the cells did not vary in some
//! direction (a ladder keeps its bytes fixed): a tree off the cells in such a direction
//! is flagged once it lies about 20% or more off them, not at rounding.
//!
//! The report names the features outside the cells' own range, as factors ("70× the
//! calibrated range on directories"), largest first; a tree outside jointly but inside
//! every range is said to be so.

use super::COVARIATES;
use crate::analysis::linalg::invert_spd;
use serde::{Deserialize, Serialize};

/// Feature names, in [`features`] order.
pub const FEATURES: [&str; 4] = ["files", "bytes", "directories", "files per directory"];

/// Ridge of the cells' covariance (see the module docs).
const DELTA: f64 = 0.095_310_179_804_324_87; // ln 1.1

/// Beyond this multiple of the farthest cell's distance, a tree is an extrapolation.
pub const OUTSIDE_RATIO: f64 = 1.1;

/// A tree against the calibrated cells.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reach {
    /// The tree's distance from the cells' centre over the farthest cell's (≤ 1 inside
    /// the ellipsoid through the farthest cell).
    pub distance_ratio: f64,
    /// `distance_ratio` > [`OUTSIDE_RATIO`].
    pub outside: bool,
    /// Features outside the cells' range: (name, factor beyond it: x/max, or min/x
    /// when below), largest factor first.
    pub beyond: Vec<(String, f64)>,
}

/// (ln files, ln bytes, ln dirs, ln Σn²/files), each argument at least 1. Σn² = 0 means
/// unknown (older inventories and results): files per directory is then files/dirs.
pub fn features(g: &[f64; COVARIATES]) -> [f64; 4] {
    let [files, bytes, dirs, dir_sq] = *g;
    let l = |x: f64| x.max(1.0).ln();
    let per_dir = if dir_sq > 0.0 && files > 0.0 { dir_sq / files } else { files / dirs.max(1.0) };
    [l(files), l(bytes), l(dirs), l(per_dir)]
}

/// Where `g` lies against `cells` (None without cells).
pub fn reach(cells: &[[f64; COVARIATES]], g: [f64; COVARIATES]) -> Option<Reach> {
    if cells.is_empty() {
        return None;
    }
    let us: Vec<[f64; 4]> = cells.iter().map(features).collect();
    let m = us.len() as f64;
    let mean: [f64; 4] = std::array::from_fn(|j| us.iter().map(|u| u[j]).sum::<f64>() / m);
    let mut cov = vec![vec![0.0; 4]; 4];
    for u in &us {
        for i in 0..4 {
            for j in 0..4 {
                cov[i][j] += (u[i] - mean[i]) * (u[j] - mean[j]) / m;
            }
        }
    }
    for (i, r) in cov.iter_mut().enumerate() {
        r[i] += DELTA * DELTA;
    }
    // invert_spd wants a unit diagonal: scale by it and back.
    let d: Vec<f64> = (0..4).map(|i| cov[i][i].sqrt()).collect();
    let unit: Vec<Vec<f64>> = (0..4).map(|i| (0..4).map(|j| cov[i][j] / (d[i] * d[j])).collect()).collect();
    let inv = invert_spd(unit)?;
    let dist = |u: &[f64; 4]| {
        let x: [f64; 4] = std::array::from_fn(|i| (u[i] - mean[i]) / d[i]);
        let mut q = 0.0;
        for i in 0..4 {
            for j in 0..4 {
                q += x[i] * inv[i][j] * x[j];
            }
        }
        q.max(0.0).sqrt()
    };
    let farthest = us.iter().map(dist).fold(0.0, f64::max);
    let u0 = features(&g);
    let d0 = dist(&u0);
    // Cells all alike: any distance is measured against the ridge alone (D of a tree
    // 10% off in one feature is 1).
    let distance_ratio = d0 / farthest.max(1.0);
    let mut beyond: Vec<(String, f64)> = Vec::new();
    for (j, name) in FEATURES.iter().enumerate() {
        let lo = us.iter().map(|u| u[j]).fold(f64::INFINITY, f64::min);
        let hi = us.iter().map(|u| u[j]).fold(f64::NEG_INFINITY, f64::max);
        let out = if u0[j] > hi { u0[j] - hi } else { (lo - u0[j]).max(0.0) };
        if out > 1e-12 {
            beyond.push((name.to_string(), out.exp()));
        }
    }
    beyond.sort_by(|a, b| b.1.total_cmp(&a.1));
    let distance_ratio = if distance_ratio.is_finite() { distance_ratio } else { f64::MAX };
    Some(Reach { distance_ratio, outside: distance_ratio > OUTSIDE_RATIO, beyond })
}

impl Reach {
    /// "70× the calibrated range on directories, 1.3× on files", or why it is outside
    /// jointly; empty when inside.
    pub fn explain(&self) -> String {
        if !self.outside {
            return String::new();
        }
        let f = |x: f64| crate::units::sig3(x);
        let mut parts = self.beyond.iter();
        match parts.next() {
            Some((name, x)) => {
                let mut s = format!("{}× the calibrated range on {name}", f(*x));
                for (n, x) in parts {
                    s.push_str(&format!(", {}× on {n}", f(*x)));
                }
                s
            }
            None => format!(
                "inside every feature's calibrated range, but its combination of files, bytes, directories and files per directory lies {}× farther from the calibrated trees than the farthest of them",
                f(self.distance_ratio)
            ),
        }
    }
}
