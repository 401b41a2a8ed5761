//! `pack:FORMAT`: the tree packed into one container beside DST, the container copied,
//! and unpacked into DST, timed as one op (the `pack` experiment times the steps apart
//! and mounts too). Checked against SRC afterwards like every pair op.

use super::registry::PairOp;
use crate::measure::{PhaseResult, Portion, children_cpu_times, cpu_times};
use crate::pack::{self, Container};
use std::path::Path;
use std::time::Instant;

pub struct PackOp {
    pub container: Box<dyn Container>,
}

/// `pack:FORMAT` for a container that can be unpacked and whose tools are here.
pub fn by_name(format: &str) -> Result<PackOp, String> {
    let c = pack::by_name(format)
        .ok_or_else(|| format!("pack:{format}: unknown container (known: {})", pack::NAMES.join(", ")))?;
    if !c.can_unpack() {
        return Err(format!("pack:{format}: this container is only mounted; time it with `manyfiles pack`"));
    }
    if let Some((t, p)) = pack::missing(&c.tools()).first() {
        return Err(format!("pack:{format}: {t} not found: install the Debian package {p}"));
    }
    Ok(PackOp { container: c })
}

/// Time `f` as one step over a tree of `files`, `bytes` and `dirs` (errors = 1 when it
/// failed, with its message). CPU time includes the external tools it ran.
pub fn timed(files: u64, bytes: u64, dirs: u64, threads: usize, f: impl FnOnce() -> Result<(), String>) -> PhaseResult {
    let both = || {
        let ((a, b), (c, d)) = (cpu_times(), children_cpu_times());
        (a + c, b + d)
    };
    let (u0, s0) = both();
    let t0 = Instant::now();
    let r = f();
    let el = t0.elapsed().as_secs_f64();
    let (u1, s1) = both();
    PhaseResult {
        elapsed_s: el,
        files,
        bytes,
        dirs,
        threads,
        cpu_user_s: u1 - u0,
        cpu_sys_s: s1 - s0,
        errors: r.is_err() as u64,
        first_error: r.err(),
        portions: vec![Portion { files, elapsed_s: el, end_files: files }],
        first_finish_s: el,
        last_finish_s: el,
        ..PhaseResult::default()
    }
}

impl PairOp for PackOp {
    fn name(&self) -> String {
        format!("pack:{}", self.container.name())
    }
    fn run(&self, src: &Path, dst: &Path, plan: crate::engine::inflight::Plan) -> PhaseResult {
        let (threads, _) = plan.threads_and_max();
        // Both files live in the run directory that holds DST; removed untimed.
        let dir = dst.parent().unwrap_or(Path::new("."));
        let n = self.container.name();
        let packed = dir.join(format!("packed.{n}"));
        let copied = dir.join(format!("copied.{n}"));
        let (u, _, _) = pack::walk_tree(src, threads, false);
        let c = &self.container;
        let r = timed(u.files, u.bytes, u.dirs.saturating_sub(1), threads, || {
            c.pack(src, &packed, threads)?;
            std::fs::copy(&packed, &copied).map_err(|e| format!("{}: {e}", copied.display()))?;
            c.unpack(&copied, dst, threads).unwrap_or(Ok(()))
        });
        for f in [&packed, &copied] {
            let _ = std::fs::remove_file(f);
        }
        r
    }
}
