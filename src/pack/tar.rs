//! tar and tar + zstd, by the system `tar` (GNU tar; zstd through `-I`, multithreaded).

use super::{Container, Tool, argv, path_arg, tool};
use std::path::Path;

pub struct Tar {
    pub zstd: bool,
}

impl Tar {
    fn compress(&self, threads: usize) -> Vec<String> {
        if self.zstd { vec!["-I".into(), format!("zstd -T{threads}")] } else { Vec::new() }
    }
}

impl Container for Tar {
    fn name(&self) -> &'static str {
        if self.zstd { "tar.zst" } else { "tar" }
    }
    fn tools(&self) -> Vec<Tool> {
        let mut v = vec![("tar", "tar")];
        if self.zstd {
            v.push(("zstd", "zstd"));
        }
        v
    }
    fn pack(&self, src: &Path, out: &Path, threads: usize) -> Result<(), String> {
        let mut a = argv(&["tar", "-C", &path_arg(src)]);
        a.extend(self.compress(threads));
        a.extend(argv(&["-cf", &path_arg(out), "."]));
        tool(&a).map(drop)
    }
    fn unpack(&self, file: &Path, dst: &Path, threads: usize) -> Option<Result<(), String>> {
        let mut a = argv(&["tar", "-C", &path_arg(dst)]);
        a.extend(self.compress(threads));
        a.extend(argv(&["-xf", &path_arg(file)]));
        Some(tool(&a).map(drop))
    }
    fn can_unpack(&self) -> bool {
        true
    }
}
