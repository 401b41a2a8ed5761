//! One SRC entry against DST's entry of the same name: the per-entry work of
//! [`super::engine::do_dir`], by phases — claim the inode (hard links), compare, leave
//! alone (by request or refusal), remove an entry of another kind, write, record.

use super::Mode;
use super::attrs::{self, Loc, Loss};
use super::delete::{Unremoved, dir_is_empty, remove, would_remove};
use super::engine::{CopyShared, Node, Task, join, rel_join};
use super::file::{self, Step, copy_file, copy_special, copy_symlink, read_link, same_content, tmp_name};
use super::finish;
use super::itemize;
use super::links::{Claim, LinkGuard, make_link};
use super::listing::Item;
use super::losses;
use super::tally::{DELETE, TRANSFER, Tally};
use super::unmade::name_lost;
use crate::fs::walk::{Kind, Meta, meta_at};
use rustix::fd::{AsFd, BorrowedFd};
use rustix::fs::{AtFlags, renameat, unlinkat};
use rustix::io::Errno;
use std::ffi::CStr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// Handle one SRC entry `s` against DST's entry of the same name, if any.
pub(super) fn entry(
    ctx: &CopyShared,
    node: &Arc<Node>,
    s: &Item,
    d: Option<&Item>,
    t: &mut Tally,
    buf: &mut [u8],
    spawn: &mut dyn FnMut(Task),
) {
    let e = Entry { ctx, node, s, d };
    // Compare time is not clocked here: do_dir counts its range of entries' time less
    // their transfer and delete time (two clock reads a file cost a sync -n ~117 of its
    // ~1,200 user-space instructions a file).
    let linking = e.claim_inode();
    let Verdict { equal, replace, attrs_only } = e.compare(linking.link_to.as_ref(), buf);
    if s.m.kind == Kind::Dir && !replace {
        if ctx.o.itemize && d.is_none() {
            let rel = rel_join(&node.rel, s.name.to_bytes());
            itemize::say(ctx.o, &itemize::Change::new(itemize::Verb::New, "dir", &rel));
        }
        e.spawn_dir(d.map(|d| d.m), spawn);
        return;
    }
    if equal {
        t.skipped += 1;
        e.keep_equal(linking);
        return;
    }
    if e.left_alone(replace) {
        return;
    }
    // --itemize: the change, described before DST is touched (printed once made).
    let link_rel = linking.link_to.as_ref().map(|l| &l.0);
    let change = ctx.o.itemize.then(|| itemize::describe(ctx, node, s, d, replace, link_rel, buf));
    let said = || {
        if let Some(c) = &change {
            itemize::say(ctx.o, c);
        }
    };
    let Some(dst) = node.dst.as_ref().filter(|_| !ctx.o.dry_run) else {
        said();
        if attrs_only {
            t.attrs_updated += 1;
            e.keep_equal(linking);
        } else {
            e.would_write(replace, t, spawn);
        }
        return;
    };
    let dst = dst.as_fd();
    if attrs_only {
        match e.update_attrs(dst) {
            Some(Ok(())) => {
                said();
                t.attrs_updated += 1;
                e.keep_equal(linking);
                return;
            }
            Some(Err(err)) => {
                ctx.fail_entry(&node.path, Some(s.name), "set attributes", err);
                return;
            }
            // Not the file compared (replaced since), or not openable: rewritten whole.
            None => {}
        }
    }
    if replace {
        if !e.remove_replaced(dst, t) {
            return;
        }
        if s.m.kind == Kind::Dir {
            said();
            e.spawn_dir(None, spawn);
            return;
        }
    }
    e.write(dst, t, buf, linking, &said);
}

/// One SRC entry and DST's entry of the same name, in one directory pair.
struct Entry<'c, 'a> {
    ctx: &'c CopyShared<'a>,
    node: &'c Arc<Node>,
    s: &'c Item<'c>,
    d: Option<&'c Item<'c>>,
}

/// What the hard-link map says of a file with more links than one.
#[derive(Default)]
struct Linking<'c> {
    /// A file of more than one link, and links are kept.
    links: bool,
    /// The first of its inode: copied, then recorded for the others.
    first: Option<LinkGuard<'c>>,
    /// A link to this DST path (relative to DST's root), its inode there.
    link_to: Option<(Vec<u8>, u64)>,
}

/// SRC's entry against DST's.
struct Verdict {
    /// Nothing to write.
    equal: bool,
    /// DST's entry is of another kind: it goes first.
    replace: bool,
    /// A file whose content is unchanged (size + mtime, or `--checksum`) but whose mode,
    /// owner, xattrs or ACLs differ: its attributes are set in place, no data moved (as
    /// rsync does).
    attrs_only: bool,
}

impl<'c> Entry<'c, '_> {
    /// A file with more links than one: the first of its inode is copied, the others
    /// become links to that copy (one inode in DST for one in SRC).
    fn claim_inode(&self) -> Linking<'c> {
        let (o, s) = (self.ctx.o, self.s);
        let links = s.m.kind == Kind::File && s.m.nlink > 1 && o.keep.hard_links;
        let mut l = Linking { links, ..Linking::default() };
        if links && self.ctx.caps.hard_links && !o.dry_run && self.node.dst.is_some() {
            match self.ctx.links.claim((s.m.dev, s.m.ino)) {
                Claim::First(g) => l.first = Some(g),
                Claim::To(rel, ino) => l.link_to = Some((rel, ino)),
                Claim::Alone => {}
            }
        }
        l
    }

    /// Decide: equal already, or (re)write; a DST entry of another kind goes first.
    fn compare(&self, link_to: Option<&(Vec<u8>, u64)>, buf: &mut [u8]) -> Verdict {
        let (o, node, s, caps) = (self.ctx.o, self.node, self.s, &self.ctx.caps);
        let a = self.ctx.attr(node);
        let same_attrs = |d: &Item| {
            finish::same_owner(&s.m, &d.m, &a)
                // xattrs compared only when SRC's inode changed after DST's (a DST written
                // from it since has them): listing both sides' xattrs for every unchanged
                // entry cost a flat `sync --dry-run` 30% (BENCHMARKS.md).
                && (!o.keep.any_xattr()
                    || !s.m.changed_after(&d.m)
                    || node.dst.as_ref().is_some_and(|dd| {
                        attrs::same(Loc::At(node.src.as_fd(), s.name), Loc::At(dd.as_fd(), d.name), &caps.compared(&o.keep))
                            .unwrap_or(false)
                    }))
        };
        let differ = Verdict { equal: false, replace: false, attrs_only: false };
        let Some(d) = self.d else { return differ };
        if d.m.kind != s.m.kind {
            return Verdict { replace: true, ..differ };
        }
        let equal = match s.m.kind {
            _ if link_to.is_some() => link_to.is_some_and(|(_, ino)| *ino == d.m.ino),
            Kind::File => {
                let same_data = d.m.size == s.m.size
                    && if o.checksum {
                        match &node.dst {
                            Some(dd) => {
                                same_content(node.src.as_fd(), s.name, dd.as_fd(), d.name, buf).unwrap_or(false)
                            }
                            None => false,
                        }
                    } else {
                        finish::same_time(&s.m, &d.m, caps)
                    }
                    // A DST file linked elsewhere (nlink > 1) where SRC's is not is rewritten.
                    && (d.m.nlink == 1 || s.m.nlink > 1 || !o.keep.hard_links);
                if !same_data {
                    return differ;
                }
                if finish::same_perm(&s.m, &d.m, caps) && same_attrs(d) {
                    true
                } else {
                    // In place only on a DST file without inode flags (an immutable or
                    // append-only one takes no chmod: rewritten, its flags lifted first).
                    return Verdict { attrs_only: d.m.attrs & attrs::FLAG_ATTRS == 0, ..differ };
                }
            }
            Kind::Symlink => {
                finish::same_time(&s.m, &d.m, caps)
                    && node.dst.as_ref().is_some_and(|dd| {
                        let a = read_link(node.src.as_fd(), s.name);
                        let b = read_link(dd.as_fd(), d.name);
                        matches!((a, b), (Ok(a), Ok(b)) if a == b)
                    })
                    && same_attrs(d)
            }
            Kind::Other => {
                o.keep.specials
                    && d.m.ifmt == s.m.ifmt
                    && d.m.rdev == s.m.rdev
                    && finish::same_perm(&s.m, &d.m, caps)
                    && finish::same_time(&s.m, &d.m, caps)
                    && same_attrs(d)
            }
            Kind::Dir => false,
        };
        Verdict { equal, ..differ }
    }

    /// Content equal, attributes not: owner, mode, xattrs and ACLs (and the mtime, which
    /// `chown` and `setxattr` leave alone but is set again anyway) applied to DST's file
    /// through an fd opened without following a symlink and checked to be the inode that
    /// was compared, so an entry swapped for a symlink or a FIFO since is never touched
    /// (None: not that file, or not openable here: the caller rewrites it whole).
    fn update_attrs(&self, dst: BorrowedFd<'_>) -> Option<Result<(), Errno>> {
        use rustix::fs::{Mode, OFlags, fstat, openat};
        let (ctx, node, s, d) = (self.ctx, self.node, self.s, self.d?);
        let fl = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY;
        let fd = openat(dst, d.name, fl, Mode::empty()).ok()?;
        let st = fstat(&fd).ok()?;
        if st.st_ino != d.m.ino || rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::RegularFile
        {
            return None;
        }
        let a = finish::Attr { dst_may_have: true, ..ctx.attr(node) };
        let lost = || join(&node.path, Some(s.name));
        Some(finish::apply(Loc::At(node.src.as_fd(), s.name), Loc::Fd(fd.as_fd()), &s.m, &a, true, &lost))
    }

    /// A subdirectory's task (`dst_meta`: DST's directory of that name, None: make it).
    fn spawn_dir(&self, dst_meta: Option<Meta>, spawn: &mut dyn FnMut(Task)) {
        self.node.pending.fetch_add(1, Ordering::Relaxed);
        spawn(Task { parent: Arc::clone(self.node), name: self.s.name.to_owned(), meta: self.s.m, dst_meta });
    }

    /// Equal already: its name goes into the link map (later names of its inode link to it).
    fn keep_equal(&self, linking: Linking) {
        let (node, s) = (self.node, self.s);
        if linking.links && self.ctx.caps.hard_links {
            self.ctx.links.named((s.m.dev, s.m.ino), || rel_join(&node.rel, s.name.to_bytes()));
        }
        if let (Some(g), Some(d)) = (linking.first, self.d) {
            g.done(rel_join(&node.rel, s.name.to_bytes()), d.m.ino);
        }
    }

    /// Not written (true), by request or refusal: a special file with --no-specials, a
    /// DST file that is a mount point, a non-empty DST directory without --delete.
    fn left_alone(&self, replace: bool) -> bool {
        let (ctx, o, s) = (self.ctx, self.ctx.o, self.s);
        let path = self.node.path.as_str();
        if s.m.kind == Kind::Other && !o.keep.specials {
            // Left out on request (--no-specials): not made, not a loss.
            ctx.c.lost_entries.fetch_add(1, Ordering::Relaxed);
            return true;
        }
        if super::walls::file_mount_refused(ctx, path, self.d) {
            return true;
        }
        // No deletion without --delete: a DST directory where SRC has a file or symlink goes
        // only when it is empty (as rsync decides); a non-empty one is the user's to remove.
        if replace
            && !o.delete
            && let Some(d) = self.d.filter(|d| d.m.kind == Kind::Dir)
            && !self.node.dst.as_ref().is_some_and(|dd| dir_is_empty(dd.as_fd(), d.name))
        {
            ctx.refuse(
                path,
                Some(s.name),
                "would delete a non-empty directory in DST (SRC has a file or symlink of that name): use --delete",
            );
            ctx.c.failed_entries.fetch_add(1, Ordering::Relaxed);
            return true;
        }
        false
    }

    /// A dry run (or no DST directory): counted as it would be written.
    fn would_write(&self, replace: bool, t: &mut Tally, spawn: &mut dyn FnMut(Task)) {
        let s = self.s;
        if replace {
            t.deleted += self.d.map_or(1, |d| would_remove(self.node, d));
        }
        if s.m.kind == Kind::Dir {
            // Would replace a non-directory: walk SRC below it to count what would be copied.
            self.spawn_dir(None, spawn);
        } else {
            t.copied += 1;
            t.bytes += if s.m.kind == Kind::File { s.m.size } else { 0 };
        }
    }

    /// DST's entry of another kind removed (false: it stays, and SRC's is not written).
    fn remove_replaced(&self, dst: BorrowedFd<'_>, t: &mut Tally) -> bool {
        let (ctx, path) = (self.ctx, self.node.path.as_str());
        let clock = Instant::now();
        let d = self.d.expect("replace implies a DST entry");
        let (gone, r) = remove(ctx, dst, d.name, &d.m);
        t.deleted += gone;
        if let Err(why) = r {
            match why {
                Unremoved::Refused(why) => ctx.refuse(path, Some(d.name), &why),
                Unremoved::Failed(e) => ctx.fail(path, Some(d.name), "remove (type changed)", e),
            }
            if self.s.m.kind != Kind::Dir {
                ctx.c.failed_entries.fetch_add(1, Ordering::Relaxed);
            }
            t.phase[DELETE] += clock.elapsed();
            return false;
        }
        t.phase[DELETE] += clock.elapsed();
        true
    }

    /// Write SRC's entry into DST (handed to other ranks when big, under MPI), then
    /// count what came of it.
    fn write(&self, dst: BorrowedFd<'_>, t: &mut Tally, buf: &mut [u8], linking: Linking, said: &dyn Fn()) {
        let s = self.s;
        let clock = Instant::now();
        if s.m.kind == Kind::File
            && linking.link_to.is_none()
            && let Some(big) = self.ctx.big
            && big(self.node, s.name, &s.m)
        {
            said();
            t.copied += 1;
            t.bytes += s.m.size;
            t.phase[TRANSFER] += clock.elapsed();
            return;
        }
        // Sync writes beside the final name and renames (an interrupted sync leaves no
        // partial file under a final name); copy into a fresh directory writes in place.
        let tmp = if self.ctx.o.mode == Mode::Copy { None } else { Some(tmp_name()) };
        let r = self.make(dst, tmp.as_deref(), buf, linking.link_to.as_ref());
        self.record(dst, tmp.as_deref(), r, t, linking, said);
        t.phase[TRANSFER] += clock.elapsed();
    }

    /// SRC's entry made under its final name, inode flags last (Ok(None): not made, the
    /// destination cannot hold it; counted as a loss).
    fn make(
        &self,
        dst: BorrowedFd<'_>,
        tmp: Option<&CStr>,
        buf: &mut [u8],
        link_to: Option<&(Vec<u8>, u64)>,
    ) -> file::StepResult<Option<u64>> {
        let (ctx, o, node, s) = (self.ctx, self.ctx.o, self.node, self.s);
        let a = ctx.attr(node);
        let target = tmp.unwrap_or(s.name);
        let lost = || join(&node.path, Some(s.name));
        let r: file::StepResult<Option<u64>> = match s.m.kind {
            // A name DST cannot hold (the probe says): not tried (sync's temporary would
            // count its modes and times as lost first), as if refused.
            _ if !ctx.caps.holds_name(s.name.to_bytes()) => Err((Step::Create, Errno::ILSEQ)),
            Kind::File => {
                let linked = link_to.and_then(|(rel, _)| make_link(ctx, rel, dst, target, &lost));
                match linked {
                    Some(r) => r.map(|_| Some(0)),
                    None => copy_file(node.src.as_fd(), s.name, &s.m, dst, target, o.reflink, buf, &a, &lost).map(Some),
                }
            }
            Kind::Symlink => match read_link(node.src.as_fd(), s.name) {
                Ok(link) => copy_symlink(node.src.as_fd(), s.name, &link, &s.m, dst, target, &a, &lost)
                    .map(|made| made.then_some(0)),
                Err(e) => Err((Step::Read, e)),
            },
            Kind::Other => copy_special(node.src.as_fd(), s.name, &s.m, dst, target, &a, &lost).map(|m| m.then_some(0)),
            Kind::Dir => unreachable!("dirs handled above"),
        };
        if r.as_ref().is_ok_and(|n| n.is_some()) {
            super::delete::unguard(o, self.d, dst);
        }
        let r = r.and_then(|n| match (tmp, n) {
            (Some(tmp), Some(n)) => renameat(dst, tmp, dst, s.name).map(|_| Some(n)).map_err(|e| {
                let _ = unlinkat(dst, tmp, AtFlags::empty());
                (Step::Rename, e)
            }),
            (_, n) => Ok(n),
        });
        // Inode flags last: an immutable file can be neither written nor renamed.
        r.and_then(|n| match n {
            Some(_) if s.m.attrs & attrs::FLAG_ATTRS != 0 && link_to.is_none() => {
                finish::flags_at(node.src.as_fd(), s.name, dst, s.name, &s.m, &a, &lost)
                    .map(|_| n)
                    .map_err(|e| (Step::Metadata, e))
            }
            _ => Ok(n),
        })
    }

    /// What came of the write: copied (and named in the link map), lost, or failed.
    fn record(
        &self,
        dst: BorrowedFd<'_>,
        tmp: Option<&CStr>,
        r: file::StepResult<Option<u64>>,
        t: &mut Tally,
        linking: Linking,
        said: &dyn Fn(),
    ) {
        let (ctx, node, s) = (self.ctx, self.node, self.s);
        let path = node.path.as_str();
        let lost = || join(path, Some(s.name));
        match r {
            Ok(Some(n)) => {
                said();
                t.copied += 1;
                t.bytes += n;
                if linking.links && !ctx.caps.hard_links {
                    ctx.losses.add(Loss::HardLinks, lost);
                } else if linking.links {
                    ctx.links.named((s.m.dev, s.m.ino), || rel_join(&node.rel, s.name.to_bytes()));
                }
                if let Some(g) = linking.first {
                    // The copy's inode: later links of this inode that DST already has
                    // compare equal by it.
                    if let Ok(dm) = meta_at(dst, s.name) {
                        g.done(rel_join(&node.rel, s.name.to_bytes()), dm.ino);
                    }
                }
            }
            Ok(None) => {
                ctx.c.lost_entries.fetch_add(1, Ordering::Relaxed);
                if let Some(tmp) = tmp {
                    let _ = unlinkat(dst, tmp, AtFlags::empty());
                }
                // A DST entry of the name that SRC's could not replace is left as it is.
            }
            Err((step, e)) => {
                // A symlink whose temporary could not be removed above is gone with unlinkat too.
                if step == Step::Metadata && s.m.kind != Kind::File {
                    let _ = unlinkat(dst, tmp.unwrap_or(s.name), AtFlags::empty());
                }
                if matches!(step, Step::Create | Step::Rename) && losses::unholdable_name(s.name.to_bytes(), e) {
                    // A name DST cannot hold (sync's temporary name was made; the rename
                    // into this one failed and removed it): a loss, not a failure.
                    ctx.losses.add(Loss::Names, || name_lost(path, s.name));
                    ctx.c.lost_entries.fetch_add(1, Ordering::Relaxed);
                } else if step == Step::Changed {
                    ctx.refuse(path, Some(s.name), step.name());
                    ctx.c.failed_entries.fetch_add(1, Ordering::Relaxed);
                } else {
                    ctx.fail_entry(path, Some(s.name), step.name(), e)
                }
            }
        }
    }
}
