//! `manyfiles mount tmpfs X`, then what a user's machine does to it meanwhile (a file
//! written in it, a mount inside it, a process working in it, its parent renamed), then
//! `manyfiles umount X` by the name it has now. Its own contents may go; a mount inside
//! it and a busy mount may not.

use crate::cases::{Case, UmountCase};
use crate::topology::{MountKind, Rng, Topology, mount_raw};
use std::path::{Path, PathBuf};

pub fn make(t: &mut Topology, rng: &mut Rng) -> Case {
    let parent = t.root.join(format!("p{}", rng.below(1000)));
    let _ = std::fs::create_dir(&parent);
    let mut dir = parent.join("mnt");
    std::fs::create_dir(&dir).unwrap();
    let r = crate::run_bin(&["mount".as_ref(), "tmpfs".as_ref(), dir.as_os_str(), "--size".as_ref(), "4MiB".as_ref()], &t.root);
    t.note(format!("manyfiles mount tmpfs {} → exit {:?}", t.rel(&dir), r.code));
    let _ = std::fs::write(dir.join("data"), b"the user's own bytes in their mount");
    let mut nested = false;
    if rng.chance(35) {
        let inner = dir.join("inner");
        let _ = std::fs::create_dir(&inner);
        let kind = if rng.chance(50) && !t.dirs.is_empty() {
            let src = rng.pick(&t.dirs).clone();
            mount_raw(&src.to_string_lossy(), &inner, "", libc::MS_BIND, "").ok().map(|_| MountKind::Bind { src })
        } else {
            mount_raw("mf-inv-nested", &inner, "tmpfs", 0, "size=1m").ok().map(|_| {
                let _ = std::fs::write(inner.join("x"), b"data in a mount inside the manyfiles mount");
                MountKind::Tmpfs
            })
        };
        if let Some(kind) = kind {
            t.note(format!("mount inside it at {}: {kind:?}", t.rel(&inner)));
            t.mounts.push(crate::topology::Mount { at: inner, kind });
            nested = true;
        }
    }
    let busy = if rng.chance(30) {
        let c = std::process::Command::new("sleep").arg("60").current_dir(&dir).spawn().ok();
        t.note(format!("a process (sleep, pid {:?}) works in {}", c.as_ref().map(|c| c.id()), t.rel(&dir)));
        c
    } else {
        None
    };
    if rng.chance(35) {
        let renamed = t.root.join(format!("q{}", rng.below(1000)));
        if !renamed.exists() && std::fs::rename(&parent, &renamed).is_ok() {
            t.note(format!("{} renamed to {}", t.rel(&parent), t.rel(&renamed)));
            for m in t.mounts.iter_mut() {
                if let Ok(rest) = m.at.strip_prefix(&parent) {
                    m.at = renamed.join(rest);
                }
            }
            dir = renamed.join("mnt");
        }
    }
    let allowed = if busy.is_some() { Vec::new() } else { vec![dir.clone()] };
    Case {
        args: vec!["umount".into(), dir.clone().into()],
        allowed,
        exact: Vec::new(),
        may_mkdir_above: false,
        max_new: None,
        protected: None,
        umount: Some(UmountCase { dir, busy, nested, by_cleanup: false }),
    }
}

/// Is `dir` a mount point now?
pub fn mounted(dir: &Path) -> bool {
    crate::mount_points().iter().any(|p| p == dir)
}

/// After the command: judge it, then take the mount down for good (the harness's own
/// teardown) — which must work once nothing holds it.
pub fn finish(t: &Topology, u: &mut UmountCase, code: Option<i32>, violations: &mut Vec<String>) {
    if u.by_cleanup && !mounted(&u.dir) {
        violations.push("plain cleanup took down a live `manyfiles mount`".into());
    }
    if u.by_cleanup {
        // fall through to the harness's own umount below
    } else if code == Some(0) && u.busy.is_some() {
        violations.push("umount exited 0 while a process worked inside the mount".into());
    }
    if !u.by_cleanup && code == Some(0) && u.nested {
        violations.push("umount exited 0 with a mount inside the mount".into());
    }
    if !u.by_cleanup && code == Some(0) && mounted(&u.dir) {
        violations.push("umount exited 0 but the mount is still there".into());
    }
    if let Some(mut c) = u.busy.take() {
        let _ = c.kill();
        let _ = c.wait();
    }
    let inner: Vec<PathBuf> = t.mounts.iter().filter(|m| m.at.starts_with(&u.dir)).map(|m| m.at.clone()).collect();
    for m in inner.iter().rev() {
        crate::topology::detach(m);
    }
    if mounted(&u.dir) {
        let r = crate::run_bin(&["umount".as_ref(), u.dir.as_os_str()], &t.root);
        if r.code != Some(0) {
            violations.push(format!(
                "leftover: once nothing held it, `umount {}` still failed: exit {:?}: {}",
                u.dir.display(),
                r.code,
                r.stderr.trim()
            ));
        }
    }
}

/// Plain `cleanup` while a user's `manyfiles mount` is live (made by a process that has
/// exited, as every `mount` is): it must keep it, mount and data.
pub fn cleanup_case(t: &mut Topology) -> Case {
    let dir = t.root.join("mine");
    std::fs::create_dir(&dir).unwrap();
    let r = crate::run_bin(&["mount".as_ref(), "tmpfs".as_ref(), dir.as_os_str(), "--size".as_ref(), "4MiB".as_ref()], &t.root);
    t.note(format!("manyfiles mount tmpfs {} → exit {:?}", t.rel(&dir), r.code));
    let _ = std::fs::write(dir.join("data"), b"kept by cleanup");
    Case {
        args: vec!["cleanup".into()],
        allowed: Vec::new(),
        exact: Vec::new(),
        may_mkdir_above: false,
        max_new: None,
        protected: None,
        umount: Some(UmountCase { dir, busy: None, nested: false, by_cleanup: true }),
    }
}
