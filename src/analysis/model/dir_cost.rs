//! The directory-size cost `d` in words a user acts on (issue 40): found, with its 95%
//! interval and what it means — one folder of F files against ten folders of F/10, both
//! timed by the fit (`a folder of 65,536 files costs N× ten folders of 6,554`) —, shown
//! to be ≈ 0, or not resolved and why.
//!
//! F is the largest file count the model was fitted on (a ladder's largest rung), the
//! bytes those trees held. A d that did not enter the model is judged from its
//! unconstrained fit beside the chosen terms (`TermCheck`): ≈ 0 when the upper end of
//! its 95% interval makes the one folder at most [`NEGLIGIBLE`] slower than with d = 0,
//! unresolved otherwise.

use super::{COVARIATES, CostModel, P, TermCheck};
use crate::units::sig3;

/// Largest share the upper end of d's interval may add to the one folder's time for d to
/// be called ≈ 0: a tenth, below what a fit that passes its check may miss a cell by.
pub const NEGLIGIBLE: f64 = 0.10;

/// What d means at one folder of `files` files against ten folders of a tenth each.
#[derive(Debug, Clone, PartialEq)]
pub struct Folders {
    pub files: f64,
    /// Time of the one folder over the ten folders', by the fit.
    pub ratio: f64,
    /// 95% interval of `ratio` (delta method on its logarithm with the coefficients'
    /// covariance; None without degrees of freedom).
    pub interval: Option<[f64; 2]>,
    /// Most files per directory in a measured tree (Σn²/files at its largest), when below
    /// `files`: the sentence then extrapolates.
    pub largest_measured: Option<f64>,
}

/// The verdict on d.
#[derive(Debug, Clone, PartialEq)]
pub enum DirCost {
    /// d entered the model: its value, 95% interval and meaning.
    Found { d: f64, interval: Option<[f64; 2]>, folders: Folders, check: Option<TermCheck> },
    /// d did not enter and the upper end of its interval, `upper`, is negligible:
    /// `folders` at d = upper (its ratio the most the one folder can cost).
    Zero { upper: f64, folders: Folders },
    /// Neither: why, in words.
    Unresolved { why: String },
}

/// The verdict on `m`'s d; None when no tree's directory sizes are known (Σn² = 0).
pub fn dir_cost(m: &CostModel) -> Option<DirCost> {
    if !m.cell_covariates.iter().any(|c| c[3] > 0.0) {
        return None;
    }
    let (files, bytes) = largest_tree(&m.cell_covariates);
    let t = |df: usize| super::super::stats::t_quantile_975(df);
    if m.per_dir_entry_s > 0.0 {
        let folders = folders(m, files, bytes, m.per_dir_entry_s, true);
        return Some(DirCost::Found {
            d: m.per_dir_entry_s,
            interval: m.interval95(3),
            folders,
            check: m.per_dir_entry_check.clone(),
        });
    }
    let Some(c) = &m.per_dir_entry_check else {
        return Some(DirCost::Unresolved {
            why: "no fit with it beside the chosen terms: the trees' folder sizes do not vary apart from their file and directory counts (or the result file predates this check) — measure flat trees beside nested ones (--flat)".into(),
        });
    };
    if c.df == 0 {
        return Some(DirCost::Unresolved { why: "too few tree shapes to give it an interval".into() });
    }
    let upper = (c.estimate_s + t(c.df) * c.se_s).max(0.0);
    let at_upper = folders(m, files, bytes, upper, false);
    let at_zero = folders(m, files, bytes, 0.0, false);
    let added = at_upper.ratio / at_zero.ratio - 1.0;
    if added <= NEGLIGIBLE {
        return Some(DirCost::Zero { upper, folders: at_upper });
    }
    let n = count(files);
    let why = if c.se_s > 0.0 && c.estimate_s / c.se_s >= super::DIR_T_MIN && c.left_out_with >= c.left_out_without {
        format!(
            "d = {} ± {} (s.e.) is above 2 s.e., but the fit with it predicts the trees it leaves out no better ({} with it, {} without)",
            per_pair(c.estimate_s),
            per_pair(c.se_s),
            log_pct(c.left_out_with),
            log_pct(c.left_out_without)
        )
    } else {
        format!(
            "d = {} ± {} (s.e.): its 95% interval reaches {}, at which a folder of {n} files would cost {}× ten folders of {} ({} more than with d = 0)",
            per_pair(c.estimate_s),
            per_pair(c.se_s),
            per_pair(upper),
            sig3(at_upper.ratio),
            count(files / 10.0),
            super::check::pct(added)
        )
    };
    Some(DirCost::Unresolved { why })
}

/// The cell with the most files, and the most bytes among those.
fn largest_tree(cells: &[[f64; COVARIATES]]) -> (f64, f64) {
    let files = cells.iter().map(|c| c[0]).fold(0.0, f64::max);
    let bytes = cells.iter().filter(|c| c[0] == files).map(|c| c[1]).fold(0.0, f64::max);
    (files, bytes)
}

/// One folder of `files` files against ten of a tenth each, by `m` with d replaced by
/// `d`; the interval (from the covariance) only when `with_interval`.
fn folders(m: &CostModel, files: f64, bytes: f64, d: f64, with_interval: bool) -> Folders {
    let tenth = files / 10.0;
    let one: [f64; P] = [files, bytes, 0.0, files * files, 1.0];
    let ten: [f64; P] = [files, bytes, 10.0, 10.0 * tenth * tenth, 1.0];
    let time =
        |g: &[f64; P]| m.per_file_s * g[0] + m.per_byte_s * g[1] + m.per_dir_s * g[2] + d * g[3] + m.per_run_s * g[4];
    let (s1, s10) = (time(&one), time(&ten));
    let ratio = if s10 > 0.0 { s1 / s10 } else { 1.0 };
    let interval = (with_interval && m.df > 0 && s1 > 0.0 && s10 > 0.0).then(|| {
        // ln(s1/s10): gradient g1/s1 − g10/s10 against the coefficients.
        let grad: [f64; P] = std::array::from_fn(|j| one[j] / s1 - ten[j] / s10);
        let var = super::quad(&grad, &m.covariance).max(0.0);
        let h = super::super::stats::t_quantile_975(m.df) * var.sqrt();
        [ratio * (-h).exp(), ratio * h.exp()]
    });
    let measured =
        m.cell_covariates.iter().filter(|c| c[0] > 0.0 && c[3] > 0.0).map(|c| c[3] / c[0]).fold(0.0, f64::max);
    Folders { files, ratio, interval, largest_measured: (measured < files * 0.999).then_some(measured) }
}

/// `24.7 ns` or `51.0 ps` (a pair of files in one folder).
fn per_pair(d: f64) -> String {
    if d.abs() >= 1e-9 { format!("{} ns", sig3(d * 1e9)) } else { format!("{} ps", sig3(d * 1e12)) }
}

/// `65,536`: a file count, rounded, with thousands separated.
pub fn count(x: f64) -> String {
    let digits = format!("{}", x.round().max(0.0) as u64);
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// A root-mean-square log error as the relative error it stands for (`12%`).
fn log_pct(e: f64) -> String {
    super::check::pct(e.exp() - 1.0)
}

impl Folders {
    /// `a folder of 4,096 files costs 2.90× [2.41 – 3.49] ten folders of 410`, with `at
    /// most` for an upper bound, and where it extrapolates.
    fn sentence(&self, at_most: bool) -> String {
        let iv = self.interval.map_or(String::new(), |[lo, hi]| format!(" [{} – {}]", sig3(lo), sig3(hi)));
        let most = if at_most { "at most " } else { "" };
        let beyond = self.largest_measured.map_or(String::new(), |n| {
            format!(" (beyond the largest folder measured, {} files: the fit's n² extrapolates)", count(n))
        });
        format!(
            "a folder of {} files costs {most}{}×{iv} ten folders of {}{beyond}",
            count(self.files),
            sig3(self.ratio),
            count(self.files / 10.0)
        )
    }
}

impl DirCost {
    /// One line: `d = … per pair of files in one folder: a folder of … costs N× …`,
    /// `d ≈ 0 (resolved: interval …)` or `d not resolved: …`.
    pub fn text(&self) -> String {
        match self {
            DirCost::Found { d, interval, folders, check } => {
                let (scale, unit) = if d.abs() >= 1e-9 { (1e9, "ns") } else { (1e12, "ps") };
                let iv = interval.map_or(" (no interval)".into(), |[lo, hi]| {
                    format!(" [{} – {} {unit}]", sig3(lo * scale), sig3(hi * scale))
                });
                let cv = check.as_ref().map_or(String::new(), |c| {
                    format!(
                        " (left-out error {} with d, {} without)",
                        log_pct(c.left_out_with),
                        log_pct(c.left_out_without)
                    )
                });
                format!(
                    "d = {} {unit}{iv} per pair of files in one folder: {}{cv}",
                    sig3(d * scale),
                    folders.sentence(false)
                )
            }
            DirCost::Zero { upper, folders } => {
                format!("d ≈ 0 (resolved: interval 0 – {}; {})", per_pair(*upper), folders.sentence(true))
            }
            DirCost::Unresolved { why } => format!("d not resolved: {why}"),
        }
    }
}
