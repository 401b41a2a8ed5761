//! Input files the tool parses (run files, result files, inventories): bounded. A run
//! file or result file named as `/dev/zero`, a fifo or a 100 GB file would otherwise be
//! read into memory until the machine gives out; here it is refused before any parse
//! (regular files only, at most a given size), so a parse never meets more than that.

use std::io::Read;
use std::path::Path;

/// Most bytes of a run file (TOML): a few hundred are usual.
pub const RUN_FILE_MAX: u64 = 1 << 20;
/// Most bytes of a result, predict, calibration or inventory file (JSON). A ladder of
/// thousands of measurements is a few MB; parsing 64 MiB takes about a second and well
/// under 1 GiB of memory.
pub const JSON_MAX: u64 = 64 << 20;

/// The text of the regular file at `path` (symlinks followed), if it is at most `max`
/// bytes; else an error saying why (not a regular file, too large, not UTF-8). A fifo
/// is opened without waiting for a writer and refused; a file that grows while it is
/// read is cut off at `max` + 1 bytes and refused.
pub fn read_bounded(path: &Path, max: u64) -> Result<String, String> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| e.to_string())?;
    let md = f.metadata().map_err(|e| e.to_string())?;
    if !md.is_file() {
        let kind = if md.is_dir() { "a directory" } else { "not a regular file (a device, fifo or socket)" };
        return Err(format!("is {kind}"));
    }
    let too_big = || format!("is larger than {} bytes (not a file manyfiles wrote)", max);
    if md.len() > max {
        return Err(too_big());
    }
    let mut bytes = Vec::with_capacity(md.len() as usize);
    f.take(max + 1).read_to_end(&mut bytes).map_err(|e| e.to_string())?;
    if bytes.len() as u64 > max {
        return Err(too_big());
    }
    String::from_utf8(bytes).map_err(|e| format!("is not UTF-8 text (byte {})", e.utf8_error().valid_up_to()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_fifos_directories_and_large_files_are_refused() {
        assert!(read_bounded(Path::new("/dev/zero"), 100).unwrap_err().contains("not a regular file"));
        let d = tempfile::tempdir().unwrap();
        assert!(read_bounded(d.path(), 100).unwrap_err().contains("directory"));
        let fifo = d.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo with a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(read_bounded(&fifo, 100).unwrap_err().contains("not a regular file"), "a fifo: refused, no wait");
        let big = d.path().join("big");
        std::fs::File::create(&big).unwrap().set_len(101).unwrap();
        assert!(read_bounded(&big, 100).unwrap_err().contains("larger than 100"));
        std::fs::write(d.path().join("ok"), "a = 1\n").unwrap();
        assert_eq!(read_bounded(&d.path().join("ok"), 100).unwrap(), "a = 1\n");
    }
}
