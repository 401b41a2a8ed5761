//! The ladder's view: the rungs' table, then the fitted models; the generic page in HTML.

use crate::report::table;
use crate::report::views::{GENERIC, View};
use crate::results::ResultSet;

pub const VIEW: View = View { terminal: tables, ..GENERIC };

fn tables(rs: &ResultSet) -> String {
    let mut body = table::ladder(rs);
    body.push('\n');
    let m = table::models(rs);
    if !m.is_empty() {
        body.push_str(&m);
        body.push('\n');
    }
    body
}
