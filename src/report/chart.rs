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

/// Bundled font (DejaVu Sans; license in assets/fonts/LICENSE-DejaVu.txt).
pub static FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");

pub const WIDTH: u32 = 900;
pub const HEIGHT: u32 = 540;

/// What one chart shows, independent of the backend it is drawn on.
#[derive(Debug, Clone)]
pub struct Chart {
    /// HTML anchor and PNG file stem: letters, digits and dashes only.
    pub id: String,
    pub title: String,
    pub kind: Kind,
}

#[derive(Debug, Clone)]
pub enum Kind {
    /// Time against file count on log-log axes, one series per target: means with
    /// 95% CI bars, every run as a dot, and the fitted model as a dashed line.
    LogLog { series: Vec<Series> },
    /// One bar per (target, op) with its 95% CI.
    Bars { bars: Vec<Bar> },
    /// Per-portion cost (µs per file) against files done, one line per target.
    Portions { series: Vec<(String, Vec<(f64, f64)>)> },
}

#[derive(Debug, Clone)]
pub struct Series {
    pub name: String,
    /// (files, mean s, CI low, CI high)
    pub means: Vec<(f64, f64, f64, f64)>,
    /// (files, seconds) of every run.
    pub runs: Vec<(f64, f64)>,
    /// (files, fitted seconds) at the measured trees.
    pub fit: Vec<(f64, f64)>,
}

#[derive(Debug, Clone)]
pub struct Bar {
    pub label: String,
    pub mean: f64,
    pub lo: f64,
    pub hi: f64,
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

fn slug(s: &str) -> String {
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

/// Every chart the data supports, in reading order.
pub fn charts(rs: &ResultSet) -> Vec<Chart> {
    let mut out = Vec::new();
    for op in ops(rs) {
        let mut files: Vec<u64> = rs.summaries.iter().filter(|s| s.op == op).map(|s| s.tree_files).collect();
        files.sort();
        files.dedup();
        if files.len() < 2 {
            continue;
        }
        let series = targets_of(rs, op)
            .into_iter()
            .map(|t| {
                let cells: Vec<_> = rs.summaries.iter().filter(|s| s.op == op && s.target == t).collect();
                let means = cells
                    .iter()
                    .map(|s| {
                        let (m, ci) = s.stats.headline();
                        let [lo, hi] = ci.unwrap_or([m, m]);
                        (s.tree_files as f64, m, lo, hi)
                    })
                    .collect();
                let runs = cells.iter().flat_map(|s| s.raw_s.iter().map(move |&x| (s.tree_files as f64, x))).collect();
                let fit = rs
                    .models
                    .iter()
                    .find(|m| m.op == op && m.target == t)
                    .map(|m| {
                        let mut pts: Vec<(f64, f64)> = rs
                            .measurements
                            .iter()
                            .filter(|x| x.op == op && x.target == t && x.run == 1)
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
        out.push(Chart {
            id: format!("time-vs-files-{}", slug(op)),
            title: format!(
                "{op}: time against file count (log-log), median and its 95% interval, dashed: fitted model"
            ),
            kind: Kind::LogLog { series },
        });
    }
    // Bars at the largest tree: every (target, op).
    if let Some(big) = rs.summaries.iter().max_by_key(|s| s.tree_files) {
        let bars: Vec<Bar> = rs
            .summaries
            .iter()
            .filter(|s| s.tree_key == big.tree_key)
            .map(|s| {
                let (m, ci) = s.stats.headline();
                let [lo, hi] = ci.unwrap_or([m, m]);
                let label = if rs.targets.len() > 1 {
                    format!("{} · {}", s.op, super::target_name(rs, &s.target))
                } else {
                    s.op.clone()
                };
                Bar { label, mean: m, lo: lo.max(0.0), hi }
            })
            .collect();
        if !bars.is_empty() {
            out.push(Chart {
                id: "bars-largest-tree".into(),
                title: format!("{}: mean time per target and op, 95% CI", big.tree_key),
                kind: Kind::Bars { bars },
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

/// The chart as an SVG document (for inlining into HTML).
pub fn svg(chart: &Chart) -> Result<String, String> {
    register_font();
    let mut s = String::new();
    {
        let root = SVGBackend::with_string(&mut s, (WIDTH, HEIGHT)).into_drawing_area();
        draw(chart, &root)?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(s)
}

/// The chart as a PNG file.
pub fn png(chart: &Chart, path: &Path) -> Result<(), String> {
    register_font();
    let root = BitMapBackend::new(path, (WIDTH, HEIGHT)).into_drawing_area();
    draw(chart, &root)?;
    root.present().map_err(|e| format!("{}: {e}", path.display()))
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

fn secs_label(v: f64) -> String {
    crate::units::fmt_secs(v)
}

fn draw<DB: DrawingBackend>(chart: &Chart, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    root.fill(&WHITE).map_err(err)?;
    let title = ("sans-serif", 17).into_font();
    match &chart.kind {
        Kind::LogLog { series } => {
            let xs = log_range(series.iter().flat_map(|s| s.means.iter().map(|m| m.0)));
            let ys = log_range(series.iter().flat_map(|s| {
                s.means
                    .iter()
                    .flat_map(|m| [m.1, m.2, m.3])
                    .chain(s.runs.iter().map(|r| r.1))
                    .chain(s.fit.iter().map(|f| f.1))
            }));
            let mut c = ChartBuilder::on(root)
                .caption(&chart.title, title)
                .margin(14)
                .x_label_area_size(44)
                .y_label_area_size(78)
                .build_cartesian_2d((xs.0..xs.1).log_scale(), (ys.0..ys.1).log_scale())
                .map_err(err)?;
            c.configure_mesh()
                .x_desc("files")
                .y_desc("time")
                .y_label_formatter(&|v| secs_label(*v))
                .x_label_formatter(&|v| sig3(*v))
                .label_style(("sans-serif", 13))
                .draw()
                .map_err(err)?;
            for (i, s) in series.iter().enumerate() {
                let col = COLORS[i % COLORS.len()];
                c.draw_series(LineSeries::new(s.means.iter().map(|m| (m.0, m.1)), col.stroke_width(2)))
                    .map_err(err)?
                    .label(s.name.clone())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], col.stroke_width(2)));
                c.draw_series(
                    s.means.iter().map(|m| ErrorBar::new_vertical(m.0, m.2, m.1, m.3, col.stroke_width(1), 8)),
                )
                .map_err(err)?;
                c.draw_series(s.runs.iter().map(|r| Circle::new(*r, 2, col.mix(0.5).filled()))).map_err(err)?;
                if s.fit.len() >= 2 {
                    c.draw_series(DashedLineSeries::new(s.fit.iter().copied(), 6, 4, col.mix(0.8).stroke_width(1)))
                        .map_err(err)?;
                }
            }
            c.configure_series_labels()
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK.mix(0.3))
                .label_font(("sans-serif", 13))
                .position(SeriesLabelPosition::UpperLeft)
                .draw()
                .map_err(err)?;
        }
        Kind::Bars { bars } => {
            let top = bars.iter().map(|b| b.hi.max(b.mean)).fold(0.0f64, f64::max).max(1e-9) * 1.15;
            let n = bars.len();
            let labels: Vec<String> = bars.iter().map(|b| b.label.clone()).collect();
            let mut c = ChartBuilder::on(root)
                .caption(&chart.title, title)
                .margin(14)
                .x_label_area_size(44)
                .y_label_area_size(78)
                .build_cartesian_2d(-0.5f64..n as f64 - 0.5, 0.0..top)
                .map_err(err)?;
            c.configure_mesh()
                .disable_x_mesh()
                .x_labels(n.max(1))
                .x_label_formatter(&|v| {
                    let i = v.round();
                    if (v - i).abs() < 0.01 && i >= 0.0 {
                        labels.get(i as usize).cloned().unwrap_or_default()
                    } else {
                        String::new()
                    }
                })
                .y_desc("time")
                .y_label_formatter(&|v| secs_label(*v))
                .label_style(("sans-serif", 13))
                .draw()
                .map_err(err)?;
            for (i, b) in bars.iter().enumerate() {
                let x = i as f64;
                let col = COLORS[i % COLORS.len()];
                c.draw_series([Rectangle::new([(x - 0.35, 0.0), (x + 0.35, b.mean)], col.mix(0.75).filled())])
                    .map_err(err)?;
                c.draw_series([ErrorBar::new_vertical(x, b.lo, b.mean, b.hi, BLACK.stroke_width(1), 12)])
                    .map_err(err)?;
            }
        }
        Kind::Portions { series } => {
            let xmax = series.iter().flat_map(|s| s.1.iter().map(|p| p.0)).fold(1.0f64, f64::max);
            let ymax = series.iter().flat_map(|s| s.1.iter().map(|p| p.1)).fold(0.0f64, f64::max).max(1e-9) * 1.15;
            let mut c = ChartBuilder::on(root)
                .caption(&chart.title, title)
                .margin(14)
                .x_label_area_size(44)
                .y_label_area_size(78)
                .build_cartesian_2d(0.0..xmax * 1.02, 0.0..ymax)
                .map_err(err)?;
            c.configure_mesh()
                .x_desc("files done")
                .y_desc("µs per file")
                .x_label_formatter(&|v| sig3(*v))
                .y_label_formatter(&|v| sig3(*v))
                .label_style(("sans-serif", 13))
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
            c.configure_series_labels()
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK.mix(0.3))
                .label_font(("sans-serif", 13))
                .position(SeriesLabelPosition::UpperRight)
                .draw()
                .map_err(err)?;
        }
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
        };
        let s = svg(&c).unwrap();
        assert!(s.starts_with("<svg") && s.contains("create: time") && s.contains("ext4"), "{}", &s[..200]);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.png");
        png(&c, &p).unwrap();
        let bytes = std::fs::read(&p).unwrap();
        assert_eq!(&bytes[1..4], b"PNG");
    }
}
