//! The `report` and `compare` commands: plain configs (made by cli.rs) and their runs.

use super::export::{self, Output};
use crate::error::{Error, Result};
use crate::results::ResultSet;
use crate::results::compare;
use std::path::PathBuf;

/// `manyfiles report`: result sets already read and checked.
#[derive(Debug)]
pub struct ReportConfig {
    pub files: Vec<PathBuf>,
    pub sets: Vec<ResultSet>,
    /// A `predict --json` file instead of result files (HTML only).
    pub predict: Option<(PathBuf, super::predict_html::PredictFile)>,
    pub html: Option<PathBuf>,
    pub png: Option<PathBuf>,
    pub exports: Vec<Output>,
    /// The view of an experiment by its name (`experiment::kinds::view`).
    pub views: fn(&str) -> &'static super::views::View,
}

/// Writes what was asked; returns the lines saying what was written.
pub fn run_report(cfg: ReportConfig) -> Result<String> {
    let sources: Vec<(String, crate::measure::provenance::Provenance)> =
        cfg.files.iter().zip(&cfg.sets).map(|(f, rs)| (f.display().to_string(), rs.provenance.clone())).collect();
    if let (Some((file, p)), Some(h)) = (&cfg.predict, &cfg.html) {
        let page = super::predict_html::render(p, &file.display().to_string()).map_err(Error::failed)?;
        crate::fs::output::write_file(h, page.as_bytes())?;
        return Ok(format!("html: {} (predictions)\n", h.display()));
    }
    let Some(rs) = super::combine::combine(cfg.sets) else {
        return Err(Error::bad("RESULTS.json", "no result file given"));
    };
    let view = (cfg.views)(&rs.experiment.name);
    let charts = view.charts(&rs);
    let png_path = |dir: &std::path::Path, c: &super::chart::Chart| dir.join(format!("{}.png", c.id));
    // Every chart's file is checked before anything is written: a file of that name
    // that is no manyfiles chart stops the report (exit 2, unless --force).
    if let Some(dir) = cfg.png.as_ref().filter(|d| d.is_dir()) {
        for c in &charts {
            crate::fs::output::check_path(&png_path(dir, c), false).map_err(|e| Error::bad("--png", e))?;
        }
    }
    let mut said = String::new();
    if let Some(h) = &cfg.html {
        let page = super::html::render(&rs, &sources, view).map_err(Error::failed)?;
        crate::fs::output::write_file(h, page.as_bytes())?;
        let plural = if charts.len() == 1 { "" } else { "s" };
        said.push_str(&format!("html: {} ({} chart{plural})\n", h.display(), charts.len()));
    }
    if let Some(dir) = &cfg.png {
        if !dir.is_dir() {
            std::fs::create_dir(dir).map_err(|e| Error::failed(format!("cannot create {}: {e}", dir.display())))?;
        }
        for c in &charts {
            let path = png_path(dir, c);
            // Drawn beside the final name, then renamed: a reader never sees half a PNG.
            let tmp = dir.join(format!(".{}.tmp-{}.png", c.id, std::process::id()));
            let r = super::chart::png(c, &tmp)
                .and_then(|_| crate::fs::output::check_path(&path, false))
                .and_then(|_| std::fs::rename(&tmp, &path).map_err(|e| e.to_string()));
            if let Err(e) = r {
                let _ = std::fs::remove_file(&tmp);
                return Err(Error::failed(format!("cannot write {}: {e}", path.display())));
            }
            said.push_str(&format!("png: {}\n", path.display()));
        }
    }
    export::write_all(&cfg.exports, &rs, export::Stage::Final).map_err(Error::failed)?;
    for o in &cfg.exports {
        said.push_str(&format!("{:?}: {}\n", o.format, o.path.display()).to_lowercase());
    }
    Ok(said)
}

/// `manyfiles compare A B`.
#[derive(Debug)]
pub struct CompareConfig {
    pub a_name: String,
    pub b_name: String,
    pub a: ResultSet,
    pub b: ResultSet,
    pub fail_if_slower_pct: Option<f64>,
    /// `--equivalence PCT`: a ratio interval within ±PCT% says "the same within PCT".
    pub equivalence_pct: Option<f64>,
    /// `--html FILE`: the comparison as a page too.
    pub html: Option<PathBuf>,
}

/// The comparison table, and an error (exit 1) when a regression passes the threshold
/// or when the files share no measurement.
pub fn run_compare(cfg: &CompareConfig) -> (String, Result<()>) {
    let cs = compare::compare(&cfg.a, &cfg.b, cfg.equivalence_pct.map(|p| p / 100.0));
    if cs.is_empty() {
        return (
            String::new(),
            Err(Error::bad("B.json", "no measurement (target, op, tree) is present in both files")),
        );
    }
    let mut text = super::compare::table(&cs, &cfg.a, &cfg.b, &cfg.a_name, &cfg.b_name, cfg.equivalence_pct);
    if let Some(h) = &cfg.html {
        let page = super::compare_html::render(&cs, &cfg.a, &cfg.b, (&cfg.a_name, &cfg.b_name), cfg.equivalence_pct)
            .map_err(Error::failed)
            .and_then(|page| crate::fs::output::write_file(h, page.as_bytes()));
        if let Err(e) = page {
            return (text, Err(e));
        }
        text.push_str(&format!("html: {}\n", h.display()));
    }
    let verdict = match cfg.fail_if_slower_pct {
        Some(pct) => {
            let bad = compare::regressions(&cs, pct);
            if bad.is_empty() {
                Ok(())
            } else {
                let worst = bad.iter().map(|c| c.ratio).fold(0.0, f64::max);
                Err(Error::failed(format!(
                    "{} measurement(s) slower by more than {pct}% at the low end of their 95% interval (worst: {}× the baseline)",
                    bad.len(),
                    crate::units::sig3(worst)
                )))
            }
        }
        None => Ok(()),
    };
    (text, verdict)
}

/// Where the model came from: file, command and machine (predictions carry provenance).
fn model_line(name: &str, rs: &ResultSet) -> String {
    format!(
        "model: {name} ({} experiment started {}) · {}",
        rs.experiment.name,
        rs.provenance.started_utc,
        rs.provenance.machine_line()
    )
}

/// The tree a prediction or plan is for.
#[derive(Debug)]
pub enum TreeInput {
    /// Walk this directory.
    Path(PathBuf),
    /// A saved inventory.
    Inventory(Box<crate::tree::inventory::Inventory>),
}

/// `manyfiles predict`.
#[derive(Debug)]
pub struct PredictConfig {
    pub model_name: String,
    pub model: ResultSet,
    pub tree: TreeInput,
    pub interval_s: Option<f64>,
    pub json: Option<PathBuf>,
    pub threads: usize,
    /// Predict the median of this many runs (1: a single run).
    pub runs_ahead: u32,
    /// Two-sided level of the printed intervals (`--level`; 0.95).
    pub level: f64,
    /// The model is a calibration made for this tree on this target (`--on`/`--fs`): say
    /// how to check it there.
    pub check_on: Option<CheckOn>,
    /// `--threads` given to a calibration: the check commands carry it.
    pub check_threads: Option<usize>,
    /// The tree's directory, when it was walked for a calibration: its check copy is
    /// `--cold` only where its storage is not memory.
    pub tree_path: Option<PathBuf>,
    /// An object store's calibration: the seconds an engine took to build its client,
    /// each time it was timed (`experiment::calibrate_objects`); empty otherwise.
    pub object_setup_s: Vec<f64>,
    /// `--prices`: an object store's requests and storage priced with this table
    /// (None: AWS S3 Standard's list prices).
    pub prices: Option<crate::results::prices::PriceTable>,
}

impl PredictConfig {
    /// What the predictions are of (`--runs-ahead`) and their intervals' level (`--level`).
    pub fn ahead(&self) -> crate::results::predict::Ahead {
        crate::results::predict::Ahead { runs: self.runs_ahead, level: self.level }
    }
}

/// Where a calibration ran: its check lines run on the same target, or one like it.
#[derive(Debug, Clone)]
pub enum CheckOn {
    /// `--on DIR`: the check copies into a fresh directory inside DIR.
    Dir(PathBuf),
    /// `--fs SPEC` (its canonical text): the check brings the same spec up with
    /// `manyfiles mount` in a fresh directory and takes it down after.
    Spec(String),
    /// `--fs s3…`/`azblob…`: the object-store engines' commands are predicted too (requests,
    /// price, time: `predict_objects`), and checked on a mount of the same spec.
    ObjectSpec(String),
    /// `--on s3://BUCKET/PREFIX` or `azblob://…` (and the `--s3-via DIR` it was reached
    /// through): the same, checked under a fresh prefix below PREFIX.
    ObjectUrl(String, Option<PathBuf>),
}

impl CheckOn {
    /// An object store's provider, by its spec's or URL's first word (`s3…`, `azblob…`);
    /// None for a file system.
    pub fn object_provider(&self) -> Option<crate::storage::object_stack::Provider> {
        use crate::storage::object_stack::Provider;
        match self {
            CheckOn::ObjectSpec(s) | CheckOn::ObjectUrl(s, _) => {
                Some(if s.starts_with(Provider::Azblob.name()) { Provider::Azblob } else { Provider::S3 })
            }
            CheckOn::Dir(_) | CheckOn::Spec(_) => None,
        }
    }
}

/// A prediction's settings before its model exists (`predict --on/--fs`: the
/// calibration makes the model, `experiment::calibrate::prediction`).
#[derive(Debug)]
pub struct PredictParts {
    pub tree: TreeInput,
    pub interval_s: Option<f64>,
    pub json: Option<PathBuf>,
    pub threads: usize,
    pub runs_ahead: u32,
    /// `--level` (see [`PredictConfig::level`]).
    pub level: f64,
    /// `--threads` as given: the calibration ran every op with it, so the checks need it.
    pub check_threads: Option<usize>,
    /// `--prices` (see [`PredictConfig::prices`]).
    pub prices: Option<crate::results::prices::PriceTable>,
}

fn write_json<T: serde::Serialize>(path: &std::path::Path, v: &T) -> Result<()> {
    let mut bytes = serde_json::to_vec_pretty(v).map_err(|e| Error::failed(e.to_string()))?;
    bytes.push(b'\n');
    crate::fs::output::write_file(path, &bytes)
}

/// The predictions' text, and an error (exit 1) when the tree could not be read whole:
/// the predictions then are for the part that could, and the text says so.
pub fn run_predict(cfg: &PredictConfig) -> (String, Result<()>) {
    let inv = match &cfg.tree {
        TreeInput::Path(p) => match crate::tree::inventory::Inventory::scan(p, cfg.threads) {
            Ok(inv) => std::borrow::Cow::Owned(inv),
            Err(e) => return (String::new(), Err(e)),
        },
        TreeInput::Inventory(i) => std::borrow::Cow::Borrowed(i.as_ref()),
    };
    let (text, usable) = match predictions(cfg, &inv) {
        Ok(t) => t,
        Err(e) => return (String::new(), Err(e)),
    };
    let verdict = complete(&inv).and_then(|()| match usable {
        Usable::None(n) => Err(Error::failed(format!(
            "none of the {n} predictions is usable: every fit failed its check (each row says why)"
        ))),
        Usable::Some => Ok(()),
    });
    (text, verdict)
}

/// Did any prediction come from a usable fit?
enum Usable {
    Some,
    /// None of these many rows (more than 0).
    None(usize),
}

/// An error naming what the walk of the tree could not read (exit 1, as `scan`), if
/// anything.
fn complete(inv: &crate::tree::inventory::Inventory) -> Result<()> {
    if inv.unreadable_dirs == 0 {
        return Ok(());
    }
    let dirs = match inv.unreadable_dirs {
        1 => "1 directory".to_string(),
        n => format!("{n} directories"),
    };
    Err(Error::failed(format!(
        "tree incomplete: {dirs} could not be read (permission denied?); the predictions are for the {} files \
         that could, not for the whole tree",
        inv.files
    )))
}

fn predictions(cfg: &PredictConfig, inv: &crate::tree::inventory::Inventory) -> Result<(String, Usable)> {
    use crate::results::predict::{self, Shape};
    let shape = Shape::from(inv);
    let rows = predict::predict(&cfg.model, &shape, cfg.interval_s, cfg.ahead());
    let usable = if rows.is_empty() || rows.iter().any(|r| r.usable) { Usable::Some } else { Usable::None(rows.len()) };
    let objects = match &cfg.check_on {
        Some(on @ (CheckOn::ObjectSpec(_) | CheckOn::ObjectUrl(..))) => {
            Some(super::predict_objects::section(cfg, inv, on)?)
        }
        _ => None,
    };
    if let Some(j) = &cfg.json {
        // The model's file, target labels and provenance: what `report --html` names.
        let targets: Vec<serde_json::Value> =
            cfg.model.targets.iter().map(|t| serde_json::json!({ "id": t.id, "label": t.shown() })).collect();
        let model =
            serde_json::json!({ "file": cfg.model_name, "targets": targets, "provenance": cfg.model.provenance });
        let mut doc = serde_json::json!({ "tree": shape, "interval_s": cfg.interval_s, "runs_ahead": cfg.runs_ahead, "level": cfg.level, "predictions": rows, "model": model });
        if let Some((_, o)) = &objects {
            doc["objects"] = o.clone(); // an object store's: the engines' commands
        }
        write_json(j, &doc)?;
    }
    let mut text =
        super::advice::predictions(&rows, &shape, &model_line(&cfg.model_name, &cfg.model), &cfg.model, cfg.ahead());
    if let Some(on) = &cfg.check_on {
        text.push_str(&too_wide(&rows, &cfg.model));
        match objects {
            Some((section, _)) => text.push_str(&section),
            None => text.push_str(&check_lines(cfg, on, inv)),
        }
    }
    if cfg.interval_s.is_some() && !rows.iter().any(|r| predict::is_sync(&r.op)) {
        text.push_str("note: --interval gives the recovery point of sync ops; this model has none\n");
    }
    Ok((text, usable))
}

/// Widest interval, as hi/lo, above which a calibration is called too short to pin the
/// prediction down.
const TOO_WIDE: f64 = 3.0;

/// A line when some prediction's interval is wider than ×[`TOO_WIDE`] (hi/lo): which one,
/// what the calibration spent of its budget, and the budget that would narrow it. The
/// run-to-run part of an interval narrows as 1/√runs, so in log terms the runs needed grow
/// as (ln W / ln 3)²; the model's misfit does not narrow with runs, so that is a floor.
fn too_wide(rows: &[crate::results::predict::PredictionRow], model: &ResultSet) -> String {
    let wide: Vec<_> = rows
        .iter()
        .filter(|r| r.usable) // an unusable row says why on its own
        .filter_map(|r| r.prediction.interval95.map(|[lo, hi]| (r, hi / lo)))
        .filter(|(_, w)| !w.is_finite() || *w > TOO_WIDE)
        .collect();
    let Some(&(row, w)) = wide.iter().max_by(|a, b| a.1.total_cmp(&b.1)) else { return String::new() };
    let target = model.targets.iter().find(|t| t.id == row.target).map_or(row.target.clone(), |t| t.shown());
    let more = (w.ln() / TOO_WIDE.ln()).powi(2).ceil();
    let budget = match &model.experiment.adaptive {
        Some(a) => format!(
            "it spent {} of its {} budget{}; about {:.0}× the runs would bring it to ×{TOO_WIDE}: try --max-time {}s",
            crate::units::fmt_secs(a.spent_s),
            crate::units::fmt_secs(a.max_time_s),
            if a.budget_spent { ", which stopped cells short of their precision" } else { "" },
            more.ceil(),
            (a.max_time_s * more).ceil() as u64
        ),
        None => format!("about {:.0}× its runs would bring it to ×{TOO_WIDE}", more.ceil()),
    };
    format!(
        "too wide: {} of {} intervals span more than ×{TOO_WIDE} (high over low; widest: {} on {}, ×{}): the \
         calibration was too short to pin them down ({budget}; the model's misfit, also in them, does not narrow \
         with more runs)\n",
        wide.len(),
        rows.len(),
        row.op,
        target,
        crate::units::sig3(w),
    )
}

/// The commands that check a calibrated prediction, one a line, to paste into a shell as
/// printed: the tree's real path (when it was walked), a destination that does not exist
/// yet (the copy makes it, the rm removes it), and for `--fs` the `mount`/`umount` of the
/// same spec around them.
fn check_lines(cfg: &PredictConfig, on: &CheckOn, inv: &crate::tree::inventory::Inventory) -> String {
    let t = cfg.check_threads.map(|n| format!(" --threads {n}")).unwrap_or_default();
    // Onto exFAT, FAT or NTFS the check's copy drops modes (and owners, fine times):
    // reported as losses, which fail the copy unless accepted.
    let lossy = match cfg.model.targets.iter().all(|t| t.keeps_posix_modes()) {
        true => "",
        false => " --lossy",
    };
    // --cold is refused on a memory file system (tmpfs, ramfs: nothing to evict), so the
    // check lines carry it only where the command would accept it.
    let on_memory = cfg.model.targets.iter().any(|t| {
        let fs = t.managed.as_ref().map_or(t.fs_type.as_str(), |m| m.fs_type.as_str());
        matches!(fs, "tmpfs" | "ramfs")
    });
    let tree_on_memory =
        cfg.tree_path.as_deref().is_some_and(|p| matches!(crate::storage::cache::memory_fs(p), Ok(Some(_))));
    let cold = |memory: bool| if memory { "" } else { " --cold" };
    let (src_cold, dst_cold) = (cold(tree_on_memory), cold(on_memory));
    // Absolute paths: the lines run from any directory.
    let absolute = |p: &std::path::Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let tree = cfg.tree_path.as_deref().map_or("PATH".to_string(), |p| shell_word(&absolute(p).to_string_lossy()));
    let (mut lines, dst) = match on {
        CheckOn::Dir(dir) => (Vec::new(), fresh_name(&absolute(dir), "manyfiles-check")),
        CheckOn::Spec(spec) | CheckOn::ObjectSpec(spec) | CheckOn::ObjectUrl(spec, _) => {
            let mnt = fresh_name(&std::env::temp_dir(), "manyfiles-check");
            // The calibration's image size, so the file system is made alike (exFAT's
            // cluster size follows it), or more where the tree needs room twice over.
            let calibrated = cfg.model.targets.iter().filter_map(|t| t.managed.as_ref()).map(|m| m.image_bytes);
            let need = inv.total_bytes.saturating_mul(2) + (inv.files + inv.dirs) * 4096;
            let size = calibrated.max().unwrap_or(0).max(need).max(64 << 20);
            let m = shell_word(&mnt.to_string_lossy());
            let lines = vec![
                format!("mkdir {m}"),
                format!("manyfiles mount --size {}MiB {} {m}", size.div_ceil(1 << 20), shell_word(spec)),
            ];
            (lines, mnt.join("tree"))
        }
    };
    let d = shell_word(&dst.to_string_lossy());
    lines.push(format!("manyfiles copy{t}{lossy}{src_cold} --durable {tree} {d}"));
    lines.push(format!("manyfiles scan{t}{dst_cold} {d}"));
    lines.push(format!("manyfiles rm{t}{dst_cold} --durable {d}"));
    if let CheckOn::Spec(_) | CheckOn::ObjectSpec(_) | CheckOn::ObjectUrl(..) = on {
        let m = shell_word(&dst.parent().expect("the mount directory").to_string_lossy());
        lines.push(format!("manyfiles umount {m}"));
        lines.push(format!("rmdir {m}"));
    }
    let mut text = String::from(match on {
        CheckOn::Dir(_) => "check, one run each, on the target (the copy makes the destination, the rm removes it):\n",
        CheckOn::Spec(_) | CheckOn::ObjectSpec(_) | CheckOn::ObjectUrl(..) => {
            "check, one run each, on the same kind of target (mount brings it up, umount takes it down):\n"
        }
    });
    for l in lines {
        text.push_str(&format!("  {l}\n"));
    }
    if cfg.tree_path.is_none() {
        text.push_str("  (PATH: the tree the inventory was taken of)\n");
    }
    text.push_str(
        "the calibration's copies ran target to target: a copy from another disk also pays that disk's reads\n",
    );
    text
}

/// `dir/NAME-N` for the first N that does not exist yet.
pub(super) fn fresh_name(dir: &std::path::Path, name: &str) -> PathBuf {
    let id = std::process::id();
    (0u32..)
        .map(|n| dir.join(if n == 0 { format!("{name}-{id}") } else { format!("{name}-{id}-{n}") }))
        .find(|p| p.symlink_metadata().is_err())
        .expect("some name is free")
}

/// `word` as one shell word: as it is when it holds only characters no shell treats
/// specially, else in single quotes (a quote inside written `'\''`).
pub(super) fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./:=@,+%".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        return word.to_string();
    }
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// `manyfiles plan`.
#[derive(Debug)]
pub struct PlanConfig {
    pub tree: TreeInput,
    pub clusters: Vec<u64>,
    /// Whose directories and metadata to count beside the files (`plan --fs`).
    pub layout: crate::storage::allocation::Layout,
    pub model: Option<(String, ResultSet)>,
    pub json: Option<PathBuf>,
    pub threads: usize,
}

pub fn run_plan(cfg: PlanConfig) -> Result<String> {
    use crate::results::plan::{self, Source};
    let src = match cfg.tree {
        TreeInput::Path(p) => plan::walk_sizes(&p, cfg.threads)?,
        TreeInput::Inventory(i) => Source::Inventory(i),
    };
    let p = plan::plan(&src, cfg.layout, &cfg.clusters, cfg.model.as_ref().map(|m| &m.1));
    if let Some(j) = &cfg.json {
        write_json(j, &p)?;
    }
    let line = cfg.model.as_ref().map(|(n, rs)| model_line(n, rs));
    Ok(super::advice::plan(&p, line.as_deref()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::model::Prediction;
    use crate::results::predict::PredictionRow;

    fn row(op: &str, lo: f64, hi: f64) -> PredictionRow {
        PredictionRow {
            target: "dir".into(),
            op: op.into(),
            prediction: Prediction { seconds: (lo * hi).sqrt(), interval95: Some([lo, hi]) },
            level: 0.95,
            interval: Some([lo, hi]),
            extrapolation: vec![],
            reach: None,
            recovery_point_s: None,
            usable: true,
            not_usable: None,
        }
    }

    #[test]
    fn a_prediction_wider_than_three_times_says_the_calibration_was_short() {
        let mut model = crate::results::testing::one_cell(&[1.0, 1.1, 0.9]);
        model.experiment.adaptive = Some(crate::results::adaptive::Adaptive {
            max_time_s: 10.0,
            spent_s: 12.0,
            budget_spent: true,
            ..crate::results::adaptive::Adaptive::default_settings()
        });
        assert_eq!(too_wide(&[row("copy", 1.0, 2.9), row("rm", 0.5, 1.0)], &model), "");
        let line = too_wide(&[row("copy", 1.0, 2.9), row("create", 0.1, 9.0)], &model);
        // ×90 → (ln 90 / ln 3)² = 16.9: 17× the runs, 170 s of budget.
        assert!(line.starts_with("too wide: 1 of 2 intervals span more than ×3"), "{line}");
        assert!(line.contains("widest: create on") && line.contains("×90.0"), "{line}");
        assert!(line.contains("about 17× the runs") && line.contains("--max-time 170s"), "{line}");
        assert!(line.contains("stopped cells short"), "{line}");
    }

    #[test]
    fn shell_words_are_quoted_only_when_a_shell_would_split_or_expand_them() {
        assert_eq!(shell_word("/var/tmp/t-1/a.b"), "/var/tmp/t-1/a.b");
        assert_eq!(shell_word("share:sftp@rtt=1ms"), "share:sftp@rtt=1ms");
        assert_eq!(shell_word("/tmp/a tree"), "'/tmp/a tree'");
        assert_eq!(shell_word("it's $HOME"), r"'it'\''s $HOME'");
        assert_eq!(shell_word(""), "''");
    }
}
