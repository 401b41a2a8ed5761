//! The commands that read result files: report, compare, predict and plan (their
//! arguments, `read_results`, and their translation into configs).

use super::common::{Replace, check_output, threads};
use clap::Args;
use manyfiles::error::{Error, Result};
use manyfiles::report::export::{Format, Output};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Result files (JSON written by --json); several are combined into one report
    #[arg(value_name = "RESULTS.json", required = true)]
    pub files: Vec<PathBuf>,
    /// Write one self-contained HTML file (charts as inline SVG, no scripts)
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Write every chart as a PNG into this directory (made if missing)
    #[arg(long, value_name = "DIR")]
    pub png: Option<PathBuf>,
    /// Write one row per measurement as CSV
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Write the summary and fitted costs as Markdown
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Write the result set again as JSON, summaries and models derived by this version
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// The files are invocations of one experiment: pool their runs, each file's
    /// blocks its own, so every interval carries the variation between invocations
    /// (without it, several files are shown side by side)
    #[arg(long)]
    pub pool: bool,
    #[command(flatten)]
    pub replace: Replace,
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Baseline result file
    #[arg(value_name = "A.json")]
    pub a: PathBuf,
    /// Result file compared with the baseline
    #[arg(value_name = "B.json")]
    pub b: PathBuf,
    /// Exit with code 1 when B is slower than A by more than PCT percent at the low end of the ratio's 95% interval
    #[arg(long, value_name = "PCT")]
    pub fail_if_slower: Option<f64>,
    /// A further invocation of A's experiment, pooled with A (its runs are blocks of
    /// their own); repeat for more
    #[arg(long, value_name = "FILE")]
    pub pool_a: Vec<PathBuf>,
    /// A further invocation of B's experiment, pooled with B; repeat for more
    #[arg(long, value_name = "FILE")]
    pub pool_b: Vec<PathBuf>,
    /// Say "same within the margin" for a cell whose ratio interval lies within ±PCT percent
    #[arg(long, value_name = "PCT")]
    pub equivalence: Option<f64>,
    /// Tables in full (intervals as [lo – hi], long headers, every column), however wide;
    /// by default they fit 100 columns
    #[arg(long)]
    pub wide: bool,
    /// Also write the comparison as one self-contained HTML file (ratio table, forest plot)
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    #[command(flatten)]
    pub replace: Replace,
}

/// Read a result file; a missing or foreign file is bad input naming `flag`. A file
/// whose models were fitted by an older version (every run a point, no directory-size
/// term, weights 1/observed² without run noise), or that has no model, has its summaries, models and detections derived again
/// from its raw measurements (models in a current file are kept as written).
pub fn read_results(path: &std::path::Path, flag: &str) -> Result<manyfiles::results::ResultSet> {
    let mut rs = manyfiles::report::export::json::read(path).map_err(|e| Error::bad(flag, e))?;
    // Fitted by an older version: derived again (a model from before the leverage-corrected
    // left-out error, issue 40, gets the interval `predict` prints now).
    if rs.models.is_empty()
        || rs.models.iter().any(|m| {
            m.model.interval_method != "cells"
                || m.model.weighting != "fitted"
                || (m.model.cv_log_sd_corrected.is_none() && !m.model.cv_log_errors.is_empty())
        })
    {
        rs.derive();
    }
    Ok(rs)
}

/// A result file, or a peer's output (`results::peers`: fio, mdtest, elbencho) when it is none.
fn read_results_or_peer(path: &std::path::Path, flag: &str) -> Result<manyfiles::results::ResultSet> {
    read_results(path, flag).or_else(|e| match manyfiles::results::peers::read(path) {
        Some(peer) => peer.map_err(|why| Error::bad(flag, why)),
        None => Err(e),
    })
}

/// `first` with the invocations `more` pooled in (`results::pool`); `first` alone when
/// there are none.
/// Files to pool must be distinct runs: the same file twice, or two files of identical
/// content (a copy), are refused naming `flag` (the provenance check in `pool` then
/// catches a run written out again, e.g. by `report --json`).
fn distinct_files(files: &[&std::path::Path], flag: &str) -> Result<()> {
    use std::hash::{Hash, Hasher};
    use std::os::unix::fs::MetadataExt;
    let mut seen: Vec<(&std::path::Path, (u64, u64), u64)> = Vec::new();
    for f in files {
        let md = std::fs::metadata(f).map_err(|e| Error::bad(flag, format!("{}: {e}", f.display())))?;
        let text = manyfiles::fs::input::read_bounded(f, manyfiles::fs::input::JSON_MAX)
            .map_err(|e| Error::bad(flag, format!("{}: {e}", f.display())))?;
        let mut h = std::collections::hash_map::DefaultHasher::new();
        text.hash(&mut h);
        let (id, hash) = ((md.dev(), md.ino()), h.finish());
        if let Some((other, _, _)) = seen.iter().find(|(_, i, x)| *i == id || *x == hash) {
            let how = if seen.iter().any(|(_, i, _)| *i == id) { "the same file" } else { "identical (a copy)" };
            return Err(Error::bad(
                flag,
                format!(
                    "{} and {} are {how}: pooling one run twice would count its runs twice",
                    other.display(),
                    f.display()
                ),
            ));
        }
        seen.push((f, id, hash));
    }
    Ok(())
}

fn pooled(
    first: &std::path::Path,
    first_flag: &str,
    more: &[PathBuf],
    flag: &str,
) -> Result<manyfiles::results::ResultSet> {
    let rs = read_results_or_peer(first, first_flag)?;
    if more.is_empty() {
        return Ok(rs);
    }
    let all: Vec<&std::path::Path> = std::iter::once(first).chain(more.iter().map(|p| p.as_path())).collect();
    distinct_files(&all, flag)?;
    let mut named = vec![(first.display().to_string(), rs)];
    for f in more {
        named.push((f.display().to_string(), read_results_or_peer(f, flag)?));
    }
    manyfiles::results::pool::pool(named).map_err(|e| Error::bad(flag, e))
}

pub fn report_config(a: &ReportArgs) -> Result<manyfiles::report::ReportConfig> {
    if a.replace.force {
        manyfiles::fs::output::force_replacing(); // --png's charts are checked by name when drawn
    }
    if a.html.is_none() && a.png.is_none() && a.csv.is_none() && a.markdown.is_none() && a.json.is_none() {
        return Err(Error::bad(
            "--html",
            "say what to write: --html FILE, --png DIR, --csv FILE, --markdown FILE or --json FILE",
        ));
    }
    let mut exports = Vec::new();
    for (p, f, flag) in [
        (&a.csv, Format::Csv, "--csv"),
        (&a.markdown, Format::Markdown, "--markdown"),
        (&a.json, Format::Json, "--json"),
    ] {
        if let Some(p) = p {
            check_output(p, flag, a.replace.force)?;
            exports.push(Output { path: p.clone(), format: f });
        }
    }
    if let Some(h) = &a.html {
        check_output(h, "--html", a.replace.force)?;
    }
    if let Some(d) = &a.png {
        if d.exists() && !d.is_dir() {
            return Err(Error::bad("--png", format!("{} is not a directory", d.display())));
        }
        if !d.exists() {
            check_output(d, "--png", a.replace.force)?;
        }
    }
    // A `predict --json` file is read as one when it is no result file, and so is a
    // peer's output (results::peers).
    let mut sets = Vec::new();
    let mut predict = Vec::new();
    for f in &a.files {
        match read_results(f, "RESULTS.json") {
            Ok(rs) => sets.push(rs),
            Err(e) => match manyfiles::report::predict_html::read(f) {
                Ok(p) => predict.push((f.clone(), p)),
                // A peer's output (fio, mdtest, elbencho) is drawn beside the result files.
                Err(_) => match manyfiles::results::peers::read(f) {
                    Some(peer) => sets.push(peer.map_err(|why| Error::bad("RESULTS.json", why))?),
                    None => return Err(e),
                },
            },
        }
    }
    if !predict.is_empty() && (predict.len() > 1 || !sets.is_empty()) {
        return Err(Error::bad("RESULTS.json", "a predict --json file is reported alone (one file, no result files)"));
    }
    if !predict.is_empty() && (a.html.is_none() || !exports.is_empty() || a.png.is_some()) {
        return Err(Error::bad("--html", "a predict --json file gives --html FILE only"));
    }
    if a.pool && !sets.is_empty() {
        distinct_files(&a.files.iter().map(|f| f.as_path()).collect::<Vec<_>>(), "--pool")?;
        let named = a.files.iter().map(|f| f.display().to_string()).zip(sets).collect();
        sets = vec![manyfiles::results::pool::pool(named).map_err(|e| Error::bad("--pool", e))?];
    }
    Ok(manyfiles::report::ReportConfig {
        files: a.files.clone(),
        predict: predict.pop(),
        sets,
        html: a.html.clone(),
        png: a.png.clone(),
        exports,
        views: manyfiles::experiment::kinds::view,
    })
}

pub fn compare_config(a: &CompareArgs) -> Result<manyfiles::report::CompareConfig> {
    if let Some(p) = a.fail_if_slower {
        if !(p.is_finite() && p >= 0.0) {
            return Err(Error::bad("--fail-if-slower", "must be a percentage of 0 or more"));
        }
    }
    if let Some(p) = a.equivalence {
        if !(p.is_finite() && p > 0.0) {
            return Err(Error::bad("--equivalence", "must be a percentage above 0"));
        }
    }
    if let Some(h) = &a.html {
        check_output(h, "--html", a.replace.force)?;
    }
    manyfiles::report::table::set_wide(a.wide);
    Ok(manyfiles::report::CompareConfig {
        a_name: a.a.display().to_string(),
        b_name: a.b.display().to_string(),
        a: pooled(&a.a, "A.json", &a.pool_a, "--pool-a")?,
        b: pooled(&a.b, "B.json", &a.pool_b, "--pool-b")?,
        fail_if_slower_pct: a.fail_if_slower,
        equivalence_pct: a.equivalence,
        html: a.html.clone(),
    })
}

#[derive(Args, Debug)]
pub struct PredictArgs {
    /// Result file with fitted models (e.g. from `manyfiles ladder --json`, or --save-calibration)
    #[arg(long, value_name = "RESULTS.json", required_unless_present_any = ["on", "fs"], conflicts_with_all = ["on", "fs"])]
    pub model: Option<PathBuf>,
    /// The tree to predict for (walked, nothing is read but names and sizes)
    #[arg(long, value_name = "PATH", required_unless_present = "inventory", conflicts_with = "inventory")]
    pub tree: Option<PathBuf>,
    /// A saved inventory of the tree instead of walking it
    #[arg(long, value_name = "FILE")]
    pub inventory: Option<PathBuf>,
    /// Calibrate on this directory first (trees shaped like --tree, made and removed in a
    /// run directory inside it), then predict copy onto it, read, scan and delete; or on
    /// an object store, s3://BUCKET/PREFIX or azblob://CONTAINER/PREFIX (objects put and
    /// deleted under a prefix of its own below PREFIX), then predict the engines' upload,
    /// scan, download and rm of the tree in requests (exact), price and time
    #[arg(long, value_name = "DIR|URL", conflicts_with = "fs")]
    pub on: Option<PathBuf>,
    /// With --on s3://… or azblob://…: reach the store through the `manyfiles mount s3… DIR`
    /// (azblob…) at DIR (without it: the environment's endpoint and keys, as the engines')
    #[arg(long, value_name = "DIR", visible_alias = "store-via")]
    pub s3_via: Option<PathBuf>,
    /// Calibrate on a test file system instead (root): one TYPE[:BLOCK][@ram|@disk[:DIR]], as ladder's --fs;
    /// or an object store, s3[@rtt=1ms] or azblob[@rtt=1ms]: the engines' upload, scan, download and rm
    /// of the tree in requests (exact), price and time
    #[arg(long, value_name = "SPEC")]
    pub fs: Option<String>,
    /// Calibration: time budget of the adaptive runs (90s, 3m, 1h)
    #[arg(long, value_name = "DURATION", default_value = "3m")]
    pub max_time: String,
    /// Calibration: keep its results here (`predict --model FILE` reproduces the prediction)
    #[arg(long, value_name = "FILE")]
    pub save_calibration: Option<PathBuf>,
    /// Predict the median of K runs instead of a single run
    #[arg(long, value_name = "K", default_value = "1")]
    pub runs_ahead: u32,
    /// Sync interval (e.g. 15m, 1h): prints the recovery point of sync ops
    #[arg(long, value_name = "DUR")]
    pub interval: Option<String>,
    /// Level of the printed prediction intervals, 50% to 99.9% (file-system targets; the
    /// JSON keeps the 95% one as `interval95` beside `interval`)
    #[arg(long, value_name = "P%", default_value = "95%")]
    pub level: String,
    /// Also write the predictions as JSON here
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Threads for walking --tree and for the calibration (default: available cores; its
    /// copies: two a core, as `manyfiles copy`). The check commands then need --threads N.
    /// On an object store: the requests in flight (default: the engines', 64)
    #[arg(long)]
    pub threads: Option<usize>,
    /// Calibration: no progress bar
    #[arg(long, short)]
    pub quiet: bool,
    /// On an object store: price the commands' requests and the tree's storage with this
    /// TOML table instead of the provider's list prices (AWS S3 Standard's, Azure Blob hot
    /// LRS's; its fields: README, "Object stores")
    #[arg(long, value_name = "FILE")]
    pub prices: Option<PathBuf>,
    #[command(flatten)]
    pub replace: Replace,
}

#[derive(Args, Debug)]
pub struct PlanArgs {
    /// The tree to plan for (walked: every file's size)
    #[arg(value_name = "PATH", required_unless_present = "inventory", conflicts_with = "inventory")]
    pub path: Option<PathBuf>,
    /// A saved inventory instead of PATH (exact for 512 B … 2 MiB, powers of two)
    #[arg(long, value_name = "FILE")]
    pub inventory: Option<PathBuf>,
    /// Cluster sizes to compare
    #[arg(long, default_value = manyfiles::experiment::clusters::DEFAULT_CLUSTERS)]
    pub cluster: String,
    /// Count this file system's directories and metadata too, as df will show them
    /// after the copy (needs PATH: an inventory has no names)
    #[arg(long, value_name = "exfat|ntfs", value_parser = ["exfat", "ntfs"], conflicts_with = "inventory")]
    pub fs: Option<String>,
    /// Result file of a clusters experiment: predicted write time per cluster size
    #[arg(long, value_name = "RESULTS.json")]
    pub model: Option<PathBuf>,
    /// Also write the plan as JSON here
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Threads for walking PATH (default: available cores)
    #[arg(long)]
    pub threads: Option<usize>,
    #[command(flatten)]
    pub replace: Replace,
}

fn tree_input(
    path: &Option<PathBuf>,
    inventory: &Option<PathBuf>,
    path_flag: &str,
) -> Result<manyfiles::report::TreeInput> {
    use manyfiles::report::TreeInput;
    match (path, inventory) {
        (_, Some(i)) => Ok(TreeInput::Inventory(Box::new(manyfiles::tree::inventory::Inventory::load(i)?))),
        (Some(p), None) if p.is_dir() => Ok(TreeInput::Path(p.clone())),
        (Some(p), None) => Err(Error::bad(path_flag, format!("{} is not a directory", p.display()))),
        (None, None) => Err(Error::bad(path_flag, "give the tree (or --inventory FILE)")),
    }
}

/// What `predict` does: apply a saved model, or calibrate on a target first.
pub enum PredictJob {
    Model(Box<manyfiles::report::PredictConfig>),
    /// Calibrate, then predict; `predict.model` is filled in by the calibration.
    Calibrate(Box<manyfiles::experiment::calibrate::CalibrateConfig>, Box<manyfiles::report::PredictParts>),
}

/// The calibration writes its run directory into `--on DIR`: refused (exit 2) when DIR
/// is the tree or inside it, judged by identity (device + inode of DIR's ancestors, and
/// the path inside the file system, so a bind mount of the tree is seen too). A tree
/// inside DIR is fine: the run directory is made beside it, never in it.
fn calibration_outside_tree(dir: &std::path::Path, tree: &std::path::Path) -> Result<()> {
    use manyfiles::engine::overlap::{Overlap, overlap, place};
    let bad = |e: std::io::Error| Error::bad("--on", format!("{}: {e}", dir.display()));
    let (d, t) = (place(dir).map_err(bad)?, place(tree).map_err(bad)?);
    match overlap(&d, &t) {
        Some(Overlap::Same | Overlap::FirstInside) => Err(Error::bad(
            "--on",
            format!(
                "{} is {} --tree {}: the calibration would write its run directory into the tree; \
                 calibrate on a directory outside it",
                dir.display(),
                if overlap(&d, &t) == Some(Overlap::Same) { "the same directory as" } else { "inside" },
                tree.display()
            ),
        )),
        _ => Ok(()),
    }
}

/// `--prices` is for an object store's predictions.
const PRICES_ONLY: &str =
    "only with an object store (--fs s3…/azblob…, --on s3://… or azblob://…, or --model of a calibration made there)";

/// `--level P%` as a fraction; only 95% on an object store, whose engines' section has
/// its own intervals.
fn level_of(a: &PredictArgs, object_store: bool) -> Result<f64> {
    let text = a.level.trim();
    let level = match text.strip_suffix('%').unwrap_or(text).trim().parse::<f64>() {
        Ok(p) if (50.0..=99.9).contains(&p) => p / 100.0,
        _ => {
            return Err(Error::bad(
                "--level",
                format!("'{}': expected a percentage from 50% to 99.9%, such as 90%", a.level),
            ));
        }
    };
    if object_store && level != manyfiles::results::predict::DEFAULT_LEVEL {
        return Err(Error::bad("--level", "only 95% on an object store (its engines' section is at 95%)"));
    }
    Ok(level)
}

/// `predict --model FILE`: the prediction from a saved result (a ladder's models, or a
/// calibration's; an object store's prints its engines' section and check lines again).
fn model_job(
    a: &PredictArgs,
    path: &std::path::Path,
    (tree, interval_s, threads): (manyfiles::report::TreeInput, Option<f64>, usize),
    prices: Option<manyfiles::results::prices::PriceTable>,
) -> Result<PredictJob> {
    let model = read_results(path, "--model")?;
    if model.models.is_empty() {
        return Err(Error::bad(
            "--model",
            format!("{} holds no fitted model (fitting needs at least 3 tree shapes: run a ladder)", path.display()),
        ));
    }
    // A calibration made on an object store: the engines' section and its check lines
    // again, the client's setup timed here (as the calibration times it).
    let objects = manyfiles::experiment::calibrate::saved_object_target(&model);
    if prices.is_some() && objects.is_none() {
        return Err(Error::bad("--prices", PRICES_ONLY));
    }
    let level = level_of(a, objects.is_some())?;
    let (object_setup_s, tree_path) = match (&objects, &tree) {
        (None, _) => (Vec::new(), None),
        (Some(on), t) => (
            manyfiles::experiment::calibrate_objects::client_setup_s(
                on.object_provider().unwrap_or_default(),
                manyfiles::experiment::calibrate_objects::SETUP_RUNS,
            )?,
            match t {
                manyfiles::report::TreeInput::Path(p) => Some(p.clone()),
                manyfiles::report::TreeInput::Inventory(_) => None,
            },
        ),
    };
    Ok(PredictJob::Model(Box::new(manyfiles::report::PredictConfig {
        model_name: path.display().to_string(),
        model,
        tree,
        interval_s,
        json: a.json.clone(),
        threads,
        runs_ahead: a.runs_ahead,
        level,
        check_on: objects,
        check_threads: None,
        tree_path,
        object_setup_s,
        prices,
    })))
}

pub fn predict_config(a: &PredictArgs, command_line: Vec<String>) -> Result<PredictJob> {
    use manyfiles::experiment::TargetSpec;
    let interval_s = match &a.interval {
        Some(s) => {
            Some(humantime::parse_duration(s).map_err(|e| Error::bad("--interval", format!("{s}: {e}")))?.as_secs_f64())
        }
        None => None,
    };
    if !(1..=1000).contains(&a.runs_ahead) {
        return Err(Error::bad("--runs-ahead", format!("{}: must be between 1 and 1000", a.runs_ahead)));
    }
    if let Some(j) = &a.json {
        check_output(j, "--json", a.replace.force)?;
    }
    use manyfiles::experiment::calibrate::{CalibrateOn, StoreOn};
    if a.s3_via.is_some() && !a.on.as_deref().is_some_and(manyfiles::engine::object::is_url) {
        return Err(Error::bad("--s3-via", "only with --on s3://BUCKET/PREFIX or azblob://CONTAINER/PREFIX"));
    }
    let target = match (&a.on, &a.fs) {
        (Some(u), _) if manyfiles::engine::object::is_url(u) => {
            let text = u.to_str().expect("an object-store URL is UTF-8");
            let url = manyfiles::engine::object::ObjectUrl::parse(text).map_err(|e| Error::bad("--on", e))?;
            Some(CalibrateOn::Store(StoreOn { url, via: a.s3_via.clone() }))
        }
        (Some(d), _) => {
            if !d.is_dir() {
                return Err(Error::bad("--on", format!("{} is not a directory", d.display())));
            }
            if let Some(tree) = a.tree.as_deref().filter(|t| t.is_dir()) {
                calibration_outside_tree(d, tree)?;
            }
            Some(CalibrateOn::Target(TargetSpec::Dir(d.clone())))
        }
        (None, Some(f)) => {
            let mut specs = manyfiles::storage::fsspec::parse_list(f).map_err(|e| Error::bad("--fs", e))?;
            if specs.len() != 1 {
                return Err(Error::bad(
                    "--fs",
                    format!("'{f}': give one file system (a calibration is for one target)"),
                ));
            }
            let spec = specs.remove(0);
            if spec.device().is_some() {
                return Err(Error::bad("--fs", format!("'{f}': a real device is not calibrated on here (use ladder)")));
            }
            Some(CalibrateOn::Target(TargetSpec::Fs(spec)))
        }
        (None, None) => None,
    };
    let threads = threads(a.threads)?;
    let tree = tree_input(&a.tree, &a.inventory, "--tree")?;
    let prices = match &a.prices {
        Some(p) => Some(manyfiles::results::prices::PriceTable::load(p).map_err(|e| Error::bad("--prices", e))?),
        None => None,
    };
    const PRICES_ONLY: &str = "only with an object store (--fs s3…/azblob…, --on s3://… or azblob://…, or --model of a calibration made there)";
    let Some(target) = target else {
        if a.save_calibration.is_some() {
            return Err(Error::bad("--save-calibration", "only with --on DIR or --fs SPEC (a calibration to save)"));
        }
        let path = a.model.as_ref().expect("clap: --model, --on or --fs");
        return model_job(a, path, (tree, interval_s, threads), prices);
    };
    if prices.is_some() && !manyfiles::experiment::calibrate::is_object_store(&target) {
        return Err(Error::bad("--prices", PRICES_ONLY));
    }
    let max_time_s = humantime::parse_duration(&a.max_time)
        .map_err(|e| Error::bad("--max-time", format!("{}: {e}", a.max_time)))?
        .as_secs_f64();
    if max_time_s <= 0.0 {
        return Err(Error::bad("--max-time", "must be more than 0 seconds"));
    }
    if let Some(p) = &a.save_calibration {
        check_output(p, "--save-calibration", a.replace.force)?;
    }
    // On an object store the calibration's "threads" are the engines' requests in flight.
    let cal_threads = match manyfiles::experiment::calibrate::is_object_store(&target) {
        true => a.threads.unwrap_or(manyfiles::engine::object::DEFAULT_IN_FLIGHT),
        false => threads,
    };
    let level = level_of(a, manyfiles::experiment::calibrate::is_object_store(&target))?;
    let cal = manyfiles::experiment::calibrate::CalibrateConfig {
        target,
        max_time_s,
        limits: Default::default(),
        threads: cal_threads,
        copy_threads: a.threads.unwrap_or(manyfiles::engine::copy::default_threads(super::common::cores(), true)),
        quiet: a.quiet,
        save: a.save_calibration.clone(),
        command_line,
    };
    Ok(PredictJob::Calibrate(
        Box::new(cal),
        Box::new(manyfiles::report::PredictParts {
            tree,
            interval_s,
            json: a.json.clone(),
            threads,
            runs_ahead: a.runs_ahead,
            level,
            check_threads: a.threads,
            prices,
        }),
    ))
}

pub fn plan_config(a: &PlanArgs) -> Result<manyfiles::report::PlanConfig> {
    use manyfiles::report::TreeInput;
    let clusters =
        manyfiles::experiment::clusters::parse_clusters(&a.cluster).map_err(|e| Error::bad("--cluster", e))?;
    if let Some(c) = clusters.iter().find(|c| **c == 0) {
        return Err(Error::bad("--cluster", format!("{c}: a cluster holds at least 1 byte")));
    }
    let model = match &a.model {
        Some(m) => Some((m.display().to_string(), read_results(m, "--model")?)),
        None => None,
    };
    if let Some((name, rs)) = &model {
        let usable = rs.models.iter().any(|m| {
            m.op == "create" && rs.targets.iter().any(|t| t.id == m.target && clusters.contains(&t.block_size))
        });
        if !usable {
            return Err(Error::bad(
                "--model",
                format!(
                    "{name} has no create model for a target with any of these cluster sizes (use the results of `manyfiles clusters`)"
                ),
            ));
        }
    }
    if let Some(j) = &a.json {
        check_output(j, "--json", a.replace.force)?;
    }
    let tree = tree_input(&a.path, &a.inventory, "PATH")?;
    if let TreeInput::Inventory(inv) = &tree {
        if let Some(c) = clusters.iter().find(|c| inv.per_cluster_allocated(**c).is_none()) {
            return Err(Error::bad(
                "--cluster",
                format!(
                    "the inventory holds exact allocation for powers of two from 512 B to 2 MiB only, not {c} bytes: give PATH to walk the tree"
                ),
            ));
        }
    }
    let layout = match &a.fs {
        Some(f) => manyfiles::storage::allocation::Layout::parse(f).map_err(|e| Error::bad("--fs", e))?,
        None => manyfiles::storage::allocation::Layout::Files,
    };
    Ok(manyfiles::report::PlanConfig {
        tree,
        clusters,
        layout,
        model,
        json: a.json.clone(),
        threads: threads(a.threads)?,
    })
}

/// `predict`: calibrate first if asked; the predictions are printed even when the tree
/// could not be read whole (then exit 1).
pub fn predict(a: &PredictArgs, command_line: Vec<String>) -> Result<()> {
    let cfg = match predict_config(a, command_line)? {
        PredictJob::Model(cfg) => *cfg,
        PredictJob::Calibrate(cal, parts) => manyfiles::experiment::calibrate::prediction(&cal, *parts)?,
    };
    let (text, verdict) = manyfiles::report::run_predict(&cfg);
    super::out(&text);
    verdict
}

/// `compare A B`: the table is printed before the verdict's exit code.
pub fn compare(a: &CompareArgs) -> Result<()> {
    let (text, verdict) = manyfiles::report::run_compare(&compare_config(a)?);
    super::out(&text);
    verdict
}
