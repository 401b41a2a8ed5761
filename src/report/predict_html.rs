//! `manyfiles report --html` on a `predict --json` file: the tree's shape, a table of
//! predictions with their 95% prediction intervals and extrapolation marks, the
//! predictions as a dot plot, and the model's provenance. The file is read as plain
//! JSON, field by field, so fields added to predict's output later do no harm and
//! fields missing from older files show as "—".

use super::chart::{Axis, Chart, Dot, Kind};
use super::html::{chart_section, esc, head, provenance_items};
use crate::measure::provenance::Provenance;
use crate::units::{fmt_secs, fmt_size, sig3};
use serde_json::Value;

/// One prediction as read from the file.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub target: String,
    pub op: String,
    pub seconds: f64,
    pub interval95: Option<[f64; 2]>,
    pub extrapolation: Vec<String>,
    pub recovery_point_s: Option<[f64; 2]>,
    /// Why the model is no answer for this row (`predict`'s `not_usable`): its figure is
    /// not drawn.
    pub not_usable: Option<String>,
}

/// A `predict --json` file.
#[derive(Debug, Clone)]
pub struct PredictFile {
    pub tree: Value,
    /// The rows' intervals' level, `95%` (`predict --level`; older files: 95%).
    pub level: String,
    pub interval_s: Option<f64>,
    pub rows: Vec<Row>,
    /// The model's file, target labels by id, and provenance (files from before they
    /// were written have none).
    pub model_file: Option<String>,
    pub labels: Vec<(String, String)>,
    pub provenance: Option<Provenance>,
}

fn pair(v: &Value) -> Option<[f64; 2]> {
    let a = v.as_array()?;
    Some([a.first()?.as_f64()?, a.get(1)?.as_f64()?])
}

/// Read `path` as a predict file: an object with a `predictions` array whose rows have
/// `target`, `op` and `seconds`. Err: why it is not one.
pub fn read(path: &std::path::Path) -> Result<PredictFile, String> {
    let text = crate::fs::input::read_bounded(path, crate::fs::input::JSON_MAX)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let v: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let preds = v.get("predictions").and_then(Value::as_array).ok_or("no \"predictions\" array")?;
    let mut rows = Vec::new();
    for p in preds {
        let s = |k: &str| p.get(k).and_then(Value::as_str).map(str::to_string);
        let (Some(target), Some(op), Some(seconds)) = (s("target"), s("op"), p.get("seconds").and_then(Value::as_f64))
        else {
            return Err("a prediction without target, op or seconds".into());
        };
        rows.push(Row {
            target,
            op,
            seconds,
            // The interval at the level asked for (`interval`), else the 95% one (older files).
            interval95: p.get("interval").or_else(|| p.get("interval95")).and_then(pair),
            extrapolation: p
                .get("extrapolation")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect())
                .unwrap_or_default(),
            recovery_point_s: p.get("recovery_point_s").and_then(pair),
            not_usable: s("not_usable"),
        });
    }
    let model = v.get("model");
    let labels = model
        .and_then(|m| m.get("targets"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|t| Some((t.get("id")?.as_str()?.to_string(), t.get("label")?.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default();
    let level = v.get("level").and_then(Value::as_f64).unwrap_or(crate::results::predict::DEFAULT_LEVEL);
    Ok(PredictFile {
        tree: v.get("tree").cloned().unwrap_or(Value::Null),
        level: crate::results::predict::Ahead { runs: 1, level }.level_text(),
        interval_s: v.get("interval_s").and_then(Value::as_f64),
        rows,
        model_file: model.and_then(|m| m.get("file")).and_then(Value::as_str).map(str::to_string),
        labels,
        provenance: model.and_then(|m| m.get("provenance")).and_then(|p| serde_json::from_value(p.clone()).ok()),
    })
}

impl PredictFile {
    fn label(&self, id: &str) -> String {
        self.labels.iter().find(|l| l.0 == id).map(|l| l.1.clone()).unwrap_or_else(|| id.to_string())
    }
}

/// The page for `p`, read from `file`.
pub fn render(p: &PredictFile, file: &str) -> Result<String, String> {
    let mut legend: Vec<String> = Vec::new();
    for r in &p.rows {
        let l = p.label(&r.target);
        if !legend.contains(&l) {
            legend.push(l);
        }
    }
    let num = |k: &str| p.tree.get(k).and_then(Value::as_f64);
    let shape = format!(
        "{} files, {}, directories: {}",
        num("files").map_or("?".into(), |x| x.to_string()),
        num("bytes").map_or("?".into(), fmt_size),
        num("dirs").map_or("?".into(), |x| x.to_string())
    );
    let mut h = head(&format!("manyfiles predict: {shape}"), &legend);
    h.push_str(&format!(
        "<p class=\"muted\">Predicted time of every modelled op on every target for this tree, with its {} prediction interval (from the model's leave-one-cell-out errors). \
         Marked rows lie outside what the model was calibrated on: extrapolations.{}</p>\n",
        p.level,
        p.interval_s.map(|i| format!(" Sync interval {}: the recovery point is interval + sync time.", fmt_secs(i))).unwrap_or_default()
    ));
    h.push_str(&format!("<h2 id=\"predictions\">Predictions</h2>\n<table class=\"predictions\"><tr><th>target</th><th>op</th><th>predicted [{} interval]</th><th>recovery point</th><th>extrapolation</th></tr>\n", p.level));
    for r in &p.rows {
        let (scale, unit) = super::table::unit_for(r.seconds);
        let fig = match r.interval95 {
            _ if r.not_usable.is_some() => format!(
                "<td class=\"fig\" data-not-usable=\"1\"><span class=\"why\">not usable: {}</span></td>",
                esc(r.not_usable.as_deref().unwrap_or_default())
            ),
            Some([lo, hi]) => format!(
                "<td class=\"fig\" data-ci=\"{lo:e},{hi:e}\">{} {unit} <span class=\"ci\">[{} – {}]</span></td>",
                sig3(r.seconds * scale),
                sig3(lo * scale),
                sig3(hi * scale)
            ),
            None => format!(
                "<td class=\"fig\" data-no-ci=\"the model has no residual degrees of freedom\">{} {unit} <span class=\"why\">(no interval: the model has no residual degrees of freedom)</span></td>",
                sig3(r.seconds * scale)
            ),
        };
        let rp =
            r.recovery_point_s.map(|[a, b]| format!("{} (up to {})", fmt_secs(a), fmt_secs(b))).unwrap_or("—".into());
        let ex = if r.extrapolation.is_empty() {
            "<td class=\"l\">no</td>".to_string()
        } else {
            format!("<td class=\"l extrapolated\" data-extrapolated=\"1\">⚠ {}</td>", esc(&r.extrapolation.join("; ")))
        };
        h.push_str(&format!(
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td>{fig}<td>{}</td>{ex}</tr>\n",
            esc(&p.label(&r.target)),
            esc(&r.op),
            esc(&rp)
        ));
    }
    h.push_str("</table>\n");
    let many = legend.len() > 1;
    let dots: Vec<Dot> = p
        .rows
        .iter()
        .filter(|r| r.not_usable.is_none())
        .map(|r| {
            let l = p.label(&r.target);
            let group = legend.iter().position(|x| *x == l).unwrap_or(0);
            let mark = if r.extrapolation.is_empty() { "" } else { " ⚠" };
            let label = if many { format!("{} · {l}{mark}", r.op) } else { format!("{}{mark}", r.op) };
            Dot { label, group, value: r.seconds, ci: r.interval95 }
        })
        .collect();
    let mut notes = vec!["⚠: an extrapolation (outside the calibrated range; the table says how far)".to_string()];
    let missing = p.rows.iter().filter(|r| r.interval95.is_none()).count();
    if missing > 0 {
        notes.push(format!(
            "no whisker on {missing} of {} predictions: the model has no residual degrees of freedom",
            p.rows.len()
        ));
    }
    if !dots.is_empty() {
        let c = Chart {
            id: "predictions-chart".into(),
            title: format!("predicted time per op and target, {} prediction interval", p.level),
            kind: Kind::Dots { dots, axis: Axis::Predicted, reference: None },
            legend: legend.clone(),
            notes,
        };
        h.push_str(&chart_section(&c, &legend)?);
    }
    h.push_str("<footer class=\"provenance\"><h2>Provenance</h2>\n<ul>");
    h.push_str(&format!("<li>predictions: {}</li>", esc(file)));
    match &p.provenance {
        Some(pv) => h.push_str(&provenance_items(&[(
            format!("model {}", p.model_file.as_deref().unwrap_or("(file not recorded)")),
            pv.clone(),
        )])),
        None => h.push_str("<li>model: not recorded in this file (written by an older manyfiles)</li>"),
    }
    h.push_str(&format!(
        "<li>report written by manyfiles {}</li></ul></footer>\n</body></html>\n",
        env!("CARGO_PKG_VERSION")
    ));
    Ok(h)
}

#[cfg(test)]
mod tests {
    /// An unusable row (its model missed its own left-out trees) shows the reason, not a
    /// figure, and no dot on the chart.
    #[test]
    fn an_unusable_row_shows_why_not_a_figure() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("p.json");
        let json = serde_json::json!({
            "tree": {"files": 10, "dirs": 1, "bytes": 1000},
            "predictions": [
                {"target": "t", "op": "copy", "seconds": 29.5, "interval95": [1.0, 80.0],
                 "usable": false, "not_usable": "not fitted: the runs scatter"},
                {"target": "t", "op": "rm", "seconds": 0.5, "interval95": [0.4, 0.6], "usable": true}
            ]
        });
        std::fs::write(&f, json.to_string()).unwrap();
        let p = super::read(&f).unwrap();
        assert_eq!(p.rows[0].not_usable.as_deref(), Some("not fitted: the runs scatter"));
        let page = super::render(&p, "p.json").unwrap();
        assert!(page.contains("not usable: not fitted: the runs scatter"), "{page}");
        assert!(!page.contains("29.5"), "no figure for the unusable row");
    }
}
