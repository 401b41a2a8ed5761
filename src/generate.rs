//! `gen`: write a TreeSpec's tree into a directory, which must be new, empty, or one an
//! earlier `gen` wrote — and then only the entries that earlier `gen` wrote are removed.
//!
//! Ownership ("an earlier gen wrote this tree, here") is a mark that a copy cannot carry:
//! the extended attribute `user.manyfiles` on the directory (read and written through an
//! O_NOFOLLOW directory fd, never a file in the tree) names the directory's own identity —
//! device, inode and birth time — and a random token, and the tool's state directory
//! (`$XDG_STATE_HOME/manyfiles/gen/`, else `~/.local/state/manyfiles/gen/`) holds a record
//! under that identity with the same token and the spec that was generated. `cp -a`,
//! `tar --xattrs` and `rsync -X` copy the attribute onto a directory with another
//! identity, so the copy is not ours; an attribute copied onto another directory by hand
//! is not either. Without a writable state directory the spec goes into the attribute
//! itself and the identity check stands alone.
//!
//! Before removing anything, gen checks every entry of the directory against the
//! recorded spec (the layout is deterministic from it, tree/layout.rs): each directory a
//! planned one, each file a regular file with a planned name, in its planned directory,
//! of its planned size, and not changed since gen wrote it: every file's ctime is at most
//! the time gen sealed the tree (the directory's ctime right after the last write, read
//! from the file system's own clock and kept with the spec), so an edit that keeps the
//! size (`dd conv=notrunc`, `touch`, `chmod`) is seen at the cost of a ctime in the
//! statx gen already makes per file. The first entry that is not → refused (exit 2, naming it),
//! nothing removed; the removal itself unlinks only planned names and removes only
//! planned directories (rmdir: never a directory something else appeared in). Where the
//! file system keeps no user xattrs (vfat, exfat, ramfs, some NFS), nothing is recorded
//! and a later `gen` needs the directory empty or new: refusing is the safe side. The
//! `.manyfiles-run` marker file and the plain `gen` attribute value of older versions
//! are not ownership (a copy keeps them too).

use crate::error::{Error, Result};
use crate::experiment::all_ranks::run_phase_on_every_rank;
use crate::fs::walk::{self, Kind};
use crate::measure::PhaseResult;
use crate::measure::progress::Progress;
use crate::ops::{Create, CreateOptions, PhaseSettings};
use crate::signals;
use crate::storage::TargetInfo;
use crate::tree::{Plan, Prepared, TreeSpec};

use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{AtFlags, Mode, OFlags, StatxFlags, XattrFlags, fgetxattr, fremovexattr, fsetxattr, mkdir, openat};
use rustix::io::Errno;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::ffi::CStr;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone)]
pub struct GenConfig {
    pub dir: PathBuf,
    pub spec: TreeSpec,
    pub create: CreateOptions,
    pub threads: usize,
    pub quiet: bool,
}

#[derive(Debug)]
pub struct GenOutcome {
    pub result: PhaseResult,
    pub dirs: u64,
    /// Threads that created files: `--threads`, at most one per directory with files.
    pub threads: usize,
    pub info: TargetInfo,
}

const DIR_FLAGS: OFlags = OFlags::RDONLY.union(OFlags::DIRECTORY).union(OFlags::NOFOLLOW).union(OFlags::CLOEXEC);

enum DirState {
    Missing,
    Empty,
    /// Written by an earlier `gen` (its mark names this directory), holding only entries
    /// of the recorded spec.
    Ours {
        spec: Box<TreeSpec>,
        id: Identity,
    },
}

/// The extended attribute that marks a directory as `gen` output.
pub const OWNER_XATTR: &str = "user.manyfiles";
/// First words of the attribute's value (the format's version is the second).
const MARK_MAGIC: &str = "manyfiles-gen 2";

/// What tells one directory from another, and from a copy of it: device, inode and
/// birth time (0 where the file system keeps none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    pub dev: u64,
    pub ino: u64,
    pub btime_sec: i64,
    pub btime_nsec: u32,
}

/// The identity of the directory `fd` is open on.
pub fn identity(fd: BorrowedFd<'_>) -> std::result::Result<Identity, Errno> {
    let st = rustix::fs::fstat(fd)?;
    let (mut btime_sec, mut btime_nsec) = (0, 0);
    if let Ok(x) = rustix::fs::statx(fd, c"", AtFlags::EMPTY_PATH, StatxFlags::BTIME)
        && x.stx_mask & StatxFlags::BTIME.bits() != 0
    {
        (btime_sec, btime_nsec) = (x.stx_btime.tv_sec, x.stx_btime.tv_nsec);
    }
    Ok(Identity { dev: st.st_dev, ino: st.st_ino, btime_sec, btime_nsec })
}

/// gen's mark on a directory, parsed from the attribute.
#[derive(Debug, Clone)]
struct Mark {
    id: Identity,
    token: String,
    /// The spec, when it is kept in the attribute (no state directory when it was made);
    /// None: in the state record.
    spec: Option<TreeSpec>,
    /// With the spec in the attribute: when gen sealed the tree ([`Sealed`]).
    sealed: Option<Sealed>,
}

/// The directory's ctime (seconds, nanoseconds) once gen had written the whole tree: no
/// file gen wrote has a later ctime unless it changed since.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
struct Sealed(i64, u32);

impl Mark {
    fn encode(&self) -> Vec<u8> {
        let Identity { dev, ino, btime_sec, btime_nsec } = self.id;
        let mut v = format!("{MARK_MAGIC} dev={dev} ino={ino} btime={btime_sec}.{btime_nsec:09} token={}", self.token);
        if let Some(Sealed(s, n)) = self.sealed {
            v.push_str(&format!(" sealed={s}.{n:09}"));
        }
        match &self.spec {
            None => v.push_str(" record"),
            Some(s) => {
                v.push_str(" spec\n");
                v.push_str(&serde_json::to_string(s).expect("a spec serialises"));
            }
        }
        v.into_bytes()
    }

    fn parse(raw: &[u8]) -> Option<Mark> {
        let text = std::str::from_utf8(raw).ok()?;
        let (head, rest) = text.split_once('\n').unwrap_or((text, ""));
        let head = head.strip_prefix(MARK_MAGIC)?.trim();
        let mut kv = HashMap::new();
        let mut kind = "";
        for w in head.split_whitespace() {
            match w.split_once('=') {
                Some((k, v)) => {
                    kv.insert(k, v);
                }
                None => kind = w,
            }
        }
        let (bs, bn) = kv.get("btime")?.split_once('.')?;
        let id = Identity {
            dev: kv.get("dev")?.parse().ok()?,
            ino: kv.get("ino")?.parse().ok()?,
            btime_sec: bs.parse().ok()?,
            btime_nsec: bn.parse().ok()?,
        };
        let token = kv.get("token")?.to_string();
        let spec = match kind {
            "record" => None,
            "spec" => Some(serde_json::from_str(rest).ok()?),
            _ => return None,
        };
        let sealed = match kv.get("sealed").map(|v| v.split_once('.')) {
            Some(Some((s, n))) => Some(Sealed(s.parse().ok()?, n.parse().ok()?)),
            Some(None) => return None,
            None => None,
        };
        Some(Mark { id, token, spec, sealed })
    }
}

/// What the state directory keeps for one generated directory.
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    /// Where it was when generated (for pruning records of directories that are gone).
    dir: PathBuf,
    id: Identity,
    token: String,
    spec: TreeSpec,
    /// When gen sealed the tree; None while it is being written, and in older records
    /// (then only sizes are compared).
    #[serde(default)]
    sealed: Option<Sealed>,
}

/// The tool's state directory: `$XDG_STATE_HOME/manyfiles`, else
/// `$HOME/.local/state/manyfiles` (None when neither is set to an absolute path).
pub fn state_dir() -> Option<PathBuf> {
    let abs = |v: std::ffi::OsString| Some(PathBuf::from(v)).filter(|p| p.is_absolute());
    if let Some(x) = std::env::var_os("XDG_STATE_HOME").and_then(abs) {
        return Some(x.join("manyfiles"));
    }
    std::env::var_os("HOME").and_then(abs).map(|h| h.join(".local/state/manyfiles"))
}

fn record_path(id: &Identity) -> Option<PathBuf> {
    Some(state_dir()?.join("gen").join(format!("{}-{}.json", id.dev, id.ino)))
}

fn read_record(id: &Identity) -> Option<Record> {
    let text = std::fs::read(record_path(id)?).ok()?;
    serde_json::from_slice(&text).ok()
}

/// Write the record for `id` (atomically: a temporary file renamed over it), and drop
/// records of directories that are no longer where they were.
fn write_record(rec: &Record) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let path = record_path(&rec.id).ok_or_else(|| std::io::Error::other("no state directory"))?;
    let dir = path.parent().expect("a record has a parent");
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    let tmp = dir.join(format!(".{}.{}", std::process::id(), rec.token));
    let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp)?;
    let done =
        f.write_all(&serde_json::to_vec(rec).expect("a record serialises")).and_then(|_| std::fs::rename(&tmp, &path));
    if done.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    done?;
    prune_records(dir);
    Ok(())
}

/// Remove records whose directory is gone or is another one now (a moved directory
/// loses its record, and a later gen into it needs it empty: the safe side).
fn prune_records(dir: &Path) {
    use std::os::unix::fs::MetadataExt;
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        if p.extension().is_none_or(|x| x != "json") {
            continue;
        }
        let Some(rec) = std::fs::read(&p).ok().and_then(|t| serde_json::from_slice::<Record>(&t).ok()) else {
            continue;
        };
        let live = std::fs::symlink_metadata(&rec.dir).is_ok_and(|m| m.dev() == rec.id.dev && m.ino() == rec.id.ino);
        if !live {
            let _ = std::fs::remove_file(&p);
        }
    }
}

fn remove_record(id: &Identity) {
    if let Some(p) = record_path(id) {
        let _ = std::fs::remove_file(p);
    }
}

fn random_token() -> String {
    use std::io::Read;
    let mut b = [0u8; 16];
    let got = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut b));
    if got.is_err() {
        // No /dev/urandom (a bare container): time and pid, still unique per claim.
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        b[..8].copy_from_slice(&(t.as_nanos() as u64).to_le_bytes());
        b[8..12].copy_from_slice(&std::process::id().to_le_bytes());
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Read gen's mark from `dir`: Ok(None) when there is none, or one this version does
/// not trust (an older version's plain `gen`). Err when the file system keeps no xattrs.
fn read_mark(dir: BorrowedFd<'_>) -> std::result::Result<Option<Mark>, Errno> {
    let mut buf = vec![0u8; 64 * 1024];
    match fgetxattr(dir, OWNER_XATTR, &mut buf[..]) {
        Ok(n) => Ok(Mark::parse(&buf[..n])),
        Err(Errno::NODATA) | Err(Errno::RANGE) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Is `dir` marked as gen's own output, by a mark that names this very directory?
pub fn gen_owned(dir: BorrowedFd<'_>) -> std::result::Result<bool, Errno> {
    let here = identity(dir)?;
    Ok(read_mark(dir)?.is_some_and(|m| m.id == here && recorded_spec(&m).is_ok()))
}

/// The spec the mark's tree was generated from, and when gen sealed it: in the
/// attribute, or in the state record under the mark's identity with the mark's token.
fn recorded_spec(m: &Mark) -> std::result::Result<(TreeSpec, Option<Sealed>), String> {
    if let Some(s) = &m.spec {
        return Ok((s.clone(), m.sealed));
    }
    match read_record(&m.id) {
        Some(r) if r.token == m.token && r.id == m.id => Ok((r.spec, r.sealed)),
        Some(_) => Err("gen's record under its identity names another tree".into()),
        None => Err(format!(
            "gen's record of it is missing from {}",
            state_dir().map(|d| d.join("gen").display().to_string()).unwrap_or_else(|| "the state directory".into())
        )),
    }
}

/// Record that gen owns `dir` and is writing `spec` there (the attribute on the
/// directory, plus the state record when there is a state directory). Returns the mark;
/// Err (with the attribute's errno) when the attribute could not be set.
fn claim(dir: BorrowedFd<'_>, path: &Path, spec: &TreeSpec) -> std::result::Result<Mark, Errno> {
    let id = identity(dir)?;
    let token = random_token();
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let rec = Record { dir: abs, id, token: token.clone(), spec: spec.clone(), sealed: None };
    let recorded = write_record(&rec).is_ok();
    let mark = Mark { id, token, spec: (!recorded).then(|| spec.clone()), sealed: None };
    if let Err(e) = fsetxattr(dir, OWNER_XATTR, &mark.encode(), XattrFlags::empty()) {
        if recorded {
            remove_record(&id);
        }
        return Err(e);
    }
    Ok(mark)
}

/// Seal the tree gen has just written whole: set the mark to another value (which moves
/// the directory's ctime to the file system's "now", after every file's last change;
/// ext4 leaves the ctime alone when a value is set again unchanged), read that ctime, and
/// keep it with the spec. Best effort: unsealed, a later gen compares sizes only, as
/// before.
fn seal(dir: BorrowedFd<'_>, path: &Path, spec: &TreeSpec, mut mark: Mark) {
    let mut sealing = mark.encode();
    sealing.extend_from_slice(b" sealing");
    if fsetxattr(dir, OWNER_XATTR, &sealing, XattrFlags::empty()).is_err() {
        return;
    }
    let Ok(st) = rustix::fs::statx(dir, c"", AtFlags::EMPTY_PATH, StatxFlags::CTIME) else { return };
    let sealed = Some(Sealed(st.stx_ctime.tv_sec, st.stx_ctime.tv_nsec));
    if mark.spec.is_some() {
        mark.sealed = sealed;
        let _ = fsetxattr(dir, OWNER_XATTR, &mark.encode(), XattrFlags::empty());
    } else {
        let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let _ = write_record(&Record { dir: abs, id: mark.id, token: mark.token.clone(), spec: spec.clone(), sealed });
        let _ = fsetxattr(dir, OWNER_XATTR, &mark.encode(), XattrFlags::empty());
    }
}

/// Take the mark (and its record) off a directory gen leaves as it found it.
fn unclaim(dir: BorrowedFd<'_>, id: Option<Identity>) {
    let _ = fremovexattr(dir, OWNER_XATTR);
    if let Some(id) = id {
        remove_record(&id);
    }
}

fn no_xattrs(e: Errno) -> bool {
    e == Errno::NOTSUP || e == Errno::OPNOTSUPP
}

/// Walk the plan's directories that exist below `root`, depth first, one O_NOFOLLOW
/// `openat` per directory from its parent's fd (fds held: the tree's depth).
/// `enter(d, fd)` is called on each directory before its children; `leave(parent_fd, d)`
/// after them (not for the root). A planned directory that is not there is skipped (a
/// subset of the tree, as an interrupted gen leaves, is fine). Stops at the first Err.
fn walk_planned<E: From<(String, Errno)>>(
    root: BorrowedFd<'_>,
    plan: &Plan,
    mut enter: impl FnMut(u32, BorrowedFd<'_>) -> std::result::Result<(), E>,
    mut leave: impl FnMut(BorrowedFd<'_>, u32) -> std::result::Result<(), E>,
) -> std::result::Result<(), E> {
    let mut kids: Vec<Vec<u32>> = vec![Vec::new(); plan.dirs.len()];
    for (i, d) in plan.dirs.iter().enumerate().skip(1) {
        kids[d.parent as usize].push(i as u32);
    }
    let root = rustix::io::fcntl_dupfd_cloexec(root, 0).map_err(|e| E::from((".".into(), e)))?;
    enter(0, root.as_fd())?;
    let mut stack: Vec<(u32, OwnedFd, usize)> = vec![(0, root, 0)];
    while let Some((d, fd, next)) = stack.last_mut() {
        if let Some(&c) = kids[*d as usize].get(*next) {
            *next += 1;
            match walk::open_dir_at(fd.as_fd(), &plan.dirs[c as usize].name) {
                Ok(sub) => {
                    enter(c, sub.as_fd())?;
                    stack.push((c, sub, 0));
                }
                Err(Errno::NOENT) => {}
                Err(e) => return Err(E::from((plan.dir_path(c), e))),
            }
        } else {
            let (d, fd, _) = stack.pop().expect("a frame");
            drop(fd);
            if let Some((_, parent, _)) = stack.last() {
                leave(parent.as_fd(), d)?;
            }
        }
    }
    Ok(())
}

fn rel(plan: &Plan, d: u32, name: &CStr) -> String {
    let n = name.to_string_lossy();
    if d == 0 { n.into_owned() } else { format!("{}/{n}", plan.dir_path(d)) }
}

/// Is `name` in plan directory `d` a file gen planned there? Its index if so.
fn planned_file(plan: &Plan, d: u32, name: &CStr) -> Option<u64> {
    let node = &plan.dirs[d as usize];
    plan.file_index(name.to_bytes()).filter(|i| (node.first_file..node.first_file + node.nfiles).contains(i))
}

/// Why a walk over a generated tree stopped.
enum Stop {
    /// An entry gen did not write: its path relative to the root, and why.
    Foreign(String),
    Io(String, Errno),
}

impl From<(String, Errno)> for Stop {
    fn from((p, e): (String, Errno)) -> Stop {
        Stop::Io(p, e)
    }
}

/// The first entry below `root` (depth first, names in byte order) that the tree of
/// `spec` does not hold, or that changed after `sealed`, and why. Ok(None): every entry
/// is one gen wrote, as it wrote it.
fn first_foreign(
    root: BorrowedFd<'_>,
    spec: &TreeSpec,
    sealed: Option<Sealed>,
) -> std::result::Result<Option<String>, String> {
    let plan = Plan::new(spec);
    let children: std::collections::HashSet<(u32, &CStr)> =
        plan.dirs.iter().skip(1).map(|d| (d.parent, d.name.as_c_str())).collect();
    let check = |d: u32, fd: BorrowedFd<'_>| -> std::result::Result<(), Stop> {
        let io = |e| Stop::Io(plan.dir_path(d), e);
        let mut entries = walk::read_dir(fd).map_err(io)?;
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        for e in entries {
            let why = match e.kind {
                Kind::Dir if children.contains(&(d, e.name.as_c_str())) => None,
                Kind::Dir => Some("a directory gen did not make".to_string()),
                Kind::File => match planned_file(&plan, d, &e.name) {
                    None => Some("a file gen did not write".to_string()),
                    Some(i) => {
                        let want = spec.size.size_of(spec.seed, i);
                        // One statx as before: the ctime comes with the size.
                        let mask = StatxFlags::SIZE | StatxFlags::CTIME;
                        let st = rustix::fs::statx(fd, e.name.as_c_str(), AtFlags::SYMLINK_NOFOLLOW, mask)
                            .map_err(|err| Stop::Io(rel(&plan, d, &e.name), err))?;
                        let ctime = Sealed(st.stx_ctime.tv_sec, st.stx_ctime.tv_nsec);
                        if st.stx_size != want {
                            Some(format!("{} bytes where gen wrote {want} (changed since)", st.stx_size))
                        } else if sealed.is_some_and(|s| ctime > s) && st.stx_mask & StatxFlags::CTIME.bits() != 0 {
                            Some("changed since gen wrote it (its ctime is after gen finished)".to_string())
                        } else {
                            None
                        }
                    }
                },
                k => Some(format!("a {} gen did not make", k.name())),
            };
            if let Some(why) = why {
                return Err(Stop::Foreign(format!("{} is {why}", rel(&plan, d, &e.name))));
            }
        }
        Ok(())
    };
    match walk_planned(root, &plan, check, |_, _| Ok(())) {
        Ok(()) => Ok(None),
        Err(Stop::Foreign(f)) => Ok(Some(f)),
        Err(Stop::Io(p, e)) => Err(format!("{p}: {e}")),
    }
}

/// Remove the tree of `spec` below `root`: only planned file names, and planned
/// directories once empty (rmdir, which fails where anything else is left).
fn remove_owned(root: BorrowedFd<'_>, spec: &TreeSpec) -> std::result::Result<(), String> {
    let plan = Plan::new(spec);
    let unlink = |d: u32, fd: BorrowedFd<'_>| -> std::result::Result<(), (String, Errno)> {
        for e in walk::read_dir(fd).map_err(|e| (plan.dir_path(d), e))? {
            if e.kind == Kind::File && planned_file(&plan, d, &e.name).is_some() {
                match rustix::fs::unlinkat(fd, e.name.as_c_str(), AtFlags::empty()) {
                    Ok(()) | Err(Errno::NOENT) => {}
                    Err(err) => return Err((rel(&plan, d, &e.name), err)),
                }
            }
        }
        Ok(())
    };
    let rmdir = |parent: BorrowedFd<'_>, d: u32| -> std::result::Result<(), (String, Errno)> {
        match rustix::fs::unlinkat(parent, plan.dirs[d as usize].name.as_c_str(), AtFlags::REMOVEDIR) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(e) => Err((plan.dir_path(d), e)),
        }
    };
    walk_planned(root, &plan, unlink, rmdir).map_err(|(p, e)| format!("{p}: {e}"))
}

fn first_entry(dir: &Path) -> String {
    let mut names: Vec<_> = std::fs::read_dir(dir).into_iter().flatten().flatten().map(|e| e.file_name()).collect();
    names.sort();
    names.first().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

fn inspect(dir: &Path) -> Result<DirState> {
    let bad = |r: String| Error::bad("DIR", r);
    match std::fs::symlink_metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let parent = dir.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
            if !parent.is_dir() {
                return Err(bad(format!("{}: parent directory {} does not exist", dir.display(), parent.display())));
            }
            Ok(DirState::Missing)
        }
        Err(e) => Err(bad(format!("{}: {e}", dir.display()))),
        Ok(md) if md.file_type().is_symlink() => {
            Err(bad(format!("{} is a symlink; give the real directory", dir.display())))
        }
        Ok(md) if !md.is_dir() => Err(bad(format!("{} is not a directory", dir.display()))),
        Ok(_) => {
            let mut entries = std::fs::read_dir(dir).map_err(|e| bad(format!("{}: {e}", dir.display())))?;
            if entries.next().is_none() {
                return Ok(DirState::Empty);
            }
            let fd = openat(rustix::fs::CWD, dir, DIR_FLAGS, Mode::empty())
                .map_err(|e| bad(format!("{}: {e}", dir.display())))?;
            let refuse = "refusing to write into it; nothing was removed";
            let mark = match read_mark(fd.as_fd()) {
                Ok(Some(m)) => m,
                Ok(None) => {
                    return Err(bad(format!(
                        "{} is not empty and not written by manyfiles gen (no {OWNER_XATTR} mark naming it; first entry: \
                         {}): {refuse}",
                        dir.display(),
                        first_entry(dir)
                    )));
                }
                Err(e) if no_xattrs(e) => {
                    return Err(bad(format!(
                        "{} is not empty, and its file system keeps no extended attributes, so manyfiles cannot tell \
                         whether an earlier gen wrote it: refusing to write into it (empty it or give a new directory)",
                        dir.display()
                    )));
                }
                Err(e) => return Err(bad(format!("{}: cannot read its attributes: {e}", dir.display()))),
            };
            let here = identity(fd.as_fd()).map_err(|e| bad(format!("{}: {e}", dir.display())))?;
            let spec = recorded_spec(&mark);
            // Name the first entry gen did not write, whenever the recorded spec is known
            // (for a copy too: its mark names the original, whose record says what it holds).
            let foreign = match &spec {
                // A copy's files are new inodes: their ctimes say nothing of edits.
                Ok((s, sealed)) => first_foreign(fd.as_fd(), s, sealed.filter(|_| mark.id == here))
                    .map_err(|e| bad(format!("{}/{e}", dir.display())))?,
                Err(_) => None,
            };
            let foreign_note = foreign.as_deref().map(|f| format!("; {f}")).unwrap_or_default();
            if mark.id != here {
                return Err(bad(format!(
                    "{} is not the directory gen wrote: its {OWNER_XATTR} mark names another one (device {}, inode {}; \
                     a copy keeps the mark){foreign_note}: {refuse}",
                    dir.display(),
                    mark.id.dev,
                    mark.id.ino
                )));
            }
            let (spec, _) =
                spec.map_err(|why| bad(format!("{} carries gen's mark, but {why}: {refuse}", dir.display())))?;
            if let Some(f) = foreign {
                return Err(bad(format!("{}: {f}: {refuse} (move it out, or give another directory)", dir.display())));
            }
            Ok(DirState::Ours { spec: Box::new(spec), id: here })
        }
    }
}

/// Generate the tree. On failure or interrupt the partial tree is removed.
pub fn generate(cfg: &GenConfig) -> Result<GenOutcome> {
    signals::install();
    cfg.spec.validate().map_err(|(flag, reason)| Error::bad(flag, reason))?;
    let state = inspect(&cfg.dir)?;
    let probe_at = match state {
        DirState::Missing => cfg.dir.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")),
        _ => cfg.dir.as_path(),
    };
    let info = TargetInfo::probe("target", probe_at).map_err(|e| Error::bad("DIR", format!("{e}")))?;
    if info.read_only {
        return Err(Error::bad("DIR", format!("{} is on a read-only file system", cfg.dir.display())));
    }
    crate::experiment::check_room(&cfg.spec, &info, probe_at, "DIR")?;
    let created = matches!(state, DirState::Missing);
    if created {
        mkdir(&cfg.dir, Mode::from_raw_mode(0o755))
            .map_err(|e| Error::bad("DIR", format!("cannot create {}: {e}", cfg.dir.display())))?;
    }
    let root: OwnedFd = openat(rustix::fs::CWD, &cfg.dir, DIR_FLAGS, Mode::empty())
        .map_err(|e| Error::failed(format!("cannot open {}: {e}", cfg.dir.display())))?;
    if let DirState::Ours { spec: old, id } = &state {
        // Checked again on the fd that will be cleared: DIR may have been swapped since.
        if identity(root.as_fd()).ok() != Some(*id) || gen_owned(root.as_fd()) != Ok(true) {
            return Err(Error::failed(format!("{} changed while gen looked at it: left alone", cfg.dir.display())));
        }
        remove_owned(root.as_fd(), old).map_err(|e| {
            Error::failed(format!(
                "cannot clear the earlier tree in {}: {e} (only entries gen wrote were removed)",
                cfg.dir.display()
            ))
        })?;
    }
    let mark = match claim(root.as_fd(), &cfg.dir, &cfg.spec) {
        Ok(m) => Some(m),
        Err(e) => {
            // The tree is still exact; only a later gen into it will want it emptied first.
            eprintln!(
                "manyfiles: note: cannot record ownership of {} ({OWNER_XATTR}: {e}); a later gen into it needs it empty",
                cfg.dir.display()
            );
            None
        }
    };
    let claimed = mark.as_ref().map(|m| m.id);
    let cleanup = |root: &OwnedFd| {
        let _ = remove_owned(root.as_fd(), &cfg.spec);
        if created {
            unclaim(root.as_fd(), claimed);
            let _ = std::fs::remove_dir(&cfg.dir);
        } else if matches!(state, DirState::Empty) {
            unclaim(root.as_fd(), claimed); // the user's empty directory, as it was
        }
    };
    let tree = Prepared::new(&cfg.spec, cfg.create.direct);
    let progress = Progress::new(cfg.quiet);
    let op = Create { opts: cfg.create.clone() };
    // No syncfs at the end unless asked for (`--fsync end`): like every other tool that
    // writes files, gen leaves writeback to the kernel. (Session 3 gave every write phase
    // a timed syncfs; through run_phase gen took it too, and its time doubled against ftzz.)
    // At most one thread per directory that gets files: creates in one directory take
    // turns at its lock, and a second thread there only spins (1,000,000 files in one
    // ext4 directory: the same 29 s on one thread or two, with twice the CPU on two).
    let dirs_with_files = tree.plan.dirs.iter().filter(|d| d.nfiles > 0).count().max(1);
    let settings = PhaseSettings {
        threads: cfg.threads.min(dirs_with_files),
        portion_files: 10_000,
        buf_len: cfg.create.block_size,
        flush: false,
        shared_dir: crate::experiment::all_ranks::shared_dir(),
    };
    let result = run_phase_on_every_rank(&op, &tree, root.as_fd(), &settings, &progress);
    progress.finish();
    if let Some(f) = &result.failed {
        cleanup(&root);
        return Err(Error::failed(format!(
            "gen failed in {} after {} of {} files: {f}; the partial tree was removed",
            cfg.dir.display(),
            result.files,
            cfg.spec.files
        )));
    }
    if result.interrupted {
        cleanup(&root);
        return Err(Error::Interrupted { signal: signals::pending() });
    }
    if result.errors > 0 {
        return Err(Error::failed(format!(
            "gen in {}: {} errors, first: {}",
            cfg.dir.display(),
            result.errors,
            result.first_error.unwrap_or_default()
        )));
    }
    if let Some(m) = mark {
        seal(root.as_fd(), &cfg.dir, &cfg.spec, m);
    }
    Ok(GenOutcome { dirs: result.dirs, result, info, threads: settings.threads })
}
