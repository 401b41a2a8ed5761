//! Can anyone but this user (and root) change what a path resolves to? Asked before a
//! tool names files by their whole path on every call (mdtest's way) instead of through a
//! directory fd it opened: a path walked again per call lands wherever the directories
//! on it point at that moment, so every one of them must be out of other users' reach.
//!
//! The rule is OpenSSH's `safe_path` and sshd's `ChrootDirectory` check, written here
//! because no crate we use has it: every directory from `/` down to the path (after
//! resolving its symlinks once) belongs to root or to this user, and is writable by no
//! one else unless its sticky bit is set (then others can add entries but not rename or
//! remove ours, as in `/tmp`).

use rustix::fs::{Mode, stat};
use std::path::{Path, PathBuf};

/// The path with its symlinks resolved, when no other user can change what it resolves
/// to; otherwise the first directory that lets them, and why.
pub fn trusted(path: &Path) -> Result<PathBuf, String> {
    let real = std::fs::canonicalize(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let me = rustix::process::geteuid().as_raw();
    for dir in real.ancestors().collect::<Vec<_>>().into_iter().rev() {
        let st = stat(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        if let Some(why) = untrusted(st.st_uid, st.st_mode, me) {
            return Err(format!("{} {why}", dir.display()));
        }
    }
    Ok(real)
}

/// Why a directory of this owner and mode lets another user change its entries.
fn untrusted(owner: u32, mode: u32, me: u32) -> Option<String> {
    let m = Mode::from_raw_mode(mode);
    if owner != 0 && owner != me {
        return Some(format!("belongs to uid {owner}, neither root nor this user"));
    }
    let others_write = m.intersects(Mode::WGRP | Mode::WOTH);
    (others_write && !m.contains(Mode::SVTX))
        .then(|| format!("is writable by others (mode {:04o}) without the sticky bit", mode & 0o7777))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_and_modes() {
        assert_eq!(untrusted(0, 0o40755, 1000), None);
        assert_eq!(untrusted(1000, 0o40700, 1000), None);
        assert_eq!(untrusted(0, 0o41777, 1000), None, "/tmp: sticky");
        assert!(untrusted(1001, 0o40755, 1000).unwrap().contains("uid 1001"));
        assert!(untrusted(0, 0o40777, 0).unwrap().contains("0777"));
        assert!(untrusted(0, 0o40775, 0).unwrap().contains("0775"));
    }

    #[test]
    fn a_world_writable_directory_on_the_path_is_named() {
        let d = tempfile::tempdir().unwrap();
        let open = d.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::create_dir(open.join("run")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = trusted(&open.join("run")).unwrap_err();
        assert!(err.contains("/open is writable by others (mode 0777)"), "{err}");
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
        // tempdir's own parent is /tmp (sticky) or a private directory: trusted.
        assert_eq!(trusted(&open.join("run")).unwrap(), std::fs::canonicalize(open.join("run")).unwrap());
    }
}
