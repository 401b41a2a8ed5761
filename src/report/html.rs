//! One self-contained HTML report, the frame every experiment's page shares: a heading
//! naming the experiment and its targets by label, the experiment's own section (pack:
//! routes and recommendation), the answer first (per-file costs with their intervals and
//! left-out errors, crossovers, the warnings that change what a number means), inline SVG
//! charts with their legends and notes, the measurements (medians with their 95%
//! intervals, folded; bigfile and clusters: their own tables, from `grid.rs`), fitted
//! costs (± on every column; a fit that misses its left-out trees says why instead),
//! detections grouped by kind, and a provenance footer. No scripts, no external
//! resources. Stable hooks for tests: `data-target-label` on legend entries and on the
//! heading's targets, `data-ci` (or `data-no-ci` with the reason) on every figure.
//! Opening `report.html#CHART-ID` shows that chart alone (CSS :target), which is how
//! the test screenshots every chart.

use super::chart::{self, Chart};
use super::table::fmt_mean_ci;
use super::views::View;
use crate::analysis::detect::Detection;
use crate::measure::provenance::Provenance;
use crate::results::ResultSet;
use crate::units::{fmt_size, sig3};

pub use super::markup::esc;

/// `s` with its first letter in upper case.
fn upper_first(s: &str) -> String {
    let mut c = s.chars();
    c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default()
}

const STYLE: &str = "body,svg text{font-family:'DejaVu Sans',sans-serif}body{margin:2em auto;max-width:1300px;padding:0 1em;color:#222;background:#fff}\
h1{font-size:1.5em}h2{font-size:1.15em;margin-top:1.6em}h3{font-size:1em}\
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}td,th{border:1px solid #ccc;padding:.25em .5em;text-align:right}\
td:first-child,th:first-child,td.l{text-align:left}.chart svg{display:block;width:100%;height:auto}\
.ci,.why{color:#555;font-size:.9em}ul.legend{list-style:none;padding:0;margin:.3em 0;display:flex;flex-wrap:wrap;gap:.4em 1.4em;font-size:.9em}\
ul.legend i{display:inline-block;width:1.6em;height:.35em;margin-right:.4em;vertical-align:middle}\
.recommendation{border-left:4px solid #2c7;padding:.2em 1em;background:#f4fbf6}.recommendation p{margin:.4em 0}\
section.c:target{position:fixed;inset:0;z-index:10;background:#fff;margin:0;padding:0 1em;overflow:auto}\
section.c:target h2{display:none}section.c:target svg{max-width:none}\
details{margin:.3em 0}summary{cursor:pointer}footer{margin-top:2em;border-top:1px solid #ccc}\
.muted,.note,footer{color:#555;font-size:.85em}";

/// The page's head and heading: `title`, and the targets by their labels.
pub fn head(title: &str, targets: &[String]) -> String {
    let mut h = String::from("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    // The mark `--html` looks for before it replaces an existing file.
    h.push_str(crate::fs::output::HTML_MARK);
    // The charts' text was laid out with the bundled font's metrics: embed that font so
    // every browser draws it the same way (and none needs fonts of its own).
    h.push_str(&format!(
        "<title>{}</title><style>@font-face{{font-family:'DejaVu Sans';src:url(data:font/ttf;base64,{})}}{STYLE}</style></head><body>\n",
        esc(title),
        base64(chart::FONT)
    ));
    h.push_str(&format!("<h1>{}</h1>\n", esc(title)));
    if !targets.is_empty() {
        h.push_str("<p class=\"targets\">targets: ");
        let spans: Vec<String> =
            targets.iter().map(|t| format!("<b data-target-label=\"{}\">{}</b>", esc(t), esc(t))).collect();
        h.push_str(&spans.join(", "));
        h.push_str("</p>\n");
    }
    h
}

/// One figure as a table cell: the median (or prediction) with its 95% interval in
/// `data-ci` and in the text, or the reason there is none in `data-no-ci`.
pub fn fig_secs(value: f64, ci: Option<[f64; 2]>, n: usize) -> String {
    if !value.is_finite() {
        return "<td class=\"fig\" data-no-ci=\"no complete run\">–</td>".into();
    }
    let (scale, unit) = super::table::unit_for(value);
    let v = format!("{} {unit}", sig3(value * scale));
    match ci {
        Some([lo, hi]) => format!(
            "<td class=\"fig\" data-ci=\"{lo:e},{hi:e}\">{v} <span class=\"ci\">[{} – {}]</span></td>",
            sig3(lo * scale),
            sig3(hi * scale)
        ),
        None => {
            let why = if n < crate::analysis::stats::MEDIAN_CI_MIN_N {
                format!("too few runs for an interval, n={n}")
            } else {
                format!("runs too scattered for an interval, n={n}")
            };
            format!("<td class=\"fig\" data-no-ci=\"{why}\">{v} <span class=\"why\">({why})</span></td>")
        }
    }
}

/// A chart with its legend (`data-target-label` on entries that are targets) and notes.
pub fn chart_section(c: &Chart, targets: &[String]) -> Result<String, String> {
    let svg = chart::svg(c)?;
    // Drop the XML declaration, if any: inline SVG is plain markup.
    let svg = svg.trim_start_matches(|ch| ch != '<');
    let svg = if svg.starts_with("<?xml") { svg.split_once("?>").map_or(svg, |x| x.1) } else { svg };
    let mut legend = String::from("<ul class=\"legend\">");
    for (i, l) in c.legend.iter().enumerate() {
        let target = if targets.contains(l) { format!(" data-target-label=\"{}\"", esc(l)) } else { String::new() };
        legend.push_str(&format!(
            "<li data-label=\"{}\"{target}><i style=\"background:{}\"></i>{}</li>",
            esc(l),
            chart::css_color(i),
            esc(l)
        ));
    }
    legend.push_str("</ul>");
    let notes: String = c.notes.iter().map(|n| format!("<p class=\"note\">{}</p>", esc(n))).collect();
    let (w, h) = chart::size(c);
    Ok(format!(
        "<section class=\"c\" id=\"{}\" data-width=\"{w}\" data-height=\"{h}\"><h2>{}</h2>{legend}<div class=\"chart\">{}</div>{notes}</section>\n",
        c.id,
        esc(&c.title),
        svg.trim()
    ))
}

/// The report for `rs` (possibly several files combined); `sources` are the files
/// it was read from with their provenance.
/// `view` is its experiment's (`experiment::kinds`).
pub fn render(rs: &ResultSet, sources: &[(String, Provenance)], view: &View) -> Result<String, String> {
    let charts = view.charts(rs);
    let labels: Vec<String> = rs.targets.iter().map(|t| t.shown()).collect();
    let mut title = super::table::title(rs);
    if rs.experiment.ops.len() > 6 {
        // pack's 20 ops make a heading of five lines: the table lists them.
        title = title.replace(&rs.experiment.ops.join(", "), &format!("{} ops", rs.experiment.ops.len()));
    }
    let mut h = head(&title, &labels);
    h.push_str(&format!(
        "<p class=\"muted\">{} over {}; every chart in this file is inline SVG.</p>\n",
        esc(&upper_first(&super::table::intervals_text(rs))),
        runs_per_cell(rs)
    ));
    h.push_str("<nav><ul>");
    if let Some(own) = &view.html_section {
        h.push_str(own.nav);
    }
    let answer = answer(rs);
    if !answer.is_empty() {
        h.push_str("<li><a href=\"#answer\">Answer</a></li>");
    }
    for c in &charts {
        h.push_str(&format!("<li><a href=\"#{}\">{}</a></li>", c.id, esc(&c.title)));
    }
    h.push_str("<li><a href=\"#measurements\">Measurements</a></li>");
    h.push_str("</ul></nav>\n");
    if let Some(own) = &view.html_section {
        h.push_str(&(own.render)(rs));
    }
    // The answer first, then the charts, then the measurements they rest on.
    h.push_str(&answer);
    for c in &charts {
        h.push_str(&chart_section(c, &labels)?);
    }
    h.push_str(&view.html_tables.map(|grids| own_tables(grids(rs))).unwrap_or_else(|| summaries(rs)));
    h.push_str(&super::views::requests_html(rs));
    h.push_str(&models(rs));
    h.push_str(&detections(rs));
    h.push_str(&footer(rs, sources));
    h.push_str("</body></html>\n");
    Ok(h)
}

/// The answer (per-file costs with their intervals and left-out errors, crossovers) and
/// the warnings that change what a number means, grouped: empty when there is neither.
fn answer(rs: &ResultSet) -> String {
    let lines = super::table::answer_lines(rs);
    let groups = rs.meaning_groups();
    if lines.is_empty() && groups.is_empty() {
        return String::new();
    }
    let mut h = String::from("<section id=\"answer\" class=\"answer\"><h2>Answer</h2>\n<ul>");
    for l in lines {
        h.push_str(&format!("<li>{}</li>", esc(&l)));
    }
    h.push_str("</ul>\n");
    for g in groups {
        h.push_str(&format!(
            "<div class=\"meaning\" data-kind=\"{}\" data-count=\"{}\"><b>{}</b><ul>",
            esc(g.kind),
            g.count,
            esc(&g.heading())
        ));
        for l in &g.lines {
            h.push_str(&format!("<li>{}</li>", esc(&super::named(rs, l))));
        }
        h.push_str("</ul></div>\n");
    }
    h.push_str("</section>\n");
    h
}

/// Runs per cell as they really were: `3 runs per cell`, `3–7 runs per cell`.
fn runs_per_cell(rs: &ResultSet) -> String {
    let ns: Vec<usize> = rs.summaries.iter().map(|s| s.stats.n).collect();
    match (ns.iter().min(), ns.iter().max()) {
        (Some(lo), Some(hi)) if lo == hi => format!("{lo} run{} per cell", if *lo == 1 { "" } else { "s" }),
        (Some(lo), Some(hi)) => format!("{lo}–{hi} runs per cell"),
        _ => "no complete run".into(),
    }
}

/// Standard base64 (RFC 4648, with padding), for the embedded font.
pub fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut o = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for c in bytes.chunks(3) {
        let n = (c[0] as u32) << 16 | (*c.get(1).unwrap_or(&0) as u32) << 8 | *c.get(2).unwrap_or(&0) as u32;
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            o.push(if i <= c.len() { A[(n >> shift & 63) as usize] as char } else { '=' });
        }
    }
    o
}

/// A detection's kind, as the grouped list names it.
fn kind(d: &Detection) -> &'static str {
    match d {
        Detection::Knee { .. } => "knee",
        Detection::NoKnee { .. } => "no knee",
        Detection::Crossover { .. } => "crossover",
        Detection::FirstRun { .. } => "first-run effect",
        Detection::Outlier { .. } => "outlier",
        Detection::HighCv { .. } => "noisy cell (CV above 10%)",
        Detection::Bimodal { .. } => "two modes",
    }
}

/// `<details>` per group: its name and count in the summary, the items folded.
fn grouped(class: &str, groups: &[(String, Vec<String>)]) -> String {
    let mut h = String::new();
    for (name, items) in groups {
        h.push_str(&format!(
            "<details class=\"{class}\" data-kind=\"{}\" data-count=\"{}\"><summary>{}: {}</summary><ul>",
            esc(name),
            items.len(),
            esc(name),
            items.len()
        ));
        for i in items {
            h.push_str(&format!("<li>{}</li>", esc(i)));
        }
        h.push_str("</ul></details>\n");
    }
    h
}

fn detections(rs: &ResultSet) -> String {
    let mut h = String::from("<h2 id=\"detections\">Detections</h2>\n");
    if rs.detections.is_empty() {
        h.push_str("<p>No knee, crossover, first-run effect, outlier or noisy cell was found.</p>\n");
    } else {
        let mut groups: Vec<(String, Vec<String>)> = Vec::new();
        for d in &rs.detections {
            let text = super::detection_text(rs, d);
            match groups.iter_mut().find(|g| g.0 == kind(d)) {
                Some(g) => g.1.push(text),
                None => groups.push((kind(d).into(), vec![text])),
            }
        }
        h.push_str(&grouped("detection", &groups));
    }
    let other: Vec<String> = rs
        .warnings
        .iter()
        .filter(|w| !rs.detections.iter().any(|d| &d.text() == *w))
        .map(|w| super::named(rs, w))
        .collect();
    if !other.is_empty() {
        h.push_str("<h2>Warnings</h2>\n");
        h.push_str(&grouped("warning", &[("warnings".to_string(), other)]));
    }
    h
}

fn models(rs: &ResultSet) -> String {
    if rs.models.is_empty() {
        return String::new();
    }
    let mut h = format!(
        "<h2 id=\"models\">Fitted costs</h2>\n<p class=\"muted\">time = a·files + b·bytes + c·dirs + d·Σn² + k (n files per directory; k paid once per run), non-negative least squares on the relative error of each tree's median; ± standard errors with the trees as the unit (bandwidth: by the delta method); left-out error: the median error predicting each tree from a fit of the others, above {} no figure is shown.</p>\n\
         <table class=\"models\"><tr><th>target</th><th>op</th><th>per file</th><th>bandwidth</th><th>per dir</th><th>per run</th><th>break-even file size</th><th>R²</th><th>left-out error</th><th>cells</th><th>files range</th></tr>\n",
        crate::analysis::model::check::pct(crate::analysis::model::check::MAX_LEFT_OUT_ERROR)
    );
    for m in &rs.models {
        let c = &m.model;
        let check = m.check();
        let left_out = check.left_out_error.map_or("—".into(), crate::analysis::model::check::pct);
        if let Some(why) = &check.why_not {
            // No figure from a fit that misses its own trees: the row says why instead.
            h.push_str(&format!(
                "<tr class=\"not-fitted\"><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\" colspan=\"5\" data-no-ci=\"not fitted\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{} … {}</td></tr>\n",
                esc(&super::target_name(rs, &m.target)),
                esc(&m.op),
                esc(why),
                sig3(c.r2),
                left_out,
                c.n,
                m.files_range[0],
                m.files_range[1]
            ));
            continue;
        }
        let na = |why: &str| format!("<td class=\"fig\" data-no-ci=\"{why}\">— ({why})</td>");
        let pm = |v: f64, se: f64| format!("<td class=\"fig\" data-se=\"{se:e}\">{}</td>", fmt_mean_ci(v, Some(se)));
        let resolved = m.bytes_resolved();
        let bw = match c.bandwidth_bytes_per_s {
            Some(_) if !resolved => na("const: every tree held about the same bytes"),
            Some(bw) => {
                // s.e. of 1/b by the delta method: se_b / b²
                let se = c.per_byte_se / (c.per_byte_s * c.per_byte_s);
                format!(
                    "<td class=\"fig\" data-se=\"{se:e}\">{} ± {} MiB/s</td>",
                    sig3(bw / 1048576.0),
                    sig3(se / 1048576.0)
                )
            }
            None => na("not resolved"),
        };
        h.push_str(&format!(
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td>{}{bw}{}{}<td>{}</td><td>{}</td><td>{left_out}</td><td>{}</td><td>{} … {}</td></tr>\n",
            esc(&super::target_name(rs, &m.target)),
            esc(&m.op),
            if c.per_file_s > 0.0 { pm(c.per_file_s, c.per_file_se) } else { na("≈ 0, not resolved") },
            if c.per_dir_s > 0.0 { pm(c.per_dir_s, c.per_dir_se) } else { na("not resolved") },
            m.per_run().map(|(v, se)| pm(v, se)).unwrap_or_else(|| na("not resolved")),
            c.break_even_bytes.filter(|_| resolved).map(fmt_size).unwrap_or_else(|| "—".into()),
            sig3(c.r2),
            c.n,
            m.files_range[0],
            m.files_range[1]
        ));
    }
    h.push_str("</table>\n");
    for l in super::dir_entry_notes(rs).into_iter().chain(crate::results::bytes_note(rs)) {
        h.push_str(&format!("<p class=\"muted\">{}</p>\n", esc(&l)));
    }
    h
}

/// The measurements of an experiment with tables of its own (bigfile, clusters): those
/// tables, as the terminal prints them after the run.
fn own_tables(grids: Vec<super::grid::Grid>) -> String {
    let mut h = String::from("<h2 id=\"measurements\">Measurements</h2>\n");
    for g in grids {
        h.push_str(&g.html());
    }
    h
}

fn summaries(rs: &ResultSet) -> String {
    let mut h = String::from(
        "<h2 id=\"measurements\">Measurements</h2>\n<details class=\"measurements\"><summary>every cell: median and 95% interval</summary>\n<table class=\"measurements\"><tr><th>target</th><th>op</th><th>tree</th><th>runs</th><th>median [95% interval]</th><th>CV</th></tr>\n",
    );
    for s in &rs.summaries {
        let st = &s.stats;
        let ci = crate::analysis::stats::printable_interval(st.median_s, st.median_ci95_s, st.n).ok();
        h.push_str(&format!(
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td>{}<td>{}</td></tr>\n",
            esc(&super::target_name(rs, &s.target)),
            esc(&super::table::op_label(rs, &s.op)),
            esc(&s.tree_key),
            esc(&s.runs_text()),
            fig_secs(st.median_s, ci, st.n),
            st.cv.map(|c| format!("{}%", sig3(c * 100.0))).unwrap_or_else(|| "—".into())
        ));
    }
    h.push_str("</table>\n</details>\n");
    h
}

/// Provenance: tool, commit, date, machine, kernel, command line per file; the
/// experiment's settings with the runs as they were; every target.
pub fn provenance_items(sources: &[(String, Provenance)]) -> String {
    let mut h = String::new();
    for (file, p) in sources {
        h.push_str(&format!(
            "<li>{}: {} {} built from {} · started {} · {} · kernel {} · command: <code>{}</code></li>",
            esc(file),
            esc(&p.tool),
            esc(&p.version),
            esc(if p.built_from.is_empty() { "an unknown commit" } else { &p.built_from }),
            esc(&p.started_utc),
            esc(&p.machine_line()),
            esc(&p.kernel),
            esc(&p.command_line.join(" "))
        ));
    }
    h
}

fn footer(rs: &ResultSet, sources: &[(String, Provenance)]) -> String {
    let e = &rs.experiment;
    let mut h = String::from("<footer class=\"provenance\"><h2>Provenance</h2>\n<ul>");
    h.push_str(&format!(
        "<li>experiment {}: ops {}, {} (+{} warmup), {}, order {}, caches {}</li>",
        esc(&e.name),
        esc(&e.ops.join(", ")),
        esc(&runs_per_cell(rs)),
        e.warmup,
        esc(&super::table::threads_text(rs)),
        esc(&e.order),
        format!("{:?}", e.caches).to_lowercase()
    ));
    for l in super::table::measured(rs).lines().filter(|l| !l.starts_with("figures:")) {
        h.push_str(&format!("<li>{}</li>", esc(l)));
    }
    for t in &rs.targets {
        let made = t.managed.as_ref().map(|m| format!(", made by {}", m.mkfs_command.join(" "))).unwrap_or_default();
        h.push_str(&format!(
            "<li>target {}: {} · {} on {} ({}) · block {}{}</li>",
            esc(&t.shown()),
            esc(&t.path.display().to_string()),
            esc(&t.fs_type),
            esc(&t.mount_point),
            esc(&t.mount_source),
            fmt_size(t.block_size as f64),
            esc(&made)
        ));
    }
    h.push_str(&provenance_items(sources));
    h.push_str(&format!("<li>report written by manyfiles {}</li>", esc(env!("CARGO_PKG_VERSION"))));
    h.push_str("</ul></footer>\n");
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc4648_vectors() {
        let v = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (i, o) in v {
            assert_eq!(base64(i.as_bytes()), o);
        }
        assert_eq!(esc("<a & 'b'>"), "&lt;a &amp; &#39;b&#39;&gt;");
    }
}
