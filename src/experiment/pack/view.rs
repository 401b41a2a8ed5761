//! The `pack` experiment in the HTML report: the route table (per tree: loose and every
//! container route, totals for 1 and k copies as medians of the per-run totals with
//! their 95% intervals), where packing starts to pay, the recommendation (the same
//! words as the terminal's, `report::pack`), and the charts: the routes at the largest
//! tree as a dot plot with interval whiskers (one labelled row each, loose as the
//! reference line) and, over several trees, the k-copy total against file count.

use super::routes::{self as pk, Route, TreeRoutes};
use crate::analysis::stats::{median, median_ci95, printable_interval};
use crate::pack::{self, Consumer};
use crate::report::chart::{Axis, Chart, Dot, Kind, Series};
use crate::report::html::{esc, fig_secs};
use crate::report::views::{HtmlSection, View};
use crate::results::ResultSet;
use crate::units::{fmt_size, sig3};

/// k and the consumer the run was started with (`--copies`, `--consumer` on its
/// recorded command line; 10 and "from the destination" when not given).
pub fn settings(rs: &ResultSet) -> (u32, Option<Consumer>) {
    let cl = &rs.provenance.command_line;
    let value = |flag: &str| {
        cl.iter().enumerate().find_map(|(i, a)| {
            a.strip_prefix(&format!("{flag}="))
                .map(str::to_string)
                .or_else(|| (a == flag).then(|| cl.get(i + 1).cloned()).flatten())
        })
    };
    let k = value("--copies").and_then(|v| v.parse().ok()).filter(|k| *k > 0).unwrap_or(10);
    (k, value("--consumer").and_then(|c| Consumer::parse(&c)))
}

/// Median of per-run values and its 95% interval (None when it may not be printed:
/// fewer than 6 runs, or runs too scattered; `fig_secs` says which).
fn med(v: &[f64]) -> (f64, Option<[f64; 2]>) {
    if v.is_empty() {
        return (f64::NAN, None);
    }
    let m = median(v);
    (m, printable_interval(m, median_ci95(v), v.len()).ok())
}

fn totals(r: &Route, k: u32) -> Vec<f64> {
    r.runs.iter().map(|(p, c)| p + k as f64 * c).collect()
}

/// Onto an object store: per tree a table of the routes' steps (time with its interval,
/// one run's requests and their price), where sharding pays, and the advice (the
/// terminal's words, `object_routes`).
fn object_section(rs: &ResultSet) -> String {
    use super::object_routes::{self as ob, STEP_WORDS};
    let trees = ob::trees(rs);
    let mut h = String::from("<h2 id=\"routes\">Routes onto the object store</h2>\n");
    if trees.is_empty() {
        h.push_str("<p>No complete measurement to report.</p>\n");
        return h;
    }
    for t in &trees {
        h.push_str(&format!(
            "<h3>{} files ({})</h3>\n<table class=\"routes\"><tr><th>route</th>",
            t.files,
            fmt_size(t.bytes as f64)
        ));
        for w in STEP_WORDS {
            h.push_str(&format!("<th>{w}</th><th>requests, price</th>"));
        }
        h.push_str("</tr>\n");
        for r in &t.routes {
            h.push_str(&format!("<tr><td class=\"l\" data-route=\"{0}\">{0}</td>", esc(&r.name())));
            for st in &r.steps {
                match st {
                    Some(st) => {
                        let (m, ci) = med(&st.runs);
                        let req = st.requests.map(|q| crate::engine::object::fmt_requests(&q)).unwrap_or_default();
                        let price = st.price.as_ref().map(|(a, c)| crate::results::prices::fmt_amount(*a, c));
                        h.push_str(&format!(
                            "{}<td>{} {}</td>",
                            fig_secs(m, ci, st.runs.len()),
                            esc(&req),
                            price.unwrap_or_default()
                        ));
                    }
                    None => h.push_str("<td>–</td><td>–</td>"),
                }
            }
            h.push_str("</tr>\n");
        }
        h.push_str("</table>\n<ul class=\"pays\">");
        for (i, w) in STEP_WORDS.iter().enumerate() {
            h.push_str(&format!("<li>{w}: sharding pays {}</li>", esc(&ob::pays_words(t, i))));
        }
        h.push_str("</ul>\n");
    }
    h.push_str("<p class=\"muted\">Medians of complete runs with their 95% intervals (order statistics over the runs). \
        upload: read the files and PUT them (sharded: packed into tar or tar.zst shards as read, then the index); read all: LIST + a GET \
        per object, or the index + a GET per shard (tar.zst: decompressed); read one file: its GET, or the index's GET + a range GET into \
        its shard (tar.zst: the file's own zstd frame, decompressed). Sharding pays at a size when \
        the intervals (below 6 runs: the ranges of the runs) do not overlap, from the size named on.</p>\n");
    h.push_str("<h2 id=\"recommendation\">Recommendation</h2>\n<div class=\"recommendation\">");
    if let Some(big) = trees.last() {
        for l in ob::advice(big).lines().filter(|l| !l.trim().is_empty()) {
            h.push_str(&format!("<p>{}</p>", esc(l.trim())));
        }
    }
    h.push_str("</div>\n");
    h
}

/// Onto an object store: the largest tree's steps per route as dot plots (median and
/// interval whisker), loose as the reference line.
fn object_charts(rs: &ResultSet) -> Vec<Chart> {
    use super::object_routes::{self as ob, STEP_WORDS};
    let Some(big) = ob::trees(rs).pop() else { return Vec::new() };
    let legend = vec!["loose".to_string(), "tar shards".to_string(), "tar.zst shards".to_string()];
    (0..3)
        .filter_map(|i| {
            let loose = big.loose()?.steps[i].as_ref()?;
            let dots: Vec<Dot> = big
                .routes
                .iter()
                .filter_map(|r| {
                    let st = r.steps[i].as_ref()?;
                    let (value, ci) = med(&st.runs);
                    let group = match r.shard.map(|s| s.format) {
                        None => 0,
                        Some(crate::pack::shards::Format::Tar) => 1,
                        Some(crate::pack::shards::Format::TarZst) => 2,
                    };
                    Some(Dot { label: r.name(), group, value, ci })
                })
                .collect();
            let missing = dots.iter().filter(|d| d.ci.is_none()).count();
            let mut notes =
                vec![format!("{} files ({}); the vertical line is loose", big.files, fmt_size(big.bytes as f64))];
            if missing > 0 {
                notes.push(format!(
                    "no interval whisker on {missing} of {} rows: fewer than 6 complete runs, or runs too scattered",
                    dots.len()
                ));
            }
            Some(Chart {
                id: format!("objects-{}", STEP_WORDS[i].replace(' ', "-")),
                title: format!("{}: {} per route, median and 95% interval", big.key, STEP_WORDS[i]),
                kind: Kind::Dots { dots, axis: Axis::Seconds, reference: Some(loose.median()) },
                legend: legend.clone(),
                notes,
            })
        })
        .collect()
}

/// The route table, where packing pays, and the recommendation.
pub fn section(rs: &ResultSet) -> String {
    if super::object_routes::applies(rs) {
        return object_section(rs);
    }
    let trees = pk::routes(rs);
    let (k, given) = settings(rs);
    let mut h = String::from("<h2 id=\"routes\">Routes</h2>\n");
    if trees.is_empty() {
        h.push_str("<p>No complete measurement to report.</p>\n");
        return h;
    }
    h.push_str(&format!(
        "<table class=\"routes\"><tr><th>files</th><th>route</th><th>pack</th><th>per copy</th><th>1 copy</th><th>×</th><th>{k} copies</th><th>×</th><th>space</th></tr>\n"
    ));
    let sz = |b: Option<f64>| b.map(fmt_size).unwrap_or_else(|| "–".into());
    for t in &trees {
        let n = t.loose_runs.len();
        let loose: Vec<f64> = t.loose_runs.clone();
        let loose_k: Vec<f64> = loose.iter().map(|l| l * k as f64).collect();
        let (l1, l1ci) = med(&loose);
        let (lk, lkci) = med(&loose_k);
        h.push_str(&format!(
            "<tr class=\"loose\"><td>{}</td><td class=\"l\">loose</td><td>–</td>{}{}<td>1</td>{}<td>1</td><td>{}</td></tr>\n",
            t.files,
            fig_secs(l1, l1ci, n),
            fig_secs(l1, l1ci, n),
            fig_secs(lk, lkci, n),
            sz(t.loose_bytes)
        ));
        for r in &t.routes {
            let n = r.runs.len();
            let packs: Vec<f64> = r.runs.iter().map(|x| x.0).collect();
            let copies: Vec<f64> = r.runs.iter().map(|x| x.1).collect();
            let (p, pci) = med(&packs);
            let (c, cci) = med(&copies);
            let (o, oci) = med(&totals(r, 1));
            let (m, mci) = med(&totals(r, k));
            let mark = if pack::linux_only(&r.container) { " *" } else { "" };
            h.push_str(&format!(
                "<tr><td></td><td class=\"l\" data-route=\"{}\">{}{mark}</td>{}{}{}<td>{}</td>{}<td>{}</td><td>{}</td></tr>\n",
                esc(&r.label()),
                esc(&r.label()),
                fig_secs(p, pci, n),
                fig_secs(c, cci, n),
                fig_secs(o, oci, n),
                sig3(l1 / o),
                fig_secs(m, mci, n),
                sig3(lk / m),
                sz(r.container_bytes)
            ));
        }
    }
    h.push_str("</table>\n<p class=\"muted\">Medians of the per-run totals of complete runs with their 95% intervals (order statistics over the runs, taken as independent: variation between blocks is not in these). \
        per copy: copy the container + unpack it, or mount + read every file + unmount; × = loose / packed (above 1 packing is faster); \
        * only Linux opens the container (squashfs, EROFS and ext4 images: Windows and macOS mount none); tar and tar.zst every system unpacks; \
        space: the container, or what the loose copy took.</p>\n");
    if trees.len() > 1 {
        h.push_str("<h3>Where packing starts to pay</h3>\n<ul class=\"pays\">");
        let labels: Vec<String> = trees.last().map(|t| t.routes.iter().map(Route::label).collect()).unwrap_or_default();
        let say = |l: &str, k: u32| match pk::pays_from(&trees, l, k) {
            None => "never in this range".to_string(),
            Some((None, f)) => format!("from {f} files (the smallest rung)"),
            Some((Some(p), f)) => format!("between {p} and {f} files"),
        };
        for l in &labels {
            h.push_str(&format!("<li>{}: 1 copy {}; {k} copies {}</li>", esc(l), say(l, 1), say(l, k)));
        }
        h.push_str("</ul>\n");
    }
    let (who, why) = pk::consumer(rs, given);
    let rec = pk::recommend(&trees, k, who, &why);
    h.push_str("<h2 id=\"recommendation\">Recommendation</h2>\n<div class=\"recommendation\">");
    for l in rec.lines().filter(|l| !l.trim().is_empty()) {
        h.push_str(&format!("<p>{}</p>", esc(l.trim())));
    }
    h.push_str("</div>\n");
    h
}

/// The charts of a pack result (see the module's doc).
pub fn charts(rs: &ResultSet) -> Vec<Chart> {
    if super::object_routes::applies(rs) {
        return object_charts(rs);
    }
    let trees = pk::routes(rs);
    let (k, _) = settings(rs);
    let Some(big) = trees.last() else { return Vec::new() };
    let mut legend: Vec<String> = vec!["loose".into()];
    for r in &big.routes {
        if !legend.contains(&r.container) {
            legend.push(r.container.clone());
        }
    }
    let group = |c: &str| legend.iter().position(|l| l == c).unwrap_or(0);
    let mut dots = Vec::new();
    let loose_k: Vec<f64> = big.loose_runs.iter().map(|l| l * k as f64).collect();
    let (lk, lkci) = med(&loose_k);
    dots.push(Dot { label: format!("loose ×{k}"), group: 0, value: lk, ci: lkci });
    let mut missing = usize::from(lkci.is_none());
    let mut routes: Vec<&Route> = big.routes.iter().collect();
    routes.sort_by(|a, b| median(&totals(a, k)).total_cmp(&median(&totals(b, k))));
    for r in routes {
        let (m, ci) = med(&totals(r, k));
        missing += usize::from(ci.is_none());
        dots.push(Dot { label: r.label(), group: group(&r.container), value: m, ci });
    }
    let runs = big.loose_runs.len();
    let mut notes = vec![format!(
        "{} files ({}): pack once, then {k} copies; the vertical line is loose ×{k}",
        big.files,
        fmt_size(big.bytes as f64)
    )];
    if missing > 0 {
        let why = if runs < crate::analysis::stats::MEDIAN_CI_MIN_N {
            format!("{runs} complete runs, and the 95% interval of a median needs 6")
        } else {
            format!("runs too scattered for one ({runs} complete runs: the interval would be wider than the median)")
        };
        notes.push(format!("no interval whisker on {missing} of {} rows: {why}", dots.len()));
    }
    let mut out = vec![Chart {
        id: "routes-largest-tree".into(),
        title: format!("{}: total for {k} copies per route, median and 95% interval", big.key),
        kind: Kind::Dots { dots, axis: Axis::Seconds, reference: Some(lk) },
        legend: legend.clone(),
        notes,
    }];
    if trees.len() > 1 {
        out.push(over_files(&trees, k));
    }
    out
}

/// Total for k copies against file count, one line per route (and loose).
fn over_files(trees: &[TreeRoutes], k: u32) -> Chart {
    let mut labels: Vec<String> = vec!["loose".into()];
    for t in trees {
        for r in &t.routes {
            if !labels.contains(&r.label()) {
                labels.push(r.label());
            }
        }
    }
    let mut missing = 0;
    let mut cells = 0;
    let series: Vec<Series> = labels
        .iter()
        .map(|l| {
            let mut means = Vec::new();
            let mut runs = Vec::new();
            for t in trees {
                let v: Vec<f64> = if l == "loose" {
                    t.loose_runs.iter().map(|x| x * k as f64).collect()
                } else {
                    match t.routes.iter().find(|r| &r.label() == l) {
                        Some(r) => totals(r, k),
                        None => continue,
                    }
                };
                let (m, ci) = med(&v);
                if !m.is_finite() {
                    continue;
                }
                cells += 1;
                missing += usize::from(ci.is_none());
                let [lo, hi] = ci.unwrap_or([m, m]);
                means.push((t.files as f64, m, lo, hi));
                runs.extend(v.iter().map(|x| (t.files as f64, *x)));
            }
            Series { name: l.clone(), means, runs, fit: Vec::new() }
        })
        .collect();
    let mut notes = vec!["dots: every run's total; bars: the median's 95% interval".to_string()];
    if missing > 0 {
        notes.push(format!(
            "no interval bar on {missing} of {cells} medians: fewer than 6 complete runs, or runs too scattered (an interval wider than its median is not drawn)"
        ));
    }
    Chart {
        id: "routes-vs-files".into(),
        title: format!("total for {k} copies against file count (log-log), median and 95% interval"),
        kind: Kind::LogLog { series },
        legend: labels,
        notes,
    }
}

/// pack's view: the routes and the recommendation (for k copies and the consumer the run
/// was started with), its routes' charts instead of one per op.
pub const VIEW: View = View {
    terminal: |rs| {
        if super::object_routes::applies(rs) {
            return super::object_routes::report(rs);
        }
        let (k, consumer) = settings(rs);
        pk::report(rs, k, consumer)
    },
    html_tables: None,
    html_section: Some(HtmlSection {
        nav: "<li><a href=\"#routes\">Routes</a></li><li><a href=\"#recommendation\">Recommendation</a></li>",
        render: section,
    }),
    charts: Some(charts),
};
