//! Issue 38: mount topologies the copy/sync/rm engines met with data loss or overreach.
//! A mount point anywhere below DST (top level included, a bind mount of the same file
//! system included) is never entered, written into or emptied without --cross-mounts;
//! overlayfs layers count in the overlap check; `rm` follows no symlink in a PATH and
//! refuses a PATH that is a mount point; names that differ only in case onto exFAT; a
//! DST file sync made immutable. Every scenario as root (a scratch directory
//! under /tmp, mounts made and taken down by the test itself), every run bounded.

mod reliability_common;

use reliability_common::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

/// A mount the test made, taken down (that mount point only) when dropped.
struct Mounted(PathBuf);

impl Mounted {
    fn new(args: &[&str], at: &Path) -> Mounted {
        if !at.exists() {
            std::fs::create_dir_all(at).unwrap();
        }
        let ok = Command::new("mount").args(args).arg(at).status().unwrap();
        assert!(ok.success(), "mount {args:?} {}", at.display());
        Mounted(at.to_path_buf())
    }
    fn bind(from: &Path, at: &Path) -> Mounted {
        Mounted::new(&["--bind", from.to_str().unwrap()], at)
    }
    fn tmpfs(at: &Path) -> Mounted {
        Mounted::new(&["-t", "tmpfs", "mf-test"], at)
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

fn scratch(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new().prefix(&format!("engine-{name}-")).tempdir_in("/tmp").unwrap()
}

fn mf(args: &[&std::ffi::OsStr]) -> Out {
    run_bounded(args, LIMIT, None)
}

fn write(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// Reproduction 1: `sync --delete s d` with a bind mount (or a tmpfs) at d/bm emptied
/// the mounted directory. Now: left alone, one line naming it, exit 1, the rest done.
#[test]
fn sync_delete_never_empties_a_mount_point_at_dsts_top_level() {
    let Some(_g) = root_only("mounting needs root") else { return };
    let t = scratch("sync-top");
    let (s, d, p) = (t.path().join("s"), t.path().join("d"), t.path().join("p"));
    write(&s.join("a"), "a");
    write(&p.join("k"), "precious");
    write(&d.join("old"), "extraneous");
    let before = snapshot(&p, &[]);
    {
        let _m = Mounted::bind(&p, &d.join("bm"));
        let out = mf(&["sync".as_ref(), s.as_os_str(), d.as_os_str(), "--delete".as_ref(), "-q".as_ref()]);
        assert_eq!(out.code, Some(1), "{}", out.show());
        assert_eq!(snapshot(&p, &[]), before, "the bind-mounted directory is untouched\n{}", out.show());
        assert!(
            out.stdout.contains("bm: not deleted: a mount point in DST") && out.stdout.contains("--cross-mounts"),
            "{}",
            out.show()
        );
        assert_eq!(out.stdout.matches("a mount point").count(), 1, "one line for it\n{}", out.show());
        assert_eq!(std::fs::read_to_string(d.join("a")).unwrap(), "a", "the rest is done");
        assert!(!d.join("old").exists(), "other extraneous entries are deleted");

        // SRC has an entry of that name: sync would walk into the mount and write there.
        write(&s.join("bm/k"), "from src");
        write(&s.join("bm/new"), "new");
        let out = mf(&["sync".as_ref(), s.as_os_str(), d.as_os_str(), "--delete".as_ref(), "-q".as_ref()]);
        assert_eq!(out.code, Some(1), "{}", out.show());
        assert_eq!(snapshot(&p, &[]), before, "nothing written into the mount\n{}", out.show());
        assert!(
            out.stdout.contains("bm: a mount point in DST (") && out.stdout.contains("not entered"),
            "{}",
            out.show()
        );
    }
    // A tmpfs there: the same; with --cross-mounts emptied, the mount point kept.
    let _m = Mounted::tmpfs(&d.join("bm"));
    write(&d.join("bm/k"), "on tmpfs");
    std::fs::remove_dir_all(s.join("bm")).unwrap();
    let out = mf(&["sync".as_ref(), s.as_os_str(), d.as_os_str(), "--delete".as_ref(), "-q".as_ref()]);
    assert_eq!(out.code, Some(1), "{}", out.show());
    assert_eq!(std::fs::read_to_string(d.join("bm/k")).unwrap(), "on tmpfs");
    assert!(out.stdout.contains("(tmpfs mf-test)"), "the line names the mount\n{}", out.show());
    let out = mf(&[
        "sync".as_ref(),
        s.as_os_str(),
        d.as_os_str(),
        "--delete".as_ref(),
        "--cross-mounts".as_ref(),
        "-q".as_ref(),
    ]);
    assert_eq!(out.code, Some(1), "the mount point stays: {}", out.show());
    assert!(!d.join("bm/k").exists(), "--cross-mounts empties it\n{}", out.show());
    assert!(out.stdout.contains("emptied (--cross-mounts); the mount point itself stays"), "{}", out.show());
}

/// One level deeper the deleter already left the mount alone; the message now says why.
#[test]
fn sync_delete_leaves_a_deeper_mount_alone_and_says_so() {
    let Some(_g) = root_only("mounting needs root") else { return };
    let t = scratch("sync-deep");
    let (s, d, p) = (t.path().join("s"), t.path().join("d"), t.path().join("p"));
    write(&s.join("a"), "a");
    write(&p.join("k"), "precious");
    write(&d.join("x/other"), "extraneous");
    let before = snapshot(&p, &[]);
    let _m = Mounted::bind(&p, &d.join("x/m"));
    let out = mf(&["sync".as_ref(), s.as_os_str(), d.as_os_str(), "--delete".as_ref(), "-q".as_ref()]);
    assert_eq!(out.code, Some(1), "{}", out.show());
    assert_eq!(snapshot(&p, &[]), before);
    assert!(out.stdout.contains("x: not all deleted: a mount point below it"), "{}", out.show());
}

/// A bind mount of SRC inside SRC (a loop) and of DST inside DST: never entered, the
/// walk ends, exit 1.
#[test]
fn a_side_bind_mounted_inside_itself_is_not_entered() {
    let Some(_g) = root_only("mounting needs root") else { return };
    let t = scratch("loop");
    let (s, d) = (t.path().join("s"), t.path().join("d"));
    write(&s.join("a"), "a");
    let _m = Mounted::bind(&s, &s.join("loop"));
    let out = mf(&["copy".as_ref(), s.as_os_str(), d.as_os_str(), "-q".as_ref()]);
    assert_eq!(out.code, Some(1), "{}", out.show());
    assert!(out.stdout.contains("loop: is SRC or holds it"), "{}", out.show());
    assert!(!d.join("loop/a").exists() && d.join("a").exists(), "{}", out.show());
}

/// Reproduction 6: overlayfs with upperdir=up mounted at m: `copy up m/new` wrote into
/// SRC (up/new/new/… until EMFILE). Now refused before anything is written (exit 2, one
/// line), with the layers named by relative paths (as in the report) or absolute ones.
#[test]
fn overlay_layers_count_in_the_overlap_check() {
    let Some(_g) = root_only("mounting needs root") else { return };
    let t = scratch("overlay");
    let root = t.path();
    for d in ["lo", "up", "wk", "m", "other"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    write(&root.join("lo/l"), "lower");
    write(&root.join("up/u"), "upper");
    write(&root.join("other/o"), "other");
    for relative in [true, false] {
        let (lo, up, wk) = match relative {
            true => ("lo".to_string(), "up".to_string(), "wk".to_string()),
            false => {
                let p = |n: &str| root.join(n).display().to_string();
                (p("lo"), p("up"), p("wk"))
            }
        };
        let opts = format!("lowerdir={lo},upperdir={up},workdir={wk}");
        let ok = Command::new("mount")
            .current_dir(root)
            .args(["-t", "overlay", "mf-ovl", "-o", &opts])
            .arg(root.join("m"))
            .status()
            .unwrap();
        assert!(ok.success());
        let m = Mounted(root.join("m"));
        let upper = snapshot(&root.join("up"), &[]);
        let cases: [(&str, PathBuf, PathBuf); 3] = [
            ("copy", root.join("up"), root.join("m/new")),
            ("sync", root.join("up"), root.join("m")),
            ("copy", root.join("m"), root.join("up/new")),
        ];
        for (cmd, src, dst) in cases {
            let out = mf(&[cmd.as_ref(), src.as_os_str(), dst.as_os_str(), "-q".as_ref()]);
            assert_eq!(out.code, Some(2), "relative layers: {relative}: {cmd} {src:?} {dst:?}\n{}", out.show());
            assert_eq!(out.lines().len(), 1, "{}", out.show());
            assert!(out.stderr.contains("on the overlay mounted at"), "{}", out.show());
            assert!(out.stderr.len() < 1024, "{}", out.show());
            assert_eq!(snapshot(&root.join("up"), &[]), upper, "nothing written to the upper directory");
        }
        // Not related to the overlay's layers: copied as before.
        let out =
            mf(&["copy".as_ref(), root.join("other").as_os_str(), root.join("m/fine").as_os_str(), "-q".as_ref()]);
        assert_eq!(out.code, Some(0), "{}", out.show());
        assert_eq!(std::fs::read_to_string(root.join("up/fine/o")).unwrap(), "other");
        drop(m);
        std::fs::remove_dir_all(root.join("up/fine")).unwrap();
    }
}

/// Reproduction 9: `rm LINK/x` with LINK → a directory outside removed x there. Now any
/// symlink before the last component is refused (exit 2, one line naming it).
#[test]
fn rm_follows_no_symlink_anywhere_in_a_path() {
    let t = scratch("rm-link");
    let etc = t.path().join("etc");
    write(&etc.join("hostname"), "host");
    write(&etc.join("sub/deeper"), "deep");
    std::os::unix::fs::symlink(&etc, t.path().join("LINK")).unwrap();
    std::fs::create_dir(t.path().join("real")).unwrap();
    std::os::unix::fs::symlink(&etc, t.path().join("real/inner")).unwrap();
    for p in ["LINK/hostname", "LINK/sub", "real/inner/sub/deeper", "LINK/sub/../hostname"] {
        let path = t.path().join(p);
        let out = mf(&["rm".as_ref(), path.as_os_str(), "-q".as_ref()]);
        assert_eq!(out.code, Some(2), "{p}\n{}", out.show());
        assert_eq!(out.lines().len(), 1, "{}", out.show());
        assert!(out.stderr.contains("is a symlink: refused"), "{}", out.show());
        assert!(etc.join("hostname").exists() && etc.join("sub/deeper").exists(), "{p}: nothing removed");
    }
    // Relative PATHs too, and the link itself is still removable (never followed).
    let mut child = command(&["rm".as_ref(), "-q".as_ref(), "LINK/hostname".as_ref()], None)
        .current_dir(t.path())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let code = wait_bounded(&mut child, LIMIT);
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(code, Some(2), "{err}");
    assert!(err.starts_with("manyfiles: rm: LINK/hostname: LINK is a symlink"), "{err}");
    let out = mf(&["rm".as_ref(), t.path().join("LINK").as_os_str(), "-q".as_ref()]);
    assert_eq!(out.code, Some(0), "{}", out.show());
    assert!(etc.join("hostname").exists());
    // A real path with `..` is fine.
    let path = t.path().join("real/../etc/sub/deeper");
    let out = mf(&["rm".as_ref(), path.as_os_str(), "-q".as_ref()]);
    assert_eq!(out.code, Some(0), "{}", out.show());
    assert!(!etc.join("sub/deeper").exists());
}

/// Reproduction 9, second half: `rm MOUNTPOINT` emptied the mounted file system, then
/// failed with a bare EBUSY. Now refused (exit 2) unless --cross-mounts, which empties
/// it and keeps the mount point, saying so (exit 0).
#[test]
fn rm_of_a_mount_point_is_refused_unless_cross_mounts() {
    let Some(_g) = root_only("mounting needs root") else { return };
    let t = scratch("rm-mount");
    let (p, mp, tm) = (t.path().join("p"), t.path().join("mp"), t.path().join("tm"));
    write(&p.join("k"), "precious");
    let before = snapshot(&p, &[]);
    let _b = Mounted::bind(&p, &mp);
    let _t = Mounted::tmpfs(&tm);
    write(&tm.join("d/z"), "z");
    for target in [&mp, &tm] {
        let out = mf(&["rm".as_ref(), target.as_os_str(), "-q".as_ref()]);
        assert_eq!(out.code, Some(2), "{}", out.show());
        assert_eq!(out.lines().len(), 1, "{}", out.show());
        assert!(out.stderr.contains("a mount point (") && out.stderr.contains("--cross-mounts"), "{}", out.show());
    }
    assert_eq!(snapshot(&p, &[]), before, "the bind mount's directory untouched");
    assert!(tm.join("d/z").exists());
    // A file bind-mounted over another: refused too, with or without --cross-mounts.
    write(&t.path().join("over"), "over");
    write(&t.path().join("under"), "under");
    let _f = Mounted::bind(&t.path().join("over"), &t.path().join("under"));
    let under = t.path().join("under");
    for extra in [&[][..], &["--cross-mounts"][..]] {
        let mut a: Vec<&std::ffi::OsStr> = vec!["rm".as_ref(), under.as_os_str(), "-q".as_ref()];
        a.extend(extra.iter().map(|x| std::ffi::OsStr::new(*x)));
        let out = mf(&a);
        assert_eq!(out.code, Some(2), "{}", out.show());
        assert!(out.stderr.contains("a file bind mount"), "{}", out.show());
    }
    let json = t.path().join("rm.json");
    let out = mf(&[
        "rm".as_ref(),
        tm.as_os_str(),
        "--cross-mounts".as_ref(),
        "-q".as_ref(),
        "--json".as_ref(),
        json.as_os_str(),
    ]);
    assert_eq!(out.code, Some(0), "{}", out.show());
    assert!(out.stdout.contains("a mount point, emptied (--cross-mounts)"), "{}", out.show());
    assert!(tm.is_dir() && std::fs::read_dir(&tm).unwrap().next().is_none(), "emptied, kept");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v["kept_mount_points"].as_array().map(|a| a.len()), Some(1), "{v}");
    assert_eq!(v["failed"], 0);
}

/// An exFAT image mounted by `manyfiles mount`, taken down by `manyfiles umount` (that
/// mount only) when dropped.
struct Exfat(PathBuf);

impl Exfat {
    fn mount(at: &Path) -> Exfat {
        std::fs::create_dir_all(at).unwrap();
        let out = mf(&["mount".as_ref(), "exfat".as_ref(), at.as_os_str(), "--size".as_ref(), "64MiB".as_ref()]);
        assert_eq!(out.code, Some(0), "{}", out.show());
        Exfat(at.to_path_buf())
    }
}

impl Drop for Exfat {
    fn drop(&mut self) {
        let out = run_bounded(&["umount".as_ref(), self.0.as_os_str()], LIMIT, None);
        assert_eq!(out.code, Some(0), "{}", out.show());
    }
}

/// Reproduction 13: `sync` onto exFAT with names that differ only in case (A/a, Dir/dir)
/// exited 0, kept one of each pair, and every sync copied again (content alternating).
/// Now: one of each pair is made, the others are a `names` loss (exit 1 without
/// --lossy, 0 with it), and a second sync copies nothing. copy says the same.
/// `--lossy --verify` onto exFAT passes (what --lossy accepted is no difference).
#[test]
fn sync_onto_exfat_with_names_differing_in_case_converges_and_reports_them() {
    let Some(_g) = root_only("mounting exFAT needs root") else { return };
    let t = scratch("exfat");
    let s = t.path().join("s");
    write(&s.join("A"), "upper");
    write(&s.join("a"), "lower");
    write(&s.join("Dir/f1"), "1");
    write(&s.join("dir/f2"), "2");
    write(&s.join("plain"), "plain");
    let ex = Exfat::mount(&t.path().join("ex"));
    let d = ex.0.join("d");
    let sync = |extra: &[&str]| {
        let mut a: Vec<&std::ffi::OsStr> = vec!["sync".as_ref(), s.as_os_str(), d.as_os_str(), "-q".as_ref()];
        a.extend(extra.iter().map(|x| std::ffi::OsStr::new(*x)));
        let json = t.path().join("sync.json");
        a.extend(["--json".as_ref(), json.as_os_str()]);
        let out = mf(&a);
        (out, serde_json::from_slice::<serde_json::Value>(&std::fs::read(&json).unwrap()).unwrap())
    };
    let (out, v) = sync(&[]);
    assert_eq!(out.code, Some(1), "names lost without --lossy\n{}", out.show());
    let names = v["losses"].as_array().unwrap().iter().find(|l| l["kind"] == "names").cloned();
    assert_eq!(names.as_ref().map(|n| n["count"].as_u64()), Some(Some(2)), "{v}");
    assert_eq!(v["lost_entries"], 2, "a and dir/f2: {v}");
    let first = (std::fs::read_to_string(d.join("A")).unwrap(), std::fs::read_to_string(d.join("Dir/f1")).unwrap());
    assert_eq!(first, ("upper".to_string(), "1".to_string()), "the first name in byte order is made");
    for _ in 0..2 {
        let (out, v) = sync(&["--lossy", "--verify"]);
        assert_eq!(out.code, Some(0), "{}", out.show());
        assert_eq!(v["copied"], 0, "a second sync copies nothing: {v}");
        assert_eq!(v["failed"], 0);
        assert_eq!(v["verify"]["differences"], 0, "{v}");
        assert_eq!(std::fs::read_to_string(d.join("A")).unwrap(), "upper", "no alternation");
    }
    let c = ex.0.join("c");
    let out =
        mf(&["copy".as_ref(), s.as_os_str(), c.as_os_str(), "-q".as_ref(), "--lossy".as_ref(), "--verify".as_ref()]);
    assert_eq!(out.code, Some(0), "{}", out.show());
    assert!(out.stdout.contains("names 2") && out.stdout.contains("only its case differs"), "{}", out.show());
    assert!(out.stdout.contains("verify:") && out.stdout.contains(": 0 differences"), "{}", out.show());
}

/// From the unclear list: a sync could not update a DST file it had made
/// immutable (SRC's flag kept), so after `chattr -i`, an edit and `chattr +i` on SRC every
/// sync failed ("rename into place: Operation not permitted"). Now the flag is lifted
/// before the rename and SRC's set again.
#[test]
fn sync_replaces_a_dst_file_it_made_immutable() {
    let Some(_g) = root_only("chattr +i needs root") else { return };
    let t = scratch("immutable");
    let (s, d) = (t.path().join("s"), t.path().join("d"));
    write(&s.join("f"), "one");
    let chattr = |flag: &str, p: &Path| assert!(Command::new("chattr").arg(flag).arg(p).status().unwrap().success());
    chattr("+i", &s.join("f"));
    let sync = || mf(&["sync".as_ref(), s.as_os_str(), d.as_os_str(), "-q".as_ref()]);
    let out = sync();
    assert_eq!(out.code, Some(0), "{}", out.show());
    chattr("-i", &s.join("f"));
    std::fs::write(s.join("f"), "two").unwrap();
    chattr("+i", &s.join("f"));
    let out = sync();
    let _ = Command::new("chattr").arg("-i").arg(s.join("f")).arg(d.join("f")).status();
    assert_eq!(out.code, Some(0), "{}", out.show());
    assert_eq!(std::fs::read_to_string(d.join("f")).unwrap(), "two");
}

/// Found by the invariant harness (seed 173): SRC holding a bind mount of a DST
/// subdirectory; `sync --delete` removed DST's entry, and with it what SRC showed. Now
/// refused before anything is written (exit 2, one line).
#[test]
fn src_holding_a_mount_of_a_dst_subdirectory_is_refused() {
    let Some(_g) = root_only("mounting needs root") else { return };
    let t = scratch("src-holds-dst");
    let (s, d) = (t.path().join("t"), t.path().join("u/D1"));
    write(&s.join("a"), "a");
    write(&d.join("A/k"), "in DST, shown in SRC");
    let _m = Mounted::bind(&d.join("A"), &s.join("m1"));
    let before = snapshot(&s, &[]);
    for extra in [&["--delete"][..], &[][..]] {
        let mut a: Vec<&std::ffi::OsStr> = vec!["sync".as_ref(), s.as_os_str(), d.as_os_str(), "-q".as_ref()];
        a.extend(extra.iter().map(|x| std::ffi::OsStr::new(*x)));
        let out = mf(&a);
        assert_eq!(out.code, Some(2), "{}", out.show());
        assert_eq!(out.lines().len(), 1, "{}", out.show());
        assert!(out.stderr.contains("holds a mount of DST"), "{}", out.show());
        assert_eq!(snapshot(&s, &[]), before, "SRC unchanged");
    }
}
