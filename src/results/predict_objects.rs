//! `predict --tree PATH --fs s3…` (or `azblob…`, `--on s3://…`, `azblob://…`; issue 43): what the object-store engines would do with
//! the tree — `copy PATH s3://…` (upload), `scan s3://…`, `copy s3://… DIR` (download)
//! and `rm s3://…` — in requests by kind, their price, and time.
//!
//! ## Requests: counted, not fitted
//!
//! The engines' requests follow from the tree alone, so they are counted exactly as
//! `engine::object` sends them (its constants, not copies of them):
//!
//! | command | requests |
//! |---|---|
//! | upload (`copy PATH s3://B/P`) | 1 LIST (the connection's check, one key) + 1 PUT per object of at most [`MULTIPART_ABOVE`] bytes; above it a multipart upload: 1 POST to start, 1 PUT per part of [`PART`] bytes, 1 POST to complete |
//! | scan | 1 LIST (check) + the LIST pages of the prefix, [`PAGE`](crate::engine::object::PAGE) keys a page, at least one |
//! | download (`copy s3://B/P DIR`) | 1 LIST (check) + the pages + 1 GET per object (a large one too: one streamed GET) |
//! | rm | 1 LIST (check) + the pages + one DeleteObjects per [`PAGE`](crate::engine::object::PAGE) keys + 1 LIST page to see that they are gone (when anything was deleted) |
//!
//! On Azure Blob (`azblob://…`) the same with Blob's numbers: List Blobs pages of 5,000
//! keys, Blob Batches of 256 deletes ([`Provider::list_page`], [`Provider::delete_batch`]),
//! and a multipart upload as a Put Block (PUT) per part and a Put Block List (PUT), no POST.
//!
//! The objects are what the upload engine sends: every regular file whose name an
//! object key can hold (UTF-8, no control character), in directories it can enter;
//! symlinks, special files and the rest are losses (the check line accepts them with
//! `--lossy`). From a walk of PATH ([`ObjectTree::walk`]) the counts are exact; from a
//! saved inventory (sizes in log2 buckets, names unseen) they are exact only when no file
//! is near or above [`MULTIPART_ABOVE`] and every name can be a key, and the prediction
//! says so. A page count assumes a server that ends a listing on its last full page (S3
//! and the stacks' server do: no empty page after exactly 1,000 keys), and a prefix that
//! only the check writes to: rm lists the prefix's name as it is, so keys of a sibling
//! (`P2/…` beside `P`) would be listed too.
//!
//! ## Time: from a calibration on the target
//!
//! `predict --fs s3…` calibrates the native ops on the target with trees drawn like
//! PATH, at the engines' requests in flight (`experiment::calibrate`): `obj:put`,
//! `obj:list`, `obj:get` and `obj:delete-batch` each get a fitted model (per object, per
//! byte, per run). A command's time is the sum of its parts' predictions (upload:
//! obj:put; scan: obj:list; download: obj:list + obj:get; rm: obj:list +
//! obj:delete-batch), and its interval the sum of their bounds: each part's 95%
//! interval, added end to end, which holds at least as often as the parts' together
//! (errors of the parts on one store move together, so no narrowing by independence is
//! claimed). Each command also builds its client before its first request (a runtime,
//! two HTTP clients, the root certificates parsed: ~0.1 s in a debug build): timed in
//! the predicting process (`experiment::calibrate_objects`), its median added to the
//! time and its least and most to the bounds. Not in the calibration, so not in the time: the single requests around the
//! parts (the connection's LIST, rm's last LIST: a round trip each), the local side (the
//! upload's walk and reads of PATH, the download's writes of files and directories), and
//! a multipart upload's part structure (obj:put sends any object in one PUT).

use crate::analysis::model::Prediction;
use crate::engine::object::{MULTIPART_ABOVE, PART};
use crate::measure::{RequestCost, RequestCounts};
use crate::results::ResultSet;
use crate::results::predict::Shape;
use crate::results::prices::PriceTable;
use crate::storage::object_stack::Provider;
use crate::tree::inventory::{Inventory, log2_bucket, log2_bucket_range};
use serde::Serialize;
use std::path::Path;

/// The ops a calibration on an object store times: the engines' requests.
pub const CALIBRATION_OPS: [&str; 4] = ["obj:put", "obj:list", "obj:get", "obj:delete-batch"];

/// The tree as the upload engine sees it: the objects it would send and the sizes of
/// those that go up as multipart uploads.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ObjectTree {
    pub objects: u64,
    pub bytes: u64,
    /// Sizes of the objects above [`MULTIPART_ABOVE`].
    pub multipart_sizes: Vec<u64>,
    /// Entries the upload would count as losses (not sent, or sent without what an
    /// object cannot hold): the check line carries `--lossy` for them.
    pub losses: u64,
    /// None: the counts are exact; else why they are an estimate.
    pub estimate: Option<String>,
}

/// LIST pages of a listing of `n` keys on `p`'s API: at least one (an empty prefix
/// answers one page).
pub fn pages(n: u64, p: Provider) -> u64 {
    n.div_ceil(p.list_page() as u64).max(1)
}

/// DeleteObjects (Blob Batch) requests for `n` keys on `p`'s API (none for none).
pub fn delete_batches(n: u64, p: Provider) -> u64 {
    n.div_ceil(p.delete_batch() as u64)
}

/// Parts of a multipart upload of `size` bytes ([`PART`] each, the last shorter).
pub fn parts(size: u64) -> u64 {
    size.div_ceil(PART as u64).max(1)
}

impl ObjectTree {
    /// Objects of `sizes`: exact counts (the losses given apart).
    pub fn of_sizes(sizes: impl IntoIterator<Item = u64>, losses: u64) -> ObjectTree {
        let mut t = ObjectTree { objects: 0, bytes: 0, multipart_sizes: Vec::new(), losses, estimate: None };
        for s in sizes {
            t.objects += 1;
            t.bytes += s;
            if s > MULTIPART_ABOVE {
                t.multipart_sizes.push(s);
            }
        }
        t
    }

    /// Walk `root` as the upload engine does (one thread, nothing followed through a
    /// symlink): its regular files with names a key can hold, in directories so named.
    pub fn walk(root: &Path) -> crate::error::Result<ObjectTree> {
        use crate::engine::walker::{join, open_below};
        use crate::fs::walk::{Kind, meta_at, open_root, read_dir};
        use std::os::fd::AsFd;
        let fd = open_root(root).map_err(|e| crate::error::Error::bad("--tree", format!("{}: {e}", root.display())))?;
        let (mut sizes, mut losses) = (Vec::new(), 0u64);
        let mut stack: Vec<Vec<u8>> = vec![Vec::new()];
        while let Some(rel) = stack.pop() {
            let Ok(dir) = open_below(fd.as_fd(), &rel) else { continue };
            let Ok(entries) = read_dir(dir.as_fd()) else { continue };
            if entries.is_empty() && !rel.is_empty() {
                losses += 1; // an empty directory: no key holds it
            }
            for e in entries {
                let Ok(meta) = meta_at(dir.as_fd(), &e.name) else { continue };
                let keyable = std::str::from_utf8(e.name.to_bytes()).is_ok_and(|n| !n.chars().any(char::is_control));
                match (keyable, meta.kind) {
                    (false, _) => losses += 1,
                    (true, Kind::Dir) => stack.push(join(&rel, e.name.to_bytes())),
                    (true, Kind::File) => sizes.push(meta.size),
                    (true, _) => losses += 1,
                }
            }
        }
        Ok(ObjectTree::of_sizes(sizes, losses))
    }

    /// From a saved inventory: every file an object, sizes from the log2 histogram. Exact
    /// when no bucket reaches [`MULTIPART_ABOVE`] (its names unseen: one a key cannot
    /// hold would be a loss, not an object).
    pub fn from_inventory(inv: &Inventory) -> ObjectTree {
        let first_large = log2_bucket(MULTIPART_ABOVE); // holds MULTIPART_ABOVE itself, and more
        let mut t = ObjectTree {
            objects: inv.files,
            bytes: inv.total_bytes,
            multipart_sizes: Vec::new(),
            losses: inv.symlinks + inv.other,
            estimate: None,
        };
        let large: Vec<(usize, u64)> =
            inv.size_hist.iter().enumerate().skip(first_large).filter(|(_, c)| **c > 0).map(|(k, c)| (k, *c)).collect();
        for (k, count) in &large {
            // Each as the bucket's mean size (a bucket's bytes over its files), above the
            // threshold: an estimate.
            let bytes = inv.size_hist_bytes.get(*k).copied().unwrap_or(0);
            let mean = (bytes / count).max(log2_bucket_range(*k).0).max(MULTIPART_ABOVE + 1);
            t.multipart_sizes.extend(std::iter::repeat_n(mean, *count as usize));
        }
        if !large.is_empty() {
            t.estimate = Some(format!(
                "from an inventory: {} files of {} or more, whose exact sizes decide multipart and parts (give --tree PATH for exact counts)",
                large.iter().map(|(_, c)| c).sum::<u64>(),
                crate::units::fmt_size(log2_bucket_range(first_large).0 as f64)
            ));
        }
        t
    }

    /// Objects sent in one PUT.
    pub fn single_puts(&self) -> u64 {
        self.objects - self.multipart_sizes.len() as u64
    }
}

/// The engines' commands a prediction is made for, in the order the check runs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Command {
    Upload,
    Scan,
    Download,
    Rm,
}

impl Command {
    pub const ALL: [Command; 4] = [Command::Upload, Command::Scan, Command::Download, Command::Rm];

    pub fn name(self) -> &'static str {
        match self {
            Command::Upload => "upload",
            Command::Scan => "scan",
            Command::Download => "download",
            Command::Rm => "rm",
        }
    }

    /// The requests the engine sends for this command on `t` through `p`'s API (module
    /// docs).
    pub fn requests(self, t: &ObjectTree, p: Provider) -> RequestCounts {
        let n = t.objects;
        let large = t.multipart_sizes.len() as u64;
        let parts: u64 = t.multipart_sizes.iter().map(|s| parts(*s)).sum();
        match self {
            // Blob's multipart: a Put Block per part and a Put Block List, all PUTs.
            Command::Upload => match p {
                Provider::S3 => {
                    RequestCounts { list: 1, put: t.single_puts() + parts, post: 2 * large, ..Default::default() }
                }
                Provider::Azblob => {
                    RequestCounts { list: 1, put: t.single_puts() + parts + large, ..Default::default() }
                }
            },
            Command::Scan => RequestCounts { list: 1 + pages(n, p), ..Default::default() },
            Command::Download => RequestCounts { list: 1 + pages(n, p), get: n, ..Default::default() },
            Command::Rm => RequestCounts {
                list: 1 + pages(n, p) + u64::from(n > 0),
                delete_objects: delete_batches(n, p),
                ..Default::default()
            },
        }
    }

    /// The calibrated ops whose times add up to this command's.
    pub fn ops(self) -> &'static [&'static str] {
        match self {
            Command::Upload => &["obj:put"],
            Command::Scan => &["obj:list"],
            Command::Download => &["obj:list", "obj:get"],
            Command::Rm => &["obj:list", "obj:delete-batch"],
        }
    }
}

/// One command's prediction.
#[derive(Debug, Clone, Serialize)]
pub struct ObjectPrediction {
    pub command: Command,
    pub requests: RequestCounts,
    pub cost: RequestCost,
    /// The time and its 95% interval (the sum of its ops' bounds); None when an op has
    /// no usable model (`no_time` says which and why).
    pub time: Option<Prediction>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_time: Option<String>,
    /// The calibrated ops summed into the time.
    pub from_ops: Vec<String>,
}

/// The sum of the predictions of `ops` (each the median of `runs` runs) for `shape` on
/// the calibration's one target; Err: which op has no usable model, and why.
pub fn summed_time(rs: &ResultSet, ops: &[&str], shape: &Shape, runs: u32) -> Result<Prediction, String> {
    let rows = super::predict::predict(rs, shape, None, super::predict::Ahead { runs, ..Default::default() });
    let (mut seconds, mut lo, mut hi, mut bounded) = (0.0, 0.0, 0.0, true);
    for op in ops {
        let row = rows.iter().find(|r| r.op == *op).ok_or_else(|| format!("no model of {op} (too few trees?)"))?;
        if !row.usable {
            return Err(format!("{op}: {}", row.not_usable.clone().unwrap_or_else(|| "not usable".into())));
        }
        let p = row.prediction;
        seconds += p.seconds;
        match p.interval95 {
            Some([l, h]) => (lo, hi) = (lo + l, hi + h),
            None => bounded = false,
        }
    }
    Ok(Prediction { seconds, interval95: bounded.then_some([lo, hi]) })
}

/// `p` with the client's setup added: its median, and its least and most to the bounds.
pub fn with_setup(p: Prediction, setup_s: &[f64]) -> Prediction {
    if setup_s.is_empty() {
        return p;
    }
    let (lo, hi) = setup_s.iter().fold((f64::INFINITY, 0.0f64), |(l, h), s| (l.min(*s), h.max(*s)));
    let median = crate::analysis::stats::median(setup_s);
    Prediction { seconds: p.seconds + median, interval95: p.interval95.map(|[l, h]| [l + lo, h + hi]) }
}

/// Every command's requests on `provider`'s API, price at `prices` and time from the
/// calibration `rs` (the engine's client setup, `setup_s` as timed, added to each).
pub fn predict(
    rs: &ResultSet,
    (t, shape, provider): (&ObjectTree, &Shape, Provider),
    setup_s: &[f64],
    prices: &PriceTable,
    runs: u32,
) -> Vec<ObjectPrediction> {
    Command::ALL
        .iter()
        .map(|&c| {
            let requests = c.requests(t, provider);
            let (time, no_time) = match summed_time(rs, c.ops(), shape, runs) {
                Ok(p) => (Some(with_setup(p, setup_s)), None),
                Err(why) => (None, Some(why)),
            };
            ObjectPrediction {
                command: c,
                cost: prices.cost(&requests),
                requests,
                time,
                no_time,
                from_ops: c.ops().iter().map(|s| s.to_string()).collect(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn kinds(r: &RequestCounts) -> [u64; 6] {
        [r.put, r.get, r.head, r.list, r.delete_objects, r.post]
    }

    #[test]
    fn pages_and_batches_are_a_thousand_keys() {
        assert_eq!([0, 1, 999, 1000, 1001, 2000, 2001].map(|n| pages(n, Provider::S3)), [1, 1, 1, 1, 2, 2, 3]);
        assert_eq!([0, 1, 1000, 1001].map(|n| delete_batches(n, Provider::S3)), [0, 1, 1, 2]);
        // Blob: List Blobs pages of 5,000, Blob Batches of 256.
        assert_eq!([0, 5000, 5001].map(|n| pages(n, Provider::Azblob)), [1, 1, 2]);
        assert_eq!([0, 256, 257].map(|n| delete_batches(n, Provider::Azblob)), [0, 1, 2]);
    }

    #[test]
    fn blob_counts_its_multipart_as_puts_and_its_pages_by_5000() {
        // A Put Block per part and a Put Block List (checked by hand on Azurite: 64 MiB +
        // 1 byte went up in PUT 6, LIST 1).
        let t = ObjectTree::of_sizes([1, 64 * MIB + 1], 0);
        assert_eq!(kinds(&Command::Upload.requests(&t, Provider::Azblob)), [1 + 5 + 1, 0, 0, 1, 0, 0]);
        let many = ObjectTree::of_sizes(std::iter::repeat_n(1, 5001), 0);
        assert_eq!(kinds(&Command::Rm.requests(&many, Provider::Azblob)), [0, 0, 0, 4, 20, 0]);
    }

    #[test]
    fn multipart_starts_above_the_threshold_in_parts() {
        assert_eq!(MULTIPART_ABOVE, 64 * MIB, "the table in the module docs says 64 MiB");
        assert_eq!(PART as u64, 16 * MIB);
        let t = ObjectTree::of_sizes([0, 1, 64 * MIB, 64 * MIB + 1, 80 * MIB, 100 * MIB], 0);
        assert_eq!(t.multipart_sizes, vec![64 * MIB + 1, 80 * MIB, 100 * MIB]);
        assert_eq!([parts(64 * MIB + 1), parts(80 * MIB), parts(100 * MIB)], [5, 5, 7]);
        // 3 single PUTs + 5 + 5 + 7 parts; a start and a completion each.
        let up = Command::Upload.requests(&t, Provider::S3);
        assert_eq!(kinds(&up), [3 + 17, 0, 0, 1, 0, 6]);
        // Down: one GET each, however large; one page.
        assert_eq!(kinds(&Command::Download.requests(&t, Provider::S3)), [0, 6, 0, 2, 0, 0]);
    }

    #[test]
    fn counts_for_many_objects_and_for_none() {
        let t = ObjectTree::of_sizes(std::iter::repeat_n(4096, 2500), 0);
        assert_eq!(kinds(&Command::Upload.requests(&t, Provider::S3)), [2500, 0, 0, 1, 0, 0]);
        assert_eq!(kinds(&Command::Scan.requests(&t, Provider::S3)), [0, 0, 0, 4, 0, 0]);
        assert_eq!(kinds(&Command::Download.requests(&t, Provider::S3)), [0, 2500, 0, 4, 0, 0]);
        assert_eq!(kinds(&Command::Rm.requests(&t, Provider::S3)), [0, 0, 0, 5, 3, 0]);
        let exactly = ObjectTree::of_sizes(std::iter::repeat_n(1, 1000), 0);
        assert_eq!(kinds(&Command::Rm.requests(&exactly, Provider::S3)), [0, 0, 0, 3, 1, 0]);
        let none = ObjectTree::of_sizes([], 0);
        assert_eq!(kinds(&Command::Upload.requests(&none, Provider::S3)), [0, 0, 0, 1, 0, 0]);
        assert_eq!(kinds(&Command::Scan.requests(&none, Provider::S3)), [0, 0, 0, 2, 0, 0]);
        // Nothing to delete: no DeleteObjects, no second look.
        assert_eq!(kinds(&Command::Rm.requests(&none, Provider::S3)), [0, 0, 0, 2, 0, 0]);
    }

    #[test]
    fn the_setup_adds_its_median_and_its_range_to_the_bounds() {
        let p = Prediction { seconds: 1.0, interval95: Some([0.5, 2.0]) };
        let q = with_setup(p, &[0.1, 0.3, 0.2]);
        assert!((q.seconds - 1.2).abs() < 1e-12, "{q:?}");
        let [lo, hi] = q.interval95.unwrap();
        assert!((lo - 0.6).abs() < 1e-12 && (hi - 2.3).abs() < 1e-12, "{q:?}");
        assert_eq!(with_setup(p, &[]), p);
    }

    #[test]
    fn a_walk_counts_what_the_upload_sends() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        std::fs::create_dir_all(p.join("a/b")).unwrap();
        std::fs::create_dir(p.join("empty")).unwrap();
        std::fs::write(p.join("one"), [1u8; 10]).unwrap();
        std::fs::write(p.join("a/two"), [2u8; 20]).unwrap();
        std::fs::write(p.join("a/b/zero"), []).unwrap();
        std::os::unix::fs::symlink("one", p.join("link")).unwrap();
        // A name no key can hold: not sent.
        std::fs::write(p.join("bad\u{1}name"), b"x").unwrap();
        let t = ObjectTree::walk(p).unwrap();
        assert_eq!((t.objects, t.bytes, t.losses, t.estimate.clone()), (3, 30, 3, None), "{t:?}");
    }

    #[test]
    fn an_inventory_is_exact_below_the_threshold_and_says_when_not() {
        let mut inv = Inventory::empty();
        inv.add_dir(0, None, 3, 0);
        for s in [10, 4096, 5 * MIB] {
            inv.add_file(1, 4, s, s, 1);
        }
        let t = ObjectTree::from_inventory(&inv);
        assert_eq!((t.objects, t.multipart_sizes.len(), t.estimate.is_none()), (3, 0, true));
        inv.add_file(1, 4, 200 * MIB, 200 * MIB, 1);
        let t = ObjectTree::from_inventory(&inv);
        assert_eq!(t.multipart_sizes, vec![200 * MIB]);
        assert!(t.estimate.as_deref().is_some_and(|e| e.contains("--tree PATH")), "{t:?}");
    }
}
