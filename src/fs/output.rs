//! Output files the tool writes (result files, `--json`, scan summaries): `-` is
//! standard output, a device, fifo, socket or one of this process's own descriptors is
//! written in place, and a regular file is replaced atomically (temp file, fsync,
//! rename), symlinks followed and kept.

use std::io::Write;
use std::path::{Path, PathBuf};

/// [`write_output`] with the error as the tool reports it.
pub fn write_file(path: &Path, bytes: &[u8]) -> crate::error::Result<()> {
    write_output(path, bytes).map_err(|e| crate::error::Error::failed(format!("cannot write {}: {e}", path.display())))
}

/// Where an output path leads, symlinks followed (each link read once).
#[derive(Debug, PartialEq)]
enum Dest {
    /// `-`.
    Stdout,
    /// A character or block device, fifo or socket: written in place, never replaced.
    Stream(PathBuf),
    /// A regular file, or nothing yet: written atomically at this (link-free) path.
    File(PathBuf),
    /// One of this process's open descriptors (`/dev/stderr`, `/dev/fd/3`,
    /// `/proc/self/fd/N`): written to that descriptor, whatever it is (a pipe's link
    /// names no path: `pipe:[123]`). `/dev/stdout` is [`Dest::Stdout`].
    Fd(i32),
}

/// `p` is a link in this process's own fd directory (`/proc/self/fd/N` and the links
/// that lead there): the descriptor number.
fn own_fd(p: &Path) -> Option<i32> {
    let n: i32 = p.file_name()?.to_str()?.parse().ok()?;
    let parent = std::fs::canonicalize(p.parent()?).ok()?;
    let own = ["/proc/self/fd", "/proc/thread-self/fd"]
        .iter()
        .filter_map(|d| std::fs::canonicalize(d).ok())
        .any(|d| d == parent);
    own.then_some(n)
}

fn destination(path: &Path) -> std::io::Result<Dest> {
    use std::io::{Error, ErrorKind};
    if path.as_os_str() == "-" {
        return Ok(Dest::Stdout);
    }
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        let md = match std::fs::symlink_metadata(&p) {
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Dest::File(p)),
            Err(e) => return Err(e),
            Ok(md) => md,
        };
        let t = md.file_type();
        if t.is_symlink() {
            match own_fd(&p) {
                Some(1) => return Ok(Dest::Stdout),
                Some(n) => return Ok(Dest::Fd(n)),
                None => {}
            }
            let to = std::fs::read_link(&p)?;
            p = match p.parent() {
                Some(dir) if to.is_relative() => dir.join(to),
                _ => to,
            };
            continue;
        }
        if t.is_dir() {
            return Err(Error::new(ErrorKind::IsADirectory, format!("{} is a directory", p.display())));
        }
        return Ok(if t.is_file() { Dest::File(p) } else { Dest::Stream(p) });
    }
    Err(Error::new(ErrorKind::InvalidInput, "too many levels of symbolic links"))
}

/// Does `path` lead to a regular file (or nothing yet), written atomically? Partial
/// results go only there: a stream would get one document after another.
pub fn is_file_destination(path: &Path) -> bool {
    matches!(destination(path), Ok(Dest::File(_)))
}

static STDOUT_TAKEN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Has an output claimed standard output (`-`)? Then the human report goes to stderr,
/// so `--json - | jq` gets one clean document.
pub fn stdout_taken() -> bool {
    STDOUT_TAKEN.load(std::sync::atomic::Ordering::Relaxed)
}

/// Is `path` usable as an output (checked before anything runs)? A directory is not;
/// the directory a new file would go in must exist. `-` claims standard output.
pub fn check_path(path: &Path) -> Result<(), String> {
    match destination(path).map_err(|e| e.to_string())? {
        Dest::File(p) => {
            let dir = p.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
            if !dir.is_dir() {
                return Err(format!("directory {} does not exist", dir.display()));
            }
            Ok(())
        }
        Dest::Stdout => {
            STDOUT_TAKEN.store(true, std::sync::atomic::Ordering::Relaxed);
            Ok(())
        }
        Dest::Stream(_) | Dest::Fd(_) => Ok(()),
    }
}

/// Write `bytes` where `path` leads, never replacing what is not a regular file:
/// `-` is standard output; a device, fifo or socket is written in place; a symlink is
/// followed and the file it names is replaced atomically (the link stays); a regular
/// file (or a new one) is written to a temp file in the same directory, fsynced and
/// renamed over it, so a reader or a crash never sees half a file.
pub fn write_output(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    match destination(path)? {
        Dest::Stdout => {
            let mut o = std::io::stdout().lock();
            o.write_all(bytes)?;
            o.flush()
        }
        Dest::Stream(p) => write_in_place(&p, bytes),
        Dest::Fd(n) => {
            // SAFETY: the descriptor is open (its /proc link exists) and only borrowed:
            // ManuallyDrop keeps it open after the write.
            let mut f =
                std::mem::ManuallyDrop::new(unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(n) });
            f.write_all(bytes)?;
            f.flush()
        }
        Dest::File(p) => write_atomic(&p, bytes),
    }
}

fn write_in_place(p: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut w = open_in_place(p)?;
    w.write_all(bytes)?;
    w.flush()
}

/// A device, fifo or socket opened for writing in place.
fn open_in_place(p: &Path) -> std::io::Result<Box<dyn Write + Send>> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    if std::fs::symlink_metadata(p)?.file_type().is_socket() {
        return Ok(Box::new(std::os::unix::net::UnixStream::connect(p)?));
    }
    // Non-blocking open: a fifo nobody reads is an error, not a hang. O_NOFOLLOW: the
    // path was resolved; a link swapped in since is refused. No O_CREAT, no O_TRUNC.
    let f = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(p)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ENXIO) => std::io::Error::other("a fifo with no reader"),
            _ => e,
        })?;
    rustix::fs::fcntl_setfl(&f, rustix::fs::OFlags::empty())?; // blocking writes from here
    Ok(Box::new(f))
}

/// An output written in pieces as a run goes and complete only at [`Streamed::finish`]:
/// a regular file is written to the same temp file [`write_output`] uses and renamed over
/// the destination at the end (a reader never sees half a document); `-`, a device, fifo,
/// socket or own descriptor gets the pieces as they come. Dropped unfinished, the temp
/// file is removed.
pub struct Streamed {
    w: std::io::BufWriter<Box<dyn Write + Send>>,
    /// A regular file's temp file (its own handle, for the fsync) and final path.
    file: Option<(std::fs::File, PathBuf, PathBuf)>,
}

impl Streamed {
    pub fn open(path: &Path) -> std::io::Result<Streamed> {
        let (w, file): (Box<dyn Write + Send>, _) = match destination(path)? {
            Dest::Stdout => (Box::new(std::io::stdout()), None),
            Dest::Stream(p) => (open_in_place(&p)?, None),
            Dest::Fd(n) => {
                // SAFETY: as in write_output: open, only borrowed (never closed).
                let f = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(n) };
                (Box::new(Borrowed(std::mem::ManuallyDrop::new(f))), None)
            }
            Dest::File(p) => {
                let tmp = tmp_path(&p);
                let f = std::fs::File::create(&tmp)?;
                (Box::new(f.try_clone()?), Some((f, tmp, p)))
            }
        };
        Ok(Streamed { w: std::io::BufWriter::with_capacity(64 << 10, w), file })
    }

    pub fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.w.write_all(bytes)
    }

    /// Flush, and for a regular file fsync and rename into place.
    pub fn finish(mut self) -> std::io::Result<()> {
        self.w.flush()?;
        if let Some((f, tmp, path)) = self.file.take() {
            let r = f.sync_all().and_then(|()| std::fs::rename(&tmp, &path));
            if r.is_err() {
                let _ = std::fs::remove_file(&tmp);
            }
            return r;
        }
        Ok(())
    }
}

impl Drop for Streamed {
    fn drop(&mut self) {
        if let Some((_, tmp, _)) = self.file.take() {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

/// A descriptor this process holds, written without being closed.
struct Borrowed(std::mem::ManuallyDrop<std::fs::File>);

impl Write for Borrowed {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.write(b)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

/// `.NAME.tmp-PID` beside `path`.
fn tmp_path(path: &Path) -> PathBuf {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "results".into());
    dir.join(format!(".{name}.tmp-{}", std::process::id()))
}

/// Temp file in the same directory, fsync, rename.
fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = tmp_path(path);
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmpdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("manyfiles-export-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_symlink_is_followed_and_kept() {
        let d = tmpdir("link");
        std::fs::create_dir(d.join("elsewhere")).unwrap();
        std::fs::write(d.join("elsewhere/run42.json"), "old").unwrap();
        std::os::unix::fs::symlink("elsewhere/run42.json", d.join("results.json")).unwrap();
        write_output(&d.join("results.json"), b"new").unwrap();
        assert!(std::fs::symlink_metadata(d.join("results.json")).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read_to_string(d.join("elsewhere/run42.json")).unwrap(), "new");
        // a dangling link: the file it names is made
        std::os::unix::fs::symlink("elsewhere/new.json", d.join("dangling.json")).unwrap();
        write_output(&d.join("dangling.json"), b"x").unwrap();
        assert_eq!(std::fs::read_to_string(d.join("elsewhere/new.json")).unwrap(), "x");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_streamed_file_appears_whole_at_finish_and_not_at_all_when_dropped() {
        let d = tmpdir("streamed");
        let p = d.join("out.json");
        let mut s = Streamed::open(&p).unwrap();
        s.write(b"{\"a\": [").unwrap();
        assert!(!p.exists(), "visible before finish");
        s.write(b"1]}").unwrap();
        s.finish().unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "{\"a\": [1]}");
        let mut s = Streamed::open(&p).unwrap();
        s.write(b"half").unwrap();
        drop(s);
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "{\"a\": [1]}", "an unfinished stream replaced the file");
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1, "temp file left behind");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn directories_and_missing_parents_are_refused() {
        let d = tmpdir("dir");
        assert!(check_path(&d).unwrap_err().contains("is a directory"));
        assert!(write_output(&d, b"x").is_err());
        assert!(check_path(&d.join("no/such/file.json")).unwrap_err().contains("does not exist"));
        assert!(check_path(&d.join("fine.json")).is_ok());
        assert!(check_path(Path::new("-")).is_ok());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
