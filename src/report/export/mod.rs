//! Exporters: a ResultSet rendered as bytes (JSON, CSV, Markdown), written atomically.
//! One trait, one file per format.

pub mod csv;
pub mod json;
pub mod markdown;

use crate::fs::output::{is_file_destination, write_output};
use crate::results::ResultSet;
use std::path::PathBuf;

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
            Format::Json => Box::new(json::JsonExporter),
            Format::Csv => Box::new(csv::CsvExporter),
            Format::Markdown => Box::new(markdown::MarkdownExporter),
        }
    }
}

/// Where one export goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    pub path: PathBuf,
    pub format: Format,
}

/// When outputs are written: after every measurement (`Progress`: regular files only,
/// rewritten atomically, so a crash keeps what was measured) or once at the end
/// (`Final`: also devices, fifos, sockets and standard output, which would otherwise
/// receive one document per measurement).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    Progress,
    Final,
}

/// Render and write every output.
pub fn write_all(outputs: &[Output], rs: &ResultSet, stage: Stage) -> Result<(), String> {
    for o in outputs {
        if stage == Stage::Progress && !is_file_destination(&o.path) {
            continue;
        }
        let bytes = o.format.exporter().render(rs)?;
        write_output(&o.path, &bytes).map_err(|e| format!("cannot write {}: {e}", o.path.display()))?;
    }
    Ok(())
}
