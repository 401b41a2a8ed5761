//! Exporters: a ResultSet rendered as bytes (JSON, CSV, Markdown), written atomically.
//! One trait, one file per format.

use super::ResultSet;
use std::io::Write;
use std::path::{Path, PathBuf};

pub trait Exporter {
    fn render(&self, rs: &ResultSet) -> Result<Vec<u8>, String>;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Csv,
    Markdown,
}

impl Format {
    pub fn exporter(self) -> Box<dyn Exporter> {
        match self {
            Format::Json => Box::new(super::json::JsonExporter),
            Format::Csv => Box::new(super::csv::CsvExporter),
            Format::Markdown => Box::new(super::markdown::MarkdownExporter),
        }
    }
}

/// Where one export goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    pub path: PathBuf,
    pub format: Format,
}

/// Render and write every output (each atomically).
pub fn write_all(outputs: &[Output], rs: &ResultSet) -> Result<(), String> {
    for o in outputs {
        let bytes = o.format.exporter().render(rs)?;
        write_atomic(&o.path, &bytes).map_err(|e| format!("cannot write {}: {e}", o.path.display()))?;
    }
    Ok(())
}

/// Temp file in the same directory, fsync, rename: a reader or a crash never sees half
/// a file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "results".into());
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
