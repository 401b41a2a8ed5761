//! How an experiment's results look: its terminal tables after a run and its own parts of
//! the HTML page. Each experiment's view is a [`View`] value beside its tables in the
//! experiment's own folder (`experiment/NAME/view.rs`: ladder, bigfile, clusters,
//! dirsize, pack); the generic one is in this file. `experiment::kinds::KINDS` names which experiment has which, and
//! the general report code (`html.rs`, `chart.rs`, `commands.rs`) is handed the view:
//! none of it imports a file of this folder but this one, nor chooses a view by the
//! experiment's name.

use crate::report::chart::Chart;
use crate::report::grid::Grid;
use crate::report::table;
use crate::results::{ResultSet, SummaryRow};

/// One experiment's view.
pub struct View {
    /// The tables printed after a run, between the title and the footer.
    pub terminal: fn(&ResultSet) -> String,
    /// Its own measurement tables on the HTML page (None: the summaries table).
    pub html_tables: Option<fn(&ResultSet) -> Vec<Grid>>,
    /// Its own HTML section before the measurements and the navigation entries that
    /// lead to it (pack: routes and recommendation).
    pub html_section: Option<HtmlSection>,
    /// Its charts instead of one per op.
    pub charts: Option<fn(&ResultSet) -> Vec<Chart>>,
}

/// An HTML section of an experiment's own.
pub struct HtmlSection {
    /// `<li>` entries for the page's navigation.
    pub nav: &'static str,
    pub render: fn(&ResultSet) -> String,
}

impl View {
    /// Every chart the data supports, in reading order.
    pub fn charts(&self, rs: &ResultSet) -> Vec<Chart> {
        match self.charts {
            Some(own) => own(rs),
            None => crate::report::chart::charts(rs),
        }
    }
}

/// `ops` (and every result without a view of its own): one row per target, op and tree.
pub const GENERIC: View = View { terminal: ops_tables, html_tables: None, html_section: None, charts: None };

fn ops_tables(rs: &ResultSet) -> String {
    let mut body = table::ops_detail(rs);
    body.push('\n');
    body
}

/// The runs a cell was asked for: `--runs N`, or with adaptive runs `--min-runs`.
pub fn runs_asked(rs: &ResultSet) -> usize {
    rs.experiment.adaptive.map_or(rs.experiment.runs, |a| a.min_runs) as usize
}

/// A cell of a run that was stopped (a signal) with fewer complete runs than asked.
pub fn partial(rs: &ResultSet, s: &SummaryRow) -> bool {
    !rs.complete && s.runs < runs_asked(rs)
}

/// The mark tables put on a [`partial`] cell (`†`, explained by [`partial_note`]).
pub fn partial_mark(rs: &ResultSet, s: &SummaryRow) -> &'static str {
    if partial(rs, s) { "†" } else { "" }
}

/// The footnote of the [`partial`] cells: how many, and the runs they have against those
/// asked (None when there are none).
pub fn partial_note(rs: &ResultSet) -> Option<String> {
    let cut: Vec<&SummaryRow> = rs.summaries.iter().filter(|s| partial(rs, s)).collect();
    let lo = cut.iter().map(|s| s.runs).min()?;
    let hi = cut.iter().map(|s| s.runs).max().unwrap_or(lo);
    let runs = if lo == hi { format!("{lo}") } else { format!("{lo} – {hi}") };
    Some(format!(
        "†: partial, the run was stopped: {} of {} cells have {runs} complete runs of the {} asked",
        cut.len(),
        rs.summaries.len(),
        runs_asked(rs)
    ))
}

/// What a run that a signal stopped prints: `how` (the signal, the trials done), then what
/// a finished run prints of the results so far ([`after_run`]), the partial cells marked
/// and counted.
pub fn after_interrupt(rs: &ResultSet, body: &str, json: Option<&std::path::Path>, how: &str) -> String {
    let mut s = format!("{how}\n");
    let mut body = body.to_string();
    // The experiment's own tables say it where they mark cells; said here for every view.
    if let Some(note) = partial_note(rs).filter(|n| !body.contains(n.as_str())) {
        body.push_str(&format!("{note}\n"));
    }
    if rs.summaries.is_empty() {
        body.push_str("no cell has a complete run yet\n");
    }
    s.push_str(&after_run(rs, &body, json));
    s
}

/// The requests the native object-store ops sent and their price, as on the terminal
/// ([`crate::results::prices::requests`]): an HTML section, empty when none were sent.
pub fn requests_html(rs: &ResultSet) -> String {
    use crate::report::markup::esc;
    let tables = crate::results::prices::requests(rs);
    let mut h = match tables.is_empty() {
        true => return String::new(),
        false => String::from("<h3 id=\"requests\">Requests and their price</h3>\n"),
    };
    for r in tables {
        h.push_str(&format!("<p>{}</p>\n<table class=\"requests\"><tr>", esc(&r.caption)));
        h.extend(r.header.iter().map(|c| format!("<th>{}</th>", esc(c))));
        h.push_str("</tr>\n");
        for row in &r.rows {
            h.push_str("<tr>");
            h.extend(row.iter().map(|c| format!("<td>{}</td>", esc(c).replace('\n', "<br>"))));
            h.push_str("</tr>\n");
        }
        h.push_str("</table>\n");
    }
    h
}

/// What a run prints: the title, `body` (the experiment's tables and its own lines), the
/// MPI ranks' table, warnings, targets, machine and the results file.
pub fn after_run(rs: &ResultSet, body: &str, json: Option<&std::path::Path>) -> String {
    let mut s = table::title(rs);
    s.push('\n');
    s.push_str(body);
    s.push_str(&crate::results::prices::requests_table(rs));
    s.push_str(&crate::report::ranks::table(rs));
    s.push_str(&table::footer(rs));
    if let Some(p) = json {
        s.push_str(&format!("results: {}\n", p.display()));
    }
    s
}
