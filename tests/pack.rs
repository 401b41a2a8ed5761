//! `manyfiles pack` and the containers behind it: every container packs a real tree and
//! gives it back byte for byte (unpacked and mounted), the experiment runs on a generated
//! ladder and on a real directory (left untouched), bad input is refused before anything
//! is created, and SIGINT in the middle leaves no mount, loop device or file behind.
//! Mounting needs root (CI runs as root); without it those parts print a skip reason.

mod common;

use common::*;
use manyfiles::pack::{self, Container, MountWith};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// Containers whose tools are installed; the others are named with a skip reason.
fn available() -> Vec<Box<dyn Container>> {
    let mut v = Vec::new();
    for n in pack::NAMES {
        let c = pack::by_name(n).unwrap();
        match pack::missing(&c.tools()).first() {
            Some((t, p)) => println!("skipped {n}: {t} not found (Debian package {p})"),
            None => v.push(c),
        }
    }
    v
}

/// A small real tree with what trips archivers: nesting, an empty file, an empty
/// directory, a symlink, a file larger than one block, names with spaces and UTF-8.
fn real_tree(root: &Path) {
    std::fs::create_dir_all(root.join("a/b/c")).unwrap();
    std::fs::create_dir_all(root.join("empty dir")).unwrap();
    std::fs::write(root.join("a/empty"), b"").unwrap();
    std::fs::write(root.join("a/b/c/deep.txt"), b"deep\n").unwrap();
    let big: Vec<u8> = (0..300_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    std::fs::write(root.join("a/big.bin"), &big).unwrap();
    std::fs::write(root.join("naïve name.txt"), "ü".repeat(1000)).unwrap();
    for i in 0..50 {
        std::fs::write(root.join(format!("a/b/f{i:03}")), format!("file {i}\n").repeat(i + 1)).unwrap();
    }
    std::os::unix::fs::symlink("a/b/c/deep.txt", root.join("link")).unwrap();
}

/// Every entry with its kind, size, bytes and symlink target.
fn content(root: &Path) -> Vec<(String, bool, bool, u64, Vec<u8>)> {
    walk(root, false)
        .into_iter()
        .map(|e| {
            let data = if e.is_symlink {
                std::fs::read_link(&e.path).unwrap().into_os_string().into_encoded_bytes()
            } else if e.is_dir {
                Vec::new()
            } else {
                std::fs::read(&e.path).unwrap()
            };
            (e.rel, e.is_dir, e.is_symlink, if e.is_dir { 0 } else { e.size }, data)
        })
        .collect()
}

#[test]
fn every_container_gives_the_tree_back_byte_for_byte() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    real_tree(&src);
    let want = content(&src);
    assert!(want.len() > 50);
    for c in available() {
        let n = c.name();
        let file = t.path().join(format!("packed.{n}"));
        c.pack(&src, &file, 2).unwrap_or_else(|e| panic!("{n}: pack: {e}"));
        assert!(file.metadata().unwrap().len() > 0, "{n}: empty container");
        if c.can_unpack() {
            let out = t.path().join(format!("unpacked-{n}"));
            std::fs::create_dir(&out).unwrap();
            c.unpack(&file, &out, 2).unwrap().unwrap_or_else(|e| panic!("{n}: unpack: {e}"));
            assert_eq!(content(&out), want, "{n}: the unpacked tree differs");
        }
        if c.kernel_fs().is_none() {
            continue;
        }
        if !is_root() {
            println!("skipped mounting {n}: needs root");
            continue;
        }
        let file = std::fs::canonicalize(&file).unwrap();
        let mut m = pack::mount(c.as_ref(), &file, MountWith::Kernel, &t.path().join("mnt")).unwrap();
        assert_eq!(content(&m.mount_point), want, "{n}: the mounted tree differs");
        let (u, errors, _) = pack::walk_tree(&m.mount_point, 2, true);
        assert_eq!((errors, u.files, u.symlinks), (0, 54, 1), "{n}: read every file of the mount");
        let mp = m.mount_point.clone();
        m.unmount().unwrap();
        assert!(!mp.exists(), "{n}: mount point left");
        assert!(manyfiles::storage::registry::mounts_at(&mp).is_empty());
        // FUSE too, where the mounter is installed.
        if let Some(((tool, pkg), _)) = c.fuse(&file, &mp) {
            if !pack::missing(&[(tool, pkg)]).is_empty() {
                println!("skipped FUSE mount of {n}: {tool} not found (Debian package {pkg})");
                continue;
            }
            let mut m = pack::mount(c.as_ref(), &file, MountWith::Fuse, &t.path().join("mnt")).unwrap();
            assert_eq!(content(&m.mount_point), want, "{n}: the FUSE-mounted tree differs");
            m.unmount().unwrap();
        }
    }
}

/// Loop devices backed by a file under `dir`.
fn loops_under(dir: &Path) -> Vec<String> {
    let out = Command::new("losetup").arg("-a").output().map(|o| o.stdout).unwrap_or_default();
    let d = dir.to_string_lossy().into_owned();
    String::from_utf8_lossy(&out).lines().filter(|l| l.contains(&d)).map(String::from).collect()
}

/// Mounts at or below `dir`, or made by process `pid` (its mount points carry `-<pid>-`).
fn mounts_of(dir: &Path, pid: u32) -> Vec<String> {
    let d = dir.to_string_lossy().into_owned();
    let tag = format!("-{pid}-");
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter(|l| l.contains(&d) || l.contains(&tag))
        .map(String::from)
        .collect()
}

/// Registry records of process `pid`.
fn records_of(pid: u32) -> Vec<String> {
    let tag = format!("-{pid}-");
    std::fs::read_dir("/run/manyfiles")
        .map(|rd| {
            rd.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).filter(|n| n.contains(&tag)).collect()
        })
        .unwrap_or_default()
}

fn ops_of(json: &Path) -> Vec<(String, u64, bool)> {
    let v = load_json(json);
    arr(&v, "measurements")
        .iter()
        .map(|m| (s(m, "op").to_string(), u(m, "tree_files"), measurement_complete(m)))
        .collect()
}

/// Access and mount flags that work here: mounts only as root.
fn access() -> &'static str {
    if is_root() { "unpack,mount" } else { "unpack" }
}

fn names() -> String {
    available().iter().filter(|c| is_root() || c.can_unpack()).map(|c| c.name()).collect::<Vec<_>>().join(",")
}

#[test]
fn ladder_with_every_container() {
    let t = tempfile::tempdir().unwrap();
    let json = t.path().join("r.json");
    let args = format!(
        "pack --from 4 --to 256 --step 8 --total 512KiB --runs 1 -q --copies 5 --containers {} --access {} --src-target {} --json {}",
        names(),
        access(),
        t.path().display(),
        json.display()
    );
    let r = run(words(&args));
    r.ok();
    let ops = ops_of(&json);
    assert!(ops.iter().all(|o| o.2), "every measurement complete: {ops:?}");
    for files in [4, 32, 256] {
        assert!(ops.iter().any(|o| o.0 == "loose" && o.1 == files), "loose at {files}");
        for c in available() {
            let n = c.name();
            if !is_root() && !c.can_unpack() {
                continue;
            }
            for step in ["pack", "copy"] {
                assert!(ops.iter().any(|o| o.0 == format!("{n}:{step}") && o.1 == files), "{n}:{step} at {files}");
            }
            if c.can_unpack() {
                assert!(ops.iter().any(|o| o.0 == format!("{n}:unpack") && o.1 == files), "{n}:unpack at {files}");
            }
            if is_root() && c.kernel_fs().is_some() {
                for step in ["mount", "read", "umount"] {
                    assert!(ops.iter().any(|o| o.0 == format!("{n}:{step}")), "{n}:{step}");
                }
            }
        }
    }
    // Storage, not cache: every step that writes ends with a timed syncfs (durable, the
    // returned time kept beside), every step that reads starts cold.
    let v = load_json(&json);
    assert_eq!(s(&v["experiment"], "caches"), "cold");
    assert_eq!(s(&v["experiment"], "until"), "durable");
    for m in arr(&v, "measurements") {
        let op = s(m, "op");
        let writes = op == "loose" || [":pack", ":copy", ":unpack"].iter().any(|w| op.ends_with(w));
        let (returned, flush) = (m["returned_s"].as_f64(), m["flush_s"].as_f64());
        if writes {
            let (r, f) = (returned.expect(op), flush.expect(op));
            let e = m["elapsed_s"].as_f64().unwrap();
            assert!((r + f - e).abs() < 1e-6, "{op}: durable = returned + flush: {r} + {f} != {e}");
        } else {
            assert!(returned.is_none() && flush.is_none(), "{op} writes nothing: no flush");
        }
        let cache = m["cache"].as_str();
        if op.ends_with(":umount") {
            assert_eq!(cache, None, "{op} reads nothing");
        } else {
            // not-applicable: a memory file system (a /tmp on tmpfs) has no cache to empty.
            let want = if is_root() { "all-dropped" } else { "data-evicted" };
            assert!(cache == Some(want) || cache == Some("not-applicable"), "{op} starts cold: {cache:?}");
        }
    }
    for want in ["loose", "5 copies", "where packing starts to pay", "recommendation for 256 files", "only Linux opens"]
    {
        assert!(r.stdout.contains(want), "output lacks '{want}':\n{}", r.stdout);
    }
    // No --consumer: from the destination's file system (a temporary directory: not
    // exFAT, NTFS nor FAT, so Linux).
    assert!(r.stdout.contains("opened on Linux (the destination's file system is "), "{}", r.stdout);
    assert!(run_dirs(t.path()).is_empty(), "run directory left");
}

#[test]
fn real_directory_is_only_read() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("data");
    real_tree(&src);
    let before = content(&src);
    let work = t.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let json = t.path().join("r.json");
    let args = format!(
        "pack {} --runs 1 -q --consumer any --containers {} --access {} --src-target {} --json {}",
        src.display(),
        names(),
        access(),
        work.display(),
        json.display()
    );
    let r = run(words(&args));
    r.ok();
    assert_eq!(content(&src), before, "PATH was changed");
    let ops = ops_of(&json);
    assert!(ops.iter().all(|o| o.2 && o.1 == 54), "54 files, all complete: {ops:?}");
    assert!(ops.iter().any(|o| o.0 == "tar:unpack"));
    assert!(r.stdout.contains("recommendation for 54 files"), "{}", r.stdout);
    // --consumer any: never a container only Linux opens.
    assert!(r.stdout.contains("opened on any system (--consumer any)"), "{}", r.stdout);
    for c in ["squashfs", "erofs", "ext4"] {
        assert!(!r.stdout.contains(&format!("pack into {c}")), "{}", r.stdout);
    }
    assert!(run_dirs(&work).is_empty());
}

#[test]
fn pack_op_in_an_ops_experiment() {
    let t = tempfile::tempdir().unwrap();
    let json = t.path().join("r.json");
    let args = format!(
        "ops --files 300 --size 2k --ops create,pack:tar,copy --runs 1 -q --target {} --json {}",
        t.path().display(),
        json.display()
    );
    run(words(&args)).ok();
    let ops = ops_of(&json);
    assert!(ops.iter().any(|o| o.0 == "pack:tar" && o.2), "{ops:?}");
    let r = run(words(&format!("ops --files 10 --ops pack:zip --target {}", t.path().display())));
    assert_bad_input(&r, "--ops", "unknown container");
    let r = run(words(&format!("ops --files 10 --ops pack:ext4 --target {}", t.path().display())));
    assert_bad_input(&r, "--ops", "ext4 is only mounted");
    assert!(run_dirs(t.path()).is_empty());
}

#[test]
fn bad_input_is_refused_before_anything_is_made() {
    let t = tempfile::tempdir().unwrap();
    let tp = t.path().display().to_string();
    let file = t.path().join("f");
    std::fs::write(&file, b"x").unwrap();
    let cases: Vec<(String, &str)> = vec![
        (format!("pack --files 10 --containers zip --src-target {tp}"), "--containers"),
        (format!("pack --files 10 --copies 0 --src-target {tp}"), "--copies"),
        (format!("pack --files 10 --access copy --src-target {tp}"), "--access"),
        (format!("pack --files 10 --mount-with magic --src-target {tp}"), "--mount-with"),
        (format!("pack --files 10 --runs 0 --src-target {tp}"), "--runs"),
        (format!("pack --files 10 --cache lukewarm --src-target {tp}"), "--cache"),
        (format!("pack --files 10 --until later --src-target {tp}"), "--until"),
        (format!("pack --files 10 --consumer windows --src-target {tp}"), "--consumer"),
        (format!("pack {} --src-target {tp}", file.display()), "PATH"),
        (format!("pack {tp}/missing --src-target {tp}"), "PATH"),
        // The run directory would be inside the tree it packs.
        (format!("pack {tp} --src-target {tp}"), "--src-target"),
        (format!("pack --files 10 --fs-size 1G --src-target {tp}"), "--fs-size"),
        (format!("pack --files 10 --src-fs nosuchfs --src-target {tp}"), "--src"),
        (format!("pack --to 8 --total 4 --src-target {tp}"), "--total"),
        (format!("pack --files 10 --access mount --containers tar --src-target {tp}"), "--containers"),
    ];
    for (args, flag) in &cases {
        let r = run(words(args));
        if r.code == Some(2) && r.stderr_lines().len() == 1 {
            assert_bad_input(&r, flag, args);
        } else {
            // clap's own refusals (conflicting flags) are one line too.
            panic!("{args}: expected a one-line refusal naming {flag}\n{}\n{}", r.stdout, r.stderr);
        }
    }
    let left: Vec<_> = std::fs::read_dir(t.path()).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(left.len(), 1, "only the test's own file: {left:?}");
}

/// A named container whose tool is missing is an error naming the Debian package; the
/// default list skips it with a warning and runs the rest.
#[test]
fn missing_tools_are_named_with_their_package() {
    let t = tempfile::tempdir().unwrap();
    let bin_dir = t.path().join("bin");
    std::fs::create_dir(&bin_dir).unwrap();
    // Only tar (and what the copy needs: nothing else) on PATH.
    let tar = manyfiles::storage::managed::find_in_path("tar", &std::env::var_os("PATH").unwrap()).unwrap();
    std::os::unix::fs::symlink(tar, bin_dir.join("tar")).unwrap();
    let work = t.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let go = |extra: &str| {
        let out = cmd()
            .env("PATH", &bin_dir)
            .args(words(&format!(
                "pack --files 20 --runs 1 -q --access unpack --src-target {} {extra}",
                work.display()
            )))
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, out, err) = go("--containers tar,squashfs");
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(err.contains("--containers") && err.contains("mksquashfs") && err.contains("squashfs-tools"), "{err}");
    assert!(run_dirs(&work).is_empty());
    let (code, out, err) = go("");
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(err.contains("warning: tar.zst: zstd not found: install the Debian package zstd; skipped"), "{err}");
    assert!(err.contains("erofs-utils"), "{err}");
    assert!(out.contains("tar (unpack)") && out.contains("skipped: "), "{out}");
    assert!(run_dirs(&work).is_empty());
}

/// SIGINT while a container is being made, and while one is mounted: exit 130, and no
/// mount, loop device, registry record or file of the run is left.
#[test]
fn sigint_mid_pack_leaves_nothing() {
    let cs = names();
    if !cs.split(',').any(|c| c == "squashfs") {
        println!("skipped: squashfs-tools not installed");
        return;
    }
    // When the signal is sent: while mksquashfs writes the container / while it is mounted.
    for during in ["pack", "mount"] {
        if during == "mount" && !is_root() {
            println!("skipped SIGINT during a mount: needs root");
            continue;
        }
        let t = tempfile::tempdir().unwrap();
        let json = t.path().join("r.json");
        let args = format!(
            "pack --files 20000 --size 2k --runs 3 -q --containers squashfs --access {} --src-target {} --json {}",
            access(),
            t.path().display(),
            json.display()
        );
        let mut child = Command::new(bin())
            .args(words(&args))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        let after = during;
        // Up to 5 minutes: under CI's load (10 on 2 cores) making 20,000 files and the
        // first container took longer than 2 minutes; a run that ended early stops the wait.
        let mut ended = None;
        let seen = wait_until(Duration::from_secs(300), || {
            ended = child.try_wait().unwrap();
            ended.is_some()
                || match during {
                    "pack" => run_dirs(t.path()).iter().any(|d| d.join("packed.squashfs").exists()),
                    _ => !mounts_of(t.path(), pid).is_empty(),
                }
        });
        if let Some(status) = ended {
            let mut err = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
            panic!("pack ended ({status}) before the {during} step was seen: {err}");
        }
        assert!(seen, "never saw the {during} step in 5 minutes");
        // SAFETY: kill(2) on our own child.
        assert_eq!(unsafe { libc::kill(pid as libc::pid_t, libc::SIGINT) }, 0);
        let status = child.wait().unwrap();
        let mut err = String::new();
        std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
        assert_eq!(status.code(), Some(130), "after {after}: {err}");
        assert!(run_dirs(t.path()).is_empty(), "after {after}: run directory left");
        assert!(mounts_of(t.path(), pid).is_empty(), "after {after}: mounts left: {:?}", mounts_of(t.path(), pid));
        assert!(loops_under(t.path()).is_empty(), "after {after}: loop devices left");
        assert!(records_of(pid).is_empty(), "after {after}: registry records left: {:?}", records_of(pid));
        let left: Vec<PathBuf> = std::fs::read_dir(t.path()).unwrap().flatten().map(|e| e.path()).collect();
        assert!(left.iter().all(|p| p == &json), "after {after}: only the results file may stay: {left:?}");
    }
}

/// kill -9 while a container is mounted: `manyfiles cleanup` unmounts it, the loop
/// device goes, and the run directory and the records are removed.
#[test]
fn cleanup_after_kill_while_mounted() {
    if !is_root() {
        println!("skipped: needs root");
        return;
    }
    if !names().split(',').any(|c| c == "squashfs") {
        println!("skipped: squashfs-tools not installed");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let args = format!(
        "pack --files 20000 --size 2k --runs 3 -q --containers squashfs --access mount --src-target {}",
        t.path().display()
    );
    let mut child = Command::new(bin()).args(words(&args)).stdin(Stdio::null()).stdout(Stdio::null()).spawn().unwrap();
    let pid = child.id();
    let seen = wait_until(Duration::from_secs(120), || !mounts_of(t.path(), pid).is_empty());
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(seen, "never saw the mount");
    assert!(!mounts_of(t.path(), pid).is_empty() || !records_of(pid).is_empty(), "the kill left something to clean");
    let r = run(["cleanup"]);
    r.ok();
    assert!(mounts_of(t.path(), pid).is_empty(), "mounts left: {:?}", mounts_of(t.path(), pid));
    assert!(loops_under(t.path()).is_empty(), "loop devices left");
    assert!(records_of(pid).is_empty(), "records left: {:?}", records_of(pid));
    assert!(run_dirs(t.path()).is_empty(), "run directory left");
}
