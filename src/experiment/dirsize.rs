//! The dirsize preset: keep adding files to one directory, portion by portion, and find
//! the knee where the per-file cost jumps (published: a folder slows by ≥ 23.7% past
//! 200–300 k files). Its view is `report::views::dirsize`.

use crate::tree::{Layout, SizeDist, TreeSpec};

pub fn tree(max: u64, size: u64, shape: &TreeSpec) -> TreeSpec {
    TreeSpec { files: max, size: SizeDist::Fixed { bytes: size }, layout: Layout::Flat, ..shape.clone() }
}
