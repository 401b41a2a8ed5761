//! Do two directories overlap? Judged by identity, not by path: a bind mount shows one
//! directory under two unrelated paths, so `/mnt/v` can be `/mnt/t/src` itself, and a
//! path comparison says they are apart while a `sync --delete /mnt/t/src/a /mnt/v`
//! empties the source (issue 25).
//!
//! Two tests, either of which is enough:
//! - **ancestors by (device, inode)**: every directory on the way from each side up to
//!   `/` (by its canonical path) is stat'ed; one side's own identity among the other's
//!   ancestors means it contains the other. This catches a bind mount of a directory
//!   whose mount point is reached on the path (`/mnt/v` = `/mnt/t/src`).
//! - **the path inside the file system** (`/proc/self/mountinfo`: the mount's device and
//!   the root of the mount inside its file system): two sides on one device whose paths
//!   inside the file system are one below the other overlap, whatever mount each is
//!   reached through (`/mnt/w` bound to `/mnt/t/src/a`: a DST `/mnt/w/x` is inside SRC
//!   `/mnt/t/src`, though no ancestor of `/mnt/w/x` is `/mnt/t/src`).
//!
//! Written by hand: no crate answers "is this directory inside that one" across bind
//! mounts; the mountinfo format is the kernel's (Documentation/filesystems/proc.rst).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// (device, inode) of a directory.
pub type Id = (u64, u64);

/// Where a directory is: its identity, its ancestors' identities (itself first, `/`
/// last), and its path inside its file system with that file system's device.
#[derive(Debug, Clone)]
pub struct Place {
    pub path: PathBuf,
    pub id: Id,
    pub chain: Vec<Id>,
    /// (major:minor of the mount, path inside the file system), when mountinfo names it.
    pub inside: Option<(String, PathBuf)>,
}

/// The place of an existing directory (its canonical path is used; symlinks on the way
/// are the user's to name).
pub fn place(path: &Path) -> std::io::Result<Place> {
    let canon = std::fs::canonicalize(path)?;
    let mut chain = Vec::new();
    for a in canon.ancestors() {
        let md = std::fs::metadata(a)?;
        chain.push((md.dev(), md.ino()));
    }
    let inside = std::fs::read_to_string("/proc/self/mountinfo").ok().and_then(|t| inside_fs(&t, &canon));
    Ok(Place { path: canon, id: chain[0], chain, inside })
}

/// How two places relate, if they overlap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overlap {
    Same,
    /// The first is inside the second.
    FirstInside,
    /// The second is inside the first.
    SecondInside,
}

/// Do `a` and `b` overlap (one is the other or inside it)?
pub fn overlap(a: &Place, b: &Place) -> Option<Overlap> {
    if a.id == b.id {
        return Some(Overlap::Same);
    }
    if a.chain.contains(&b.id) {
        return Some(Overlap::FirstInside);
    }
    if b.chain.contains(&a.id) {
        return Some(Overlap::SecondInside);
    }
    if let (Some((da, pa)), Some((db, pb))) = (&a.inside, &b.inside)
        && da == db
    {
        if pa == pb {
            return Some(Overlap::Same);
        }
        if pa.starts_with(pb) {
            return Some(Overlap::FirstInside);
        }
        if pb.starts_with(pa) {
            return Some(Overlap::SecondInside);
        }
    }
    None
}

/// A mountinfo field with its octal escapes (`\040` for a space …) undone.
fn unescape(field: &str) -> PathBuf {
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c)) {
            let v = (b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0');
            out.push(v);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    PathBuf::from(OsStr::from_bytes(&out))
}

/// The mount that holds canonical path `p` (the longest mount point that is a prefix of
/// it; of several on one point the last, which is on top) → (its device, `p`'s path
/// inside that file system: the mount's root joined with the rest of `p`).
fn inside_fs(mountinfo: &str, p: &Path) -> Option<(String, PathBuf)> {
    let mut best: Option<(usize, String, PathBuf, PathBuf)> = None;
    for line in mountinfo.lines() {
        // id parent major:minor root mount-point options … - type source super-options
        let f: Vec<&str> = line.split(' ').collect();
        if f.len() < 5 {
            continue;
        }
        let (dev, root, point) = (f[2], unescape(f[3]), unescape(f[4]));
        if !p.starts_with(&point) {
            continue;
        }
        let depth = point.components().count();
        if best.as_ref().is_none_or(|b| depth >= b.0) {
            best = Some((depth, dev.to_string(), root, point));
        }
    }
    let (_, dev, root, point) = best?;
    let rest = p.strip_prefix(&point).ok()?;
    Some((dev, if rest.as_os_str().is_empty() { root } else { root.join(rest) }))
}

/// One line of `/proc/self/mountinfo`, the fields the checks need.
#[derive(Debug, Clone)]
struct MountLine {
    id: u64,
    dev: String,
    root: PathBuf,
    point: PathBuf,
    fstype: String,
    source: String,
    supers: String,
}

/// mountinfo's lines: `id parent major:minor root point options [optional …] - type
/// source super-options`.
fn mount_lines(mountinfo: &str) -> Vec<MountLine> {
    mountinfo
        .lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split(' ').collect();
            let dash = f.iter().position(|x| *x == "-")?;
            (f.len() > dash + 2 && dash >= 5).then(|| MountLine {
                id: f[0].parse().unwrap_or(0),
                dev: f[2].to_string(),
                root: unescape(f[3]),
                point: unescape(f[4]),
                fstype: f[dash + 1].to_string(),
                source: unescape(f[dash + 2]).to_string_lossy().into_owned(),
                supers: f.get(dash + 3).unwrap_or(&"").to_string(),
            })
        })
        .collect()
}

/// The mount whose root the directory open at `fd` is, described for a message:
/// "tmpfs tmpfs", "ext4 /dev/vda, a bind mount of /srv/p". Read only when a mount
/// point is met (never per entry).
pub fn describe_mount(fd: rustix::fd::BorrowedFd<'_>) -> String {
    use rustix::fs::{AtFlags, StatxFlags, statx};
    let Ok(st) = statx(fd, c"", AtFlags::EMPTY_PATH, StatxFlags::MNT_ID) else {
        return "a mount".into();
    };
    let dev = format!("device {}:{}", st.stx_dev_major, st.stx_dev_minor);
    if st.stx_mask & StatxFlags::MNT_ID.bits() == 0 {
        return dev;
    }
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    match mount_lines(&text).into_iter().find(|m| m.id == st.stx_mnt_id) {
        Some(m) if m.root == Path::new("/") => format!("{} {}", m.fstype, m.source),
        Some(m) => format!("{} {}, a bind mount of {}", m.fstype, m.source, m.root.display()),
        None => dev,
    }
}

/// The mount whose root the directory open at `fd` is: (its device as mountinfo writes
/// it, the directory of that file system it shows), as [`Place::inside`] names places.
/// Read only when the walk meets a mount point.
pub fn mount_shows(fd: rustix::fd::BorrowedFd<'_>) -> Option<(String, PathBuf)> {
    use rustix::fs::{AtFlags, StatxFlags, statx};
    let st = statx(fd, c"", AtFlags::EMPTY_PATH, StatxFlags::MNT_ID).ok()?;
    if st.stx_mask & StatxFlags::MNT_ID.bits() == 0 {
        return None;
    }
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    mount_lines(&text).into_iter().find(|m| m.id == st.stx_mnt_id).map(|m| (m.dev, m.root))
}

/// Mounts whose mount point is strictly below `path` (canonical): (the mount point, its
/// device, the directory of its file system it shows).
pub fn mounts_below(path: &Path) -> Vec<(PathBuf, (String, PathBuf))> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    mount_lines(&text)
        .into_iter()
        .filter(|m| m.point != path && m.point.starts_with(path))
        .map(|m| (m.point, (m.dev, m.root)))
        .collect()
}

/// Do two places inside file systems ([`Place::inside`]) overlap: one device, one path
/// at or below the other?
pub fn inside_overlap(a: &(String, PathBuf), b: &(String, PathBuf)) -> bool {
    a.0 == b.0 && (a.1.starts_with(&b.1) || b.1.starts_with(&a.1))
}

/// An overlayfs mount: where it is mounted and the directories it shows (upper, every
/// lower, work), from its super options in mountinfo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overlay {
    pub point: PathBuf,
    pub layers: Vec<PathBuf>,
}

/// Every overlayfs mount of `mountinfo`. Values are escaped as the kernel shows them
/// (`\054` for a comma …); lower directories are separated by `:` (`::` before
/// data-only ones; a `:` inside a path is escaped).
fn overlays_in(mountinfo: &str) -> Vec<Overlay> {
    mount_lines(mountinfo)
        .into_iter()
        .filter(|m| m.fstype == "overlay")
        .map(|m| {
            let mut layers = Vec::new();
            for opt in m.supers.split(',') {
                let Some((key, value)) = opt.split_once('=') else { continue };
                match key.trim_end_matches('+') {
                    "lowerdir" | "datadir" => layers.extend(value.split(':').filter(|v| !v.is_empty()).map(unescape)),
                    "upperdir" | "workdir" => layers.push(unescape(value)),
                    _ => {}
                }
            }
            Overlay { point: m.point, layers }
        })
        .collect()
}

/// Is one side on (or around) an overlayfs mount that shows the other side, or a
/// directory that holds it or is inside it? An overlay's merged view has its own
/// device, so neither ancestors nor paths inside the file system see that writing to
/// `m/new` writes into its upper directory (`up/new`): a copy of `up` into `m/new`
/// grew `up/new/new/…` until it ran out of descriptors (issue 38). Returns (the overlay's
/// mount point, the layer) of the first one found.
pub fn through_overlay(a: &Place, b: &Place) -> Option<(PathBuf, String)> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    for ov in overlays_in(&text) {
        let inside = a.path.starts_with(&ov.point);
        if !(inside || ov.point.starts_with(&a.path)) {
            continue;
        }
        for layer in &ov.layers {
            if let Ok(l) = place(layer)
                && overlap(&l, b).is_some()
            {
                return Some((ov.point.clone(), format!("{} (a layer of it)", layer.display())));
            }
        }
        // A layer named by a relative path (as the mount command was given it) says
        // nothing about where it is from here. The merged view's directories carry
        // their real directories' inode numbers (on the overlay's own device): one of
        // `a`'s inside the overlay that is `b` or one of its ancestors, or `b`'s
        // identity among them, is taken as the same directory.
        if inside && ov.layers.iter().any(|l| l.is_relative()) {
            let merged: Vec<u64> = a.chain.iter().take_while(|id| id.0 == a.id.0).map(|id| id.1).collect();
            if b.chain.iter().any(|id| id.0 != a.id.0 && merged.contains(&id.1)) {
                let what = "a layer of it by inode (mountinfo names its layers by relative paths)";
                return Some((ov.point.clone(), what.to_string()));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlay_layers_from_mountinfo() {
        let info = "\
22 1 254:0 / / rw - ext4 /dev/vda rw
40 22 0:50 / /tmp/x/m rw,relatime shared:9 - overlay o rw,lowerdir=/tmp/x/lo:/tmp/x/lo\\0722,upperdir=/tmp/x/up\\054u,workdir=/tmp/x/wk,uuid=on
41 22 0:51 / /tmp/y rw - tmpfs t rw
";
        let ov = overlays_in(info);
        assert_eq!(ov.len(), 1);
        assert_eq!(ov[0].point, Path::new("/tmp/x/m"));
        let layers: Vec<String> = ov[0].layers.iter().map(|p| p.display().to_string()).collect();
        assert_eq!(layers, vec!["/tmp/x/lo", "/tmp/x/lo:2", "/tmp/x/up,u", "/tmp/x/wk"]);
        let lines = mount_lines(info);
        assert_eq!((lines[1].id, lines[1].fstype.as_str(), lines[1].source.as_str()), (40, "overlay", "o"));
    }

    const INFO: &str = "\
22 1 254:0 / / rw,relatime - ext4 /dev/vda rw
30 22 0:40 / /mnt/t rw - tmpfs t rw
31 22 0:40 /src /mnt/v rw - tmpfs t rw
32 22 0:40 /src/a /mnt/w rw - tmpfs t rw
33 22 0:41 / /mnt/my\\040disk rw - tmpfs u rw
34 30 0:42 / /mnt/t/over rw - tmpfs o rw
";

    #[test]
    fn path_inside_the_file_system_follows_bind_mounts() {
        let at = |p: &str| inside_fs(INFO, Path::new(p)).map(|(d, p)| (d, p.display().to_string()));
        assert_eq!(at("/mnt/t/src/a"), Some(("0:40".into(), "/src/a".into())));
        assert_eq!(at("/mnt/v"), Some(("0:40".into(), "/src".into())));
        assert_eq!(at("/mnt/w/x"), Some(("0:40".into(), "/src/a/x".into())));
        assert_eq!(at("/mnt/my disk/f"), Some(("0:41".into(), "/f".into())));
        assert_eq!(at("/mnt/t/over/y"), Some(("0:42".into(), "/y".into())));
        assert_eq!(at("/home"), Some(("254:0".into(), "/home".into())));
        // "/mnt/tx" is not below "/mnt/t": components, not bytes.
        assert_eq!(at("/mnt/tx"), Some(("254:0".into(), "/mnt/tx".into())));
    }

    fn at(p: &str) -> Place {
        let inside = inside_fs(INFO, Path::new(p));
        // Identities unique per path (no bind mounts seen by inode here).
        let id = |s: &Path| {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            s.hash(&mut h);
            (1, h.finish())
        };
        let path = PathBuf::from(p);
        let chain: Vec<Id> = path.ancestors().map(id).collect();
        Place { id: chain[0], chain, path, inside }
    }

    #[test]
    fn overlap_by_path_inside_the_file_system() {
        assert_eq!(overlap(&at("/mnt/t/src/a"), &at("/mnt/v")), Some(Overlap::FirstInside));
        assert_eq!(overlap(&at("/mnt/w/x"), &at("/mnt/t/src")), Some(Overlap::FirstInside));
        assert_eq!(overlap(&at("/mnt/t/src"), &at("/mnt/w/x")), Some(Overlap::SecondInside));
        assert_eq!(overlap(&at("/mnt/w"), &at("/mnt/t/src/a")), Some(Overlap::Same));
        assert_eq!(overlap(&at("/mnt/t/src/b"), &at("/mnt/w")), None);
        assert_eq!(overlap(&at("/mnt/my disk/f"), &at("/mnt/t/f")), None);
    }

    #[test]
    fn overlap_by_ancestor_identity_on_real_directories() {
        let t = tempfile::tempdir().unwrap();
        let (a, b, c) = (t.path().join("a"), t.path().join("a/b"), t.path().join("c"));
        std::fs::create_dir_all(&b).unwrap();
        std::fs::create_dir_all(&c).unwrap();
        let (pa, pb, pc) = (place(&a).unwrap(), place(&b).unwrap(), place(&c).unwrap());
        assert_eq!(overlap(&pb, &pa), Some(Overlap::FirstInside));
        assert_eq!(overlap(&pa, &pb), Some(Overlap::SecondInside));
        assert_eq!(overlap(&pa, &pa.clone()), Some(Overlap::Same));
        assert_eq!(overlap(&pa, &pc), None);
        // A symlink to a directory is the directory.
        std::os::unix::fs::symlink(&b, t.path().join("l")).unwrap();
        assert_eq!(overlap(&place(&t.path().join("l")).unwrap(), &pa), Some(Overlap::FirstInside));
    }
}
