//! The `pack` experiment's report, computed from a finished ResultSet: per tree the
//! loose copy and every container route (pack once, then per copy: copy + unpack, or
//! mount + read + umount; `*` marks the containers only Linux opens), from which rung
//! packing pays with 1 and k copies, and a recommendation with its reasons: among the
//! containers the consumer opens (`--consumer`, or from the destination's file system),
//! and "faster" only when the intervals of the per-run totals do not overlap. The trials
//! themselves are run by `experiment::pack` (`mod.rs`).

use crate::pack::{self, Consumer};
use crate::report::table::{new_table, right_align};
use crate::results::ResultSet;
use crate::units::{fmt_secs, fmt_size, sig3};

/// Median seconds of `op` on the tree with `key` (None: not measured or no complete run).
fn median(rs: &ResultSet, op: &str, key: &str) -> Option<f64> {
    rs.summaries.iter().find(|s| s.op == op && s.tree_key == key).map(|s| s.stats.median_s)
}

/// Median of a recorded figure (space) over complete runs.
fn median_space(rs: &ResultSet, op: &str, key: &str) -> Option<f64> {
    let v: Vec<f64> = rs
        .measurements
        .iter()
        .filter(|m| m.op == op && m.tree_key == key && m.result.complete())
        .filter_map(|m| m.result.space_used_bytes.map(|b| b as f64))
        .collect();
    (!v.is_empty()).then(|| crate::analysis::stats::median(&v))
}

/// One way to get a tree across with a container: pack, copy, then unpack or mount+read.
#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    pub container: String,
    /// "unpack" or "mount".
    pub access: String,
    pub pack_s: f64,
    /// Per copy: the container's copy plus unpack, or mount + read + umount.
    pub per_copy_s: f64,
    pub container_bytes: Option<f64>,
    /// (pack, per copy) of every run that completed all its steps.
    pub runs: Vec<(f64, f64)>,
}

impl Route {
    /// Pack once, then `k` copies: the median of the runs' own totals (as the HTML
    /// route table and the intervals take them), or the sum of the step medians when
    /// no run completed every step.
    pub fn total(&self, k: u32) -> f64 {
        if self.runs.is_empty() {
            return self.pack_s + k as f64 * self.per_copy_s;
        }
        let totals: Vec<f64> = self.runs.iter().map(|(p, c)| p + k as f64 * c).collect();
        crate::analysis::stats::median(&totals)
    }
    pub fn label(&self) -> String {
        format!("{} ({})", self.container, self.access)
    }
}

/// One tree's figures: loose time and space, and every route.
#[derive(Debug, Clone)]
pub struct TreeRoutes {
    pub key: String,
    pub files: u64,
    pub bytes: u64,
    pub loose_s: f64,
    pub loose_bytes: Option<f64>,
    pub routes: Vec<Route>,
    /// Loose seconds of every complete run.
    pub loose_runs: Vec<f64>,
}

/// Seconds of `op` on `key` per run (complete measurements only).
fn per_run(rs: &ResultSet, op: &str, key: &str) -> Vec<(u32, f64)> {
    rs.measurements
        .iter()
        .filter(|m| m.op == op && m.tree_key == key && m.result.complete())
        .map(|m| (m.run, m.result.elapsed_s))
        .collect()
}

/// (pack, per copy) of each run in which `pack` and every per-copy step completed.
fn route_runs(rs: &ResultSet, key: &str, pack_op: &str, per_copy: &[String]) -> Vec<(f64, f64)> {
    let steps: Vec<Vec<(u32, f64)>> = per_copy.iter().map(|op| per_run(rs, op, key)).collect();
    per_run(rs, pack_op, key)
        .into_iter()
        .filter_map(|(run, p)| {
            let each: Option<Vec<f64>> =
                steps.iter().map(|v| v.iter().find(|(r, _)| *r == run).map(|(_, s)| *s)).collect();
            each.map(|e| (p, e.iter().sum()))
        })
        .collect()
}

/// Every tree's routes from the summaries (medians), in file-count order.
pub fn routes(rs: &ResultSet) -> Vec<TreeRoutes> {
    let mut keys: Vec<(u64, u64, String)> = Vec::new();
    for s in rs.summaries.iter().filter(|s| s.op == "loose") {
        if !keys.iter().any(|k| k.2 == s.tree_key) {
            keys.push((s.tree_files, s.tree_bytes, s.tree_key.clone()));
        }
    }
    keys.sort();
    let mut out = Vec::new();
    for (files, bytes, key) in keys {
        let Some(loose_s) = median(rs, "loose", &key) else { continue };
        let mut routes = Vec::new();
        for n in pack::NAMES {
            let (Some(p), Some(c)) = (median(rs, &format!("{n}:pack"), &key), median(rs, &format!("{n}:copy"), &key))
            else {
                continue;
            };
            let space = median_space(rs, &format!("{n}:pack"), &key);
            let runs = |steps: &[&str]| {
                let ops: Vec<String> = steps.iter().map(|s| format!("{n}:{s}")).collect();
                route_runs(rs, &key, &format!("{n}:pack"), &ops)
            };
            if let Some(u) = median(rs, &format!("{n}:unpack"), &key) {
                routes.push(Route {
                    container: n.into(),
                    access: "unpack".into(),
                    pack_s: p,
                    per_copy_s: c + u,
                    container_bytes: space,
                    runs: runs(&["copy", "unpack"]),
                });
            }
            let m = ["mount", "read", "umount"].map(|s| median(rs, &format!("{n}:{s}"), &key));
            if let [Some(a), Some(b), Some(d)] = m {
                routes.push(Route {
                    container: n.into(),
                    access: "mount".into(),
                    pack_s: p,
                    per_copy_s: c + a + b + d,
                    container_bytes: space,
                    runs: runs(&["copy", "mount", "read", "umount"]),
                });
            }
        }
        let loose_bytes = median_space(rs, "loose", &key);
        let loose_runs = per_run(rs, "loose", &key).into_iter().map(|(_, s)| s).collect();
        out.push(TreeRoutes { key, files, bytes, loose_s, loose_bytes, routes, loose_runs });
    }
    out
}

/// Smallest file count from which `route` beats loose at every larger rung too, with k
/// copies: Some((rung before, rung)) — None when it never does (or on one tree only).
pub fn pays_from(trees: &[TreeRoutes], label: &str, k: u32) -> Option<(Option<u64>, u64)> {
    let wins: Vec<(u64, Option<bool>)> = trees
        .iter()
        .map(|t| (t.files, t.routes.iter().find(|r| r.label() == label).map(|r| r.total(k) < t.loose_s * k as f64)))
        .collect();
    pays_from_rungs(&wins)
}

/// The rung (in `wins`' order, smallest first) from which every rung wins: Some((rung
/// before, rung)); None when the last one does not win (or was not measured). Shared by
/// the file-count ladder above and the shard sizes of `object_routes`.
pub fn pays_from_rungs(wins: &[(u64, Option<bool>)]) -> Option<(Option<u64>, u64)> {
    let mut from = None;
    for (i, (files, w)) in wins.iter().enumerate().rev() {
        match w {
            Some(true) => from = Some((i.checked_sub(1).map(|j| wins[j].0), *files)),
            _ => break,
        }
    }
    from
}

/// The tables, where each route pays off, and a recommendation with its reasons.
/// `consumer`: `--consumer` (None: from the destination's file system).
pub fn report(rs: &ResultSet, k: u32, consumer: Option<Consumer>) -> String {
    let trees = routes(rs);
    let mut out = String::new();
    if trees.is_empty() {
        return "no complete measurement to report\n".into();
    }
    let mut t = new_table(
        ["files", "route", "pack", "per copy", "1 copy", "×", &format!("{k} copies"), "×", "space"]
            .map(String::from)
            .to_vec(),
    );
    let sz = |b: Option<f64>| b.map(fmt_size).unwrap_or_else(|| "–".into());
    for tr in &trees {
        let lk = tr.loose_s * k as f64;
        t.add_row(vec![
            tr.files.to_string(),
            "loose".into(),
            "–".into(),
            fmt_secs(tr.loose_s),
            fmt_secs(tr.loose_s),
            "1".into(),
            fmt_secs(lk),
            "1".into(),
            sz(tr.loose_bytes),
        ]);
        for r in &tr.routes {
            let (one, many) = (r.total(1), r.total(k));
            t.add_row(vec![
                String::new(),
                shown_label(r),
                fmt_secs(r.pack_s),
                fmt_secs(r.per_copy_s),
                fmt_secs(one),
                sig3(tr.loose_s / one),
                fmt_secs(many),
                sig3(lk / many),
                sz(r.container_bytes),
            ]);
        }
    }
    right_align(&mut t, 2);
    out.push_str(&format!("{t}\n"));
    out.push_str(concat!(
        "per copy: copy the container + unpack it, or mount + read every file + unmount; × = loose / packed\n",
        "(above 1 packing is faster); * only Linux opens the container (squashfs, EROFS and ext4 images:\n",
        "Windows and macOS mount none); tar and tar.zst every system unpacks; space: the container, or\n",
        "what the loose copy took; medians of complete runs\n\n"
    ));
    let labels: Vec<String> = trees.last().map(|t| t.routes.iter().map(Route::label).collect()).unwrap_or_default();
    if trees.len() > 1 {
        out.push_str("where packing starts to pay (it pays at this rung and every larger one):\n");
        let say = |l: &str, k: u32| match pays_from(&trees, l, k) {
            None => "never in this range".to_string(),
            Some((None, f)) => format!("from {f} files (the smallest rung)"),
            Some((Some(p), f)) => format!("between {p} and {f} files"),
        };
        let paying: Vec<&String> =
            labels.iter().filter(|l| pays_from(&trees, l, 1).is_some() || pays_from(&trees, l, k).is_some()).collect();
        for l in &paying {
            out.push_str(&format!("  {l}: 1 copy {}; {k} copies {}\n", say(l, 1), say(l, k)));
        }
        if paying.is_empty() {
            out.push_str(&format!("  no route, for 1 copy or {k} copies, in this range\n"));
        } else if paying.len() < labels.len() {
            out.push_str("  the other routes: never in this range\n");
        }
        out.push('\n');
    }
    let (who, why) = self::consumer(rs, consumer);
    out.push_str(&recommend(&trees, k, who, &why));
    out
}

/// Who opens the containers at the destination, and why: `given` (`--consumer`), or
/// from the destination's file system (the target named "destination …", or the one
/// target that held both ends).
pub fn consumer(rs: &ResultSet, given: Option<Consumer>) -> (Consumer, String) {
    if let Some(c) = given {
        return (c, format!("--consumer {}", c.name()));
    }
    let dst = rs.targets.iter().find(|t| t.id.starts_with("destination ")).or_else(|| rs.targets.first());
    let fs = dst.map(|t| t.fs_type.as_str()).filter(|f| !f.is_empty()).unwrap_or("of unknown type");
    (Consumer::for_destination(fs), format!("the destination's file system is {fs}"))
}

/// Which of two ways is faster, judged by intervals: the medians' 95% intervals when
/// both have enough runs, the ranges of the runs otherwise.
#[derive(Debug, Clone, PartialEq)]
pub enum Faster {
    Packed,
    Loose,
    /// The intervals overlap (or too few runs): why, to print.
    Unclear(String),
}

/// Judge per-run totals of a packed route against loose ones. "Faster" only when the
/// intervals do not overlap and the printed medians (`packed_s`, `loose_s`) differ, in
/// the same direction.
pub fn judge(label: &str, packed: &[f64], loose: &[f64], packed_s: f64, loose_s: f64) -> Faster {
    use crate::analysis::stats::median_ci95;
    let range = |v: &[f64]| {
        (v.iter().copied().fold(f64::INFINITY, f64::min), v.iter().copied().fold(f64::NEG_INFINITY, f64::max))
    };
    let (how, p, l) = match (median_ci95(packed), median_ci95(loose)) {
        (Some([a, b]), Some([c, d])) => ("the medians' 95% intervals", (a, b), (c, d)),
        _ if packed.len() >= 2 && loose.len() >= 2 => ("the ranges of the runs", range(packed), range(loose)),
        _ => {
            return Faster::Unclear(format!(
                "{} and {} complete runs: more --runs would tell",
                packed.len(),
                loose.len()
            ));
        }
    };
    let shown_differ = fmt_secs(packed_s) != fmt_secs(loose_s);
    if p.1 < l.0 && packed_s < loose_s && shown_differ {
        Faster::Packed
    } else if l.1 < p.0 && loose_s < packed_s && shown_differ {
        Faster::Loose
    } else {
        Faster::Unclear(format!(
            "{how} overlap: {label} {}–{}, loose {}–{}; more --runs would settle it",
            fmt_secs(p.0),
            fmt_secs(p.1),
            fmt_secs(l.0),
            fmt_secs(l.1)
        ))
    }
}

/// `route` against loose with k copies.
fn judge_k(t: &TreeRoutes, r: &Route, k: u32) -> Faster {
    let packed: Vec<f64> = r.runs.iter().map(|(p, c)| p + k as f64 * c).collect();
    let loose: Vec<f64> = t.loose_runs.iter().map(|l| l * k as f64).collect();
    judge(&r.label(), &packed, &loose, r.total(k), t.loose_s * k as f64)
}

/// A route as the table shows it: marked `*` when only Linux opens its container.
fn shown_label(r: &Route) -> String {
    if pack::linux_only(&r.container) { format!("{} *", r.label()) } else { r.label() }
}

/// The fastest way for k copies of the largest tree that `consumer` can open, and why;
/// `why` says where the consumer came from.
pub fn recommend(trees: &[TreeRoutes], k: u32, consumer: Consumer, why: &str) -> String {
    let Some(big) = trees.last() else { return String::new() };
    let loose_k = big.loose_s * k as f64;
    let best =
        big.routes.iter().filter(|r| consumer.opens(&r.container)).min_by(|a, b| a.total(k).total_cmp(&b.total(k)));
    let mut left_out: Vec<&str> = Vec::new();
    for r in big.routes.iter().filter(|r| !consumer.opens(&r.container)) {
        if !left_out.contains(&r.container.as_str()) {
            left_out.push(&r.container);
        }
    }
    let who = match consumer {
        Consumer::Linux => "Linux",
        Consumer::Any => "any system",
    };
    let mut s = format!(
        "recommendation for {} files ({}), {k} copies, opened on {who} ({why}): ",
        big.files,
        fmt_size(big.bytes as f64)
    );
    match best {
        Some(r) => match judge_k(big, r, k) {
            Faster::Packed => {
                s.push_str(&format!(
                    "pack into {} and {} at the destination: {} against {} loose ({}× faster).\n",
                    r.container,
                    if r.access == "mount" { "mount it (read-only)" } else { "unpack it" },
                    fmt_secs(r.total(k)),
                    fmt_secs(loose_k),
                    sig3(loose_k / r.total(k))
                ));
                s.push_str(&format!(
                    "  why: packing costs {} once; each copy then costs {} instead of {} loose",
                    fmt_secs(r.pack_s),
                    fmt_secs(r.per_copy_s),
                    fmt_secs(big.loose_s)
                ));
                match judge_k(big, r, 1) {
                    Faster::Packed => {}
                    Faster::Loose => s.push_str(&format!(
                        " (for a single copy loose is faster: {} vs {})",
                        fmt_secs(big.loose_s),
                        fmt_secs(r.total(1))
                    )),
                    Faster::Unclear(_) => s.push_str(&format!(
                        " (for a single copy no clear difference: {} loose vs {})",
                        fmt_secs(big.loose_s),
                        fmt_secs(r.total(1))
                    )),
                }
                if let (Some(c), Some(l)) = (r.container_bytes, big.loose_bytes) {
                    s.push_str(&format!(
                        "; the container takes {} against {} for the loose tree",
                        fmt_size(c),
                        fmt_size(l)
                    ));
                }
                s.push_str(".\n");
                if r.access == "mount" {
                    s.push_str("  a mounted container is read-only: unpack it (slower) if the files must change.\n");
                }
            }
            Faster::Loose => s.push_str(&format!(
                "copy loose: {} against {} for the fastest container route, {} — packing costs {} and each copy of it {}, more than the {} a loose copy takes.\n",
                fmt_secs(loose_k),
                fmt_secs(r.total(k)),
                r.label(),
                fmt_secs(r.pack_s),
                fmt_secs(r.per_copy_s),
                fmt_secs(big.loose_s)
            )),
            Faster::Unclear(how) => s.push_str(&format!(
                "no clear difference: {} loose vs {} for the fastest container route, {} ({how}).\n",
                fmt_secs(loose_k),
                fmt_secs(r.total(k)),
                r.label()
            )),
        },
        None if left_out.is_empty() => s.push_str("no container route completed.\n"),
        None => s.push_str(&format!("copy loose ({}): no container route that {who} opens completed.\n", fmt_secs(loose_k))),
    }
    if !left_out.is_empty() {
        s.push_str(&format!(
            "  left out: {} (only Linux mounts them; --consumer linux to consider them).\n",
            left_out.join(", ")
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: u64, loose_s: f64, per_copy_s: f64) -> TreeRoutes {
        let r = Route {
            container: "tar".into(),
            access: "unpack".into(),
            pack_s: 1.0,
            per_copy_s,
            container_bytes: Some(100.0),
            runs: vec![(1.0, per_copy_s), (1.0, per_copy_s * 1.1)],
        };
        TreeRoutes {
            key: files.to_string(),
            files,
            bytes: 1 << 20,
            loose_s,
            loose_bytes: Some(200.0),
            routes: vec![r],
            loose_runs: vec![loose_s, loose_s * 1.05],
        }
    }

    #[test]
    fn pays_from_the_rung_after_which_it_always_wins() {
        // 1 copy: 1 + per_copy against loose; wins at 64 (3.5 < 4) and 256 only.
        let t = vec![tree(4, 0.1, 0.05), tree(16, 2.0, 1.5), tree(64, 4.0, 2.5), tree(256, 9.0, 3.0)];
        assert_eq!(pays_from(&t, "tar (unpack)", 1), Some((Some(16), 64)));
        // 10 copies: 1 + 10·per_copy against 10·loose: wins from 16 (16 < 20).
        assert_eq!(pays_from(&t, "tar (unpack)", 10), Some((Some(4), 16)));
        // A win followed by a loss at a larger rung is no pay-off point.
        let t = vec![tree(4, 9.0, 0.1), tree(16, 0.1, 0.1)];
        assert_eq!(pays_from(&t, "tar (unpack)", 1), None);
        let t = vec![tree(4, 9.0, 0.1), tree(16, 9.0, 0.1)];
        assert_eq!(pays_from(&t, "tar (unpack)", 1), Some((None, 4)));
        assert_eq!(pays_from(&t, "squashfs (mount)", 1), None);
    }

    #[test]
    fn recommendation_says_why() {
        let r = recommend(&[tree(256, 9.0, 3.0)], 10, Consumer::Linux, "test");
        assert!(r.contains("pack into tar and unpack it"), "{r}");
        assert!(r.contains("packing costs 1.00 s once; each copy then costs 3.00 s instead of 9.00 s"), "{r}");
        assert!(!r.contains("no clear difference"), "{r}");
        // Runs 1 + 10·0.95 = 10.5 and 1 + 10·1.045 = 11.45, median of the runs' totals
        // 11.0, against loose 10–10.5: the runs' ranges touch, so neither is called faster.
        let r = recommend(&[tree(256, 1.0, 0.95)], 10, Consumer::Linux, "test");
        assert!(r.contains("no clear difference: 10.0 s loose vs 11.0 s"), "{r}");
        assert!(r.contains("the ranges of the runs overlap"), "{r}");
        assert!(!r.contains("faster"), "{r}");
        let r = recommend(&[tree(256, 1.0, 3.0)], 10, Consumer::Linux, "test");
        assert!(
            r.starts_with("recommendation for 256 files (1 MiB), 10 copies, opened on Linux (test): copy loose"),
            "{r}"
        );
    }

    /// A synthetic pack ResultSet: one tree of 256 files, `runs` runs; per op the
    /// seconds of run i are `secs · (1 + 0.01·i)`; the destination's file system `fs`.
    fn result_set(fs: &str, ops: &[(&str, f64)], runs: u32) -> ResultSet {
        use crate::measure::PhaseResult;
        use crate::measure::provenance::Provenance;
        use crate::results::{ExperimentInfo, Measurement};
        use crate::tree::{Content, Layout, SizeDist, TreeSpec};
        let target = crate::results::testing::dir_target;
        let experiment = ExperimentInfo {
            name: "pack".into(),
            ops: ops.iter().map(|(o, _)| o.to_string()).collect(),
            runs,
            warmup: 0,
            threads: 1,
            portion_files: 10_000,
            order: "interleaved".into(),
            create: Default::default(),
            caches: Default::default(),
            until: Default::default(),
            adaptive: None,
            side_trees: Vec::new(),
        };
        let targets = vec![target(&format!("destination {fs}"), fs), target("source ext4", "ext4")];
        let mut rs = ResultSet::new(Provenance::collect(Vec::new()), experiment, targets);
        let tree = TreeSpec {
            files: 256,
            size: SizeDist::Fixed { bytes: 4096 },
            layout: Layout::Flat,
            name_len: 16,
            content: Content::Random,
            seed: 1,
        };
        for run in 1..=runs {
            for (op, secs) in ops {
                rs.measurements.push(Measurement {
                    experiment: "pack".into(),
                    target: format!("ext4 → {fs}"),
                    op: op.to_string(),
                    tree: tree.clone(),
                    tree_key: "t".into(),
                    tree_files: 256,
                    tree_bytes: 256 * 4096,
                    tree_dirs: 0,
                    run,
                    order: 0,
                    block: None,
                    at_s: None,
                    result: PhaseResult { elapsed_s: secs * (1.0 + 0.01 * run as f64), ..Default::default() },
                });
            }
        }
        rs.derive();
        rs
    }

    /// erofs (mount) far faster than loose, tar (unpack) a little faster.
    const ROUTES: [(&str, f64); 9] = [
        ("loose", 10.0),
        ("tar:pack", 1.0),
        ("tar:copy", 2.0),
        ("tar:unpack", 5.0),
        ("erofs:pack", 1.0),
        ("erofs:copy", 1.0),
        ("erofs:mount", 0.1),
        ("erofs:read", 1.0),
        ("erofs:umount", 0.1),
    ];

    #[test]
    fn an_exfat_destination_gets_no_linux_only_container_unless_asked() {
        for fs in ["exfat", "ntfs3", "vfat", "fuseblk"] {
            let rs = result_set(fs, &ROUTES, 3);
            let r = report(&rs, 10, None);
            let rec = &r[r.find("recommendation").expect("a recommendation")..];
            assert!(rec.contains("opened on any system (the destination's file system is"), "{rec}");
            assert!(rec.contains("pack into tar and unpack it"), "{rec}");
            assert!(!rec.contains("pack into erofs"), "{rec}");
            assert!(rec.contains("left out: erofs (only Linux mounts them; --consumer linux"), "{rec}");
            // The table marks the containers only Linux opens.
            let erofs_row = r.lines().find(|l| l.contains("erofs (mount)")).expect("an erofs row");
            assert!(erofs_row.contains("erofs (mount) *"), "{erofs_row}");
            let tar_row = r.lines().find(|l| l.contains("tar (unpack)")).expect("a tar row");
            assert!(!tar_row.contains('*'), "{tar_row}");
            assert!(r.contains("* only Linux opens the container"), "{r}");
            // Asked for Linux: erofs, the fastest.
            let r = report(&rs, 10, Some(Consumer::Linux));
            assert!(r.contains("opened on Linux (--consumer linux): pack into erofs and mount it"), "{r}");
            assert!(!r.contains("left out"), "{r}");
        }
        // A Linux file system as destination: Linux by default.
        let r = report(&result_set("ext4", &ROUTES, 3), 10, None);
        assert!(r.contains("opened on Linux (the destination's file system is ext4): pack into erofs"), "{r}");
        // --consumer any on ext4 holds too.
        let r = report(&result_set("ext4", &ROUTES, 3), 10, Some(Consumer::Any));
        assert!(r.contains("pack into tar and unpack it") && !r.contains("pack into erofs"), "{r}");
        // Only Linux-only containers measured, for any system: copy loose, saying why.
        let only: Vec<(&str, f64)> = ROUTES.iter().copied().filter(|(o, _)| !o.starts_with("tar")).collect();
        let r = report(&result_set("exfat", &only, 3), 10, None);
        assert!(r.contains("copy loose (102 s): no container route that any system opens completed"), "{r}");
    }

    #[test]
    fn overlapping_intervals_never_say_faster() {
        // The case: 1.13 s against 1.13 s.
        let t = |runs: Vec<f64>, loose: Vec<f64>| judge("tar (unpack)", &runs, &loose, 1.13, 1.13);
        assert!(matches!(t(vec![1.12, 1.14], vec![1.13, 1.131]), Faster::Unclear(_)));
        // Non-overlapping ranges that still print alike are no difference either.
        let f = judge("x", &[1.1301, 1.1302], &[1.1303, 1.1304], 1.1301, 1.1304);
        assert!(matches!(f, Faster::Unclear(_)), "{f:?}");
        // One run each: nothing to judge by.
        assert!(matches!(judge("x", &[1.0], &[3.0], 1.0, 3.0), Faster::Unclear(_)));
        // Apart: faster, either way.
        assert_eq!(judge("x", &[1.0, 1.1], &[2.0, 2.1], 1.05, 2.05), Faster::Packed);
        assert_eq!(judge("x", &[2.0, 2.1], &[1.0, 1.1], 2.05, 1.05), Faster::Loose);
        // Six runs or more: the medians' 95% intervals decide, not the ranges (one wild
        // loose run overlaps the ranges, not the intervals).
        let packed = [1.0, 1.01, 1.02, 0.99, 1.0, 1.01, 1.0, 0.98];
        let loose = [2.0, 2.01, 1.99, 2.02, 2.0, 0.5, 2.0, 1.98];
        assert_eq!(judge("x", &packed, &loose, 1.0, 2.0), Faster::Packed);
        // Over many random trees, whenever the runs' ranges overlap, the recommendation
        // says no "faster" (neither "× faster" nor "loose is faster").
        let mut x: u64 = 11;
        let mut rnd = || {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut overlapping = 0;
        for _ in 0..2000 {
            let (loose, per_copy, spread) = (0.5 + rnd(), 0.05 + rnd(), rnd() * 0.3);
            let mut tr = tree(256, loose, per_copy);
            tr.routes[0].runs = vec![(1.0, per_copy), (1.0, per_copy * (1.0 + spread))];
            tr.loose_runs = vec![loose, loose * (1.0 + spread)];
            let k = 1 + (rnd() * 20.0) as u32;
            let packed: Vec<f64> = tr.routes[0].runs.iter().map(|(p, c)| p + k as f64 * c).collect();
            let lk: Vec<f64> = tr.loose_runs.iter().map(|l| l * k as f64).collect();
            let overlap = packed[0] <= lk[1] && lk[0] <= packed[1];
            let r = recommend(&[tr], k, Consumer::Linux, "test");
            if overlap {
                overlapping += 1;
                assert!(!r.contains("faster"), "{r}");
                assert!(r.contains("no clear difference"), "{r}");
            } else {
                // Apart for k copies: a verdict (the single-copy note may still be unclear).
                let first = r.lines().next().unwrap_or_default();
                assert!(!first.contains("no clear difference"), "{r}");
                assert!(first.contains("× faster") || first.contains("copy loose"), "{r}");
            }
        }
        assert!(overlapping > 100, "the test must try overlapping runs: {overlapping}");
    }

    #[test]
    fn a_compressed_container_written_in_full_gets_no_cache_warning() {
        use crate::measure::diskstats::DeviceIo;
        let mut rs = result_set("ext4", &[("loose", 1.0), ("tar.zst:pack", 1.0), ("tar:pack", 1.0)], 1);
        for m in &mut rs.measurements {
            let r = &mut m.result;
            r.bytes = 64 << 20; // the tree
            r.flush_s = Some(0.1);
            let (container, written) = match m.op.as_str() {
                // 8 MiB compressed container, all of it on the device: no cache.
                "tar.zst:pack" => (8 << 20, 8 << 20),
                // 64 MiB container, 1 MiB on the device: absorbed by a cache.
                "tar:pack" => (64 << 20, 1 << 20),
                _ => (64 << 20, 64 << 20),
            };
            r.space_used_bytes = Some(container);
            r.device = Some(DeviceIo { device: "vdb".into(), write_bytes: written, ..Default::default() });
        }
        rs.derive();
        let cache: Vec<&String> = rs.warnings.iter().filter(|w| w.contains("absorbed by a cache")).collect();
        assert_eq!(cache.len(), 1, "{:?}", rs.warnings);
        assert!(cache[0].starts_with("tar:pack ("), "{cache:?}");
        assert!(cache[0].contains("(1 MiB of 64 MiB)"), "{cache:?}");
    }
}
