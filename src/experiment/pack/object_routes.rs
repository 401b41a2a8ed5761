//! `pack` onto an object store, from a finished ResultSet (the trials are `objects.rs`'s):
//! per tree and route (`loose`, `tar@SIZE`, `tar.zst@SIZE`) the three steps — upload, read all, read one
//! file — each as the median of its runs with the 95% interval of that median (order
//! statistics over the runs, as pack's other routes), the requests of one run by kind
//! and their price; where sharding pays for each step and shard format (the smallest
//! shard size from which it beats loose at that size and every larger one,
//! `routes::pays_from_rungs`, each size judged by `routes::judge`: faster only when the
//! intervals — or, below 6 runs, the ranges of the runs — do not overlap); and the advice
//! for the largest tree.

use super::objects::{STEPS, route_name};
use super::routes::{Faster, judge, pays_from_rungs};
use crate::analysis::stats::{median, median_ci95, printable_interval};
use crate::measure::RequestCounts;
use crate::pack::shards::{Format, Sharding};
use crate::report::table::{new_table, right_align};
use crate::results::ResultSet;
use crate::results::prices::fmt_amount;
use crate::units::{fmt_secs, fmt_size, sig3};

/// Is `rs` a pack onto an object store?
pub fn applies(rs: &ResultSet) -> bool {
    rs.experiment.ops.iter().any(|o| o == "loose:put")
}

/// One step of one route: its complete runs' seconds, one run's requests (the first
/// complete one), the bytes they moved (upload: what the store holds, the index with it)
/// and their price (amount, currency).
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub runs: Vec<f64>,
    pub requests: Option<RequestCounts>,
    pub bytes: u64,
    pub price: Option<(f64, String)>,
}

impl Step {
    pub fn median(&self) -> f64 {
        median(&self.runs)
    }
    /// The median's 95% interval when it may be printed, or why not.
    pub fn interval(&self) -> Result<[f64; 2], String> {
        printable_interval(self.median(), median_ci95(&self.runs), self.runs.len())
    }
    /// `1.20 s [1.10 – 1.31]` or `1.20 s (too few runs for an interval, n=3)`.
    pub fn text(&self) -> String {
        match self.interval() {
            Ok([lo, hi]) => format!("{} [{} – {}]", fmt_secs(self.median()), fmt_secs(lo), fmt_secs(hi)),
            Err(why) => format!("{} ({why})", fmt_secs(self.median())),
        }
    }
}

/// One route on one tree: `shard` None for loose; a step None when no run completed it.
#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    pub shard: Option<Sharding>,
    pub steps: [Option<Step>; 3],
}

impl Route {
    pub fn name(&self) -> String {
        route_name(self.shard)
    }
}

/// One tree's routes, loose first, then by format and shard size.
#[derive(Debug, Clone, PartialEq)]
pub struct Tree {
    pub key: String,
    pub files: u64,
    pub bytes: u64,
    pub routes: Vec<Route>,
}

impl Tree {
    pub fn loose(&self) -> Option<&Route> {
        self.routes.iter().find(|r| r.shard.is_none())
    }

    /// The shard formats measured, in order.
    pub fn formats(&self) -> Vec<Format> {
        let mut f: Vec<Format> = self.routes.iter().filter_map(|r| Some(r.shard?.format)).collect();
        f.dedup();
        f
    }
}

/// The sharding in a route's name (`tar@1MiB`, `tar.zst@64KiB`); None for loose or
/// another name.
fn shard_of(route: &str) -> Option<Sharding> {
    let (format, size) = route.split_once('@')?;
    Some(Sharding { format: Format::parse(format)?, size: crate::units::parse_size(size).ok()? })
}

/// Every tree's routes, in file-count order.
pub fn trees(rs: &ResultSet) -> Vec<Tree> {
    let mut keys: Vec<(u64, u64, String)> = Vec::new();
    for m in rs.measurements.iter().filter(|m| m.op == "loose:put") {
        if !keys.iter().any(|k| k.2 == m.tree_key) {
            keys.push((m.tree_files, m.tree_bytes, m.tree_key.clone()));
        }
    }
    keys.sort();
    let mut shards: Vec<Sharding> = rs.experiment.ops.iter().filter_map(|o| shard_of(o.split(':').next()?)).collect();
    shards.sort_unstable();
    shards.dedup();
    let step = |key: &str, route: &str, st: &str| {
        let op = format!("{route}:{st}");
        let done: Vec<&crate::results::Measurement> =
            rs.measurements.iter().filter(|m| m.op == op && m.tree_key == key && m.result.complete()).collect();
        let first = done.first()?;
        Some(Step {
            runs: done.iter().map(|m| m.result.elapsed_s).collect(),
            requests: first.result.requests,
            bytes: first.result.bytes,
            price: first.result.cost.as_ref().map(|c| (c.amount, c.currency.clone())),
        })
    };
    keys.into_iter()
        .map(|(files, bytes, key)| {
            let routes = std::iter::once(None)
                .chain(shards.iter().map(|s| Some(*s)))
                .map(|shard| Route { shard, steps: STEPS.map(|st| step(&key, &route_name(shard), st)) })
                .collect();
            Tree { key, files, bytes, routes }
        })
        .collect()
}

/// What the table and the advice call each step.
pub const STEP_WORDS: [&str; 3] = ["upload", "read all", "read one file"];

/// Does the route of `shard` beat loose at step `i` on tree `t`? None: not measured.
fn wins(t: &Tree, shard: Sharding, i: usize) -> Option<Faster> {
    let loose = t.loose()?.steps[i].as_ref()?;
    let r = t.routes.iter().find(|r| r.shard == Some(shard))?.steps[i].as_ref()?;
    Some(judge(&route_name(Some(shard)), &r.runs, &loose.runs, r.median(), loose.median()))
}

/// The routes of `format`'s shards on `t`, by size.
fn of_format(t: &Tree, format: Format) -> impl Iterator<Item = Sharding> + '_ {
    t.routes.iter().filter_map(|r| r.shard).filter(move |s| s.format == format)
}

/// From which shard size of `format` step `i` pays on tree `t` (see
/// `routes::pays_from_rungs`).
pub fn pays_from(t: &Tree, format: Format, i: usize) -> Option<(Option<u64>, u64)> {
    let v: Vec<(u64, Option<bool>)> =
        of_format(t, format).map(|s| (s.size, wins(t, s, i).map(|f| f == Faster::Packed))).collect();
    pays_from_rungs(&v)
}

/// `3 (PUT 3) $0.000015`: one run's requests and their price.
fn requests_text(s: &Step) -> String {
    let r = s.requests.map(|r| crate::engine::object::fmt_requests(&r)).unwrap_or_else(|| "–".into());
    match &s.price {
        Some((a, cur)) => format!("{r} {}", fmt_amount(*a, cur)),
        None => r,
    }
}

/// Where step `i` pays on `t`, in words, a format after the other: `tar from 64 KiB
/// shards (…); tar.zst at no shard size tried`.
pub fn pays_words(t: &Tree, i: usize) -> String {
    let said: Vec<String> =
        t.formats().into_iter().map(|f| format!("{} {}", f.name(), pays_words_of(t, f, i))).collect();
    said.join("; ")
}

/// Where step `i` pays on `t` with `format`'s shards, in words.
fn pays_words_of(t: &Tree, format: Format, i: usize) -> String {
    let size = |b: u64| fmt_size(b as f64);
    let paying: Vec<u64> =
        of_format(t, format).filter(|s| wins(t, *s, i) == Some(Faster::Packed)).map(|s| s.size).collect();
    match pays_from(t, format, i) {
        Some((None, s)) => format!("from {} shards (the smallest tried)", size(s)),
        Some((Some(p), s)) => format!("from {} shards (between {} and {})", size(s), size(p), size(s)),
        None if paying.is_empty() => "at no shard size tried".into(),
        None => format!(
            "at {} only, not at the largest size tried",
            paying.iter().map(|s| size(*s)).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// The terminal's tables, where sharding pays, and the advice.
pub fn report(rs: &ResultSet) -> String {
    let trees = trees(rs);
    if trees.is_empty() {
        return "no complete measurement to report\n".into();
    }
    let mut out = String::new();
    for t in &trees {
        out.push_str(&format!("{} files ({}) onto {}:\n", t.files, fmt_size(t.bytes as f64), destination(rs)));
        let mut table = new_table(
            ["route", "step", "time (median, 95% interval)", "×", "requests (one run) and price"]
                .map(String::from)
                .to_vec(),
        );
        for r in &t.routes {
            for (i, st) in r.steps.iter().enumerate() {
                let Some(st) = st else { continue };
                let ratio = match (r.shard, t.loose().and_then(|l| l.steps[i].as_ref())) {
                    (Some(_), Some(l)) => sig3(l.median() / st.median()),
                    _ => "1".into(),
                };
                let name = if i == 0 { r.name() } else { String::new() };
                table.add_row(vec![name, STEP_WORDS[i].into(), st.text(), ratio, requests_text(st)]);
            }
        }
        right_align(&mut table, 3);
        out.push_str(&format!("{table}\n"));
        out.push_str("where sharding pays (faster than loose at that shard size and every larger one):\n");
        for (i, w) in STEP_WORDS.iter().enumerate() {
            out.push_str(&format!("  {w}: {}\n", pays_words(t, i)));
        }
        out.push('\n');
    }
    out.push_str(concat!(
        "× = loose / sharded (above 1 sharding is faster); upload: read the files and PUT them (sharded: packed into\n",
        "tar or tar.zst shards as read, then the index); read all: LIST + a GET per object, or the index + a GET per\n",
        "shard (tar.zst: decompressed); read one file: its GET, or the index's GET + a range GET into its shard\n",
        "(tar.zst: the file's own zstd frame, decompressed); faster only when the intervals (below 6 runs: the ranges\n",
        "of the runs) do not overlap\n\n"
    ));
    if let Some(big) = trees.last() {
        out.push_str(&advice(big));
    }
    out
}

/// The destination's label, from the measurements' target.
fn destination(rs: &ResultSet) -> String {
    rs.measurements.first().map(|m| m.target.clone()).unwrap_or_default()
}

/// The route of `shard` on `t`.
fn route_of(t: &Tree, shard: Sharding) -> Option<&Route> {
    t.routes.iter().find(|r| r.shard == Some(shard))
}

/// `tar shards of 64 KiB`.
fn shards_words(s: Sharding) -> String {
    format!("{} shards of {}", s.format.name(), fmt_size(s.size as f64))
}

/// The advice for the largest tree: of each format, the smallest shard size from which
/// both upload and read all pay; of those, the quickest by the medians of upload + read
/// all, with its figures, what reading one file then costs and what the store holds.
pub fn advice(t: &Tree) -> String {
    let head = format!("advice for {} files ({}): ", t.files, fmt_size(t.bytes as f64));
    let sum = |r: &Route| Some(r.steps[0].as_ref()?.median() + r.steps[1].as_ref()?.median());
    let paying: Vec<(Sharding, f64)> = t
        .formats()
        .into_iter()
        .filter_map(|format| {
            let (Some((_, a)), Some((_, b))) = (pays_from(t, format, 0), pays_from(t, format, 1)) else { return None };
            let s = Sharding { format, size: a.max(b) };
            Some((s, sum(route_of(t, s)?)?))
        })
        .collect();
    let Some(&(from, from_secs)) = paying.iter().min_by(|a, b| a.1.total_cmp(&b.1)) else {
        let says: Vec<String> =
            (0..2).map(|i| format!("{}: sharding pays {}", STEP_WORDS[i], pays_words(t, i))).collect();
        return format!(
            "{head}keep loose objects: sharding does not pay for both upload and read all ({}).\n",
            says.join("; ")
        );
    };
    let (Some(r), Some(loose)) = (route_of(t, from), t.loose()) else { return String::new() };
    let mut s = format!(
        "{head}shard into {} (sharding pays from that size on, for upload and read all).\n",
        shards_words(from)
    );
    for (i, word) in STEP_WORDS.iter().enumerate() {
        let (Some(a), Some(l)) = (&r.steps[i], &loose.steps[i]) else { continue };
        let verdict = match wins(t, from, i) {
            Some(Faster::Packed) => format!("{}× faster", sig3(l.median() / a.median())),
            Some(Faster::Loose) => format!("{}× slower", sig3(a.median() / l.median())),
            _ => "no clear difference".into(),
        };
        s.push_str(&format!(
            "  {word}: {} against {} loose ({verdict}); requests {} against {}\n",
            a.text(),
            l.text(),
            requests_text(a),
            requests_text(l)
        ));
    }
    if let (Some(a), Some(l)) = (&r.steps[0], &loose.steps[0]) {
        s.push_str(&format!(
            "  stored: {} in the shards and their index, against {} loose\n",
            fmt_size(a.bytes as f64),
            fmt_size(l.bytes as f64)
        ));
    }
    for (other, secs) in paying.iter().filter(|p| p.0 != from) {
        let stored = route_of(t, *other).and_then(|r| r.steps[0].as_ref()).map(|st| st.bytes);
        s.push_str(&format!(
            "  {} pay too: upload + read all {} by the medians (against {}), stored {}\n",
            shards_words(*other),
            fmt_secs(*secs),
            fmt_secs(from_secs),
            stored.map(|b| fmt_size(b as f64)).unwrap_or_else(|| "–".into())
        ));
    }
    // The quickest shards for upload + read all by medians (not judged by intervals).
    let quickest = t.routes.iter().filter_map(|r| Some((r.shard?, sum(r)?)));
    if let Some((b, secs)) = quickest.min_by(|a, b| a.1.total_cmp(&b.1)).filter(|(b, _)| *b != from) {
        s.push_str(&format!(
            "  the quickest shards tried for upload + read all are {} ({} by the medians, against {} for {}).\n",
            shards_words(b),
            fmt_secs(secs),
            fmt_secs(from_secs),
            shards_words(from)
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(secs: f64, runs: usize, put: u64) -> Option<Step> {
        Some(Step {
            runs: (0..runs).map(|i| secs * (1.0 + 0.01 * i as f64)).collect(),
            requests: Some(RequestCounts { put, ..Default::default() }),
            bytes: put * 4096,
            price: Some((put as f64 * 0.000005, "USD".into())),
        })
    }

    fn tree(loose: [f64; 3], shards: &[(u64, [f64; 3])]) -> Tree {
        tree_of(loose, &shards.iter().map(|(size, secs)| (Format::Tar, *size, *secs)).collect::<Vec<_>>())
    }

    fn tree_of(loose: [f64; 3], shards: &[(Format, u64, [f64; 3])]) -> Tree {
        let mut routes = vec![Route { shard: None, steps: loose.map(|s| step(s, 6, 100)) }];
        for (format, size, secs) in shards {
            routes.push(Route {
                shard: Some(Sharding { format: *format, size: *size }),
                steps: secs.map(|s| step(s, 6, 3)),
            });
        }
        Tree { key: "t".into(), files: 100, bytes: 400 << 10, routes }
    }

    #[test]
    fn the_advice_names_the_size_from_which_sharding_pays() {
        const K: u64 = 1 << 10;
        // Upload pays from 64 KiB, read all from 16 KiB; read one never (two requests).
        let t = tree(
            [1.0, 1.0, 0.01],
            &[(16 * K, [2.0, 0.5, 0.02]), (64 * K, [0.5, 0.4, 0.02]), (1024 * K, [0.3, 0.3, 0.02])],
        );
        let tar = Format::Tar;
        assert_eq!(pays_from(&t, tar, 0), Some((Some(16 * K), 64 * K)));
        assert_eq!(pays_from(&t, tar, 1), Some((None, 16 * K)));
        assert_eq!(pays_from(&t, tar, 2), None);
        let a = advice(&t);
        assert!(a.starts_with("advice for 100 files (400 KiB): shard into tar shards of 64 KiB"), "{a}");
        assert!(
            a.contains("upload: 512 ms [502 ms – 523 ms] against 1.02 s [1.00 s – 1.05 s] loose (2.00× faster)"),
            "{a}"
        );
        assert!(a.contains("read one file:") && a.contains("slower"), "{a}");
        assert_eq!(pays_words(&t, 0), "tar from 64 KiB shards (between 16 KiB and 64 KiB)");
        assert!(a.contains("stored: 12 KiB in the shards and their index, against 400 KiB loose"), "{a}");
        assert!(
            a.contains(
                "the quickest shards tried for upload + read all are tar shards of 1 MiB (615 ms by the medians, \
                 against 922 ms for tar shards of 64 KiB)"
            ),
            "{a}"
        );
        // Overlapping runs are no win: loose 1.0–1.05, shards 1.0–1.05.
        let t = tree([1.0, 1.0, 0.01], &[(16 * K, [1.0, 1.0, 0.02])]);
        assert_eq!(pays_from(&t, Format::Tar, 0), None);
        assert!(advice(&t).contains("keep loose objects"), "{}", advice(&t));
        // A win at a small size only: said, but no "from".
        let t = tree([1.0, 1.0, 0.01], &[(16 * K, [0.5, 0.5, 0.02]), (64 * K, [2.0, 2.0, 0.02])]);
        assert_eq!(pays_words(&t, 0), "tar at 16 KiB only, not at the largest size tried");
    }

    #[test]
    fn the_advice_picks_the_quicker_format_and_names_the_other() {
        const K: u64 = 1 << 10;
        // tar pays from 64 KiB (1.0 s for upload + read all), tar.zst from 16 KiB (0.8 s).
        let t = tree_of(
            [1.0, 1.0, 0.01],
            &[
                (Format::Tar, 16 * K, [2.0, 2.0, 0.02]),
                (Format::Tar, 64 * K, [0.5, 0.5, 0.02]),
                (Format::TarZst, 16 * K, [0.4, 0.4, 0.02]),
                (Format::TarZst, 64 * K, [0.3, 0.3, 0.02]),
            ],
        );
        assert_eq!(pays_from(&t, Format::TarZst, 0), Some((None, 16 * K)));
        let a = advice(&t);
        assert!(a.contains("shard into tar.zst shards of 16 KiB"), "{a}");
        assert!(a.contains("tar shards of 64 KiB pay too: upload + read all 1.02 s by the medians"), "{a}");
        assert!(a.contains("the quickest shards tried for upload + read all are tar.zst shards of 64 KiB"), "{a}");
        assert_eq!(
            pays_words(&t, 0),
            "tar from 64 KiB shards (between 16 KiB and 64 KiB); tar.zst from 16 KiB shards (the smallest tried)"
        );
    }

    #[test]
    fn shard_sizes_come_back_from_route_names() {
        let tar = |size| Some(Sharding { format: Format::Tar, size });
        assert_eq!(shard_of("tar@1MiB"), tar(1 << 20));
        assert_eq!(shard_of("tar@64KiB"), tar(64 << 10));
        assert_eq!(shard_of("tar@1000B"), tar(1000));
        assert_eq!(shard_of("tar.zst@1MiB"), Some(Sharding { format: Format::TarZst, size: 1 << 20 }));
        assert_eq!(shard_of("loose"), None);
        assert_eq!(shard_of("zip@1MiB"), None);
        for format in Format::ALL {
            for size in [4096u64, 1 << 20, 3 << 30, 5000] {
                let s = Some(Sharding { format, size });
                assert_eq!(shard_of(&route_name(s)), s);
            }
        }
    }
}
