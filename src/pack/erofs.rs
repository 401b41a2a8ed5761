//! EROFS: `mkfs.erofs` (uncompressed), unpacked by `fsck.erofs --extract`, mounted by the
//! kernel or `erofsfuse`.

use super::{Container, Tool, argv, path_arg, tool};
use std::path::Path;

pub struct Erofs;

impl Container for Erofs {
    fn name(&self) -> &'static str {
        "erofs"
    }
    fn tools(&self) -> Vec<Tool> {
        vec![("mkfs.erofs", "erofs-utils"), ("fsck.erofs", "erofs-utils")]
    }
    fn pack(&self, src: &Path, out: &Path, _threads: usize) -> Result<(), String> {
        tool(&argv(&["mkfs.erofs", "--quiet", &path_arg(out), &path_arg(src)])).map(drop)
    }
    fn unpack(&self, file: &Path, dst: &Path, _threads: usize) -> Option<Result<(), String>> {
        let x = format!("--extract={}", path_arg(dst));
        Some(tool(&argv(&["fsck.erofs", &x, &path_arg(file)])).map(drop))
    }
    fn can_unpack(&self) -> bool {
        true
    }
    fn kernel_fs(&self) -> Option<&'static str> {
        Some("erofs")
    }
    fn fuse(&self, file: &Path, mp: &Path) -> Option<(Tool, Vec<String>)> {
        Some((("erofsfuse", "erofsfuse"), argv(&["erofsfuse", &path_arg(file), &path_arg(mp)])))
    }
}
