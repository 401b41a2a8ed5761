//! Scenario 13, what the user owns (issue 25): copy and sync never write into SRC nor
//! delete outside what they were told to, judged by identity (bind mounts), never delete
//! without --delete, never block on an entry swapped for a FIFO, stop within a second of
//! SIGINT, and count every entry of SRC (copied + skipped + failed entries = entries seen
//! that are not directories) when the destination fails under them.

mod reliability_common;

use reliability_common::*;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(10);

fn sh(cmd: &str) {
    let st = Command::new("sh").arg("-c").arg(cmd).status().unwrap();
    assert!(st.success(), "{cmd}: {st}");
}

/// A tmpfs of its own, unmounted (with everything bound below it) on drop.
struct Scratch(tempfile::TempDir);

impl Scratch {
    fn new() -> Scratch {
        let t = tempfile::tempdir().unwrap();
        sh(&format!("mount -t tmpfs manyfiles-test {}", t.path().display()));
        Scratch(t)
    }
    fn path(&self) -> &Path {
        self.0.path()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-R").arg(self.0.path()).status();
    }
}

fn mount_bind(from: &Path, to: &Path) {
    sh(&format!("mount --bind '{}' '{}'", from.display(), to.display()));
}

fn one_line_exit_2(o: &Out, what: &str) {
    assert_eq!(o.code, Some(2), "{what}: {}", o.show());
    assert_eq!(o.lines().len(), 1, "{what}: one line: {}", o.show());
    assert!(o.stderr.contains("overlap"), "{what}: {}", o.show());
    assert!(o.stdout.is_empty(), "{what}: nothing printed on stdout: {}", o.show());
}

fn json(o: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(o).unwrap()).unwrap()
}

fn u(v: &serde_json::Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or_else(|| panic!("{k} in {v}"))
}

/// copied + skipped + failed_entries = entries seen that are not directories, and the
/// failure list with the omitted count accounts for every failure.
fn counts_add_up(v: &serde_json::Value, what: &str) {
    let (seen, dirs) = (u(v, "src_entries"), u(v, "src_dirs"));
    let (copied, skipped, failed_entries) = (u(v, "copied"), u(v, "skipped"), u(v, "failed_entries"));
    assert_eq!(copied + skipped + failed_entries, seen - dirs, "{what}: copied + skipped + failed entries: {v}");
    let listed = v["failures"].as_array().unwrap().len() as u64;
    assert!(listed + u(v, "failures_omitted") >= u(v, "failed").min(listed), "{what}: {v}");
    if u(v, "failed") > 0 {
        assert!(listed > 0, "{what}: failures are named: {v}");
    }
}

#[test]
fn reliability_ownership_sync_delete_into_a_bind_mount_of_src_parent() {
    let Some(_g) = root_only("bind mounts need root") else { return };
    let s = Scratch::new();
    let (t, v) = (s.path().join("t"), s.path().join("v"));
    std::fs::create_dir_all(t.join("src/a/b")).unwrap();
    std::fs::create_dir_all(&v).unwrap();
    std::fs::write(t.join("src/a/f"), "hi").unwrap();
    std::fs::write(t.join("src/other"), "o").unwrap();
    mount_bind(&t.join("src"), &v);
    let before = snapshot(&t, &[]);
    let started = Instant::now();
    // DST is SRC's parent through the bind mount: --delete would empty it.
    let o =
        run_bounded(&["sync".as_ref(), "--delete".as_ref(), t.join("src/a").as_os_str(), v.as_os_str()], LIMIT, None);
    one_line_exit_2(&o, "sync --delete SRC's parent through a bind mount");
    // Without --delete and as copy (DST inside SRC through the bind mount: no end).
    let o = run_bounded(&["sync".as_ref(), t.join("src/a").as_os_str(), v.as_os_str()], LIMIT, None);
    one_line_exit_2(&o, "sync into SRC's parent through a bind mount");
    let o = run_bounded(&["copy".as_ref(), t.join("src").as_os_str(), v.join("inside").as_os_str()], LIMIT, None);
    one_line_exit_2(&o, "copy into SRC through a bind mount");
    // A bind mount of a directory below SRC: no ancestor of DST is SRC by path or inode,
    // the path inside the file system (mountinfo) tells.
    let w = s.path().join("w");
    std::fs::create_dir_all(&w).unwrap();
    mount_bind(&t.join("src/a"), &w);
    let o = run_bounded(&["copy".as_ref(), t.join("src").as_os_str(), w.join("x").as_os_str()], LIMIT, None);
    one_line_exit_2(&o, "copy into a bind mount of SRC's subdirectory");
    let o = run_bounded(&["sync".as_ref(), "--delete".as_ref(), w.as_os_str(), t.join("src").as_os_str()], LIMIT, None);
    one_line_exit_2(&o, "sync --delete of a bind-mounted subdirectory into SRC");
    assert!(started.elapsed() < LIMIT, "all refused within {LIMIT:?}");
    assert_same(&before, &snapshot(&t, &[]), "SRC after every refused run");
}

#[test]
fn reliability_ownership_walk_never_enters_the_other_side() {
    let Some(_g) = root_only("bind mounts need root") else { return };
    let s = Scratch::new();
    let root = s.path();
    // SRC holds a bind mount of DST's parent: copying it would copy DST into itself.
    std::fs::create_dir_all(root.join("src/m")).unwrap();
    std::fs::create_dir_all(root.join("dp")).unwrap();
    std::fs::write(root.join("src/f"), "a").unwrap();
    mount_bind(&root.join("dp"), &root.join("src/m"));
    let out = root.join("copy.json");
    let o = run_bounded(
        &[
            "copy".as_ref(),
            root.join("src").as_os_str(),
            root.join("dp/d").as_os_str(),
            "--json".as_ref(),
            out.as_os_str(),
        ],
        LIMIT,
        None,
    );
    assert_eq!(o.code, Some(1), "{}", o.show());
    assert!(o.stdout.contains("m: is DST or holds it"), "{}", o.show());
    assert!(root.join("dp/d/f").exists() && !root.join("dp/d/m/d").exists(), "{}", o.show());
    counts_add_up(&json(&out), "copy with DST's parent bound inside SRC");
    // DST holds a bind mount of SRC: sync --delete must not remove SRC's files.
    std::fs::create_dir_all(root.join("s2")).unwrap();
    std::fs::create_dir_all(root.join("d2/m")).unwrap();
    std::fs::write(root.join("s2/keep"), "1").unwrap();
    mount_bind(&root.join("s2"), &root.join("d2/m"));
    let before = snapshot(&root.join("s2"), &[]);
    let o = run_bounded(
        &["sync".as_ref(), "--delete".as_ref(), root.join("s2").as_os_str(), root.join("d2").as_os_str()],
        LIMIT,
        None,
    );
    assert_eq!(o.code, Some(1), "{}", o.show());
    assert!(o.stdout.contains("m: not deleted"), "{}", o.show());
    assert_same(&before, &snapshot(&root.join("s2"), &[]), "SRC bound inside DST after sync --delete");
}

#[test]
fn reliability_ownership_no_deletion_without_delete() {
    let t = tempfile::tempdir().unwrap();
    let (s, d) = (t.path().join("s"), t.path().join("d"));
    std::fs::create_dir_all(&s).unwrap();
    std::fs::create_dir_all(d.join("x/sub")).unwrap();
    std::fs::create_dir_all(d.join("empty")).unwrap();
    std::fs::write(s.join("x"), "f").unwrap();
    std::os::unix::fs::symlink("x", s.join("empty")).unwrap();
    std::fs::write(d.join("x/sub/p"), "p").unwrap();
    std::fs::write(d.join("x/keep"), "k").unwrap();
    let before = snapshot(&d.join("x"), &[]);
    let out = t.path().join("o.json");
    let o =
        run_bounded(&["sync".as_ref(), s.as_os_str(), d.as_os_str(), "--json".as_ref(), out.as_os_str()], LIMIT, None);
    assert_eq!(o.code, Some(1), "{}", o.show());
    assert!(
        o.stdout.contains("x: would delete a non-empty directory") && o.stdout.contains("use --delete"),
        "{}",
        o.show()
    );
    assert_same(&before, &snapshot(&d.join("x"), &[]), "DST's directory x without --delete");
    // An empty directory makes way, as rsync decides.
    assert!(std::fs::symlink_metadata(d.join("empty")).unwrap().file_type().is_symlink());
    let v = json(&out);
    counts_add_up(&v, "sync without --delete");
    assert_eq!((u(&v, "failed"), u(&v, "deleted")), (1, 1), "{v}");
    // With --delete: a dry run and the real one count every entry below x (x, sub, p, keep).
    for extra in [&["--delete", "--dry-run"][..], &["--delete"][..]] {
        let mut args: Vec<&std::ffi::OsStr> =
            vec!["sync".as_ref(), s.as_os_str(), d.as_os_str(), "--json".as_ref(), out.as_os_str()];
        args.extend(extra.iter().map(|a| std::ffi::OsStr::new(*a)));
        let o = run_bounded(&args, LIMIT, None);
        assert_eq!(o.code, Some(0), "{extra:?}: {}", o.show());
        assert_eq!(u(&json(&out), "deleted"), 4, "{extra:?}: {}", o.show());
    }
    assert_eq!(std::fs::read(d.join("x")).unwrap(), b"f");
}

/// Swap random files of `files` for FIFOs and back (each FIFO for ~0.5 ms) until `stop`.
fn fifo_racer(files: &[std::path::PathBuf], seed: u64, stop: &AtomicBool, swaps: &AtomicU64) {
    let mut r = Rng(seed);
    while !stop.load(Ordering::Relaxed) {
        let f = &files[r.below(files.len() as u64) as usize];
        let aside = f.with_extension("aside");
        if std::fs::rename(f, &aside).is_err() {
            continue;
        }
        let c = std::ffi::CString::new(f.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a plain mkfifo on a NUL-terminated path.
        if unsafe { libc::mkfifo(c.as_ptr(), 0o644) } == 0 {
            swaps.fetch_add(1, Ordering::Relaxed);
            std::thread::sleep(Duration::from_micros(500));
            let _ = std::fs::remove_file(f);
        }
        std::fs::rename(&aside, f).unwrap();
    }
}

#[test]
fn reliability_ownership_fifo_swapped_in_never_blocks() {
    const TRIALS: u64 = 4;
    let mut total_swaps = 0;
    for mode in [&["copy"][..], &["sync"][..], &["sync", "--checksum"][..]] {
        for trial in 0..TRIALS {
            let t = tempfile::tempdir().unwrap();
            let (s, d) = (t.path().join("s"), t.path().join("d"));
            source_tree(&s, 50, 100);
            let files: Vec<_> = walkdir(&s);
            if mode[0] == "sync" {
                // An existing DST with equal sizes: --checksum opens both sides.
                run_bounded(&["copy".as_ref(), s.as_os_str(), d.as_os_str()], Duration::from_secs(60), None);
            }
            let before = snapshot(&s, &[]);
            let (stop, swaps) = (AtomicBool::new(false), AtomicU64::new(0));
            let out = t.path().join("o.json");
            let o = std::thread::scope(|sc| {
                // Each racer owns its own half of the files: two racers on one file
                // would rename each other's FIFO over the set-aside original.
                for k in 0..2usize {
                    let mine: Vec<_> = files.iter().skip(k).step_by(2).cloned().collect();
                    let (stop, swaps) = (&stop, &swaps);
                    sc.spawn(move || fifo_racer(&mine, 1000 * trial + k as u64, stop, swaps));
                }
                let mut args: Vec<&std::ffi::OsStr> = mode.iter().map(|a| std::ffi::OsStr::new(*a)).collect();
                args.extend([s.as_os_str(), d.as_os_str(), "--json".as_ref(), out.as_os_str()]);
                let started = Instant::now();
                let o = run_bounded(&args, Duration::from_secs(30), None);
                stop.store(true, Ordering::Relaxed);
                assert!(started.elapsed() < LIMIT, "{mode:?} trial {trial}: took {:?}", started.elapsed());
                o
            });
            assert!(matches!(o.code, Some(0 | 1)), "{mode:?} trial {trial}: {}", o.show());
            for l in o.stdout.lines().filter(|l| l.starts_with("  ") && !l.starts_with("  …")) {
                assert!(
                    l.contains("changed during the copy") || l.contains("not copied") || l.contains("No such file"),
                    "{mode:?} trial {trial}: unexpected failure {l}\n{}",
                    o.show()
                );
            }
            assert_same(&before, &snapshot(&s, &[]), "SRC after the racers put every file back");
            let v = json(&out);
            counts_add_up(&v, &format!("{mode:?} trial {trial}"));
            total_swaps += swaps.load(Ordering::Relaxed);
        }
    }
    eprintln!("fifo races: {} trials, {total_swaps} swaps", 3 * TRIALS);
    assert!(total_swaps > 0);
}

fn walkdir(root: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else if e.file_type().unwrap().is_file() {
                out.push(e.path());
            }
        }
    }
    out
}

#[test]
fn reliability_ownership_sigint_ends_within_a_second() {
    // A large file in flight (copy_file_range) and many small ones: SIGINT at random
    // points, the process gone within a second, exit 130, no temporary left.
    let dir = if Path::new("/dev/shm").is_dir() { Some(Path::new("/dev/shm")) } else { None };
    let t = match dir {
        Some(d) => tempfile::tempdir_in(d).unwrap(),
        None => tempfile::tempdir().unwrap(),
    };
    let s = t.path().join("s");
    source_tree(&s, 20, 200);
    let big = std::fs::File::create(s.join("big")).unwrap();
    big.set_len(1 << 30).unwrap(); // 1 GiB (sparse on the source, copied in full)
    drop(big);
    let mut r = Rng(7);
    for (trial, mode) in ["copy", "sync", "copy", "sync"].iter().enumerate() {
        let d = t.path().join(format!("d{trial}"));
        let mut child = spawn_quiet(&[mode.as_ref(), s.as_os_str(), d.as_os_str(), "--threads".as_ref(), "2".as_ref()]);
        std::thread::sleep(ms(100 + r.below(400)));
        let sent = Instant::now();
        signal(&child, libc::SIGINT);
        let code = wait_bounded(&mut child, LIMIT);
        let took = sent.elapsed();
        if code == Some(0) {
            continue; // finished before the signal landed
        }
        assert_eq!(code, Some(130), "{mode} trial {trial}");
        assert!(took < Duration::from_millis(1500), "{mode} trial {trial}: ended {took:?} after SIGINT");
        eprintln!("{mode} trial {trial}: exit 130 {took:?} after SIGINT");
        let _ = std::fs::remove_dir_all(&d);
    }
}

#[test]
fn reliability_ownership_counts_add_up_when_dst_fails() {
    let Some(_g) = root_only("an XFS image on a loop device needs root") else { return };
    if Command::new("mkfs.xfs").arg("-V").output().is_err() {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "CI installs xfsprogs");
        eprintln!("skipped: mkfs.xfs not installed");
        return;
    }
    let t = tempfile::tempdir_in("/dev/shm").unwrap();
    let (img, mnt, s) = (t.path().join("x.img"), t.path().join("mnt"), t.path().join("s"));
    std::fs::create_dir_all(&mnt).unwrap();
    std::fs::File::create(&img).unwrap().set_len(512 << 20).unwrap();
    sh(&format!("mkfs.xfs -q {}", img.display()));
    sh(&format!("mount -o loop {} {}", img.display(), mnt.display()));
    struct Unmount(std::path::PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let _u = Unmount(mnt.clone());
    source_tree(&s, 200, 100); // 20,000 files in 200 directories
    let out = t.path().join("o.json");
    let dst = mnt.join("d");
    let mut child = spawn_quiet(&[
        "copy".as_ref(),
        s.as_os_str(),
        dst.as_os_str(),
        "--threads".as_ref(),
        "2".as_ref(),
        "--json".as_ref(),
        out.as_os_str(),
    ]);
    // Shut the file system down once part of the tree is there.
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(20) {
        // Inodes in use on the XFS: the copy's directories and files.
        let used = rustix::fs::statvfs(&mnt).map(|v| v.f_files - v.f_ffree).unwrap_or(0);
        if used >= 5_000 {
            break;
        }
        std::thread::sleep(ms(5));
    }
    sh(&format!("xfs_io -x -c shutdown {}", mnt.display()));
    let code = wait_bounded(&mut child, Duration::from_secs(60));
    assert_eq!(code, Some(1), "copy onto a shut-down XFS fails");
    let v = json(&out);
    eprintln!(
        "xfs shutdown: files {} copied {} failed entries {} failed {} listed {} omitted {}",
        u(&v, "src_files"),
        u(&v, "copied"),
        u(&v, "failed_entries"),
        u(&v, "failed"),
        v["failures"].as_array().unwrap().len(),
        u(&v, "failures_omitted")
    );
    assert_eq!(u(&v, "src_files"), 20_000, "{v}");
    counts_add_up(&v, "copy onto an XFS shut down mid-copy");
    assert!(u(&v, "failed_entries") > 0 && u(&v, "copied") > 0, "{v}");
    assert!(u(&v, "failed") > u(&v, "failures_omitted"), "{v}");
}

#[test]
fn reliability_ownership_pack_target_inside_path_through_a_bind_mount() {
    let Some(_g) = root_only("bind mounts need root") else { return };
    let s = Scratch::new();
    let (src, v) = (s.path().join("src"), s.path().join("v"));
    std::fs::create_dir_all(src.join("sub")).unwrap();
    std::fs::create_dir_all(&v).unwrap();
    std::fs::write(src.join("sub/f"), "data").unwrap();
    mount_bind(&src, &v);
    let before = snapshot(&src, &[]);
    // The destination target is PATH itself under another name: the run directory would
    // be made (and packed) inside the tree being read.
    for flag in ["--dst-target", "--src-target"] {
        let o = run_bounded(
            &[
                "pack".as_ref(),
                src.as_os_str(),
                flag.as_ref(),
                v.join("sub").as_os_str(),
                "--runs".as_ref(),
                "1".as_ref(),
            ],
            LIMIT,
            None,
        );
        assert_eq!(o.code, Some(2), "{flag}: {}", o.show());
        assert_eq!(o.lines().len(), 1, "{flag}: {}", o.show());
        assert!(o.stderr.contains(flag) && o.stderr.contains("inside PATH"), "{flag}: {}", o.show());
    }
    assert_same(&before, &snapshot(&src, &[]), "PATH after the refused packs");
}
