//! What a tree takes on a file system as its statfs counts it: the bytes (file data in
//! whole blocks, directory blocks, and the per-entry metadata of file systems that take
//! it from free space) and the inodes (files and directories).
//!
//! An empty file takes an inode and no data block on every file system here: ext2/3/4
//! made their inode tables at mkfs (creating a file takes a free inode, not a free
//! block), XFS takes 512 bytes an inode from free space, btrfs its items in metadata,
//! tmpfs nothing but an inode, FAT and exFAT a directory entry. Directories take blocks
//! for their entries (hashed directories split leaves: counted half full). A file system
//! not known here keeps the old rule: at least one block per file.

use super::TreeSpec;
use super::layout::{Shape, files_per_dir};

/// Bytes and inodes a tree takes (before any margin).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footprint {
    pub bytes: u64,
    /// Files and directories (the root included).
    pub inodes: u64,
}

/// How one kind of file system allocates what a tree's entries need.
#[derive(Debug, Clone, Copy)]
struct Costs {
    /// Bytes taken from free space per entry (file or directory) besides data and
    /// directory blocks: XFS's inode, btrfs's items, NTFS's MFT record; 0 where inodes
    /// were made at mkfs (ext2/3/4) or take no space (tmpfs, FAT, exFAT).
    per_entry: u64,
    /// Bytes of one entry in its directory, by name length (0: directories take no blocks).
    dirent: fn(u64) -> u64,
    /// Directory blocks are this many times fuller than their entries need (2: hashed
    /// directories whose leaves split half full).
    fill: u64,
    /// A non-empty file takes whole blocks (false: nothing is known, one block a file).
    known: bool,
}

const fn align(n: u64, to: u64) -> u64 {
    n.div_ceil(to) * to
}

fn costs(fs_type: &str, name_len: u64) -> Costs {
    let none: fn(u64) -> u64 = |_| 0;
    match fs_type {
        // ext4_dir_entry_2: 8 bytes and the name, 4-aligned.
        "ext2" | "ext3" | "ext4" => Costs { per_entry: 0, dirent: |n| align(8 + n, 4), fill: 2, known: true },
        // 512-byte inodes (mkfs.xfs's default since v5), taken in chunks from free space;
        // a data entry (12 bytes and the name, 8-aligned) and its leaf entry (8 bytes).
        "xfs" => Costs { per_entry: 512, dirent: |n| align(12 + n, 8) + 8, fill: 2, known: true },
        // Items in metadata: inode (160 + 25 header), inode ref, dir item and dir index
        // (each ~30 + name + 25): 330 + 3·name bytes; nodes about 2/3 full and metadata
        // kept twice (DUP on one device): ×3. Directories' entries are those items.
        "btrfs" => Costs { per_entry: 3 * (330 + 3 * name_len), dirent: none, fill: 1, known: true },
        // Pages for data only: an empty file or a directory takes none (inodes counted).
        "tmpfs" | "ramfs" => Costs { per_entry: 0, dirent: none, fill: 1, known: true },
        // 32-byte slots: a short entry and one long-name slot per 13 characters.
        "vfat" | "msdos" => Costs { per_entry: 0, dirent: |n| 32 * (1 + n.div_ceil(13)), fill: 1, known: true },
        // A file, a stream extension and one name slot per 15 characters.
        "exfat" => Costs { per_entry: 0, dirent: |n| 32 * (2 + n.div_ceil(15)), fill: 1, known: true },
        // 1 KiB MFT record per entry; index entries of 82 bytes and the name in UTF-16.
        "ntfs" | "ntfs3" | "fuseblk" | "fuse.ntfs-3g" => {
            Costs { per_entry: 1024, dirent: |n| align(82 + 2 * n, 8), fill: 2, known: true }
        }
        // Unknown: at least one block a file, as the estimate always assumed.
        _ => Costs { per_entry: 0, dirent: |n| align(8 + n, 8), fill: 2, known: false },
    }
}

/// Blocks of `bytes` on a file system of `block`-byte blocks.
fn blocks(bytes: u64, block: u64) -> u64 {
    bytes.div_ceil(block)
}

/// What `spec`'s tree takes on a file system of type `fs_type` (as mountinfo names it)
/// with `block_size`-byte blocks: data in whole blocks (none for an empty file), the
/// blocks of every directory (at least one where directories take blocks), the
/// per-entry metadata, and the inodes.
pub fn footprint(spec: &TreeSpec, fs_type: &str, block_size: u64) -> Footprint {
    let block = block_size.max(512);
    let c = costs(fs_type, spec.name_len as u64);
    let data = spec.sum_sizes(|b| {
        let whole = blocks(b, block) * block;
        if c.known { whole } else { whole.max(block) }
    });
    let dirs = Shape::of(spec).dir_count();
    let entries = spec.files.saturating_add(dirs);
    let dirent = (c.dirent)(spec.name_len as u64);
    let dir_blocks = if dirent == 0 {
        0
    } else {
        // Directories holding files: their entries; every other directory one block;
        // the subdirectories' entries (one each, but the root's) on top.
        let per = files_per_dir(spec);
        let holding: u64 = per.iter().map(|&(_, d)| d).sum();
        let of_files: u64 = per.iter().map(|&(n, d)| d.saturating_mul(blocks(c.fill * n * dirent, block).max(1))).sum();
        let of_dirs = blocks(c.fill * (dirs - 1) * dirent, block);
        of_files + dirs.saturating_sub(holding) + of_dirs
    };
    let bytes =
        data.saturating_add(dir_blocks.saturating_mul(block)).saturating_add(entries.saturating_mul(c.per_entry));
    Footprint { bytes, inodes: entries }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::{Content, Layout, SizeDist};

    fn spec(files: u64, bytes: u64, per_dir: u64) -> TreeSpec {
        TreeSpec {
            files,
            size: SizeDist::Fixed { bytes },
            layout: Layout::Nested { files_per_dir: per_dir, fanout: 1000, depth: None },
            name_len: 16,
            content: Content::Zeros,
            seed: 1,
        }
    }

    #[test]
    fn ten_million_empty_files_take_inodes_and_directory_blocks_only_on_ext4() {
        // Issue 41: 10,000,000 empty files, 1,000 a directory, on a 24 GiB ext4 were
        // refused as needing about 42 GiB (one 4 KiB block a file).
        let f = footprint(&spec(10_000_000, 0, 1000), "ext4", 4096);
        assert_eq!(f.inodes, 10_000_000 + 1 + 10 + 10_000); // files, root, 10 + 10,000 directories
        // A directory of 1,000 16-byte names: 24 bytes an entry, leaves half full: 12
        // blocks; 10,000 of them ≈ 469 MiB, and no data block at all.
        let leaf = (2 * 1000 * 24u64).div_ceil(4096);
        assert_eq!(leaf, 12);
        let want = (10_000 * leaf + 11 + (2 * 10_010 * 24u64).div_ceil(4096)) * 4096;
        assert_eq!(f.bytes, want);
        assert!(f.bytes < 1 << 30, "{} bytes", f.bytes);
    }

    #[test]
    fn non_empty_files_take_whole_blocks() {
        let empty = footprint(&spec(1000, 0, 1000), "ext4", 4096);
        let small = footprint(&spec(1000, 1, 1000), "ext4", 4096);
        let two = footprint(&spec(1000, 4097, 1000), "ext4", 4096);
        assert_eq!(small.bytes - empty.bytes, 1000 * 4096);
        assert_eq!(two.bytes - empty.bytes, 1000 * 8192);
        assert_eq!((empty.inodes, small.inodes), (1001, 1001)); // the files and their directory
    }

    #[test]
    fn file_systems_that_take_inodes_from_free_space_count_them() {
        let s = spec(1000, 0, 1000);
        let ext4 = footprint(&s, "ext4", 4096).bytes;
        // XFS: 512 bytes an inode (1,001 entries) and 1,000 entries of 40 bytes, leaves
        // half full: 20 directory blocks.
        assert_eq!(footprint(&s, "xfs", 4096).bytes, 1001 * 512 + 20 * 4096);
        // btrfs: its items, about a kilobyte an entry, and no directory blocks.
        assert_eq!(footprint(&s, "btrfs", 4096).bytes, 1001 * 3 * (330 + 3 * 16));
        // tmpfs: nothing but inodes for empty files and directories.
        assert_eq!(footprint(&s, "tmpfs", 4096).bytes, 0);
        assert!(ext4 > 0 && ext4 < 64 * 4096, "{ext4}");
    }

    #[test]
    fn an_unknown_file_system_keeps_a_block_a_file() {
        // Empty or not, a file takes a block; its directory's entries take blocks too.
        for bytes in [0, 10, 4096] {
            let f = footprint(&spec(1000, bytes, 1000), "fuse.sshfs", 4096);
            assert_eq!(f.bytes, 1000 * 4096 + (2 * 1000 * 24u64).div_ceil(4096) * 4096, "{bytes}-byte files");
        }
    }

    #[test]
    fn fat_directories_hold_their_slots() {
        // exFAT: 32 × (2 + ⌈16/15⌉) = 128 bytes an entry, 1,000 in one directory of
        // 32 KiB clusters: 4 clusters, and nothing per file.
        let f = footprint(&spec(1000, 0, 1000), "exfat", 32 << 10);
        assert_eq!(f.bytes, 4 * (32 << 10));
    }
}
