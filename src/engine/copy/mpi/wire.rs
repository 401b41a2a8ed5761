//! The items copy's MPI variant hands between ranks, as bytes: a directory pair, a chunk
//! of a large file, a batch of a huge directory's files; and DST's probed capabilities,
//! sent from rank 0 to the others.

use crate::engine::copy::attrs::Caps;
use crate::engine::walker::{kind_byte, kind_of};
use crate::fs::walk::Meta;
use std::ffi::{CStr, CString};

/// The first byte of an item: what kind of work it is.
pub(super) const DIR: u8 = b'D';
pub(super) const PIECE: u8 = b'C';
pub(super) const FILES: u8 = b'B';

/// Bytes of one encoded [`Meta`].
pub(super) const META: usize = 1 + 4 + 8 + 8 + 4 + 8 + 4 * 5 + 8 * 3 + 8 + 4;

/// One item of files to copy: [B][dir][count][per file: name, SRC metadata].
pub(super) fn files_item(rel: &[u8], files: &[(CString, Meta)]) -> Vec<u8> {
    let mut v = vec![FILES];
    put_bytes(&mut v, rel);
    v.extend_from_slice(&(files.len() as u32).to_le_bytes());
    for (name, m) in files {
        put_bytes(&mut v, name.to_bytes());
        put_meta(&mut v, m);
    }
    v
}

/// A files item read back: the directory, and a reader of its (name, metadata) pairs.
pub(super) fn un_files_item(it: &[u8]) -> (&[u8], impl Iterator<Item = (CString, Meta)> + '_) {
    let mut b = &it[1..];
    let rel = get_bytes(&mut b);
    let n = u32::from_le_bytes(b[..4].try_into().expect("4")) as usize;
    b = &b[4..];
    let files = (0..n).map(move |_| {
        let name = CString::new(get_bytes(&mut b)).expect("no NUL in a name");
        let m = get_meta(&b[..META]);
        b = &b[META..];
        (name, m)
    });
    (rel, files)
}

fn put_bytes(v: &mut Vec<u8>, b: &[u8]) {
    v.extend_from_slice(&(b.len() as u32).to_le_bytes());
    v.extend_from_slice(b);
}

fn get_bytes<'a>(b: &mut &'a [u8]) -> &'a [u8] {
    let n = u32::from_le_bytes(b[..4].try_into().expect("4")) as usize;
    let out = &b[4..4 + n];
    *b = &b[4 + n..];
    out
}

/// One chunk: [C][dir][name][temporary name][offset][length].
pub(super) fn piece(rel: &[u8], name: &CStr, tmp: &CStr, off: u64, len: u64) -> Vec<u8> {
    let mut v = vec![PIECE];
    put_bytes(&mut v, rel);
    put_bytes(&mut v, name.to_bytes());
    put_bytes(&mut v, tmp.to_bytes());
    v.extend_from_slice(&off.to_le_bytes());
    v.extend_from_slice(&len.to_le_bytes());
    v
}

/// A chunk read back.
pub(super) struct Piece<'a> {
    pub(super) rel: &'a [u8],
    pub(super) name: CString,
    pub(super) tmp: CString,
    pub(super) off: u64,
    pub(super) len: u64,
}

pub(super) fn un_piece(it: &[u8]) -> Piece<'_> {
    let mut b = &it[1..];
    let rel = get_bytes(&mut b);
    let name = CString::new(get_bytes(&mut b)).expect("no NUL in a name");
    let tmp = CString::new(get_bytes(&mut b)).expect("no NUL in a name");
    let off = u64::from_le_bytes(b[..8].try_into().expect("8"));
    let len = u64::from_le_bytes(b[8..16].try_into().expect("8"));
    Piece { rel, name, tmp, off, len }
}

fn put_meta(v: &mut Vec<u8>, m: &Meta) {
    v.push(kind_byte(m.kind));
    v.extend_from_slice(&m.perm.to_le_bytes());
    v.extend_from_slice(&m.size.to_le_bytes());
    v.extend_from_slice(&m.mtime_s.to_le_bytes());
    v.extend_from_slice(&m.mtime_ns.to_le_bytes());
    v.extend_from_slice(&m.ino.to_le_bytes());
    for x in [m.ifmt, m.uid, m.gid, m.nlink, m.attrs] {
        v.extend_from_slice(&x.to_le_bytes());
    }
    for x in [m.blocks, m.dev, m.rdev] {
        v.extend_from_slice(&x.to_le_bytes());
    }
    v.extend_from_slice(&m.ctime_s.to_le_bytes());
    v.extend_from_slice(&m.ctime_ns.to_le_bytes());
}

fn get_meta(b: &[u8]) -> Meta {
    let u4 = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4"));
    let u8_ = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8"));
    Meta {
        kind: kind_of(b[0]),
        perm: u4(1),
        size: u8_(5),
        mtime_s: i64::from_le_bytes(b[13..21].try_into().expect("8")),
        mtime_ns: u4(21),
        ino: u8_(25),
        ifmt: u4(33),
        uid: u4(37),
        gid: u4(41),
        nlink: u4(45),
        attrs: u4(49),
        blocks: u8_(53),
        dev: u8_(61),
        rdev: u8_(69),
        ctime_s: i64::from_le_bytes(b[77..85].try_into().expect("8")),
        ctime_ns: u4(85),
    }
}

/// A directory pair to work on: [fresh][has DST meta][SRC meta][DST meta][relative path].
pub(super) fn item(fresh: bool, meta: &Meta, dst_meta: Option<&Meta>, rel: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(3 + 2 * META + rel.len());
    v.push(DIR);
    v.push(fresh as u8);
    v.push(dst_meta.is_some() as u8);
    put_meta(&mut v, meta);
    put_meta(&mut v, dst_meta.unwrap_or(meta));
    v.extend_from_slice(rel);
    v
}

pub(super) fn un_item(it: &[u8]) -> (bool, Meta, Option<Meta>, &[u8]) {
    let it = &it[1..];
    let fresh = it[0] == 1;
    let has_dst = it[1] == 1;
    let meta = get_meta(&it[2..2 + META]);
    let dst = get_meta(&it[2 + META..2 + 2 * META]);
    (fresh, meta, has_dst.then_some(dst), &it[2 + 2 * META..])
}

/// DST's capabilities as words, for `ranks::from_root`.
pub(super) fn caps_to_words(c: &Caps) -> Vec<u32> {
    vec![
        c.modes as u32,
        c.owner as u32,
        (c.window_ns >> 32) as u32,
        c.window_ns as u32,
        c.fixed_uid,
        c.fixed_gid,
        c.fixed_file_perm,
        c.fixed_dir_perm,
        c.xattrs as u32
            | (c.acls as u32) << 1
            | (c.specials as u32) << 2
            | (c.omit_ok as u32) << 3
            | (c.hard_links as u32) << 4
            | (c.names_bytes as u32) << 5
            | (c.names_ctrl as u32) << 6
            | (c.folds_case as u32) << 7
            | (c.dropped_ns as u32) << 8
            | (c.symlinks as u32) << 16,
    ]
}

/// [`caps_to_words`] read back.
pub(super) fn caps_from_words(w: &[u32]) -> Caps {
    Caps {
        modes: w[0] != 0,
        owner: w[1] != 0,
        window_ns: ((w[2] as u64) << 32) | w[3] as u64,
        fixed_uid: w[4],
        fixed_gid: w[5],
        fixed_file_perm: w[6],
        fixed_dir_perm: w[7],
        xattrs: w[8] & 1 != 0,
        acls: w[8] & 2 != 0,
        specials: w[8] & 4 != 0,
        omit_ok: w[8] & 8 != 0,
        hard_links: w[8] & 16 != 0,
        names_bytes: w[8] & 32 != 0,
        names_ctrl: w[8] & 64 != 0,
        folds_case: w[8] & 128 != 0,
        dropped_ns: (w[8] >> 8) as u8,
        symlinks: w[8] & 1 << 16 != 0,
        src_xattrs: true, // each rank asks its own SRC (copy::src_xattrs)
    }
}
