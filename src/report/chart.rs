//! Charts of a ResultSet, drawn with plotters into an SVG string (for the HTML report)
//! or a PNG file. Text is laid out and rasterised with ab_glyph from a bundled font
//! (DejaVu Sans), so nothing depends on the fonts or fontconfig of the machine.

use crate::analysis::detect::median_per_file;
use crate::results::ResultSet;
use crate::units::sig3;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;
use std::sync::Once;
use ticks::{count_label, decade_ticks, ratio_label, ratio_ticks, secs_label};

mod ticks;

/// Bundled font (DejaVu Sans; license in assets/fonts/LICENSE-DejaVu.txt).
pub static FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");

/// Drawn at 1,200 × 660 px; the HTML page scales the SVG to its own width (up to
/// 1,300 px), so text stays at about its drawn size in a 1,400 px window.
pub const WIDTH: u32 = 1200;
pub const HEIGHT: u32 = 660;
/// Font sizes (plotters' units: an SVG's font-size is about 0.8 of them) of axis labels
/// and legends, and of titles: 16 draws about 13 px text at 1,200 px.
const LABEL: u32 = 16;
const TITLE: u32 = 20;

/// What one chart shows, independent of the backend it is drawn on.
#[derive(Debug, Clone)]
pub struct Chart {
    /// HTML anchor and PNG file stem: letters, digits and dashes only.
    pub id: String,
    pub title: String,
    pub kind: Kind,
    /// What the series' colours stand for, in colour order (targets, by their labels;
    /// pack: routes; compare: targets): the HTML page draws this legend beside the chart.
    pub legend: Vec<String>,
    /// Said under the chart: which marks have no interval and why, what a line means.
    pub notes: Vec<String>,
}

#[derive(Debug, Clone)]
pub enum Kind {
    /// Time against file count on log-log axes, one series per legend entry: medians
    /// with their 95% interval bars, every run as a dot, the fitted model dashed.
    LogLog { series: Vec<Series> },
    /// One row per figure (label on the left, so long labels never overlap): the
    /// median as a dot, its 95% interval as a whisker, coloured by legend entry.
    Dots { dots: Vec<Dot>, axis: Axis, reference: Option<f64> },
    /// Per-portion cost (µs per file) against files done, one line per target.
    Portions { series: Vec<(String, Vec<(f64, f64)>)> },
}

/// What a dot plot's horizontal axis measures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Axis {
    Seconds,
    /// Predicted seconds with prediction intervals (predict).
    Predicted,
    /// B/A (compare): a log axis around 1.
    Ratio,
}

#[derive(Debug, Clone)]
pub struct Series {
    pub name: String,
    /// (files, median s, interval low, interval high); low = high = median: no interval.
    pub means: Vec<(f64, f64, f64, f64)>,
    /// (files, seconds) of every run.
    pub runs: Vec<(f64, f64)>,
    /// (files, fitted seconds) at the measured trees.
    pub fit: Vec<(f64, f64)>,
}

#[derive(Debug, Clone)]
pub struct Dot {
    pub label: String,
    /// Index into the chart's legend (its colour).
    pub group: usize,
    pub value: f64,
    /// The 95% interval, when there is one (the chart's notes say why not).
    pub ci: Option<[f64; 2]>,
}

/// Colours that stay apart on white and in grey print.
const COLORS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(140, 86, 75),
    RGBColor(23, 190, 207),
    RGBColor(127, 127, 127),
];

/// Legend entry `i`'s colour as CSS (`#1f77b4`), for the HTML legend.
pub fn css_color(i: usize) -> String {
    let c = COLORS[i % COLORS.len()];
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

pub fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_string()
}

fn ops(rs: &ResultSet) -> Vec<&str> {
    let mut v: Vec<&str> = Vec::new();
    for s in &rs.summaries {
        if !v.contains(&s.op.as_str()) {
            v.push(&s.op);
        }
    }
    v
}

fn targets_of<'a>(rs: &'a ResultSet, op: &str) -> Vec<&'a str> {
    let mut v: Vec<&str> = Vec::new();
    for s in rs.summaries.iter().filter(|s| s.op == op) {
        if !v.contains(&s.target.as_str()) {
            v.push(&s.target);
        }
    }
    v
}

/// Every target id in the summaries, in first-appearance order (the legend's order).
fn all_targets(rs: &ResultSet) -> Vec<&str> {
    let mut v: Vec<&str> = Vec::new();
    for s in &rs.summaries {
        if !v.contains(&s.target.as_str()) {
            v.push(&s.target);
        }
    }
    v
}

/// The note a chart carries when some of its figures have no interval: how many, and
/// why (the reasons `stats::printable_interval` gives).
pub fn missing_interval_note(rows: &[&crate::results::SummaryRow]) -> Option<String> {
    let why: Vec<String> = rows
        .iter()
        .filter_map(|s| {
            crate::analysis::stats::printable_interval(s.stats.median_s, s.stats.median_ci95_s, s.stats.n).err()
        })
        .collect();
    if why.is_empty() {
        return None;
    }
    let mut kinds: Vec<&str> = why.iter().map(|w| w.split(", n=").next().unwrap_or(w)).collect();
    kinds.sort();
    kinds.dedup();
    let ns: Vec<usize> = rows.iter().map(|s| s.stats.n).collect();
    let (lo, hi) = (ns.iter().min().copied().unwrap_or(0), ns.iter().max().copied().unwrap_or(0));
    let n = if lo == hi { lo.to_string() } else { format!("{lo}–{hi}") };
    Some(format!(
        "no interval bar on {} of {} medians: {} (n = {n} runs per cell; the 95% interval of a median needs 6 in 3 blocks)",
        why.len(),
        rows.len(),
        kinds.join("; ")
    ))
}

/// A summary's median and its printable interval.
fn headline(s: &crate::results::SummaryRow) -> (f64, Option<[f64; 2]>) {
    let st = &s.stats;
    (st.median_s, crate::analysis::stats::printable_interval(st.median_s, st.median_ci95_s, st.n).ok())
}

/// "side rungs (16 MiB in 1 and 256 files) separate the per-byte cost from a per-run
/// constant; side rungs (32 MiB in one folder of 2048 and 4096 files) resolve the
/// directory-size cost d"; None without side rungs. A side rung is a folder rung when it is flat and the
/// rungs are not (`experiment::ladder`'s flat side rungs).
pub fn side_rungs_note(rs: &ResultSet) -> Option<String> {
    use crate::tree::Layout;
    let layout = |key: &str| rs.measurements.iter().find(|m| m.tree_key == key).map(|m| &m.tree.layout);
    let side = |k: &String| rs.experiment.side_trees.contains(k);
    let main_flat =
        rs.summaries.iter().filter(|s| !side(&s.tree_key)).any(|s| layout(&s.tree_key) == Some(&Layout::Flat));
    let folder = |k: &String| !main_flat && layout(k) == Some(&Layout::Flat);
    let rows = |of_folders: bool| -> Vec<&crate::results::SummaryRow> {
        let mut v: Vec<&crate::results::SummaryRow> = Vec::new();
        for k in rs.experiment.side_trees.iter().filter(|k| folder(k) == of_folders) {
            v.extend(rs.summaries.iter().find(|s| &s.tree_key == k));
        }
        v
    };
    let part = |v: &[&crate::results::SummaryRow], folders: bool, what: &str| {
        let first = v.first()?;
        let mut counts: Vec<String> = v.iter().map(|s| s.tree_files.to_string()).collect();
        let last = counts.pop()?;
        let list = if counts.is_empty() { last } else { format!("{} and {last}", counts.join(", ")) };
        let size = crate::units::fmt_size(first.tree_bytes as f64);
        let place = if folders { "in one folder of" } else { "in" };
        Some(format!("side rungs ({size} {place} {list} files) {what}"))
    };
    let parts: Vec<String> = [
        part(&rows(false), false, "separate the per-byte cost from a per-run constant"),
        part(&rows(true), true, "resolve the directory-size cost d"),
    ]
    .into_iter()
    .flatten()
    .collect();
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// The charts of an experiment without charts of its own, in reading order: one per op
/// (`View::charts` picks them or the experiment's own).
pub fn charts(rs: &ResultSet) -> Vec<Chart> {
    let mut out = Vec::new();
    let legend_ids = all_targets(rs);
    let legend: Vec<String> = legend_ids.iter().map(|t| super::target_name(rs, t)).collect();
    // A ladder's side rungs (a second total) would zigzag the rungs' line: they stay in
    // the table, and the note says so.
    let side = |key: &str| rs.experiment.side_trees.iter().any(|k| k == key);
    let side_note = side_rungs_note(rs).map(|n| format!("{n}: in the table, not on these lines"));
    for op in ops(rs) {
        let mut files: Vec<u64> =
            rs.summaries.iter().filter(|s| s.op == op && !side(&s.tree_key)).map(|s| s.tree_files).collect();
        files.sort();
        files.dedup();
        if files.len() < 2 {
            continue;
        }
        let rows: Vec<&crate::results::SummaryRow> = rs.summaries.iter().filter(|s| s.op == op).collect();
        let series = legend_ids
            .iter()
            .map(|&t| {
                let cells: Vec<_> =
                    rs.summaries.iter().filter(|s| s.op == op && s.target == t && !side(&s.tree_key)).collect();
                let means = cells
                    .iter()
                    .map(|s| {
                        let (m, ci) = headline(s);
                        let [lo, hi] = ci.unwrap_or([m, m]);
                        (s.tree_files as f64, m, lo, hi)
                    })
                    .collect();
                let runs = cells.iter().flat_map(|s| s.raw_s.iter().map(move |&x| (s.tree_files as f64, x))).collect();
                let fit = rs
                    .models
                    .iter()
                    .find(|m| m.op == op && m.target == t && m.usable()) // no line from a fit that is no answer
                    .map(|m| {
                        let mut pts: Vec<(f64, f64)> = rs
                            .measurements
                            .iter()
                            .filter(|x| x.op == op && x.target == t && x.run == 1 && !side(&x.tree.key()))
                            .map(|x| {
                                let sq = crate::analysis::model::dir_sq_of(crate::tree::layout::files_per_dir(&x.tree));
                                let p =
                                    m.model.predict(x.tree_files as f64, x.tree_bytes as f64, x.tree_dirs as f64, sq);
                                (x.tree_files as f64, p.seconds)
                            })
                            .collect();
                        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                        pts.dedup_by(|a, b| a.0 == b.0);
                        pts
                    })
                    .unwrap_or_default();
                Series { name: super::target_name(rs, t), means, runs, fit }
            })
            .collect();
        let mut notes: Vec<String> = missing_interval_note(&rows).into_iter().collect();
        notes.push("dots: every run; bars: the median's 95% interval; dashed: the fitted cost model".into());
        notes.extend(side_note.clone());
        out.push(Chart {
            id: format!("time-vs-files-{}", slug(op)),
            title: format!("{op}: time against file count (log-log), median and its 95% interval"),
            kind: Kind::LogLog { series },
            legend: legend.clone(),
            notes,
        });
    }
    // A dot per (op, target) at the largest tree.
    if let Some(big) = rs.summaries.iter().max_by_key(|s| s.tree_files) {
        // Every tree of the largest file count (clusters: one per file size).
        let rows: Vec<&crate::results::SummaryRow> =
            rs.summaries.iter().filter(|s| s.tree_files == big.tree_files).collect();
        let trees = rows.iter().any(|s| s.tree_key != big.tree_key);
        let dots: Vec<Dot> = rows
            .iter()
            .map(|s| {
                let (m, ci) = headline(s);
                let group = legend_ids.iter().position(|t| *t == s.target).unwrap_or(0);
                let mut label = if legend.len() > 1 { format!("{} · {}", s.op, legend[group]) } else { s.op.clone() };
                if trees {
                    label = format!("{} · {label}", s.tree_key);
                }
                Dot { label, group, value: m, ci }
            })
            .collect();
        if !dots.is_empty() {
            out.push(Chart {
                id: "bars-largest-tree".into(),
                title: if trees {
                    format!("{} files: median time per tree, op and target, 95% interval", big.tree_files)
                } else {
                    format!("{}: median time per op and target, 95% interval", big.tree_key)
                },
                kind: Kind::Dots { dots, axis: Axis::Seconds, reference: None },
                legend: legend.clone(),
                notes: missing_interval_note(&rows).into_iter().collect(),
            });
        }
    }
    // Per-portion series where a tree has at least 3 whole portions.
    let portion = rs.experiment.portion_files;
    for op in ops(rs) {
        let series: Vec<(String, Vec<(f64, f64)>)> = targets_of(rs, op)
            .into_iter()
            .filter_map(|t| {
                let big = rs.summaries.iter().filter(|s| s.op == op && s.target == t).max_by_key(|s| s.tree_files)?;
                let runs: Vec<(&[crate::measure::Portion], u64)> = rs
                    .measurements
                    .iter()
                    .filter(|m| m.op == op && m.target == t && m.tree_key == big.tree_key && m.result.complete())
                    .map(|m| (m.result.portions.as_slice(), m.tree_files))
                    .collect();
                // The experiment's portion size, or (files from several experiments, or
                // portions closed by the clock) as many as the runs recorded.
                let recorded = runs.iter().map(|r| r.0.len()).min().unwrap_or(0) as u64;
                if recorded < 3 {
                    return None;
                }
                let portion = if big.tree_files / portion.max(1) >= 3 { portion } else { big.tree_files / recorded };
                let per = median_per_file(&runs, portion.max(1));
                (per.len() >= 3).then(|| {
                    (
                        super::target_name(rs, t),
                        per.iter().enumerate().map(|(k, s)| (((k + 1) as u64 * portion) as f64, s * 1e6)).collect(),
                    )
                })
            })
            .collect();
        if !series.is_empty() {
            out.push(Chart {
                id: format!("portions-{}", slug(op)),
                title: format!("{op}: µs per file, portion by portion (median of runs, {portion} files per portion)"),
                legend: series.iter().map(|s| s.0.clone()).collect(),
                notes: vec![
                    "each point: the median over the runs of that portion's time per file (no interval drawn: the table holds the whole phase's interval)".into(),
                ],
                kind: Kind::Portions { series },
            });
        }
    }
    out
}

fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The bundled file is a valid TrueType font; a failure would show as missing text.
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT);
    });
}

/// Pixel size of the chart: a dot plot grows with its rows (one label line each).
pub fn size(chart: &Chart) -> (u32, u32) {
    match &chart.kind {
        Kind::Dots { dots, .. } => (WIDTH, (124 + 28 * dots.len() as u32).max(220)),
        _ => (WIDTH, HEIGHT),
    }
}

/// The chart as an SVG document (for inlining into HTML, which draws the legend
/// beside it: none inside).
pub fn svg(chart: &Chart) -> Result<String, String> {
    register_font();
    let mut s = String::new();
    {
        let root = SVGBackend::with_string(&mut s, size(chart)).into_drawing_area();
        draw(chart, &root, false)?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(s)
}

/// The chart as a PNG file, its legend drawn inside.
pub fn png(chart: &Chart, path: &Path) -> Result<(), String> {
    register_font();
    {
        let root = BitMapBackend::new(path, size(chart)).into_drawing_area();
        draw(chart, &root, true)?;
        root.present().map_err(|e| format!("{}: {e}", path.display()))?;
    }
    // The mark `--png` looks for before it replaces a file: a tEXt chunk after IHDR.
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    std::fs::write(path, with_software_chunk(&bytes)?).map_err(|e| format!("{}: {e}", path.display()))
}

/// `png` with a `tEXt` chunk (`Software` = manyfiles) after its IHDR chunk (always first,
/// 13 bytes of data: it ends at byte 33).
fn with_software_chunk(png: &[u8]) -> Result<Vec<u8>, String> {
    const IHDR_END: usize = 8 + 4 + 4 + 13 + 4;
    if png.len() < IHDR_END || &png[12..16] != b"IHDR" {
        return Err("not a PNG with an IHDR chunk".into());
    }
    let data = crate::fs::output::PNG_SOFTWARE;
    let mut chunk = Vec::with_capacity(12 + data.len());
    chunk.extend_from_slice(&(data.len() as u32).to_be_bytes());
    chunk.extend_from_slice(b"tEXt");
    chunk.extend_from_slice(data);
    let crc = crc32(&chunk[4..]);
    chunk.extend_from_slice(&crc.to_be_bytes());
    let mut out = Vec::with_capacity(png.len() + chunk.len());
    out.extend_from_slice(&png[..IHDR_END]);
    out.extend_from_slice(&chunk);
    out.extend_from_slice(&png[IHDR_END..]);
    Ok(out)
}

/// CRC-32 (ISO-HDLC, as PNG chunks carry it), bitwise: a few dozen bytes per chart.
fn crc32(bytes: &[u8]) -> u32 {
    let mut c = 0xFFFF_FFFFu32;
    for &b in bytes {
        c ^= b as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 { 0xEDB8_8320 ^ (c >> 1) } else { c >> 1 };
        }
    }
    !c
}

/// Axis range covering `vals` with a margin, on a log scale (all values > 0).
fn log_range(vals: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) =
        vals.filter(|v| *v > 0.0 && v.is_finite()).fold((f64::INFINITY, 0.0f64), |(l, h), v| (l.min(v), h.max(v)));
    if !lo.is_finite() {
        return (0.1, 10.0);
    }
    (lo / 1.6, hi * 1.6)
}

/// Width in pixels the left label area needs for `labels` at 13 px (DejaVu Sans
/// averages about 7.6 px per character at that size; LABEL scales it), within [80, 520].
fn label_width(labels: impl Iterator<Item = usize>) -> u32 {
    let chars = labels.max().unwrap_or(0) as f64;
    (chars * 7.6 * LABEL as f64 / 13.0 + 16.0).clamp(80.0, 520.0) as u32
}

/// A label cut to what fits in `max` characters (the table beside the chart has it whole).
fn cut(label: &str, max: usize) -> String {
    if label.chars().count() <= max {
        label.to_string()
    } else {
        let mut s: String = label.chars().take(max.saturating_sub(1)).collect();
        s.push('…');
        s
    }
}

/// Draw `chart` on `root` (`legend`: a legend box for charts with several series).
fn draw<DB: DrawingBackend>(chart: &Chart, root: &DrawingArea<DB, Shift>, legend: bool) -> Result<(), String> {
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    match &chart.kind {
        Kind::LogLog { series } => draw_loglog(&chart.title, series, root, legend),
        Kind::Dots { dots, axis, reference } => draw_dots(&chart.title, dots, *axis, *reference, root),
        Kind::Portions { series } => draw_portions(&chart.title, series, root, legend),
    }
}

/// Time against file count on log-log axes ([`Kind::LogLog`]).
fn draw_loglog<DB: DrawingBackend>(
    caption: &str,
    series: &[Series],
    root: &DrawingArea<DB, Shift>,
    legend: bool,
) -> Result<(), String> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let title = ("sans-serif", TITLE).into_font();
    let xs = log_range(series.iter().flat_map(|s| s.means.iter().map(|m| m.0)));
    let ys = log_range(series.iter().flat_map(|s| {
        s.means.iter().flat_map(|m| [m.1, m.2, m.3]).chain(s.runs.iter().map(|r| r.1)).chain(s.fit.iter().map(|f| f.1))
    }));
    let mut c = ChartBuilder::on(root)
        .caption(caption, title)
        .margin(14)
        .margin_right(34)
        .x_label_area_size(52)
        .y_label_area_size(92)
        .build_cartesian_2d(
            (xs.0..xs.1).log_scale().with_key_points(decade_ticks(xs.0, xs.1)),
            (ys.0..ys.1).log_scale().with_key_points(decade_ticks(ys.0, ys.1)),
        )
        .map_err(err)?;
    c.configure_mesh()
        .x_desc("files (count)")
        .y_desc("time (median, 95% interval)")
        .y_label_formatter(&|v| secs_label(*v))
        .x_label_formatter(&|v| count_label(*v))
        .label_style(("sans-serif", LABEL))
        .draw()
        .map_err(err)?;
    for (i, s) in series.iter().enumerate() {
        let col = COLORS[i % COLORS.len()];
        c.draw_series(LineSeries::new(s.means.iter().map(|m| (m.0, m.1)), col.stroke_width(2)))
            .map_err(err)?
            .label(s.name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], col.stroke_width(2)));
        c.draw_series(
            s.means
                .iter()
                .filter(|m| m.3 > m.2)
                .map(|m| ErrorBar::new_vertical(m.0, m.2, m.1, m.3, col.stroke_width(2), 10)),
        )
        .map_err(err)?;
        c.draw_series(s.runs.iter().map(|r| Circle::new(*r, 2, col.mix(0.5).filled()))).map_err(err)?;
        if s.fit.len() >= 2 {
            c.draw_series(DashedLineSeries::new(s.fit.iter().copied(), 6, 4, col.mix(0.8).stroke_width(1)))
                .map_err(err)?;
        }
    }
    if legend {
        c.configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.3))
            .label_font(("sans-serif", LABEL))
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
            .map_err(err)?;
    }
    Ok(())
}

/// One row per figure, the median as a dot with its interval ([`Kind::Dots`]).
fn draw_dots<DB: DrawingBackend>(
    caption: &str,
    dots: &[Dot],
    axis: Axis,
    reference: Option<f64>,
    root: &DrawingArea<DB, Shift>,
) -> Result<(), String> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let title = ("sans-serif", TITLE).into_font();
    let (axis, reference) = (&axis, &reference);
    let n = dots.len();
    let labels: Vec<String> = dots.iter().map(|d| cut(&d.label, 56)).collect();
    let vals = || dots.iter().flat_map(|d| [d.value].into_iter().chain(d.ci.into_iter().flatten()));
    let (lo, hi) = log_range(vals().chain(*reference));
    // A log axis when the figures span more than 20×, or for ratios.
    let log = *axis == Axis::Ratio || hi / lo > 20.0 * 1.6 * 1.6;
    let x_desc = match axis {
        Axis::Seconds => "time (median, 95% interval)",
        Axis::Predicted => "predicted time (95% prediction interval)",
        Axis::Ratio => "ratio B/A (95% interval; 1 = no change)",
    };
    let fmt = move |v: &f64| if *axis == Axis::Ratio { ratio_label(*v) } else { secs_label(*v) };
    let ylab = |v: &f64| {
        // Row i sits at y = n − 1 − i (the first row on top).
        let i = n as f64 - 1.0 - v.round();
        if (v - v.round()).abs() < 0.01 && i >= 0.0 {
            labels.get(i as usize).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    let left = label_width(labels.iter().map(|l| l.chars().count()));
    let y_range = -0.6f64..n as f64 - 0.4;
    macro_rules! body {
        ($c:expr) => {{
            let mut c = $c;
            c.configure_mesh()
                .disable_y_mesh()
                .y_labels(n.max(1))
                .y_label_formatter(&ylab)
                .x_labels(6)
                .x_desc(x_desc)
                .x_label_formatter(&fmt)
                .label_style(("sans-serif", LABEL))
                .draw()
                .map_err(err)?;
            if let Some(r) = reference {
                c.draw_series([PathElement::new(vec![(*r, -0.6), (*r, n as f64 - 0.4)], BLACK.stroke_width(1))])
                    .map_err(err)?;
            }
            for (i, d) in dots.iter().enumerate() {
                let y = (n - 1 - i) as f64;
                let col = COLORS[d.group % COLORS.len()];
                if let Some([a, b]) = d.ci {
                    c.draw_series([ErrorBar::new_horizontal(y, a, d.value, b, col.stroke_width(2), 10)])
                        .map_err(err)?;
                }
                c.draw_series([Circle::new((d.value, y), 5, col.filled())]).map_err(err)?;
            }
        }};
    }
    let mut b = ChartBuilder::on(root);
    b.caption(caption, title).margin(14).margin_right(34).x_label_area_size(52).y_label_area_size(left);
    if *axis == Axis::Ratio {
        // plotters' log axis puts keys at powers of ten only: around 1 that is
        // the 1× tick alone, so the ratios get ticks of their own.
        let keys = ratio_ticks(lo, hi);
        body!(b.build_cartesian_2d((lo..hi).log_scale().with_key_points(keys), y_range).map_err(err)?);
    } else if log {
        body!(b.build_cartesian_2d((lo..hi).log_scale().with_key_points(decade_ticks(lo, hi)), y_range).map_err(err)?);
    } else {
        body!(b.build_cartesian_2d(0.0..hi / 1.6 * 1.1, y_range).map_err(err)?);
    }
    Ok(())
}

/// Per-portion cost against files done, one line per target ([`Kind::Portions`]).
fn draw_portions<DB: DrawingBackend>(
    caption: &str,
    series: &[(String, Vec<(f64, f64)>)],
    root: &DrawingArea<DB, Shift>,
    legend: bool,
) -> Result<(), String> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let title = ("sans-serif", TITLE).into_font();
    let xmax = series.iter().flat_map(|s| s.1.iter().map(|p| p.0)).fold(1.0f64, f64::max);
    let ymax = series.iter().flat_map(|s| s.1.iter().map(|p| p.1)).fold(0.0f64, f64::max).max(1e-9) * 1.15;
    let mut c = ChartBuilder::on(root)
        .caption(caption, title)
        .margin(14)
        .margin_right(34)
        .x_label_area_size(52)
        .y_label_area_size(92)
        .build_cartesian_2d(0.0..xmax * 1.02, 0.0..ymax)
        .map_err(err)?;
    c.configure_mesh()
        .x_desc("files done (count)")
        .y_desc("µs per file (median of runs)")
        .x_label_formatter(&|v| count_label(*v))
        .y_label_formatter(&|v| sig3(*v))
        .label_style(("sans-serif", LABEL))
        .draw()
        .map_err(err)?;
    for (i, (name, pts)) in series.iter().enumerate() {
        let col = COLORS[i % COLORS.len()];
        c.draw_series(LineSeries::new(pts.iter().copied(), col.stroke_width(2)))
            .map_err(err)?
            .label(name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], col.stroke_width(2)));
        c.draw_series(pts.iter().map(|p| Circle::new(*p, 3, col.filled()))).map_err(err)?;
    }
    if legend {
        c.configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.3))
            .label_font(("sans-serif", LABEL))
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(err)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_anchor_safe() {
        assert_eq!(slug("bigfile-write"), "bigfile-write");
        assert_eq!(slug("n=16 size=64KiB"), "n-16-size-64kib");
    }

    #[test]
    fn draws_svg_and_png_with_the_bundled_font() {
        let c = Chart {
            id: "t".into(),
            title: "create: time".into(),
            kind: Kind::LogLog {
                series: vec![Series {
                    name: "ext4".into(),
                    means: vec![(1.0, 0.1, 0.09, 0.11), (1000.0, 2.0, 1.8, 2.2)],
                    runs: vec![(1.0, 0.1), (1000.0, 2.0)],
                    fit: vec![(1.0, 0.1), (1000.0, 2.0)],
                }],
            },
            legend: vec!["ext4".into()],
            notes: Vec::new(),
        };
        let s = svg(&c).unwrap();
        assert!(s.starts_with("<svg") && s.contains("create: time"), "{}", &s[..200]);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.png");
        png(&c, &p).unwrap();
        let bytes = std::fs::read(&p).unwrap();
        assert_eq!(&bytes[1..4], b"PNG");
        assert!(crate::fs::output::looks_own(&bytes), "no Software chunk");
        // the chunk's CRC is PNG's (IEND's is the known AE426082)
        assert_eq!(crc32(b"IEND"), 0xAE42_6082);
        assert_eq!(&bytes[bytes.len() - 4..], &0xAE42_6082u32.to_be_bytes());
    }
}
