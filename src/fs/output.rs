//! Output files the tool writes (result files, `--json`, scan summaries): `-` is
//! standard output, a device, fifo, socket or one of this process's own descriptors is
//! written in place, and a regular file is replaced atomically (temp file, fsync,
//! rename), symlinks followed and kept. An existing regular file is replaced only when
//! this tool wrote it ([`is_own_output`]: a marker or signature in its first 64 KiB) or
//! the user said `--force` ([`check_path`]).

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
    for hop in 0..40 {
        let md = match std::fs::symlink_metadata(&p) {
            // A symlink to nothing is not followed to make a file where it points (a link
            // planted in a shared directory would choose where root writes), unless --force.
            Err(e) if e.kind() == ErrorKind::NotFound && hop > 0 && !forced() => {
                return Err(Error::new(
                    ErrorKind::NotFound,
                    format!(
                        "{} is a symlink to nothing ({}): not followed (name the file itself, or --force)",
                        path.display(),
                        p.display()
                    ),
                ));
            }
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

/// `--force`: replace existing files this tool did not write.
static FORCE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// `--force` given: from now on this process may replace files it did not write.
pub fn force_replacing() {
    FORCE.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// The text that marks an HTML page as this tool's (in its `<head>`).
pub const HTML_MARK: &str = "<meta name=\"generator\" content=\"manyfiles\">";
/// The first line of every Markdown file this tool writes (an HTML comment: not shown).
pub const MARKDOWN_MARK: &str = "<!-- written by manyfiles; `--markdown` replaces this file -->";
/// How pages written before [`HTML_MARK`] begin: head, title, then the bundled font's
/// first bytes as a data URI.
const LEGACY_HTML: &str = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>";
const LEGACY_FONT: &str =
    "<style>@font-face{font-family:'DejaVu Sans';src:url(data:font/ttf;base64,AAEAAAAUAQAABABARkZUTaBP";
/// How this tool's CSV files begin (their header: no comment line that would break readers).
pub const CSV_HEADER_START: &str = "experiment,target,label,";
/// The PNG `tEXt` chunk's keyword and text this tool puts in every chart.
pub const PNG_SOFTWARE: &[u8] = b"Software\0manyfiles";
/// How much of an existing file is read to recognise it.
const HEAD_BYTES: usize = 64 << 10;

/// Does `head` (a file's first bytes) carry this tool's marker or the signature of one of
/// its outputs? Results, predictions and calibrations name `"tool": "manyfiles"`,
/// inventories `"kind": "manyfiles-…"`; the engines' summaries (copy, sync, rm, scan,
/// `--itemize`) and plan's are known by their first keys; HTML, Markdown and PNG by the
/// mark written with them, CSV by its header, man pages by their title line.
pub fn looks_own(head: &[u8]) -> bool {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        return head.windows(PNG_SOFTWARE.len()).any(|w| w == PNG_SOFTWARE);
    }
    let text = String::from_utf8_lossy(head);
    let t = text.trim_start_matches('\u{feff}').trim_start();
    if t.starts_with('{') {
        // Whitespace outside the keys' strings does not matter: compare without any.
        let j: String = t.chars().filter(|c| !c.is_ascii_whitespace()).collect();
        let has = |k: &str| j.contains(k);
        return has("\"tool\":\"manyfiles\"")
            || has("\"kind\":\"manyfiles-")
            || ((j.starts_with("{\"mode\":\"copy\"") || j.starts_with("{\"mode\":\"sync\""))
                && has("\"src_entries\":"))
            || (j.starts_with("{\"changes\":[") && (j.starts_with("{\"changes\":[]") || has("[{\"change\":\"")))
            || (j.starts_with("{\"paths\":[") && has("\"bytes_freed\":"))
            || (j.starts_with("{\"root\":") && has("\"db\":") && has("\"in_flight\":"))
            || (j.starts_with("{\"files\":") && has("\"rows\":[{\"cluster_bytes\":"));
    }
    if t.starts_with("<!DOCTYPE html>") {
        return t.contains(HTML_MARK) || (t.starts_with(LEGACY_HTML) && t.contains(LEGACY_FONT));
    }
    t.starts_with(MARKDOWN_MARK)
        || (t.starts_with("## manyfiles ")
            && t.lines().nth(2).is_some_and(|l| l.starts_with("Measured ") && l.contains(" with manyfiles ")))
        || t.starts_with(CSV_HEADER_START)
        || (t.starts_with(".ie \\n(.g") && t.lines().any(|l| l.starts_with(".TH manyfiles")))
}

/// Is the existing file at `path` (a regular file: no fifo is opened) one this tool wrote?
pub fn is_own_output(path: &Path) -> std::io::Result<bool> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)?;
    if !f.metadata()?.is_file() {
        return Ok(false);
    }
    let mut head = Vec::with_capacity(HEAD_BYTES);
    f.take(HEAD_BYTES as u64).read_to_end(&mut head)?;
    Ok(looks_own(&head))
}

fn forced() -> bool {
    FORCE.load(std::sync::atomic::Ordering::Relaxed)
}

/// May the regular file (or nothing) at the link-free path `p` be replaced? Nothing there,
/// this tool's output, or `--force`; else an error naming why (exit 2 before a run, 1 at
/// a write).
fn may_replace(p: &Path) -> std::io::Result<()> {
    use std::io::{Error, ErrorKind};
    match std::fs::symlink_metadata(p) {
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
        Ok(md) if !md.is_file() => return Ok(()),
        Ok(_) => {}
    }
    if forced() || is_own_output(p)? {
        return Ok(());
    }
    Err(Error::new(
        ErrorKind::AlreadyExists,
        format!("{} exists and is not a manyfiles output; not replaced (--force replaces it)", p.display()),
    ))
}

static STDOUT_TAKEN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Has an output claimed standard output (`-`)? Then the human report goes to stderr,
/// so `--json - | jq` gets one clean document.
pub fn stdout_taken() -> bool {
    STDOUT_TAKEN.load(std::sync::atomic::Ordering::Relaxed)
}

/// Is `path` usable as an output (checked before anything runs)? A directory is not;
/// the directory a new file would go in must exist; an existing regular file must be one
/// this tool wrote unless `force` (then every later write of this process may replace
/// files it did not write). `-` claims standard output.
pub fn check_path(path: &Path, force: bool) -> Result<(), String> {
    if force {
        force_replacing();
    }
    match destination(path).map_err(|e| e.to_string())? {
        Dest::File(p) => {
            let dir = p.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
            if !dir.is_dir() {
                return Err(format!("directory {} does not exist", dir.display()));
            }
            may_replace(&p).map_err(|e| e.to_string())
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
                may_replace(&p)?;
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
            let r = f.sync_all().and_then(|()| may_replace(&path)).and_then(|()| std::fs::rename(&tmp, &path));
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
        may_replace(path)?;
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

    const OWN: &str = "{\n  \"schema\": 1,\n  \"provenance\": {\n    \"tool\": \"manyfiles\"\n  }\n}\n";

    #[test]
    fn only_files_this_tool_wrote_are_replaced() {
        let d = tmpdir("own");
        let notes = d.join("notes.txt");
        std::fs::write(&notes, "my notes\n").unwrap();
        let e = check_path(&notes, false).unwrap_err();
        assert!(e.contains("not a manyfiles output") && e.contains("--force"), "{e}");
        assert!(write_output(&notes, b"x").is_err());
        assert!(Streamed::open(&notes).is_err());
        assert_eq!(std::fs::read_to_string(&notes).unwrap(), "my notes\n");
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1, "temp file left behind");
        // through a symlink: the file it names is judged
        std::os::unix::fs::symlink("notes.txt", d.join("link.json")).unwrap();
        assert!(check_path(&d.join("link.json"), false).is_err());
        // an empty file is no output of this tool either
        std::fs::write(d.join("empty"), "").unwrap();
        assert!(check_path(&d.join("empty"), false).is_err());
        // its own outputs are replaced
        let own = d.join("r.json");
        std::fs::write(&own, OWN).unwrap();
        check_path(&own, false).unwrap();
        write_output(&own, b"{}").unwrap();
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn outputs_are_recognised_by_their_marks() {
        assert!(looks_own(OWN.as_bytes()));
        assert!(looks_own(b"{\n  \"kind\": \"manyfiles-inventory\",\n  \"schema\": 1"));
        assert!(looks_own(b"{\n  \"mode\": \"sync\",\n  \"src\": \"s\",\n  \"src_entries\": 1"));
        assert!(looks_own(b"{\n  \"changes\": [\n    {\"change\":\"new\",\"kind\":\"file\",\"path\":\"b\"}"));
        assert!(looks_own(b"{\n  \"paths\": [\n    \"/x\"\n  ],\n  \"files\": 1,\n  \"bytes_freed\": 0"));
        assert!(looks_own(b"{\n  \"root\": \"/s\",\n  \"db\": null,\n  \"in_flight\": {}"));
        assert!(looks_own(format!("<!DOCTYPE html>\n<html><head>{HTML_MARK}<title>").as_bytes()));
        assert!(looks_own(format!("{MARKDOWN_MARK}\n## manyfiles ladder").as_bytes()));
        assert!(looks_own(format!("{CSV_HEADER_START}fs_type\nladder,dir").as_bytes()));
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x12tEXt".to_vec();
        png.extend_from_slice(PNG_SOFTWARE);
        assert!(looks_own(&png));
        for foreign in [
            &b"root:x:0:0:root:/root:/bin/bash\n"[..],
            b"",
            b"{\"mode\": \"copy\"}",
            b"{\"name\": \"manyfiles\"}",
            b"<!DOCTYPE html>\n<html><head><title>mine</title>",
            b"## manyfiles notes\n",
            b"experiment,result\n",
            b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR",
        ] {
            assert!(!looks_own(foreign), "{}", String::from_utf8_lossy(foreign));
        }
    }

    #[test]
    fn a_symlink_is_followed_and_kept() {
        let d = tmpdir("link");
        std::fs::create_dir(d.join("elsewhere")).unwrap();
        std::fs::write(d.join("elsewhere/run42.json"), OWN).unwrap();
        std::os::unix::fs::symlink("elsewhere/run42.json", d.join("results.json")).unwrap();
        write_output(&d.join("results.json"), b"new").unwrap();
        assert!(std::fs::symlink_metadata(d.join("results.json")).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read_to_string(d.join("elsewhere/run42.json")).unwrap(), "new");
        // a dangling link: not followed (a link planted in a shared directory would choose
        // where the file is made), the link left as it was
        std::os::unix::fs::symlink("elsewhere/new.json", d.join("dangling.json")).unwrap();
        let e = write_output(&d.join("dangling.json"), b"x").unwrap_err();
        assert!(e.to_string().contains("symlink to nothing"), "{e}");
        assert!(check_path(&d.join("dangling.json"), false).is_err());
        assert!(!d.join("elsewhere/new.json").exists());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_streamed_file_appears_whole_at_finish_and_not_at_all_when_dropped() {
        let d = tmpdir("streamed");
        let p = d.join("out.json");
        let mut s = Streamed::open(&p).unwrap();
        s.write(b"{\"tool\": \"manyfiles\", \"a\": [").unwrap();
        assert!(!p.exists(), "visible before finish");
        s.write(b"1]}").unwrap();
        s.finish().unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "{\"tool\": \"manyfiles\", \"a\": [1]}");
        let mut s = Streamed::open(&p).unwrap();
        s.write(b"half").unwrap();
        drop(s);
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "{\"tool\": \"manyfiles\", \"a\": [1]}",
            "an unfinished stream replaced the file"
        );
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1, "temp file left behind");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn directories_and_missing_parents_are_refused() {
        let d = tmpdir("dir");
        assert!(check_path(&d, false).unwrap_err().contains("is a directory"));
        assert!(write_output(&d, b"x").is_err());
        assert!(check_path(&d.join("no/such/file.json"), false).unwrap_err().contains("does not exist"));
        assert!(check_path(&d.join("fine.json"), false).is_ok());
        assert!(check_path(Path::new("-"), false).is_ok());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
