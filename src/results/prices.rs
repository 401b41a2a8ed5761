//! What object-store requests and storage cost at a provider's published list prices:
//! the table the native ops' phases are priced with ([`PriceTable::aws_s3_standard`] by
//! default, or a TOML file given with `--prices`), and a phase's price from the requests
//! it sent ([`PriceTable::cost`]).
//!
//! The default is Amazon S3 Standard in US East (N. Virginia), from
//! <https://aws.amazon.com/s3/pricing/>: PUT, COPY, POST and LIST $0.005 per 1,000
//! requests; GET, HEAD and all other requests $0.0004 per 1,000; DELETE free; storage
//! $0.023 per GB-month (first 50 TB). Those are the prices since AWS's reduction of
//! 1 December 2016 (the last change of any of them), checked on 27 November 2026 against
//! AWS's billing line items (`Requests-Tier1` "$0.005 per 1,000 PUT, COPY, POST, or LIST
//! requests", `Requests-Tier2` "$0.004 per 10,000 GET and all other requests"). The page
//! lists no separate price for DeleteObjects (a POST carrying up to 1,000 deletes): it
//! is priced as DELETE here, free; override it in a file if your bill says otherwise.

use crate::measure::{RequestCost, RequestCounts};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Prices of requests (per 1,000) and storage (per GB-month), in `currency`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PriceTable {
    /// What is priced: provider, storage class, region.
    pub name: String,
    /// Where the prices are published.
    pub source: String,
    /// When they were published (in force since), YYYY-MM-DD.
    pub published: String,
    pub currency: String,
    /// PUT, COPY, POST and LIST requests, per 1,000.
    pub put_copy_post_list: f64,
    /// GET, HEAD and every other request, per 1,000.
    pub get_and_other: f64,
    /// DELETE requests, per 1,000.
    pub delete: f64,
    /// DeleteObjects requests (up to 1,000 keys each), per 1,000.
    pub delete_objects: f64,
    /// Storage, per GB (10^9 bytes) and month.
    pub storage_gb_month: f64,
}

impl PriceTable {
    /// Amazon S3 Standard, US East (N. Virginia): see the module's note.
    pub fn aws_s3_standard() -> PriceTable {
        PriceTable {
            name: "AWS S3 Standard, us-east-1".into(),
            source: "https://aws.amazon.com/s3/pricing/".into(),
            published: "2016-12-01".into(),
            currency: "USD".into(),
            put_copy_post_list: 0.005,
            get_and_other: 0.0004,
            delete: 0.0,
            delete_objects: 0.0,
            storage_gb_month: 0.023,
        }
    }

    /// A table from a TOML file with every field of [`PriceTable`] (a bounded regular
    /// file; prices finite and not negative).
    pub fn load(path: &Path) -> Result<PriceTable, String> {
        let text = crate::fs::input::read_bounded(path, 64 << 10)?;
        let t: PriceTable = toml::from_str(&text).map_err(|e| format!("{}: {}", path.display(), e.message()))?;
        let prices = [t.put_copy_post_list, t.get_and_other, t.delete, t.delete_objects, t.storage_gb_month];
        if prices.iter().any(|p| !p.is_finite() || *p < 0.0) {
            return Err(format!("{}: prices must be finite and not negative", path.display()));
        }
        Ok(t)
    }

    /// What `r` cost at these prices.
    pub fn cost(&self, r: &RequestCounts) -> RequestCost {
        let per_1000 = (r.put + r.list) as f64 * self.put_copy_post_list
            + (r.get + r.head + r.other) as f64 * self.get_and_other
            + r.delete as f64 * self.delete
            + r.delete_objects as f64 * self.delete_objects;
        RequestCost { amount: per_1000 / 1000.0, currency: self.currency.clone(), prices: self.label() }
    }

    /// `AWS S3 Standard, us-east-1, list prices of 2016-12-01`.
    pub fn label(&self) -> String {
        format!("{}, list prices of {}", self.name, self.published)
    }
}

/// `$0.00032`: cents, or two significant digits of a fraction of a cent.
pub fn fmt_amount(amount: f64, currency: &str) -> String {
    let sign = if currency == "USD" { "$".to_string() } else { format!("{currency} ") };
    let digits = match amount {
        a if a == 0.0 || a >= 0.01 => 2,
        a => (1 - a.log10().floor() as i32).clamp(2, 9) as usize,
    };
    format!("{sign}{amount:.digits$}")
}

/// The requests every native phase sent and their price, as a terminal table: a row
/// per tree (and target), a column per op, each cell `N requests, $X` for one run (a
/// range when runs differ). Empty when no phase sent requests.
pub fn requests_table(rs: &super::ResultSet) -> String {
    let priced: Vec<&super::Measurement> = rs.measurements.iter().filter(|m| m.result.requests.is_some()).collect();
    // (target, tree key, files, bytes) of each row.
    let mut rows: Vec<Row> = Vec::new();
    let mut ops: Vec<&str> = Vec::new();
    for m in &priced {
        if !ops.contains(&m.op.as_str()) {
            ops.push(&m.op);
        }
        if !rows.iter().any(|r| r.0 == m.target && r.1 == m.tree_key) {
            rows.push((&m.target, &m.tree_key, m.tree_files, m.tree_bytes));
        }
    }
    let Some(first) = priced.first() else { return String::new() };
    // Side rungs last, the rest by file count, as the ladder's table.
    rows.sort_by_key(|r| (rs.experiment.side_trees.iter().any(|k| k == r.1), r.2, r.0));
    let many = rows.iter().any(|r| r.0 != rows[0].0);
    let mut header = vec!["files".to_string(), "size".to_string()];
    if many {
        header.push("target".into());
    }
    header.extend(ops.iter().map(|o| o.to_string()));
    let mut t = comfy_table::Table::new();
    t.load_style(comfy_table::presets::UTF8_BORDERS_ONLY);
    t.set_header(header);
    for (target, key, files, bytes) in &rows {
        let mut row = vec![files.to_string(), crate::units::fmt_size(*bytes as f64 / (*files).max(1) as f64)];
        if many {
            row.push(target.to_string());
        }
        for op in &ops {
            let runs: Vec<&&super::Measurement> =
                priced.iter().filter(|m| m.target == *target && m.tree_key == *key && m.op == *op).collect();
            row.push(cell(&runs));
        }
        t.add_row(row);
    }
    let at = first.result.cost.as_ref().map(|c| format!(", priced at {}", c.prices)).unwrap_or_default();
    let most = priced.iter().map(|m| m.result.threads).max().unwrap_or(1);
    format!(
        "requests one run sent{at}, up to {most} in flight (a LIST page, a DeleteObjects batch of up \
         to 1,000 keys: one request each; --prices FILE: other prices)\n{t}\n"
    )
}

/// A row of the requests table: target, tree key, files, bytes.
type Row<'a> = (&'a str, &'a str, u64, u64);

/// `64 requests, $0.00032` for one run (the smallest – largest over the runs).
fn cell(runs: &[&&super::Measurement]) -> String {
    let totals: Vec<u64> = runs.iter().filter_map(|m| m.result.requests.map(|r| r.total())).collect();
    let amounts: Vec<(f64, &str)> =
        runs.iter().filter_map(|m| m.result.cost.as_ref().map(|c| (c.amount, c.currency.as_str()))).collect();
    let (Some(lo), Some(hi)) = (totals.iter().min(), totals.iter().max()) else { return "—".into() };
    let n = if lo == hi { format!("{lo}") } else { format!("{lo}–{hi}") };
    let word = if *hi == 1 { "request" } else { "requests" };
    let price = match amounts.first() {
        None => String::new(),
        Some((_, cur)) => {
            let lo = fmt_amount(amounts.iter().map(|a| a.0).fold(f64::INFINITY, f64::min), cur);
            let hi = fmt_amount(amounts.iter().map(|a| a.0).fold(0.0, f64::max), cur);
            if lo == hi { format!(", {lo}") } else { format!(", {lo}–{hi}") }
        }
    };
    format!("{n} {word}{price}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_priced_by_kind() {
        let t = PriceTable::aws_s3_standard();
        let r = RequestCounts { put: 1000, get: 10_000, head: 0, list: 0, delete: 500, delete_objects: 0, other: 0 };
        let c = t.cost(&r);
        assert!((c.amount - (0.005 + 0.004)).abs() < 1e-12, "{c:?}");
        assert_eq!(c.prices, "AWS S3 Standard, us-east-1, list prices of 2016-12-01");
        let pages = RequestCounts { list: 3, delete_objects: 3, ..Default::default() };
        assert!((t.cost(&pages).amount - 3.0 * 0.005 / 1000.0).abs() < 1e-15);
        assert_eq!(fmt_amount(0.00032, "USD"), "$0.00032");
        assert_eq!(fmt_amount(0.000005, "USD"), "$0.0000050");
        assert_eq!(fmt_amount(12.5, "USD"), "$12.50");
        assert_eq!(fmt_amount(0.0, "EUR"), "EUR 0.00");
    }

    #[test]
    fn the_table_shows_each_phase_requests_and_price() {
        let mut rs = crate::results::testing::one_cell(&[1.0, 1.1, 1.2]);
        assert_eq!(requests_table(&rs), "", "no requests: no table");
        let t = PriceTable::aws_s3_standard();
        for (i, m) in rs.measurements.iter_mut().enumerate() {
            m.op = "s3:put".into();
            // A third run with a retry: the cell gives the range.
            let r = RequestCounts { put: 256 + (i == 2) as u64, ..Default::default() };
            m.result.requests = Some(r);
            m.result.cost = Some(t.cost(&r));
        }
        let text = requests_table(&rs);
        assert!(text.contains("s3:put") && text.contains("256–257 requests, $0.0013"), "{text}");
        assert!(text.contains("priced at AWS S3 Standard, us-east-1, list prices of 2016-12-01"), "{text}");
    }

    #[test]
    fn a_file_overrides_every_price() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("p.toml");
        let mut text = toml::to_string(&PriceTable::aws_s3_standard()).unwrap();
        std::fs::write(&f, &text).unwrap();
        assert_eq!(PriceTable::load(&f).unwrap(), PriceTable::aws_s3_standard());
        text = text.replace("get_and_other = 0.0004", "get_and_other = -1.0");
        std::fs::write(&f, &text).unwrap();
        assert!(PriceTable::load(&f).unwrap_err().contains("not negative"));
        std::fs::write(&f, "name = \"x\"\n").unwrap();
        assert!(PriceTable::load(&f).is_err(), "every field is needed");
    }
}
