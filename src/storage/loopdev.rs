//! Loop devices as sysfs shows them: what backs one, which ones a file backs, detaching
//! (moved out of `registry.rs`, which re-exports them).

use super::registry::run_tool;
use std::path::{Path, PathBuf};

/// Backing file of loop device `dev` (`/dev/loop3`), from sysfs; None if not attached.
pub fn loop_backing_file(dev: &str) -> Option<PathBuf> {
    let name = dev.strip_prefix("/dev/")?;
    let text = std::fs::read_to_string(format!("/sys/block/{name}/loop/backing_file")).ok()?;
    let t = text.trim_end_matches('\n');
    // A deleted image shows as "/path (deleted)".
    Some(PathBuf::from(t.strip_suffix(" (deleted)").unwrap_or(t)))
}

/// Loop devices whose backing file is `image`.
pub fn loops_backed_by(image: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir("/sys/block") else { return out };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.starts_with("loop") {
            continue;
        }
        let dev = format!("/dev/{name}");
        if loop_backing_file(&dev).as_deref() == Some(image) {
            out.push(dev);
        }
    }
    out.sort();
    out
}

/// Detach `dev` and wait (up to ~2 s) until the kernel has let it go. If something still
/// holds it open, `losetup -d` marks it auto-clear and the kernel detaches it on last close.
pub(crate) fn detach_loop(dev: &str) -> std::result::Result<(), String> {
    if loop_backing_file(dev).is_none() {
        return Ok(());
    }
    let r = run_tool(&["losetup".to_string(), "-d".to_string(), dev.to_string()]);
    for _ in 0..40 {
        if loop_backing_file(dev).is_none() {
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    match r {
        Err(e) => Err(e),
        Ok(_) => Err(format!("{dev} is still attached after losetup -d (busy?)")),
    }
}
