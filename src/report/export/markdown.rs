//! Markdown: the summary and the fitted costs as tables ready for a wiki or blog post,
//! with where and how they were measured.

use super::Exporter;
use crate::report::table::fmt_mean_ci;
use crate::results::ResultSet;
use crate::units::{fmt_size, sig3};

pub struct MarkdownExporter;

impl Exporter for MarkdownExporter {
    fn render(&self, rs: &ResultSet) -> Result<Vec<u8>, String> {
        let p = &rs.provenance;
        let e = &rs.experiment;
        // The first line is the mark `--markdown` looks for before it replaces a file.
        let mut s = format!("{}\n## manyfiles {}: {}\n\n", crate::fs::output::MARKDOWN_MARK, e.name, e.ops.join(", "));
        let machine = if p.host.is_empty() {
            format!("a machine {}'s output does not record", p.tool)
        } else {
            format!(
                "{} ({}, {} cores, {:.0} GiB RAM, {})",
                p.host,
                p.cpu_model,
                p.cores,
                p.memory_bytes as f64 / (1u64 << 30) as f64,
                p.kernel
            )
        };
        s.push_str(&format!(
            "Measured {} on {machine} with {} {}: {} runs per cell (+{} warmup), {}, {} order, caches {}. Figures are {}; means ± Student-t 95% half-widths beside them.\n\n",
            p.started_utc,
            p.tool,
            p.version,
            match e.adaptive {
                Some(a) => format!("adaptive ({}–{}, to ±{}%)", a.min_runs, a.max_runs, sig3(a.precision * 100.0)),
                None => e.runs.to_string(),
            },
            e.warmup,
            crate::report::table::threads_text(rs),
            e.order,
            format!("{:?}", e.caches).to_lowercase(),
            crate::report::table::intervals_text(rs)
        ));
        s.push_str("| target | file system | op | tree | n | median [95% CI] | mean ± 95% CI | CV |\n|---|---|---|---|---:|---:|---:|---:|\n");
        for r in &rs.summaries {
            let fs = rs.targets.iter().find(|t| t.id == r.target).map(|t| t.fs_type.clone()).unwrap_or_default();
            let st = &r.stats;
            s.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
                crate::report::target_name(rs, &r.target),
                fs,
                r.op,
                r.tree_key,
                st.n,
                crate::report::table::fmt_headline(st),
                fmt_mean_ci(st.mean_s, st.ci_half_width()),
                st.cv.map(|c| format!("{}%", sig3(c * 100.0))).unwrap_or_else(|| "—".into())
            ));
        }
        if !rs.models.is_empty() {
            s.push_str(&format!("\n**Fitted cost** (time = a·files + b·bytes + c·dirs + d·Σn² + k, n files per directory, k paid once per run; non-negative least squares on the relative error of each tree's median; left-out error: the median error predicting each tree from a fit of the others, above {} no figure is shown)\n\n| target | op | per file (± s.e.) | bandwidth | per dir (± s.e.) | per run (± s.e.) | break-even file size | R² | left-out error |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n", crate::analysis::model::check::pct(crate::analysis::model::check::MAX_LEFT_OUT_ERROR)));
            for m in &rs.models {
                let c = &m.model;
                let check = m.check();
                let left_out = check.left_out_error.map_or("—".into(), crate::analysis::model::check::pct);
                if let Some(why) = &check.why_not {
                    // No figure from a fit that misses its own trees: the row says why.
                    s.push_str(&format!(
                        "| {} | {} | {} | — | — | — | — | {} | {left_out} |\n",
                        crate::report::target_name(rs, &m.target),
                        m.op,
                        why.replace('|', "/"),
                        sig3(c.r2)
                    ));
                    continue;
                }
                s.push_str(&format!(
                    "| {} | {} | {} | {} | {} | {} | {} | {} | {left_out} |\n",
                    crate::report::target_name(rs, &m.target),
                    m.op,
                    fmt_mean_ci(c.per_file_s, Some(c.per_file_se)),
                    match c.bandwidth_bytes_per_s {
                        Some(_) if !m.bytes_resolved() => "const".into(),
                        Some(b) => format!("{} MiB/s", sig3(b / 1048576.0)),
                        None => "—".into(),
                    },
                    if c.per_dir_s > 0.0 { fmt_mean_ci(c.per_dir_s, Some(c.per_dir_se)) } else { "—".into() },
                    m.per_run().map(|(v, se)| fmt_mean_ci(v, Some(se))).unwrap_or_else(|| "—".into()),
                    c.break_even_bytes.filter(|_| m.bytes_resolved()).map(fmt_size).unwrap_or_else(|| "—".into()),
                    sig3(c.r2)
                ));
            }
            for l in crate::report::dir_entry_notes(rs).into_iter().chain(crate::results::bytes_note(rs)) {
                s.push_str(&format!("\n{l}\n"));
            }
        }
        if !rs.detections.is_empty() {
            s.push_str("\n**Detections**\n\n");
            for d in &rs.detections {
                s.push_str(&format!("- {}\n", crate::report::detection_text(rs, d)));
            }
        }
        if !rs.warnings.is_empty() {
            s.push_str("\n**Warnings**\n\n");
            for w in &rs.warnings {
                s.push_str(&format!("- {}\n", crate::report::named(rs, w)));
            }
        }
        s.push_str("\n**Targets**\n\n");
        for t in &rs.targets {
            let made =
                t.managed.as_ref().map(|m| format!(", made by `{}`", m.mkfs_command.join(" "))).unwrap_or_default();
            s.push_str(&format!(
                "- {}: {} ({}, block {}){made}\n",
                t.shown(),
                t.path.display(),
                t.fs_type,
                fmt_size(t.block_size as f64)
            ));
        }
        Ok(s.into_bytes())
    }
}
