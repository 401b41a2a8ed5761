//! A table of figures described once and drawn twice: on the terminal (comfy-table) and
//! as an HTML table whose every figure carries `data-ci` (its 95% interval, in
//! `data-unit`) or `data-no-ci` (the reason there is none), as every page's figures do.
//! Experiments with tables of their own (bigfile's and clusters' `view.rs` in `experiment/`) build a
//! [`Grid`] from the result model, so the terminal and the page show the same figures.

use super::markup::esc;

/// One figure: its text as printed (value and ± or range), and its 95% interval in
/// `unit`, or why it has none.
#[derive(Debug, Clone, PartialEq)]
pub struct Fig {
    pub text: String,
    pub ci: Result<[f64; 2], String>,
    pub unit: &'static str,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// A row label (a target's name).
    Label(String),
    Fig(Fig),
    /// No figure (no complete run): `—` with the reason.
    Missing(String),
}

/// A titled table: a header, rows of cells, notes under it.
#[derive(Debug, Clone, Default)]
pub struct Grid {
    /// HTML anchor and class: letters, digits and dashes.
    pub id: String,
    pub title: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<Cell>>,
    pub notes: Vec<String>,
}

impl Grid {
    /// The table as the terminal prints it: its title, the figures right-aligned, notes
    /// under it.
    pub fn terminal(&self) -> String {
        let mut t = super::table::new_table(self.header.clone());
        for r in &self.rows {
            t.add_row(r.iter().map(|c| match c {
                Cell::Label(s) => s.clone(),
                Cell::Fig(f) => f.text.clone(),
                Cell::Missing(_) => "—".into(),
            }));
        }
        super::table::right_align(&mut t, 1);
        let mut out = format!("{}\n{t}", self.title);
        for n in &self.notes {
            out.push('\n');
            out.push_str(n);
        }
        out.push('\n');
        out
    }

    /// The table as an HTML section: `<h3>` title, the table, notes as paragraphs.
    pub fn html(&self) -> String {
        let mut h = format!("<h3 id=\"{}\">{}</h3>\n<table class=\"{}\"><tr>", self.id, esc(&self.title), self.id);
        for c in &self.header {
            h.push_str(&format!("<th>{}</th>", esc(c)));
        }
        h.push_str("</tr>\n");
        for r in &self.rows {
            h.push_str("<tr>");
            for c in r {
                h.push_str(&cell_html(c));
            }
            h.push_str("</tr>\n");
        }
        h.push_str("</table>\n");
        for n in &self.notes {
            h.push_str(&format!("<p class=\"muted\">{}</p>\n", esc(n)));
        }
        h
    }
}

fn cell_html(c: &Cell) -> String {
    match c {
        Cell::Label(s) => format!("<td class=\"l\" data-target-label=\"{}\">{}</td>", esc(s), esc(s)),
        Cell::Fig(Fig { text, ci: Ok([lo, hi]), unit }) => {
            format!("<td class=\"fig\" data-ci=\"{lo:e},{hi:e}\" data-unit=\"{unit}\">{}</td>", esc(text))
        }
        Cell::Fig(Fig { text, ci: Err(why), .. }) => format!(
            "<td class=\"fig\" data-no-ci=\"{}\">{} <span class=\"why\">({})</span></td>",
            esc(why),
            esc(text),
            esc(why)
        ),
        Cell::Missing(why) => format!("<td class=\"fig\" data-no-ci=\"{}\">—</td>", esc(why)),
    }
}

/// A 95% interval of a quantity that cannot be negative (a time, a size), from a
/// Student-t interval of its mean: the lower end cut at 0, where t's symmetric
/// interval can reach below it with few or scattered runs.
pub fn nonnegative(ci: Option<[f64; 2]>, n: usize) -> Result<[f64; 2], String> {
    match ci {
        Some([lo, hi]) => Ok([lo.max(0.0), hi]),
        None => Err(format!("too few runs for an interval, n={n}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_figure_has_its_interval_or_the_reason() {
        let g = Grid {
            id: "g".into(),
            title: "t <x>".into(),
            header: vec!["target".into(), "a".into(), "b".into(), "c".into()],
            rows: vec![vec![
                Cell::Label("disk".into()),
                Cell::Fig(Fig { text: "1.0 ± 0.1 s".into(), ci: Ok([0.9, 1.1]), unit: "s" }),
                Cell::Fig(Fig { text: "2 s".into(), ci: nonnegative(None, 1), unit: "s" }),
                Cell::Missing("no complete run".into()),
            ]],
            notes: vec!["a note".into()],
        };
        let h = g.html();
        assert!(h.contains("data-ci=\"9e-1,1.1e0\" data-unit=\"s\">1.0 ± 0.1 s</td>"), "{h}");
        assert!(h.contains("data-no-ci=\"too few runs for an interval, n=1\">2 s"), "{h}");
        assert!(h.contains("data-no-ci=\"no complete run\">—</td>") && h.contains("t &lt;x&gt;"), "{h}");
        assert_eq!(h.matches("class=\"fig\"").count(), 3);
        let t = g.terminal();
        assert!(
            t.starts_with("t <x>\n") && t.contains("1.0 ± 0.1 s") && t.contains('—') && t.ends_with("a note\n"),
            "{t}"
        );
        assert_eq!(nonnegative(Some([-0.5, 2.0]), 3), Ok([0.0, 2.0]));
    }
}
