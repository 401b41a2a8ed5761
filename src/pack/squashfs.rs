//! squashfs: `mksquashfs` (its default gzip compression, all threads), unpacked by
//! `unsquashfs`, mounted by the kernel or `squashfuse`.

use super::{Container, Tool, argv, path_arg, tool};
use std::path::Path;

pub struct Squashfs;

impl Container for Squashfs {
    fn name(&self) -> &'static str {
        "squashfs"
    }
    fn tools(&self) -> Vec<Tool> {
        vec![("mksquashfs", "squashfs-tools"), ("unsquashfs", "squashfs-tools")]
    }
    fn pack(&self, src: &Path, out: &Path, threads: usize) -> Result<(), String> {
        let p = threads.to_string();
        let a = argv(&["mksquashfs", &path_arg(src), &path_arg(out), "-noappend", "-quiet", "-no-progress"]);
        tool(&[a, argv(&["-processors", &p])].concat()).map(drop)
    }
    fn unpack(&self, file: &Path, dst: &Path, threads: usize) -> Option<Result<(), String>> {
        let p = threads.to_string();
        let a = argv(&["unsquashfs", "-q", "-n", "-f", "-processors", &p, "-d", &path_arg(dst), &path_arg(file)]);
        Some(tool(&a).map(drop))
    }
    fn can_unpack(&self) -> bool {
        true
    }
    fn kernel_fs(&self) -> Option<&'static str> {
        Some("squashfs")
    }
    fn fuse(&self, file: &Path, mp: &Path) -> Option<(Tool, Vec<String>)> {
        Some((("squashfuse", "squashfuse"), argv(&["squashfuse", &path_arg(file), &path_arg(mp)])))
    }
}
