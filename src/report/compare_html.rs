//! `manyfiles compare A B --html FILE`: the comparison as a page in the report's frame:
//! the ratio table (A and B as medians with their 95% intervals, B/A with its interval
//! and the verdict it gives), a forest plot of the ratios with their intervals and the
//! line at 1, and both files' provenance.

use super::chart::{Axis, Chart, Dot, Kind};
use super::html::{chart_section, esc, fig_secs, head, provenance_items};
use crate::analysis::stats::printable_interval;
use crate::results::ResultSet;
use crate::results::compare::{ALPHA, Comparison, Verdict};
use crate::units::sig3;

/// The target pair of a comparison as the page names it (`ext4@ram`, or `A → B`).
fn pair(c: &Comparison, a: &ResultSet, b: &ResultSet) -> String {
    let (ta, tb) = (super::target_name(a, &c.target_a), super::target_name(b, &c.target_b));
    if ta == tb { ta } else { format!("{ta} → {tb}") }
}

/// One side's median as a table cell, with its interval from that file's summary.
fn side(rs: &ResultSet, target: &str, c: &Comparison) -> String {
    match rs.summaries.iter().find(|s| s.target == target && s.op == c.op && s.tree_key == c.tree_key) {
        Some(s) => {
            let st = &s.stats;
            fig_secs(st.median_s, printable_interval(st.median_s, st.median_ci95_s, st.n).ok(), st.n)
        }
        None => fig_secs(f64::NAN, None, 0),
    }
}

/// The page. `names`: how the two files are called (their paths).
pub fn render(
    cs: &[Comparison],
    a: &ResultSet,
    b: &ResultSet,
    names: (&str, &str),
    equivalence_pct: Option<f64>,
) -> Result<String, String> {
    let mut legend: Vec<String> = Vec::new();
    for c in cs {
        let p = pair(c, a, b);
        if !legend.contains(&p) {
            legend.push(p);
        }
    }
    let mut labels: Vec<String> = a.targets.iter().map(|t| t.shown()).collect();
    for t in &b.targets {
        if !labels.contains(&t.shown()) {
            labels.push(t.shown());
        }
    }
    let mut h = head(&format!("manyfiles compare: B = {} against A = {}", names.1, names.0), &labels);
    h.push_str(&format!(
        "<p class=\"muted\">B/A above 1: B is slower. With 6 runs or more on both sides: ratio of the medians, its 95% interval from the medians' \
         intervals (within and between blocks of runs) combined on a log scale; with fewer: ratio of the means, its interval by the delta method on its logarithm \
         (the basis column says which). The verdict follows the interval: slower/faster exactly when it excludes 1.{}</p>\n",
        equivalence_pct.map(|p| format!(" \"same within the margin\": the whole interval lies within ±{p}%.")).unwrap_or_default()
    ));
    h.push_str("<h2 id=\"ratios\">Ratios</h2>\n<table class=\"ratios\"><tr><th>op</th><th>tree</th><th>target</th><th>A: median [95%]</th><th>B: median [95%]</th><th>basis</th><th>B/A [95% interval]</th><th>verdict</th></tr>\n");
    for c in cs {
        let ratio = match c.ratio_ci95 {
            Some([lo, hi]) => format!(
                "<td class=\"fig\" data-ci=\"{lo:e},{hi:e}\">{} <span class=\"ci\">[{} – {}]</span></td>",
                sig3(c.ratio),
                sig3(lo),
                sig3(hi)
            ),
            None => format!(
                "<td class=\"fig\" data-no-ci=\"too few runs to tell\">{} <span class=\"why\">(too few runs for an interval, n={}/{})</span></td>",
                sig3(c.ratio),
                c.n_a,
                c.n_b
            ),
        };
        let verdict = match c.verdict {
            Verdict::Equivalent => format!("same within ±{}%", equivalence_pct.unwrap_or(0.0)),
            v => v.as_str().to_string(),
        };
        h.push_str(&format!(
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td>{}{}<td>{} (n={}/{})</td>{ratio}<td class=\"l\" data-verdict=\"{}\">{}</td></tr>\n",
            esc(&c.op),
            esc(&c.tree_key),
            esc(&pair(c, a, b)),
            side(a, &c.target_a, c),
            side(b, &c.target_b, c),
            c.basis,
            c.n_a,
            c.n_b,
            c.verdict.as_str(),
            esc(&verdict)
        ));
    }
    let differ = cs.iter().filter(|c| matches!(c.verdict, Verdict::Slower | Verdict::Faster)).count();
    h.push_str(&format!(
        "</table>\n<p class=\"muted\">Each verdict is per cell at the 95% level: {differ} of {} cells differ, and about {} would by chance alone with no real difference anywhere.</p>\n",
        cs.len(),
        sig3(cs.len() as f64 * ALPHA)
    ));
    let many = legend.len() > 1;
    let dots: Vec<Dot> = cs
        .iter()
        .map(|c| {
            let p = pair(c, a, b);
            let group = legend.iter().position(|l| *l == p).unwrap_or(0);
            let label =
                if many { format!("{} · {} · {p}", c.op, c.tree_key) } else { format!("{} · {}", c.op, c.tree_key) };
            Dot { label, group, value: c.ratio, ci: c.ratio_ci95 }
        })
        .collect();
    let missing = cs.iter().filter(|c| c.ratio_ci95.is_none()).count();
    let mut notes = vec!["the vertical line: 1 (no change); right of it B is slower".to_string()];
    if missing > 0 {
        notes.push(format!("no whisker on {missing} of {} ratios: fewer than 2 runs on a side", cs.len()));
    }
    let forest = Chart {
        id: "ratios-forest".into(),
        title: "B/A per cell with its 95% interval".into(),
        kind: Kind::Dots { dots, axis: Axis::Ratio, reference: Some(1.0) },
        legend,
        notes,
    };
    h.push_str(&chart_section(&forest, &labels)?);
    h.push_str("<footer class=\"provenance\"><h2>Provenance</h2>\n<ul>");
    h.push_str(&provenance_items(&[
        (format!("A = {}", names.0), a.provenance.clone()),
        (format!("B = {}", names.1), b.provenance.clone()),
    ]));
    h.push_str(&format!(
        "<li>report written by manyfiles {}</li></ul></footer>\n</body></html>\n",
        env!("CARGO_PKG_VERSION")
    ));
    Ok(h)
}
