//! Random mount topologies under a scratch tmpfs: a base tree, then bind mounts, tmpfs
//! mounts, overlayfs mounts, symlinks and FIFOs at random depths (nested inside each
//! other too). Everything is made from one seed, so a failing seed replays; `describe`
//! prints what was made.
//!
//! Nothing points outside the scratch root: a symlink's target, a bind mount's source and
//! an overlay's layers are all below it, so a tool that wrongly follows or enters one
//! damages only the scratch root, where the snapshot sees it.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// splitmix64: small, seeded, good enough to pick shapes.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5851_F42D_4C95_7F2D)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 { 0 } else { (self.next() % n as u64) as usize }
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    pub fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len())]
    }
}

#[derive(Debug, Clone)]
pub enum MountKind {
    Bind { src: PathBuf },
    Tmpfs,
    /// An ext4 image on a loop device (mount -o loop: the loop device goes with the mount).
    LoopExt4,
    Overlay { lower: PathBuf, upper: PathBuf },
}

#[derive(Debug, Clone)]
pub struct Mount {
    pub at: PathBuf,
    pub kind: MountKind,
}

/// What was built under `root`.
pub struct Topology {
    pub root: PathBuf,
    /// Directories a role may be given (base tree, mount points, directories inside mounts).
    pub dirs: Vec<PathBuf>,
    pub files: Vec<PathBuf>,
    pub links: Vec<PathBuf>,
    pub mounts: Vec<Mount>,
    /// Not snapshotted (overlay work directories: the kernel's own scratch).
    pub skip: Vec<PathBuf>,
    log: Vec<String>,
    n: usize,
}

/// Names of the base tree: case pairs (exFAT-like collisions on case-insensitive targets),
/// a name that is also a mount-point name, a space, a dot file.
const NAMES: &[&str] = &["a", "b", "A", "bm", "x y", ".h", "d1", "D1", "k"];

pub fn mount_raw(src: &str, at: &Path, fstype: &str, flags: libc::c_ulong, data: &str) -> std::io::Result<()> {
    let s = CString::new(src).unwrap();
    let t = CString::new(at.as_os_str().as_bytes()).unwrap();
    let f = CString::new(fstype).unwrap();
    let d = CString::new(data).unwrap();
    let p = if data.is_empty() { std::ptr::null() } else { d.as_ptr() as *const libc::c_void };
    // SAFETY: every pointer is a valid NUL-terminated string that outlives the call.
    let r = unsafe { libc::mount(s.as_ptr(), t.as_ptr(), f.as_ptr(), flags, p) };
    if r == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
}

/// Detach the mount at `at` and everything below it.
pub fn detach(at: &Path) {
    let t = CString::new(at.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid path string; MNT_DETACH never blocks.
    unsafe { libc::umount2(t.as_ptr(), libc::MNT_DETACH) };
}

fn write_file(p: &Path, rng: &mut Rng) {
    let len = rng.below(3000);
    let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
    std::fs::write(p, bytes).unwrap();
}

impl Topology {
    /// A fresh tmpfs at `root` (made) with a random tree and `decorations` mounts/links.
    pub fn build(root: &Path, seed: u64) -> Topology {
        std::fs::create_dir_all(root).unwrap();
        mount_raw("mf-inv", root, "tmpfs", 0, "size=64m,mode=755").expect("tmpfs for the scratch root");
        let mut t = Topology {
            root: root.to_path_buf(),
            dirs: Vec::new(),
            files: Vec::new(),
            links: Vec::new(),
            mounts: Vec::new(),
            skip: Vec::new(),
            log: Vec::new(),
            n: 0,
        };
        let mut rng = Rng::new(seed);
        for top in ["t", "u"] {
            let d = root.join(top);
            std::fs::create_dir(&d).unwrap();
            t.dirs.push(d.clone());
            t.grow(&d, 0, &mut rng);
        }
        if rng.chance(10) {
            t.add_loop_ext4(&mut rng);
        }
        let decorations = rng.below(6);
        for _ in 0..decorations {
            match rng.below(10) {
                0..=2 => t.add_bind(&mut rng),
                3..=4 => t.add_tmpfs(&mut rng),
                5..=6 => t.add_overlay(&mut rng),
                7..=8 => t.add_symlink(&mut rng),
                _ => t.add_fifo(&mut rng),
            }
        }
        t
    }

    fn grow(&mut self, dir: &Path, depth: usize, rng: &mut Rng) {
        let mut used = Vec::new();
        for _ in 0..rng.below(4) {
            let name = *rng.pick(NAMES);
            if used.contains(&name) {
                continue;
            }
            used.push(name);
            let p = dir.join(name);
            if depth < 3 && rng.chance(40) {
                std::fs::create_dir(&p).unwrap();
                self.dirs.push(p.clone());
                self.grow(&p, depth + 1, rng);
            } else {
                write_file(&p, rng);
                self.files.push(p);
            }
        }
    }

    fn fresh_name(&mut self, prefix: &str) -> String {
        self.n += 1;
        format!("{prefix}{}", self.n)
    }

    /// A new empty directory below a random directory: where a mount goes.
    pub fn new_point(&mut self, rng: &mut Rng) -> PathBuf {
        let host = rng.pick(&self.dirs).clone();
        let name = self.fresh_name("m");
        let at = host.join(name);
        std::fs::create_dir(&at).unwrap();
        at
    }

    /// Bind `src` at a new point below a random directory (or at `at`).
    pub fn bind(&mut self, src: &Path, at: &Path) -> bool {
        match mount_raw(&src.to_string_lossy(), at, "", libc::MS_BIND, "") {
            Ok(()) => {
                self.log.push(format!("bind {} at {}", self.rel(src), self.rel(at)));
                self.mounts.push(Mount { at: at.to_path_buf(), kind: MountKind::Bind { src: src.to_path_buf() } });
                self.dirs.push(at.to_path_buf());
                true
            }
            Err(e) => {
                self.log.push(format!("(bind {} at {} refused: {e})", self.rel(src), self.rel(at)));
                false
            }
        }
    }

    fn add_bind(&mut self, rng: &mut Rng) {
        let src = rng.pick(&self.dirs).clone();
        let at = self.new_point(rng);
        self.bind(&src, &at);
    }

    fn add_tmpfs(&mut self, rng: &mut Rng) {
        let at = self.new_point(rng);
        if mount_raw("mf-inv-inner", &at, "tmpfs", 0, "size=4m,mode=755").is_err() {
            return;
        }
        self.log.push(format!("tmpfs at {}", self.rel(&at)));
        self.mounts.push(Mount { at: at.clone(), kind: MountKind::Tmpfs });
        self.dirs.push(at.clone());
        self.grow(&at, 2, rng);
    }

    fn add_loop_ext4(&mut self, rng: &mut Rng) {
        let at = self.new_point(rng);
        let name = self.fresh_name("ext4-");
        let img = self.root.join(format!("{name}.img"));
        let ok = std::process::Command::new("mkfs.ext4")
            .args(["-q", "-F", "-E", "root_owner=0:0"])
            .arg(&img)
            .arg("8M")
            .status()
            .is_ok_and(|s| s.success())
            && std::process::Command::new("mount").args(["-o", "loop"]).arg(&img).arg(&at).status().is_ok_and(|s| s.success());
        if !ok {
            self.log.push(format!("(ext4 on a loop device at {} could not be made)", self.rel(&at)));
            return;
        }
        self.log.push(format!("ext4 on a loop device at {}", self.rel(&at)));
        self.skip.push(img);
        self.skip.push(at.join("lost+found"));
        self.mounts.push(Mount { at: at.clone(), kind: MountKind::LoopExt4 });
        self.dirs.push(at.clone());
        self.grow(&at, 2, rng);
    }

    /// An overlay at a new point: lower a random directory; upper a fresh one, or (the
    /// case that once fooled the overlap check) an existing directory of the base tree.
    pub fn overlay(&mut self, lower: &Path, upper: Option<&Path>, at: &Path, rng: &mut Rng) -> bool {
        let name = self.fresh_name("ov");
        let base = self.root.join(name);
        std::fs::create_dir(&base).unwrap();
        let work = base.join("wk");
        std::fs::create_dir(&work).unwrap();
        let upper = match upper {
            Some(u) => u.to_path_buf(),
            None => {
                let u = base.join("up");
                std::fs::create_dir(&u).unwrap();
                write_file(&u.join("k"), rng);
                self.files.push(u.join("k"));
                u
            }
        };
        let data = format!("lowerdir={},upperdir={},workdir={}", lower.display(), upper.display(), work.display());
        match mount_raw("overlay", at, "overlay", 0, &data) {
            Ok(()) => {
                self.log.push(format!("overlay at {} (lower {}, upper {})", self.rel(at), self.rel(lower), self.rel(&upper)));
                self.skip.push(work.clone());
                let kind = MountKind::Overlay { lower: lower.to_path_buf(), upper };
                self.mounts.push(Mount { at: at.to_path_buf(), kind });
                self.dirs.push(at.to_path_buf());
                true
            }
            Err(e) => {
                self.log.push(format!("(overlay at {} refused: {e})", self.rel(at)));
                false
            }
        }
    }

    fn add_overlay(&mut self, rng: &mut Rng) {
        let lower = rng.pick(&self.dirs).clone();
        // An existing upper must be on the scratch tmpfs itself (beside the work dir).
        let upper = if rng.chance(50) {
            let own: Vec<PathBuf> = self.dirs.iter().filter(|d| self.mount_of(d).is_none()).cloned().collect();
            Some(rng.pick(&own).clone())
        } else {
            None
        };
        let at = self.new_point(rng);
        self.overlay(&lower, upper.as_deref(), &at, rng);
    }

    fn add_symlink(&mut self, rng: &mut Rng) {
        let host = rng.pick(&self.dirs).clone();
        let target = match rng.below(3) {
            0 => rng.pick(&self.dirs).clone(),
            1 if !self.files.is_empty() => rng.pick(&self.files).clone(),
            _ => self.root.join("t/nowhere"),
        };
        let name = self.fresh_name("l");
        let p = host.join(name);
        if std::os::unix::fs::symlink(&target, &p).is_ok() {
            self.log.push(format!("symlink {} -> {}", self.rel(&p), target.display()));
            self.links.push(p);
        }
    }

    fn add_fifo(&mut self, rng: &mut Rng) {
        let host = rng.pick(&self.dirs).clone();
        let name = self.fresh_name("f");
        let p = host.join(name);
        let c = CString::new(p.as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid path string.
        if unsafe { libc::mkfifo(c.as_ptr(), 0o644) } == 0 {
            self.log.push(format!("fifo {}", self.rel(&p)));
        }
    }

    /// The innermost mount this harness made that holds `p` (at or above it).
    pub fn mount_of(&self, p: &Path) -> Option<&Mount> {
        self.mounts.iter().filter(|m| p.starts_with(&m.at)).max_by_key(|m| m.at.components().count())
    }

    /// Mount points strictly below `p`.
    pub fn mounts_below(&self, p: &Path) -> Vec<PathBuf> {
        self.mounts.iter().filter(|m| m.at != p && m.at.starts_with(p)).map(|m| m.at.clone()).collect()
    }

    /// Every path under which a change at `p` also shows (bind mounts show their source,
    /// overlays their upper layer and, for what the upper does not hide, their lower).
    pub fn aliases(&self, p: &Path) -> Vec<PathBuf> {
        let mut out = vec![p.to_path_buf()];
        let mut i = 0;
        while i < out.len() && out.len() < 64 {
            let q = out[i].clone();
            for m in &self.mounts {
                let pairs: Vec<(&Path, &Path)> = match &m.kind {
                    MountKind::Bind { src } => vec![(&m.at, src)],
                    MountKind::Overlay { lower, upper, .. } => vec![(&m.at, upper), (&m.at, lower)],
                    MountKind::Tmpfs | MountKind::LoopExt4 => vec![],
                };
                for (a, b) in pairs {
                    for (from, to) in [(a, b), (b, a)] {
                        if let Ok(rest) = q.strip_prefix(from) {
                            let alias = if rest.as_os_str().is_empty() { to.to_path_buf() } else { to.join(rest) };
                            if !out.contains(&alias) {
                                out.push(alias);
                            }
                        }
                    }
                }
            }
            i += 1;
        }
        out
    }

    pub fn rel(&self, p: &Path) -> String {
        match p.strip_prefix(&self.root) {
            Ok(r) => format!("./{}", r.display()),
            Err(_) => p.display().to_string(),
        }
    }

    pub fn note(&mut self, s: String) {
        self.log.push(s);
    }

    pub fn describe(&self) -> String {
        let mut s = format!("scratch {} (tmpfs); base tree ./t, ./u", self.root.display());
        for l in &self.log {
            s.push_str("\n    ");
            s.push_str(l);
        }
        s
    }

    /// Take everything down: the scratch tmpfs and every mount below it.
    pub fn teardown(self) {
        for m in self.mounts.iter().rev() {
            if matches!(m.kind, MountKind::LoopExt4) {
                // A plain umount, so the loop device is released (autoclear) now.
                let _ = std::process::Command::new("umount").arg("-R").arg(&m.at).status();
            }
            detach(&m.at);
        }
        detach(&self.root);
        let _ = std::fs::remove_dir(&self.root);
    }
}
