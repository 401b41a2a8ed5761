//! What object-store requests and storage cost at a provider's published list prices:
//! the table the native ops' phases are priced with (by default the target's provider's,
//! [`PriceTable::list_prices`]; or a TOML file given with `--prices`), and a phase's
//! price from the requests it sent ([`PriceTable::cost`]).
//!
//! S3's default is Amazon S3 Standard in US East (N. Virginia), from
//! <https://aws.amazon.com/s3/pricing/>: PUT, COPY, POST and LIST $0.005 per 1,000
//! requests; GET, HEAD and all other requests $0.0004 per 1,000; DELETE free; storage
//! $0.023 per GB-month (first 50 TB). Those are the prices since AWS's reduction of
//! 1 December 2016 (the last change of any of them), checked on 27 November 2026 against
//! AWS's billing line items (`Requests-Tier1` "$0.005 per 1,000 PUT, COPY, POST, or LIST
//! requests", `Requests-Tier2` "$0.004 per 10,000 GET and all other requests"). The page
//! lists no separate price for DeleteObjects (a POST carrying up to 1,000 deletes): it
//! is priced as DELETE here, free; override it in a file if your bill says otherwise.
//! Every other POST (a multipart upload's CreateMultipartUpload and
//! CompleteMultipartUpload; its parts are PUTs) is in the PUT/COPY/POST/LIST tier, as the
//! page says; a multipart upload's abort is a DELETE, free.
//!
//! Azure Blob's default is the hot tier, LRS, East US (General Block Blob v2, `eastus`),
//! from <https://azure.microsoft.com/pricing/details/storage/blobs/>, which lists them per
//! 10,000 operations: write operations $0.05, list and create container operations
//! $0.05, read operations $0.004, all other operations $0.004, delete free; storage
//! $0.0208 per GB-month (first 50 TB). Those are the Azure Retail Prices API's figures for
//! those meters (`Hot LRS Write Operations`, `LRS List and Create Container Ops`, `Hot
//! Read Operations`, `All Other Operations`, `Hot LRS Data Stored`), checked on 28 November
//! 2026 in two public copies of the API's answer, which agree; no date they took effect
//! was found, so the table is dated by that check. Put Blob is a write, Get Blob a read,
//! List Blobs a list, Get Blob Properties (HEAD) another operation (Microsoft's "map each
//! REST operation to a price" page, general purpose v2). A Blob Batch request (object_store
//! sends every delete in one, 256 at most) is priced as another operation, its deletes
//! free; override it in a file if your bill says otherwise. object_store's multipart
//! upload to Blob is Put Block for each part and Put Block List to commit them, both PUT
//! requests and both write operations on that page, so they are counted as PUTs and
//! priced as writes; it sends no other POST (a `post` count on Blob would be priced in
//! the write tier too). Per 1,000, as S3's: the same request prices as S3 Standard's
//! today.
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
    /// PUT, COPY, POST and LIST requests (Blob: writes and lists), per 1,000.
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
    /// The list prices of `provider`'s default class and region (see the module's note).
    pub fn list_prices(provider: crate::storage::object_stack::Provider) -> PriceTable {
        match provider {
            crate::storage::object_stack::Provider::S3 => Self::aws_s3_standard(),
            crate::storage::object_stack::Provider::Azblob => Self::azure_blob_hot(),
        }
    }

    /// Azure Blob Storage, hot tier, LRS, East US: see the module's note.
    pub fn azure_blob_hot() -> PriceTable {
        PriceTable {
            name: "Azure Blob Storage hot LRS, East US".into(),
            source: "https://azure.microsoft.com/pricing/details/storage/blobs/".into(),
            published: "2026-11-28".into(),
            currency: "USD".into(),
            put_copy_post_list: 0.005,
            get_and_other: 0.0004,
            delete: 0.0,
            delete_objects: 0.0004,
            storage_gb_month: 0.0208,
        }
    }

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
        let per_1000 = (r.put + r.post + r.list) as f64 * self.put_copy_post_list
            + (r.get + r.head + r.other) as f64 * self.get_and_other
            + r.delete as f64 * self.delete
            + r.delete_objects as f64 * self.delete_objects;
        RequestCost { amount: per_1000 / 1000.0, currency: self.currency.clone(), prices: self.label() }
    }

    /// What keeping `bytes` stored for a month costs at these prices (storage only; no
    /// per-object minimum is charged in the classes priced here: S3 Standard, Blob hot).
    pub fn storage_month(&self, bytes: u64) -> RequestCost {
        RequestCost {
            amount: bytes as f64 / 1e9 * self.storage_gb_month,
            currency: self.currency.clone(),
            prices: self.label(),
        }
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

/// The requests every native phase on one target sent and their price: a row per tree,
/// a column per op, each cell the requests of one run over their price (a range when
/// runs differ); what the terminal and the HTML page show ([`requests_table`],
/// `report`).
#[derive(Debug, Clone, PartialEq)]
pub struct RequestsTable {
    /// What the cells count, on which target, at which prices.
    pub caption: String,
    pub header: Vec<String>,
    /// Cells of two lines: the requests, then their price.
    pub rows: Vec<Vec<String>>,
}

/// The [`RequestsTable`]s of `rs`, one per target whose phases sent requests.
pub fn requests(rs: &super::ResultSet) -> Vec<RequestsTable> {
    let priced: Vec<&super::Measurement> = rs.measurements.iter().filter(|m| m.result.requests.is_some()).collect();
    let mut targets: Vec<&str> = Vec::new();
    for m in &priced {
        if !targets.contains(&m.target.as_str()) {
            targets.push(&m.target);
        }
    }
    targets.iter().map(|t| target_table(rs, t, priced.iter().copied().filter(|m| m.target == *t).collect())).collect()
}

/// [`requests`]' table of `target`, whose phases are `priced`.
fn target_table(rs: &super::ResultSet, target: &str, priced: Vec<&super::Measurement>) -> RequestsTable {
    // (tree key, files, bytes) of each row.
    let mut rows: Vec<Row> = Vec::new();
    let mut ops: Vec<&str> = Vec::new();
    for m in &priced {
        if !ops.contains(&m.op.as_str()) {
            ops.push(&m.op);
        }
        if !rows.iter().any(|r| r.0 == m.tree_key) {
            rows.push((&m.tree_key, m.tree_files, m.tree_bytes));
        }
    }
    // Side rungs last, the rest by file count, as the ladder's table.
    rows.sort_by_key(|r| (rs.experiment.side_trees.iter().any(|k| k == r.0), r.1));
    let mut header = vec!["files".to_string(), "size".to_string()];
    header.extend(ops.iter().map(|o| o.trim_start_matches("obj:").to_string()));
    let mut body = Vec::new();
    for (key, files, bytes) in &rows {
        let mut row = vec![files.to_string(), crate::units::fmt_size(*bytes as f64 / (*files).max(1) as f64)];
        for op in &ops {
            let runs: Vec<&&super::Measurement> = priced.iter().filter(|m| m.tree_key == *key && m.op == *op).collect();
            row.push(cell(&runs));
        }
        body.push(row);
    }
    let at = priced.iter().find_map(|m| m.result.cost.as_ref()).map(|c| format!(", priced at {}", c.prices));
    let most = priced.iter().map(|m| m.result.threads).max().unwrap_or(1);
    let caption = format!(
        "requests one run of each obj: op sent on {target}{}, up to {most} in flight (a LIST page, a batched \
         delete: one request each; --prices FILE: other prices)",
        at.unwrap_or_default()
    );
    RequestsTable { caption, header, rows: body }
}

/// The [`RequestsTable`]s for the terminal, at most 100 columns wide (a cell that does
/// not fit wraps); empty when no phase sent requests. More ops than [`MOST_OP_COLUMNS`]
/// (pack's routes: three steps each) turn the table: a row per op, a column per tree.
pub fn requests_table(rs: &super::ResultSet) -> String {
    let mut out = String::new();
    for r in requests(rs) {
        let mut t = comfy_table::Table::new();
        t.load_style(comfy_table::presets::UTF8_BORDERS_ONLY);
        t.set_content_arrangement(comfy_table::ContentArrangement::Dynamic);
        t.set_width(TABLE_WIDTH);
        let (header, rows) = match r.header.len() > 2 + MOST_OP_COLUMNS {
            true => turned(&r.header, &r.rows),
            false => (r.header, r.rows),
        };
        t.set_header(header);
        for row in rows {
            t.add_row(row);
        }
        out.push_str(&format!("{}\n{t}\n", wrap(&r.caption, TABLE_WIDTH as usize)));
    }
    out
}

/// Most op columns a terminal requests table has before it is turned.
const MOST_OP_COLUMNS: usize = 6;

/// A requests table turned: a row per op, a column per tree (`files × size`).
fn turned(header: &[String], rows: &[Vec<String>]) -> (Vec<String>, Vec<Vec<String>>) {
    let mut h = vec!["op".to_string()];
    h.extend(rows.iter().map(|r| format!("{} files × {}", r[0], r[1])));
    let body = (2..header.len()).map(|j| {
        let mut row = vec![header[j].clone()];
        row.extend(rows.iter().map(|r| r[j].replace('\n', " ")));
        row
    });
    (h, body.collect())
}

/// The terminal's requests table's widest line.
const TABLE_WIDTH: u16 = 100;

/// `text` in lines of at most `width` characters, broken between words.
fn wrap(text: &str, width: usize) -> String {
    let mut lines: Vec<String> = vec![String::new()];
    for word in text.split_whitespace() {
        let line = lines.last_mut().expect("one line");
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(word.to_string());
        } else {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
    }
    lines.join("\n")
}

/// A row of a requests table: tree key, files, bytes.
type Row<'a> = (&'a str, u64, u64);

/// `64` over `$0.00032`: the requests of one run and their price (the smallest – largest
/// over the runs).
fn cell(runs: &[&&super::Measurement]) -> String {
    let totals: Vec<u64> = runs.iter().filter_map(|m| m.result.requests.map(|r| r.total())).collect();
    let amounts: Vec<(f64, &str)> =
        runs.iter().filter_map(|m| m.result.cost.as_ref().map(|c| (c.amount, c.currency.as_str()))).collect();
    let (Some(lo), Some(hi)) = (totals.iter().min(), totals.iter().max()) else { return "—".into() };
    let n = if lo == hi { format!("{lo}") } else { format!("{lo}–{hi}") };
    let price = match amounts.first() {
        None => String::new(),
        Some((_, cur)) => {
            let lo = fmt_amount(amounts.iter().map(|a| a.0).fold(f64::INFINITY, f64::min), cur);
            let hi = fmt_amount(amounts.iter().map(|a| a.0).fold(0.0, f64::max), cur);
            if lo == hi { format!("\n{lo}") } else { format!("\n{lo}–{hi}") }
        }
    };
    format!("{n}{price}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_priced_by_kind() {
        let t = PriceTable::aws_s3_standard();
        let r = RequestCounts { put: 1000, get: 10_000, delete: 500, ..Default::default() };
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
    fn storage_is_priced_per_gb_month() {
        // 1 GiB split or not: the same bytes, the same storage price (no per-object minimum
        // in S3 Standard or Blob hot); 10^9 bytes are one GB.
        let s3 = PriceTable::aws_s3_standard();
        let gib = s3.storage_month(1 << 30);
        assert!((gib.amount - 1.073741824 * 0.023).abs() < 1e-12, "{gib:?}");
        assert_eq!((gib.currency.as_str(), gib.prices.as_str()), ("USD", s3.label().as_str()));
        let az = PriceTable::azure_blob_hot();
        assert!((az.storage_month(2_000_000_000).amount - 2.0 * 0.0208).abs() < 1e-12);
        assert_eq!(s3.storage_month(0).amount, 0.0);
    }

    #[test]
    fn a_multipart_upload_is_priced_in_the_put_tier() {
        // One 40 MiB file in three parts: CreateMultipartUpload (POST), 3 UploadPart (PUT),
        // CompleteMultipartUpload (POST): five requests of the PUT/COPY/POST/LIST tier.
        let s3 = PriceTable::aws_s3_standard();
        let r = RequestCounts { put: 3, post: 2, ..Default::default() };
        assert!((s3.cost(&r).amount - 5.0 * s3.put_copy_post_list / 1000.0).abs() < 1e-15, "{:?}", s3.cost(&r));
        // Not the GET tier that "other" requests are in.
        let other = RequestCounts { put: 3, other: 2, ..Default::default() };
        assert!(s3.cost(&r).amount > s3.cost(&other).amount);
        // A POST of a table read from a file goes where the file prices the tier.
        let t = PriceTable { put_copy_post_list: 1.0, get_and_other: 0.0, ..PriceTable::aws_s3_standard() };
        assert_eq!(t.cost(&RequestCounts { post: 1000, ..Default::default() }).amount, 1.0);
        // Blob: Put Block and Put Block List are PUTs, writes.
        let az = PriceTable::azure_blob_hot();
        let blocks = RequestCounts { put: 4, ..Default::default() };
        assert!((az.cost(&blocks).amount - 4.0 * az.put_copy_post_list / 1000.0).abs() < 1e-15);
    }

    #[test]
    fn the_table_shows_each_phase_requests_and_price() {
        let mut rs = crate::results::testing::one_cell(&[1.0, 1.1, 1.2]);
        assert_eq!(requests_table(&rs), "", "no requests: no table");
        let t = PriceTable::aws_s3_standard();
        for (i, m) in rs.measurements.iter_mut().enumerate() {
            m.op = "obj:put".into();
            // A third run with a retry: the cell gives the range.
            let r = RequestCounts { put: 256 + (i == 2) as u64, ..Default::default() };
            m.result.requests = Some(r);
            m.result.cost = Some(t.cost(&r));
        }
        let text = requests_table(&rs);
        assert!(text.contains("put") && text.contains("256–257") && text.contains("$0.0013"), "{text}");
        assert_eq!(requests(&rs)[0].rows[0][2], "256–257\n$0.0013");
        let caption = &requests(&rs)[0].caption;
        assert!(caption.contains("priced at AWS S3 Standard, us-east-1, list prices of 2016-12-01"), "{caption}");
        assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
    }

    #[test]
    fn each_provider_has_its_prices_and_the_table_fits_100_columns() {
        use crate::storage::object_stack::Provider;
        assert_eq!(PriceTable::list_prices(Provider::S3), PriceTable::aws_s3_standard());
        let az = PriceTable::list_prices(Provider::Azblob);
        assert!(az.name.starts_with("Azure Blob Storage hot LRS"), "{az:?}");
        // 10,000 writes $0.05, 10,000 reads $0.004, a Blob Batch as another operation.
        let r = RequestCounts { put: 10_000, get: 10_000, delete_objects: 10_000, ..Default::default() };
        assert!((az.cost(&r).amount - (0.05 + 0.004 + 0.004)).abs() < 1e-12);
        let mut rs = crate::results::testing::one_cell(&[1.0]);
        let template = rs.measurements.pop().unwrap();
        for (target, prices) in [("s3@rtt=1ms", PriceTable::aws_s3_standard()), ("azblob@rtt=1ms,on=ext4@disk", az)] {
            for op in ["obj:put", "obj:head", "obj:list", "obj:get", "obj:delete", "obj:delete-batch"] {
                let mut m = template.clone();
                let r = RequestCounts { put: 65_536, ..Default::default() };
                (m.target, m.op, m.result.requests, m.result.cost) =
                    (target.into(), op.into(), Some(r), Some(prices.cost(&r)));
                rs.measurements.push(m);
            }
        }
        let text = requests_table(&rs);
        assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flat.contains("Azure Blob Storage hot LRS, East US") && flat.contains("AWS S3 Standard"), "{text}");
        assert_eq!(requests(&rs).len(), 2, "a table per target");
    }

    #[test]
    fn many_ops_turn_the_table_a_row_per_op() {
        let mut rs = crate::results::testing::one_cell(&[1.0]);
        let template = rs.measurements.pop().unwrap();
        let t = PriceTable::aws_s3_standard();
        let ops: Vec<String> = ["loose", "tar@64KiB", "tar.zst@64KiB"]
            .iter()
            .flat_map(|r| ["put", "get-all", "get-one"].map(|s| format!("{r}:{s}")))
            .collect();
        for (i, op) in ops.iter().enumerate() {
            let mut m = template.clone();
            let r = RequestCounts { put: 10 + i as u64, ..Default::default() };
            (m.op, m.result.requests, m.result.cost) = (op.clone(), Some(r), Some(t.cost(&r)));
            rs.measurements.push(m);
        }
        let text = requests_table(&rs);
        assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
        // Every op on a line of its own with its count and price, not cut into columns.
        for (i, op) in ops.iter().enumerate() {
            let line = text.lines().find(|l| l.contains(op.as_str())).unwrap_or_else(|| panic!("{op}: {text}"));
            assert!(line.contains(&format!("{} $0.0000", 10 + i)), "{line}");
        }
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
