//! `--itemize`: one line per change on stdout, in dry runs and real runs alike, in a
//! stable order (rsync's: in each directory its deletions, then its own line, then its
//! other entries by name, then each subdirectory by name with what is below it). Paths are
//! relative to SRC/DST ("." is the root); bytes that are not UTF-8, control characters
//! and backslashes are escaped (`\xNN`, `\\`), so one line is one change.
//!
//! ```text
//! new file a/b            new dir a/n            new symlink a/l       new special a/f
//! new link a/h (to a/b)   changed file a/c (size, time, mode, owner, group, acls, xattrs, content, link)
//! changed dir a (time)    type changed a/d (symlink, was file)
//! deleted a/e (and 12 entries below)
//! ```
//!
//! `--itemize-format rsync` prints rsync's 11-character codes instead ([`Change::rsync`]:
//! `>f.st......`, `cd+++++++++`, `*deleting`). With `--json FILE` the same changes go
//! into the JSON document as its `changes` array ([`JsonLog`]), each a [`Change`] whose
//! fields make its line.
//!
//! The order costs memory: the engine works on many directories at once, so changes are
//! held ([`Listed`], a path and a few words each: about 100–200 bytes a change, as
//! rsync's own file list holds per file) and sorted when the run ends, then printed and
//! written. Nothing here runs unless `Options::itemize` is set: the plain copy's hot path
//! is untouched.

use super::attrs::{self, Caps, Keep, Loc};
use super::engine::{CopyShared, Node, rel_join};
use super::file::{read_link, same_content};
use super::finish::{self, Attr};
use super::listing::Item;
use super::ordered;
use super::{Options, Summary};
use crate::error::{Error, Result};
use crate::fs::output::Streamed;
use crate::fs::walk::{Kind, Meta};
use rustix::fd::{AsFd, BorrowedFd};
use serde::Serialize;
use std::ffi::CStr;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// What happened to an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verb {
    New,
    Changed,
    TypeChanged,
    Deleted,
}

/// One change: the `--itemize` line and the JSON item are both made from it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    pub change: Verb,
    /// file, dir, symlink, special, or link (a new hard link); for type_changed the new
    /// kind; for deleted the kind that was there.
    pub kind: &'static str,
    /// Relative to SRC/DST, escaped as the line shows it (see [`escape`]).
    pub path: String,
    /// changed: which of size, time, mode, device, owner, xattrs, content, link, target.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub what: Vec<&'static str>,
    /// A new hard link: the path it links to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// type_changed: the kind DST had.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub was: Option<&'static str>,
    /// deleted: the entries below it (0 for a file or an empty directory).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub below: Option<u64>,
    /// A new or changed symlink: its target (as SRC has it), escaped as paths are.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// rsync's file-type letter: f, d, L, D (a device), S (a FIFO or socket).
    #[serde(skip)]
    pub type_letter: char,
    /// Where the change sorts ([`order_key`]).
    #[serde(skip)]
    pub(crate) order: Vec<u8>,
}

impl Change {
    pub(crate) fn new(verb: Verb, kind: &'static str, rel: &[u8]) -> Change {
        let type_letter = match kind {
            "dir" => 'd',
            "symlink" => 'L',
            "special" => 'S',
            _ => 'f',
        };
        let order = order_key(rel, verb, kind);
        Change {
            change: verb,
            kind,
            path: escape(rel),
            what: Vec::new(),
            to: None,
            was: None,
            below: None,
            target: None,
            type_letter,
            order,
        }
    }

    /// The line `--itemize-format rsync` prints: rsync's `YXcstpoguax` code and the path
    /// (a directory's with a trailing `/`, a symlink's ` -> target`, a new hard link's
    /// ` => first name`). What differs from `rsync -i`: a deleted directory is one
    /// `*deleting` line (rsync lists each entry below it too); names are escaped as
    /// `\xNN` (rsync: `\#ooo`); `u` (access and creation times) is never set.
    pub fn rsync(&self) -> String {
        let dir = self.type_letter == 'd';
        let path = match (self.path.as_str(), dir) {
            (".", true) => "./".to_string(),
            (p, true) => format!("{p}/"),
            (p, false) => p.to_string(),
        };
        let tail = match (&self.target, &self.to) {
            (Some(t), _) => format!(" -> {t}"),
            (None, Some(to)) => format!(" => {to}"),
            (None, None) => String::new(),
        };
        let x = self.type_letter;
        match self.change {
            Verb::Deleted => format!("*deleting   {path}"),
            Verb::New | Verb::TypeChanged => {
                let y = match (self.to.is_some(), x) {
                    (true, _) => 'h',
                    (false, 'f') => '>',
                    _ => 'c',
                };
                format!("{y}{x}+++++++++ {path}{tail}")
            }
            Verb::Changed => {
                let has = |w: &str| self.what.contains(&w);
                let flag = |w: &str, c: char| if has(w) { c } else { '.' };
                let moved = x == 'f' && (has("size") || has("time") || has("content") || has("link"));
                let y = if moved {
                    '>'
                } else if (x == 'L' && has("target")) || (x != 'f' && has("device")) {
                    'c'
                } else {
                    '.'
                };
                let c = if has("content") || has("target") || has("device") { 'c' } else { '.' };
                let code: String = [
                    y,
                    x,
                    c,
                    flag("size", 's'),
                    flag("time", 't'),
                    flag("mode", 'p'),
                    flag("owner", 'o'),
                    flag("group", 'g'),
                    '.',
                    flag("acls", 'a'),
                    flag("xattrs", 'x'),
                ]
                .into_iter()
                .collect();
                format!("{code} {path}{tail}")
            }
        }
    }

    /// The line `--itemize` prints.
    pub fn text(&self) -> String {
        let p = &self.path;
        match self.change {
            Verb::New => match &self.to {
                Some(to) => format!("new link {p} (to {to})"),
                None => format!("new {} {p}", self.kind),
            },
            Verb::Changed if self.what.is_empty() => format!("changed {} {p}", self.kind),
            Verb::Changed => format!("changed {} {p} ({})", self.kind, self.what.join(", ")),
            Verb::TypeChanged => format!("type changed {p} ({}, was {})", self.kind, self.was.unwrap_or("?")),
            Verb::Deleted => match self.below {
                Some(n) if n > 0 => format!("deleted {p} (and {n} entries below)"),
                _ => format!("deleted {p}"),
            },
        }
    }
}

/// How `--itemize` lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Format {
    /// `changed file a/c (size, time)`.
    #[default]
    Words,
    /// rsync's `>f.st...... a/c`.
    Rsync,
}

/// The changes of a run, held until it ends to be said in order ([`flush`]): sorted
/// with bounded memory ([`ordered::Sorter`]).
#[derive(Debug, Default)]
pub struct Listed(Mutex<ordered::Sorter>);

/// Keep one change, to be said when the run ends: its place, its line, its JSON item.
pub(super) fn say(o: &Options, c: &Change) {
    let text = match o.itemize_format {
        Format::Words => c.text(),
        Format::Rsync => c.rsync(),
    };
    let item = if o.changes.is_some() { serde_json::to_vec(c).unwrap_or_default() } else { Vec::new() };
    o.listed.0.lock().unwrap_or_else(|p| p.into_inner()).push((c.order.clone(), text.into_bytes(), item));
}

/// Say the run's changes in order: each line on stdout (stderr when `--json -` holds
/// stdout), and each item in the JSON document with `--json`.
pub fn flush(o: &Options) {
    let sorter = std::mem::take(&mut *o.listed.0.lock().unwrap_or_else(|p| p.into_inner()));
    if let Some(why) = &sorter.spill_error {
        eprintln!("itemize: {why}; the changes were held in memory instead");
    }
    sorter.drain(|(_, text, item)| {
        line(&text);
        if let Some(log) = &o.changes {
            log.push(&item);
        }
    });
}

/// Where a change at `rel` sorts: rsync's order. Every directory above it adds
/// (3, name, 0); in a directory come first its deletions (0, by name from the last, as
/// rsync deletes), then its own line (1), then its other entries (2, by name), then each
/// subdirectory's part. Names hold no NUL byte, so a name sorts before any longer one it
/// starts; a deleted name is written complemented and ended by 0xFF for the reverse order.
fn order_key(rel: &[u8], verb: Verb, kind: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(rel.len() + 8);
    let parts: Vec<&[u8]> = if rel.is_empty() { Vec::new() } else { rel.split(|&b| b == b'/').collect() };
    let (name, above) = match parts.split_last() {
        Some((name, above)) => (Some(*name), above),
        None => (None, &parts[..]),
    };
    for dir in above {
        key.push(3);
        key.extend_from_slice(dir);
        key.push(0);
    }
    match name {
        // The root's own line.
        None => key.push(1),
        Some(n) if verb == Verb::Deleted => {
            key.push(0);
            key.extend(n.iter().map(|b| !b));
            key.push(0xFF);
        }
        Some(n) if kind == "dir" => {
            key.push(3);
            key.extend_from_slice(n);
            key.extend_from_slice(&[0, 1]);
        }
        Some(n) => {
            key.push(2);
            key.extend_from_slice(n);
        }
    }
    key
}

/// The `changes` array of the `--json` document, streamed: each change is written to the
/// output as [`flush`] takes it from the sorter, and the summary is appended after the
/// array at the end, so a million changes never sit in memory at once and the document
/// is one valid JSON object.
/// (The alternative, a JSON Lines file beside the summary, would split one result in two
/// files; a regular-file destination still appears only whole, renamed into place at
/// [`JsonLog::finish`], as every `--json` output does.) The output is opened at the
/// first change, so a run refused before it starts writes nothing.
pub struct JsonLog {
    path: PathBuf,
    state: Mutex<LogState>,
}

#[derive(Default)]
struct LogState {
    out: Option<Streamed>,
    count: u64,
    error: Option<String>,
}

impl std::fmt::Debug for JsonLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "JsonLog({})", self.path.display())
    }
}

impl JsonLog {
    pub fn new(path: &Path) -> JsonLog {
        JsonLog { path: path.to_path_buf(), state: Mutex::new(LogState::default()) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LogState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Write `bytes`, opening the output first if need be; the first error is kept.
    fn put(&self, st: &mut LogState, bytes: &[u8]) {
        if st.error.is_some() {
            return;
        }
        if st.out.is_none() {
            match Streamed::open(&self.path) {
                Ok(mut s) => match s.write(b"{\n  \"changes\": [") {
                    Ok(()) => st.out = Some(s),
                    Err(e) => st.error = Some(e.to_string()),
                },
                Err(e) => st.error = Some(e.to_string()),
            }
        }
        if let Some(out) = st.out.as_mut()
            && let Err(e) = out.write(bytes)
        {
            st.error = Some(e.to_string());
        }
    }

    /// One item of the array (a [`Change`] as JSON).
    fn push(&self, item: &[u8]) {
        let mut st = self.lock();
        let sep: &[u8] = if st.count == 0 { b"\n    " } else { b",\n    " };
        let mut b = Vec::with_capacity(sep.len() + item.len());
        b.extend_from_slice(sep);
        b.extend_from_slice(item);
        self.put(&mut st, &b);
        st.count += 1;
    }

    /// Changes written so far.
    pub fn count(&self) -> u64 {
        self.lock().count
    }

    /// Close the array, append the summary's fields and put the document in place.
    pub fn finish(&self, s: &Summary) -> Result<()> {
        let fail = |e: String| Error::failed(format!("cannot write {}: {e}", self.path.display()));
        let body = serde_json::to_vec_pretty(s).map_err(|e| fail(e.to_string()))?;
        // `{\n  "mode": …}`: the summary's fields after the array.
        let rest = body.strip_prefix(b"{\n").ok_or_else(|| fail("summary is not an object".into()))?;
        let mut st = self.lock();
        let close: &[u8] = if st.count == 0 { b"],\n" } else { b"\n  ],\n" };
        self.put(&mut st, close);
        self.put(&mut st, rest);
        if let Some(e) = st.error.take() {
            return Err(fail(e));
        }
        match st.out.take() {
            Some(out) => out.finish().map_err(|e| fail(e.to_string())),
            None => Ok(()),
        }
    }
}

/// `rel` escaped for one line: valid UTF-8 as it is, but `\` as `\\`, control characters
/// and bytes that are not UTF-8 as `\xNN`.
pub fn escape(rel: &[u8]) -> String {
    if rel.is_empty() {
        return ".".into();
    }
    let mut out = String::with_capacity(rel.len());
    for chunk in rel.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                c if c.is_control() => {
                    let mut b = [0u8; 4];
                    for byte in c.encode_utf8(&mut b).bytes() {
                        out.push_str(&format!("\\x{byte:02x}"));
                    }
                }
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// Print one line (whole, under the stream's lock): stdout, or stderr when `--json -`
/// holds stdout for its document.
fn line(text: &[u8]) {
    if crate::fs::output::stdout_taken() {
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(text);
        let _ = err.write_all(b"\n");
        return;
    }
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text);
    let _ = out.write_all(b"\n");
}

/// The word for an entry's kind.
pub(crate) fn kind_word(m: &Meta) -> &'static str {
    match m.kind {
        Kind::File => "file",
        Kind::Dir => "dir",
        Kind::Symlink => "symlink",
        Kind::Other => "special",
    }
}

/// Why an entry of the same kind on both sides is rewritten. `content`: `--checksum`
/// found other bytes; `link`: its hard-link group differs; `target`: another symlink
/// target. xattrs are listed only when SRC's inode changed after DST's, as the
/// comparison itself does.
#[allow(clippy::too_many_arguments)]
pub(super) fn reasons(
    s: &Meta,
    d: &Meta,
    a: &Attr,
    caps: &Caps,
    keep: &Keep,
    checksum: bool,
    xattrs: Option<(Loc<'_>, Loc<'_>)>,
    extra: &[&'static str],
) -> Vec<&'static str> {
    let mut r = Vec::new();
    if s.kind == Kind::File && s.size != d.size {
        r.push("size");
    }
    // With --checksum a file's mtime decides nothing (its content does).
    let time_decides = !(checksum && s.kind == Kind::File);
    if time_decides && !finish::same_time(s, d, caps) {
        r.push("time");
    }
    if !finish::same_perm(s, d, caps) {
        r.push("mode");
    }
    if s.kind == Kind::Other && (s.ifmt != d.ifmt || s.rdev != d.rdev) {
        r.push("device");
    }
    // Owner and group apart, as rsync's `o` and `g`.
    if a.caps.owner
        && let Some((uid, gid)) = attrs::owner_for(s, a.keep)
    {
        if uid.is_some_and(|u| u != d.uid) {
            r.push("owner");
        }
        if gid.is_some_and(|g| g != d.gid) {
            r.push("group");
        }
    }
    // ACLs and other xattrs apart, as rsync's `a` and `x` (each compared alone).
    let k = caps.compared(keep);
    if k.any_xattr()
        && s.changed_after(d)
        && let Some((x, y)) = xattrs
    {
        let differ = |only: Keep| !attrs::same(x, y, &only).unwrap_or(false);
        if k.acls && differ(Keep { xattrs: false, ..k }) {
            r.push("acls");
        }
        if k.xattrs && differ(Keep { acls: false, ..k }) {
            r.push("xattrs");
        }
    }
    r.extend_from_slice(extra);
    r
}

/// The pair of locations of an entry's xattrs.
pub(super) fn at<'a>(sd: BorrowedFd<'a>, sn: &'a CStr, dd: BorrowedFd<'a>, dn: &'a CStr) -> (Loc<'a>, Loc<'a>) {
    (Loc::At(sd, sn), Loc::At(dd, dn))
}

/// A directory whose own attributes differ from SRC's (a new one was said when made).
pub(super) fn dir(ctx: &CopyShared, n: &Node, d: BorrowedFd<'_>, a: &Attr) {
    let Some(m) = &n.dst_meta else { return };
    let xattrs = Some((Loc::Fd(n.src.as_fd()), Loc::Fd(d)));
    let why = reasons(&n.meta, m, a, &ctx.caps, &ctx.o.keep, false, xattrs, &[]);
    if !why.is_empty() {
        say(ctx.o, &Change { what: why, ..Change::new(Verb::Changed, "dir", &n.rel) });
    }
}

/// The change for SRC's entry `s` (not equal to DST's `d`, if any), with a symlink's
/// target and a device's type letter.
pub(super) fn describe(
    ctx: &CopyShared,
    node: &Node,
    s: &Item,
    d: Option<&Item>,
    replace: bool,
    link_to: Option<&Vec<u8>>,
    buf: &mut [u8],
) -> Change {
    let mut c = change_of(ctx, node, s, d, replace, link_to, buf);
    c.type_letter = type_letter(&s.m);
    if s.m.kind == Kind::Symlink {
        c.target = read_link(node.src.as_fd(), s.name).ok().map(|t| escape(t.as_bytes()));
    }
    c
}

/// rsync's letter for an entry's type: f, d, L, D (block or character device), S.
pub(super) fn type_letter(m: &Meta) -> char {
    match m.kind {
        Kind::File => 'f',
        Kind::Dir => 'd',
        Kind::Symlink => 'L',
        Kind::Other if matches!(m.ifmt & 0o170000, 0o060000 | 0o020000) => 'D',
        Kind::Other => 'S',
    }
}

fn change_of(
    ctx: &CopyShared,
    node: &Node,
    s: &Item,
    d: Option<&Item>,
    replace: bool,
    link_to: Option<&Vec<u8>>,
    buf: &mut [u8],
) -> Change {
    let rel = rel_join(&node.rel, s.name.to_bytes());
    let kind = kind_word(&s.m);
    let Some(d) = d else {
        return match link_to {
            Some(to) => Change { to: Some(escape(to)), ..Change::new(Verb::New, "link", &rel) },
            None => Change::new(Verb::New, kind, &rel),
        };
    };
    if replace {
        return Change { was: Some(kind_word(&d.m)), ..Change::new(Verb::TypeChanged, kind, &rel) };
    }
    let o = ctx.o;
    let mut extra = Vec::new();
    let dd = node.dst.as_ref().map(|f| f.as_fd());
    if s.m.kind == Kind::File
        && o.checksum
        && s.m.size == d.m.size
        && let Some(dd) = dd
        && !same_content(node.src.as_fd(), s.name, dd, d.name, buf).unwrap_or(false)
    {
        extra.push("content");
    }
    if s.m.kind == Kind::File && o.keep.hard_links && (link_to.is_some() || (d.m.nlink > 1 && s.m.nlink == 1)) {
        extra.push("link");
    }
    if s.m.kind == Kind::Symlink
        && let Some(dd) = dd
        && read_link(node.src.as_fd(), s.name).ok() != read_link(dd, d.name).ok()
    {
        extra.push("target");
    }
    let xattrs = dd.map(|dd| at(node.src.as_fd(), s.name, dd, d.name));
    let why = reasons(&s.m, &d.m, &ctx.attr(node), &ctx.caps, &o.keep, o.checksum, xattrs, &extra);
    Change { what: why, ..Change::new(Verb::Changed, kind, &rel) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_change_reads_as_its_line_and_its_json() {
        let c = Change { what: vec!["size", "time"], ..Change::new(Verb::Changed, "file", b"a/c") };
        assert_eq!(c.text(), "changed file a/c (size, time)");
        assert_eq!(
            serde_json::to_string(&c).unwrap(),
            r#"{"change":"changed","kind":"file","path":"a/c","what":["size","time"]}"#
        );
        let c = Change { to: Some("a/b".into()), ..Change::new(Verb::New, "link", b"a/h") };
        assert_eq!(c.text(), "new link a/h (to a/b)");
        let c = Change { was: Some("file"), ..Change::new(Verb::TypeChanged, "symlink", b"a/d") };
        assert_eq!(c.text(), "type changed a/d (symlink, was file)");
        assert_eq!(
            serde_json::to_string(&c).unwrap(),
            r#"{"change":"type_changed","kind":"symlink","path":"a/d","was":"file"}"#
        );
        let c = Change { below: Some(12), ..Change::new(Verb::Deleted, "dir", b"a/e") };
        assert_eq!(c.text(), "deleted a/e (and 12 entries below)");
        let c = Change { below: Some(0), ..Change::new(Verb::Deleted, "file", b"bad\xffname") };
        assert_eq!(c.text(), "deleted bad\\xffname");
        assert_eq!(Change::new(Verb::New, "dir", b"").text(), "new dir .");
    }
}
