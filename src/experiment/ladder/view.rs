//! The ladder's view: the answer first (per-file cost, break-even, their quality), then
//! the rungs' table and the fitted models; the generic page in HTML.

use crate::report::table;
use crate::report::views::{GENERIC, View};
use crate::results::ResultSet;

pub const VIEW: View = View { terminal: tables, ..GENERIC };

fn tables(rs: &ResultSet) -> String {
    // The answer first, then the measurements it rests on.
    let mut body = table::answer(rs);
    body.push_str(&table::ladder(rs));
    body.push('\n');
    let m = table::models(rs);
    if !m.is_empty() {
        body.push_str(&m);
        body.push('\n');
    }
    body
}
