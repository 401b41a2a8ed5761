//! An ext4 image made by `mkfs.ext4 -d` (no journal: it is read-only once made), sized
//! from a walk of the tree, without the empty lost+found mkfs adds; only mounted (kernel, or `fuse2fs -o ro`), never unpacked.

use super::{Container, Tool, argv, path_arg, tool, walk_tree};
use std::path::Path;

pub struct Ext4Image;

/// Image size for a tree: data in 4 KiB blocks, a block per directory and per symlink,
/// 256-byte inodes, 10% and 16 MiB for the rest of the metadata.
pub fn image_bytes(u: &super::Usage) -> u64 {
    let data = (u.blocks_4k + u.dirs + u.symlinks) * 4096;
    let inodes = (u.files + u.dirs + u.symlinks + 64) * 256;
    ((data + inodes) / 10 * 11 + (16 << 20)).div_ceil(4096) * 4096
}

impl Container for Ext4Image {
    fn name(&self) -> &'static str {
        "ext4"
    }
    fn tools(&self) -> Vec<Tool> {
        vec![("mkfs.ext4", "e2fsprogs"), ("debugfs", "e2fsprogs")]
    }
    fn pack(&self, src: &Path, out: &Path, threads: usize) -> Result<(), String> {
        let (u, errors, first) = walk_tree(src, threads, false);
        if errors > 0 {
            return Err(format!("cannot size the image: {}", first.unwrap_or_default()));
        }
        let inodes = (u.files + u.dirs + u.symlinks + 64).to_string();
        let size = format!("{}k", image_bytes(&u) / 1024);
        let a = argv(&[
            "mkfs.ext4",
            "-q",
            "-F",
            "-b",
            "4096",
            "-m",
            "0",
            "-N",
            &inodes,
            "-O",
            "^has_journal",
            "-d",
            &path_arg(src),
            &path_arg(out),
            &size,
        ]);
        tool(&a)?;
        // mkfs adds an empty lost+found the source does not have (debugfs leaves a
        // non-empty one, i.e. one the source had, alone).
        tool(&argv(&["debugfs", "-w", "-R", "rmdir lost+found", &path_arg(out)])).map(drop)
    }
    fn kernel_fs(&self) -> Option<&'static str> {
        Some("ext4")
    }
    fn fuse(&self, file: &Path, mp: &Path) -> Option<(Tool, Vec<String>)> {
        Some((("fuse2fs", "fuse2fs"), argv(&["fuse2fs", "-o", "ro", &path_arg(file), &path_arg(mp)])))
    }
}
