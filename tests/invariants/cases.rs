//! Every writing command, with arguments drawn at random from a topology, and what the
//! command was told to write: the roots below which it may change anything (with every
//! alias a bind mount or an overlay gives them), less the mount points below those roots
//! (never entered without `--cross-mounts`, which no case passes).

use crate::topology::{Rng, Topology};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Commands every topology is tried with.
pub const COMMANDS: &[&str] = &[
    "copy",
    "sync",
    "sync-delete",
    "rm",
    "gen",
    "ladder-outputs",
    "report-outputs",
    "scan-db",
    "pack",
    "predict-on",
    "run-file",
    "mount-umount",
    "cleanup",
];

/// `predict --on` calibrates for half a minute even when told `--max-time 1s`: it runs
/// on every this many topologies only (12 of 300).
pub const PREDICT_EVERY: u64 = 25;

/// A command ready to run against a topology, and what it may change.
pub struct Case {
    pub args: Vec<OsString>,
    /// Roots (and their aliases) below which changes are allowed.
    pub allowed: Vec<PathBuf>,
    /// Paths allowed to change themselves only (an output file, a symlink removed).
    pub exact: Vec<PathBuf>,
    /// New directories that may be made on the way to an allowed root (an overlay's copy-up).
    pub may_mkdir_above: bool,
    /// (canonical DST, most entries a copy may add below it): a copy into itself is caught
    /// by its count, since each level is "inside DST".
    pub max_new: Option<(PathBuf, usize)>,
    /// SRC of a copy: never changed, except where an alias of DST lies strictly inside it.
    pub protected: Option<PathBuf>,
    /// `mount-umount`: the mount point as it is called at umount time, and whether a
    /// process was using it (then a successful umount is a violation).
    pub umount: Option<UmountCase>,
}

impl Case {
    /// A command that may write only `exact` (its new output paths; none: a refusal).
    pub fn outputs(args: Vec<OsString>, exact: Vec<PathBuf>) -> Case {
        Case { args, allowed: Vec::new(), exact, may_mkdir_above: false, max_new: None, protected: None, umount: None }
    }
}

pub struct UmountCase {
    pub dir: PathBuf,
    pub busy: Option<std::process::Child>,
    pub nested: bool,
    /// The command was plain `cleanup`: the mount must still be there.
    pub by_cleanup: bool,
    /// `manyfiles mount`s inside it, taken down by `manyfiles umount` after the judge.
    pub own_inside: Vec<PathBuf>,
}

fn os(s: impl Into<OsString>) -> OsString {
    s.into()
}

/// A path as the command would reach it: the deepest existing ancestor resolved, the rest
/// appended.
pub fn resolved(p: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut cur = p.to_path_buf();
    loop {
        if let Ok(c) = std::fs::canonicalize(&cur) {
            let mut out = c;
            for r in rest.iter().rev() {
                out.push(r);
            }
            return out;
        }
        match (cur.parent(), cur.file_name()) {
            (Some(par), Some(name)) => {
                rest.push(name.to_os_string());
                cur = par.to_path_buf();
            }
            _ => return p.to_path_buf(),
        }
    }
}

/// A directory to write into: new below a random directory, an existing one, a path
/// through a symlink, or (built here) a bind-mount alias of `src` or an overlay whose
/// upper layer is `src` or holds it.
fn pick_dst(t: &mut Topology, rng: &mut Rng, src: Option<&Path>) -> PathBuf {
    match rng.below(8) {
        0 | 1 => {
            let host = rng.pick(&t.dirs).clone();
            host.join("new")
        }
        2 | 3 => rng.pick(&t.dirs).clone(),
        4 if !t.links.is_empty() => rng.pick(&t.links).join("new"),
        5 if src.is_some() => {
            let src = src.unwrap().to_path_buf();
            let target = if rng.chance(50) { src } else { src.parent().unwrap_or(&src).to_path_buf() };
            let at = t.new_point(rng);
            t.bind(&target, &at);
            if rng.chance(50) { at } else { at.join("new") }
        }
        6 if src.is_some() && t.mount_of(src.unwrap()).is_none() => {
            let src = src.unwrap().to_path_buf();
            let upper = if rng.chance(50) { src.clone() } else { src.parent().unwrap_or(&src).to_path_buf() };
            let lower = t.root.join("u");
            let at = t.new_point(rng);
            t.overlay(&lower, Some(&upper), &at, rng);
            at.join("new")
        }
        _ => rng.pick(&t.dirs).join("sub").join("new"),
    }
}

fn dst_case(t: &Topology, args: Vec<OsString>, dst: &Path, src: Option<&Path>, src_count: usize) -> Case {
    let canon = resolved(dst);
    let allowed = t.aliases(&canon);
    Case {
        args,
        allowed,
        exact: Vec::new(),
        may_mkdir_above: true,
        max_new: src.map(|_| (canon.clone(), src_count + 1)),
        protected: src.map(resolved),
        umount: None,
    }
}

/// Sometimes give SRC a directory named like a mount point directly below DST, so a sync
/// meets the mount as a directory it would update (reproduction 1's second form).
fn name_like_a_mount_below(t: &mut Topology, rng: &mut Rng, src: &Path, dst: &Path) {
    let dst = resolved(dst);
    let points: Vec<PathBuf> =
        t.mounts.iter().filter(|m| m.at.parent() == Some(dst.as_path())).map(|m| m.at.clone()).collect();
    if points.is_empty() || !rng.chance(60) {
        return;
    }
    let name = rng.pick(&points).file_name().unwrap().to_os_string();
    let d = src.join(&name);
    if std::fs::create_dir(&d).is_ok() && std::fs::write(d.join("from-src"), b"src").is_ok() {
        t.note(format!("SRC gets {} (named like a mount point below DST)", t.rel(&d)));
    }
}

fn count_below(t: &Topology, p: &Path) -> usize {
    crate::snapshot::take(p, &t.skip).len()
}

/// A path for `rm`: any entry, a mount point, a path through a symlink, the tree itself.
fn pick_rm_path(t: &Topology, rng: &mut Rng) -> PathBuf {
    match rng.below(7) {
        0 | 1 => rng.pick(&t.dirs).clone(),
        2 if !t.files.is_empty() => rng.pick(&t.files).clone(),
        3 if !t.links.is_empty() => rng.pick(&t.links).clone(),
        4 if !t.mounts.is_empty() => rng.pick(&t.mounts).at.clone(),
        5 if !t.links.is_empty() => {
            let l = rng.pick(&t.links).clone();
            l.join(*rng.pick(&["a", "b", "k", "d1"]))
        }
        _ => t.root.join("t"),
    }
}

/// What `rm PATH` may remove: PATH's own subtree, reached without following a symlink on
/// the way (a symlink before the last component: nothing), not a mount point itself, no
/// mount point below it.
fn rm_allowed(t: &Topology, p: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut cur = PathBuf::new();
    let comps: Vec<_> = p.components().collect();
    for (i, c) in comps.iter().enumerate() {
        cur.push(c);
        let last = i + 1 == comps.len();
        let Ok(md) = std::fs::symlink_metadata(&cur) else { return (Vec::new(), Vec::new()) };
        if md.file_type().is_symlink() {
            return if last { (Vec::new(), vec![cur]) } else { (Vec::new(), Vec::new()) };
        }
    }
    if t.mounts.iter().any(|m| m.at == p) || p == t.root {
        return (Vec::new(), Vec::new());
    }
    (t.aliases(p), Vec::new())
}

/// An output file: new, an existing file of someone else, a symlink to one, a directory.
fn pick_output(t: &Topology, rng: &mut Rng, name: &str) -> PathBuf {
    match rng.below(6) {
        0 if !t.files.is_empty() => rng.pick(&t.files).clone(),
        1 if !t.links.is_empty() => rng.pick(&t.links).clone(),
        2 => rng.pick(&t.dirs).clone(),
        _ => rng.pick(&t.dirs).join(name),
    }
}

/// An output may be written only where nothing was: a new path (its aliases too).
fn output_allowed(t: &Topology, p: &Path) -> Vec<PathBuf> {
    if std::fs::symlink_metadata(p).is_ok() {
        return Vec::new();
    }
    t.aliases(&resolved(p))
}

/// The smallest ladder that writes results (a second or so).
pub const TINY_LADDER: &[&str] = &[
    "--to",
    "4",
    "--total",
    "64KiB",
    "--second-total",
    "off",
    "--runs",
    "1",
    "--cache",
    "warm",
    "--ops",
    "create",
    "-q",
];

pub fn make(name: &'static str, t: &mut Topology, rng: &mut Rng) -> Case {
    match name {
        "copy" | "sync" | "sync-delete" => {
            let src = rng.pick(&t.dirs).clone();
            let dst = pick_dst(t, rng, Some(&src));
            name_like_a_mount_below(t, rng, &src, &dst);
            let n = count_below(t, &src);
            let mut args = vec![os(if name == "copy" { "copy" } else { "sync" })];
            if name == "sync-delete" {
                args.push(os("--delete"));
            }
            args.extend([os("-q"), os(&src), os(&dst)]);
            dst_case(t, args, &dst, Some(&src), n)
        }
        "gen" => {
            let dir = pick_dst(t, rng, None);
            let args = ["gen", "--files", "12", "--files-per-dir", "4", "--size", "1k", "-q"].map(os);
            let mut args = args.to_vec();
            args.push(os(&dir));
            dst_case(t, args, &dir, None, 0)
        }
        "rm" => {
            let mut args = vec![os("rm")];
            let (mut allowed, mut exact) = (Vec::new(), Vec::new());
            for _ in 0..1 + rng.below(2) {
                let p = pick_rm_path(t, rng);
                let (a, e) = rm_allowed(t, &p);
                allowed.extend(a);
                exact.extend(e);
                args.push(os(&p));
            }
            Case { args, allowed, exact, may_mkdir_above: false, max_new: None, protected: None, umount: None }
        }
        "ladder-outputs" => {
            let dir = rng.pick(&t.dirs).clone();
            let json = pick_output(t, rng, "res.json");
            let md = pick_output(t, rng, "res.md");
            let mut args = vec![os("ladder"), os("--target"), os(&dir)];
            args.extend(TINY_LADDER.iter().map(os));
            args.extend([os("--json"), os(&json), os("--markdown"), os(&md)]);
            let mut exact = output_allowed(t, &json);
            exact.extend(output_allowed(t, &md));
            Case::outputs(args, exact)
        }
        "scan-db" => {
            let dir = rng.pick(&t.dirs).clone();
            let db = pick_output(t, rng, "idx.db");
            let json = pick_output(t, rng, "scan.json");
            let mut sdb = OsString::from("sqlite:");
            sdb.push(&db);
            let args = vec![os("scan"), os(&dir), os("--db"), sdb, os("--json"), os(&json), os("-q")];
            let mut exact = Vec::new();
            for side in ["", "-wal", "-shm", "-journal"] {
                let mut p = db.clone().into_os_string();
                p.push(side);
                exact.extend(output_allowed(t, Path::new(&p)));
            }
            exact.extend(output_allowed(t, &json));
            Case::outputs(args, exact)
        }
        "report-outputs" => {
            let html = pick_output(t, rng, "report.html");
            let csv = pick_output(t, rng, "rows.csv");
            let args = vec![os("report"), os(crate::sample_results()), os("--html"), os(&html), os("--csv"), os(&csv)];
            let mut exact = output_allowed(t, &html);
            exact.extend(output_allowed(t, &csv));
            Case::outputs(args, exact)
        }
        "pack" => {
            let tree = rng.pick(&t.dirs).clone();
            let work = rng.pick(&t.dirs).clone();
            let json = pick_output(t, rng, "pack.json");
            let args = ["pack", "--containers", "tar", "--runs", "1", "--cache", "warm", "-q"].map(os);
            let mut args = args.to_vec();
            args.extend([os(&tree), os("--src-target"), os(&work), os("--json"), os(&json)]);
            let exact = output_allowed(t, &json);
            Case::outputs(args, exact)
        }
        "predict-on" => {
            let tree = rng.pick(&t.dirs).clone();
            // A quarter of the time the calibration target is the tree or inside it
            // (reproduction 10); else anywhere, so most calibrations run and write.
            let inside: Vec<PathBuf> = t.dirs.iter().filter(|d| d.starts_with(&tree)).cloned().collect();
            let on = if rng.chance(25) { rng.pick(&inside).clone() } else { rng.pick(&t.dirs).clone() };
            let json = if rng.chance(70) {
                rng.pick(&t.dirs).join("predict.json")
            } else {
                pick_output(t, rng, "predict.json")
            };
            let args = vec![
                os("predict"),
                os("--tree"),
                os(&tree),
                os("--on"),
                os(&on),
                os("--max-time"),
                os("1s"),
                os("-q"),
                os("--json"),
                os(&json),
            ];
            let exact = output_allowed(t, &json);
            Case::outputs(args, exact)
        }
        "cleanup" => crate::umount_case::cleanup_case(t),
        "run-file" => run_file_case(t, rng),
        "mount-umount" => crate::umount_case::make(t, rng),
        other => panic!("no case {other}"),
    }
}

/// A run file for [`TINY_LADDER`] on `target`, results to `json`.
pub fn ladder_run_file(target: &Path, json: &Path) -> String {
    format!(
        "command = \"ladder\"\ntarget = {:?}\njson = {:?}\nto = 4\ntotal = \"64KiB\"\nsecond-total = \"off\"\nruns = 1\ncache = \"warm\"\nops = \"create\"\nquiet = true\n",
        target.display().to_string(),
        json.display().to_string()
    )
}

/// `run FILE.toml` naming a target and outputs anywhere: outputs may land only inside the
/// run file's own directory (and only where nothing was), and nothing happens when the
/// file names a target or output outside it.
fn run_file_case(t: &mut Topology, rng: &mut Rng) -> Case {
    let home = rng.pick(&t.dirs).clone();
    let file = home.join("exp.toml");
    let target = if rng.chance(50) { home.clone() } else { rng.pick(&t.dirs).clone() };
    let json = if rng.chance(50) { home.join("out.json") } else { pick_output(t, rng, "out.json") };
    let made = std::fs::write(&file, ladder_run_file(&target, &json)).is_ok();
    t.note(format!("run file {} (target {}, json {})", t.rel(&file), t.rel(&target), t.rel(&json)));
    let inside = |p: &Path| resolved(p).starts_with(resolved(&home));
    let exact = if made && inside(&target) && inside(&json) { output_allowed(t, &json) } else { Vec::new() };
    Case {
        args: vec![os("run"), os(&file)],
        allowed: Vec::new(),
        exact,
        may_mkdir_above: false,
        max_new: None,
        protected: None,
        umount: None,
    }
}
