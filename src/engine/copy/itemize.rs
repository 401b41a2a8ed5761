//! `--itemize`: one line per change on stdout, printed as it happens (never collected),
//! in dry runs and real runs alike. Paths are relative to SRC/DST ("." is the root);
//! bytes that are not UTF-8, control characters and backslashes are escaped (`\xNN`,
//! `\\`), so one line is one change.
//!
//! ```text
//! new file a/b            new dir a/n            new symlink a/l       new special a/f
//! new link a/h (to a/b)   changed file a/c (size, time, mode, owner, xattrs, content, link)
//! changed dir a (time)    type changed a/d (symlink, was file)
//! deleted a/e (and 12 entries below)
//! ```
//!
//! Nothing here runs unless `Options::itemize` is set: the plain copy's hot path is
//! untouched.

use super::attrs::{self, Caps, Keep, Loc};
use super::engine::{CopyShared, Node, rel_join};
use super::file::{read_link, same_content};
use super::finish::{self, Attr};
use super::listing::Item;
use crate::fs::walk::{Kind, Meta};
use rustix::fd::{AsFd, BorrowedFd};
use std::ffi::CStr;
use std::io::Write;

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

/// Print one line (whole, under stdout's lock).
pub(super) fn line(text: String) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.write_all(b"\n");
}

/// The word for an entry's kind.
pub(super) fn kind_word(m: &Meta) -> &'static str {
    match m.kind {
        Kind::File => "file",
        Kind::Dir => "dir",
        Kind::Symlink => "symlink",
        Kind::Other => "special",
    }
}

/// `what rel (reasons)`, the parentheses left out without reasons.
pub(super) fn fmt(what: &str, rel: &[u8], reasons: &[&str]) -> String {
    let mut s = format!("{what} {}", escape(rel));
    if !reasons.is_empty() {
        s.push_str(" (");
        s.push_str(&reasons.join(", "));
        s.push(')');
    }
    s
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
    if !finish::same_owner(s, d, a) {
        r.push("owner");
    }
    if keep.any_xattr()
        && s.changed_after(d)
        && let Some((x, y)) = xattrs
        && !attrs::same(x, y, &caps.compared(keep)).unwrap_or(false)
    {
        r.push("xattrs");
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
        line(fmt("changed dir", &n.rel, &why));
    }
}

/// The `--itemize` line for SRC's entry `s` (not equal to DST's `d`, if any).
pub(super) fn describe(
    ctx: &CopyShared,
    node: &Node,
    s: &Item,
    d: Option<&Item>,
    replace: bool,
    link_to: Option<&Vec<u8>>,
    buf: &mut [u8],
) -> String {
    let rel = rel_join(&node.rel, s.name.to_bytes());
    let kind = kind_word(&s.m);
    let Some(d) = d else {
        return match link_to {
            Some(to) => format!("new link {} (to {})", escape(&rel), escape(to)),
            None => fmt(&format!("new {kind}"), &rel, &[]),
        };
    };
    if replace {
        return format!("type changed {} ({kind}, was {})", escape(&rel), kind_word(&d.m));
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
    fmt(&format!("changed {kind}"), &rel, &why)
}
