//! The `pack` experiment's report, computed from a finished ResultSet: per tree the
//! loose copy and every container route (pack once, then per copy: copy + unpack, or
//! mount + read + umount), from which rung packing pays with 1 and k copies, and a
//! recommendation with its reasons (and a note when the runs overlap). The trials
//! themselves are run by `experiment::pack`.

use super::table::{new_table, right_align};
use crate::pack::{self, Consumer};
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
    pub fn total(&self, k: u32) -> f64 {
        self.pack_s + k as f64 * self.per_copy_s
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
        ["files", "route", "opens", "pack", "per copy", "1 copy", "×", &format!("{k} copies"), "×", "space"]
            .map(String::from)
            .to_vec(),
    );
    let sz = |b: Option<f64>| b.map(fmt_size).unwrap_or_else(|| "–".into());
    for tr in &trees {
        let lk = tr.loose_s * k as f64;
        t.add_row(vec![
            tr.files.to_string(),
            "loose".into(),
            "any".into(),
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
                r.label(),
                opened_by(&r.container).into(),
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
    right_align(&mut t, 3);
    out.push_str(&format!("{t}\n"));
    out.push_str(concat!(
        "per copy: copy the container + unpack it, or mount + read every file + unmount; × = loose / packed\n",
        "(above 1 packing is faster); opens: who can open the container (only Linux mounts squashfs, EROFS\n",
        "and ext4 images; any system unpacks tar and tar.zst); space: the container, or what the loose copy\n",
        "took; medians of complete runs\n\n"
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

/// Who can open a container, as the table shows it.
fn opened_by(container: &str) -> &'static str {
    if pack::linux_only(container) { "Linux" } else { "any" }
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
        let r = recommend(&[tree(256, 9.0, 3.0)], 10);
        assert!(r.contains("pack into tar and unpack it"), "{r}");
        assert!(r.contains("packing costs 1.00 s once; each copy then costs 3.00 s instead of 9.00 s"), "{r}");
        assert!(!r.contains("overlap"), "{r}");
        // 1 + 10·0.95 = 10.5 (runs 10.5–11.45) against loose 10–10.5: overlapping runs.
        let r = recommend(&[tree(256, 1.0, 0.95)], 10);
        assert!(r.contains("but the runs overlap"), "{r}");
        let r = recommend(&[tree(256, 1.0, 3.0)], 10);
        assert!(r.starts_with("recommendation for 256 files (1 MiB), 10 copies: copy loose"), "{r}");
    }
}
