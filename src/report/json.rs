//! JSON: the versioned document every later command reads.

use super::ResultSet;
use super::export::Exporter;
use std::path::Path;

pub struct JsonExporter;

impl Exporter for JsonExporter {
    fn render(&self, rs: &ResultSet) -> Result<Vec<u8>, String> {
        let mut v = serde_json::to_vec_pretty(rs).map_err(|e| e.to_string())?;
        v.push(b'\n');
        Ok(v)
    }
}

pub fn read(path: &Path) -> Result<ResultSet, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{} is not a manyfiles result: {e}", path.display()))
}
