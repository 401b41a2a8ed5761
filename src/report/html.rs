//! One self-contained HTML report: inline SVG charts, the summary and fitted costs,
//! detections, warnings and the environment. No scripts, no external resources.
//! Opening `report.html#CHART-ID` shows that chart alone (CSS :target), which is how
//! the test screenshots every chart.

use super::chart::{self, Chart};
use super::table::fmt_mean_ci;
use crate::measure::provenance::Provenance;
use crate::results::ResultSet;
use crate::units::{fmt_size, sig3};

/// HTML-escaped text.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

const STYLE: &str = "body,svg text{font-family:'DejaVu Sans',sans-serif}body{margin:2em auto;max-width:960px;color:#222;background:#fff}\
h1{font-size:1.5em}h2{font-size:1.15em;margin-top:1.6em}\
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}td,th{border:1px solid #ccc;padding:.25em .5em;text-align:right}\
td:first-child,th:first-child,td.l{text-align:left}.chart svg{display:block;max-width:100%;height:auto}\
section.c:target{position:fixed;inset:0;z-index:10;background:#fff;margin:0;padding:0}\
section.c:target h2{display:none}section.c:target svg{max-width:none}\
.muted{color:#666;font-size:.85em}";

/// The report for `rs` (possibly several files combined); `sources` are the files
/// it was read from with their provenance.
pub fn render(rs: &ResultSet, sources: &[(String, Provenance)]) -> Result<String, String> {
    let charts = chart::charts(rs);
    let mut h = String::new();
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    // The charts' text was laid out with the bundled font's metrics: embed that font so
    // every browser draws it the same way (and none needs fonts of its own).
    h.push_str(&format!(
        "<title>{}</title><style>@font-face{{font-family:'DejaVu Sans';src:url(data:font/ttf;base64,{})}}{STYLE}</style></head><body>\n",
        esc(&super::table::title(rs)),
        base64(chart::FONT)
    ));
    h.push_str(&format!("<h1>{}</h1>\n", esc(&super::table::title(rs))));
    h.push_str(&format!(
        "<p class=\"muted\">Medians with distribution-free 95% intervals (order statistics, from 6 runs) over {} runs per cell; every chart in this file is inline SVG.</p>\n",
        match rs.experiment.adaptive {
            Some(a) => format!("adaptive ({}–{})", a.min_runs, a.max_runs),
            None => rs.experiment.runs.to_string(),
        }
    ));
    h.push_str("<nav><ul>");
    for c in &charts {
        h.push_str(&format!("<li><a href=\"#{}\">{}</a></li>", c.id, esc(&c.title)));
    }
    h.push_str("</ul></nav>\n");
    for c in &charts {
        h.push_str(&section(c)?);
    }
    h.push_str(&detections(rs));
    h.push_str(&models(rs));
    h.push_str(&summaries(rs));
    h.push_str(&environment(rs, sources));
    h.push_str("</body></html>\n");
    Ok(h)
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

fn section(c: &Chart) -> Result<String, String> {
    let svg = chart::svg(c)?;
    // Drop the XML declaration, if any: inline SVG is plain markup.
    let svg = svg.trim_start_matches(|ch| ch != '<');
    let svg = if svg.starts_with("<?xml") { svg.split_once("?>").map_or(svg, |x| x.1) } else { svg };
    Ok(format!(
        "<section class=\"c\" id=\"{}\"><h2>{}</h2><div class=\"chart\">{}</div></section>\n",
        c.id,
        esc(&c.title),
        svg.trim()
    ))
}

fn detections(rs: &ResultSet) -> String {
    let mut h = String::from("<h2>Detections</h2>\n");
    if rs.detections.is_empty() {
        h.push_str("<p>No knee, crossover, first-run effect, outlier or noisy cell was found.</p>\n");
    } else {
        h.push_str("<ul>");
        for d in &rs.detections {
            h.push_str(&format!("<li>{}</li>", esc(&super::detection_text(rs, d))));
        }
        h.push_str("</ul>\n");
    }
    let other: Vec<&String> = rs.warnings.iter().filter(|w| !rs.detections.iter().any(|d| &d.text() == *w)).collect();
    if !other.is_empty() {
        h.push_str("<h2>Warnings</h2>\n<ul>");
        for w in other {
            h.push_str(&format!("<li>{}</li>", esc(&super::named(rs, w))));
        }
        h.push_str("</ul>\n");
    }
    h
}

fn models(rs: &ResultSet) -> String {
    if rs.models.is_empty() {
        return String::new();
    }
    let mut h = String::from(
        "<h2>Fitted costs</h2>\n<p class=\"muted\">time = a·files + b·bytes + c·dirs + d·Σn² (n files per directory), non-negative least squares on the relative error of each tree's median; ± standard errors with the trees as the unit.</p>\n\
         <table><tr><th>target</th><th>op</th><th>per file</th><th>bandwidth</th><th>per dir</th><th>break-even file size</th><th>R²</th><th>points</th><th>files range</th></tr>\n",
    );
    for m in &rs.models {
        let c = &m.model;
        let dash = || "—".to_string();
        h.push_str(&format!(
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{} … {}</td></tr>\n",
            esc(&super::target_name(rs, &m.target)),
            esc(&m.op),
            fmt_mean_ci(c.per_file_s, Some(c.per_file_se)),
            c.bandwidth_bytes_per_s.map(|b| format!("{} MiB/s", sig3(b / 1048576.0))).unwrap_or_else(dash),
            if c.per_dir_s > 0.0 { fmt_mean_ci(c.per_dir_s, Some(c.per_dir_se)) } else { dash() },
            c.break_even_bytes.map(fmt_size).unwrap_or_else(dash),
            sig3(c.r2),
            c.n,
            m.files_range[0],
            m.files_range[1]
        ));
    }
    h.push_str("</table>\n");
    for l in super::dir_entry_notes(rs) {
        h.push_str(&format!("<p class=\"muted\">{}</p>\n", esc(&l)));
    }
    h
}

fn summaries(rs: &ResultSet) -> String {
    let mut h = String::from(
        "<h2>Measurements</h2>\n<table><tr><th>target</th><th>op</th><th>tree</th><th>n</th><th>median [95% CI]</th><th>mean ± 95% CI</th><th>CV</th></tr>\n",
    );
    for s in &rs.summaries {
        let st = &s.stats;
        h.push_str(&format!(
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            esc(&super::target_name(rs, &s.target)),
            esc(&s.op),
            esc(&s.tree_key),
            st.n,
            esc(&super::table::fmt_headline(st)),
            fmt_mean_ci(st.mean_s, st.ci_half_width()),
            st.cv.map(|c| format!("{}%", sig3(c * 100.0))).unwrap_or_else(|| "—".into())
        ));
    }
    h.push_str("</table>\n");
    h
}

fn environment(rs: &ResultSet, sources: &[(String, Provenance)]) -> String {
    let e = &rs.experiment;
    let mut h = String::from("<h2>Environment</h2>\n<ul>");
    h.push_str(&format!(
        "<li>experiment {}: ops {}, {} runs (+{} warmup), {} threads, order {}, caches {}</li>",
        esc(&e.name),
        esc(&e.ops.join(", ")),
        e.runs,
        e.warmup,
        e.threads,
        esc(&e.order),
        format!("{:?}", e.caches).to_lowercase()
    ));
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
    for (file, p) in sources {
        h.push_str(&format!(
            "<li>{}: {} · started {} · command: <code>{}</code></li>",
            esc(file),
            esc(&p.machine_line()),
            esc(&p.started_utc),
            esc(&p.command_line.join(" "))
        ));
    }
    h.push_str("</ul>\n");
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
