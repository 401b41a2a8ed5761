//! The trial loop every experiment runs on ([`drive`]): the order of trials (fixed passes
//! or adaptive rounds), a fresh block and a fresh format per trial, the trial body, the
//! measurements recorded and saved after each one, and a clean stop on a signal or a
//! failure. Its phases: [`first_trials`] and [`next_round`] (which trials), [`trial_label`]
//! and [`announce`] (the progress line: the whole experiment's trials and ETA),
//! [`run_trial`] (one trial on one target), [`record`], [`stopped`] and, after a signal,
//! [`print_partial`] (the tables of what was measured).

use super::{LiveTarget, Order, Stop, TreeMeta, TrialOutcome, rounds, watched};
use crate::analysis::blocks;
use crate::error::{Error, Result};
use crate::measure::PhaseResult;
use crate::measure::TargetWatch;
use crate::measure::progress::Progress;
use crate::ops::REFORMAT;
use crate::report::export::{self, Output};
use crate::results::{Measurement, ResultSet};
use crate::signals;
use crate::storage::cache::CacheState;
use crate::storage::rundir::RunDir;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// How trials are driven: shared by every experiment.
pub(crate) struct Driver<'a> {
    pub name: &'a str,
    pub runs: rounds::Runs,
    pub warmup: u32,
    pub order: Order,
    /// Results files rewritten after every measurement (the JSON first).
    pub outputs: Vec<Output>,
    /// Synthetic times instead of measured ones (tests of the statistics).
    pub mock: Option<rounds::MockTiming>,
    /// Time a reformat of the (managed) target at the end of every trial ([`REFORMAT`]).
    pub reformat: bool,
}

/// Trials waiting to run: (pass, tree index, target index).
type Batch = VecDeque<(u32, usize, usize)>;

/// What the loop knows of the cells so far.
struct Progressed {
    /// Recorded trials per cell so far (run numbers are per cell), by target and tree.
    runs_of: Vec<Vec<u32>>,
    /// Adaptive cells' states, by target and tree (empty with fixed runs).
    cells: Vec<Vec<rounds::CellState>>,
    /// The last block each target began (`LiveTarget::new_block` before each next one).
    block_of_target: Vec<u32>,
    /// Measurements recorded (their `order`).
    order: u64,
    rounds: u64,
    started: Instant,
    /// Wall time of each cell's last trial (warmups included), by target and tree: the
    /// progress line's estimate of the trials to come.
    took: Vec<Vec<Option<Duration>>>,
    /// Trials finished (warmups included).
    trials_done: u64,
    /// The order's seed: rank 0's, so every rank runs the same trials.
    seed: u64,
}

/// Run every trial in order over the live targets (each trial starts with
/// `begin_trial`: a fresh format for managed file systems), record the phases of
/// measured runs, rewrite the results after every measurement, and stop cleanly on a
/// signal or a failure (results saved, targets torn down by drop).
pub(crate) fn drive(
    d: &Driver,
    mut targets: Vec<LiveTarget>,
    mut rs: ResultSet,
    trees: &[TreeMeta],
    progress: &Progress,
    mut trial: impl FnMut(&RunDir, usize, &TargetWatch) -> TrialOutcome,
) -> Result<ResultSet> {
    let seed = {
        let mine = d.mock.map_or_else(rounds::clock_seed, |m| m.seed);
        let s = crate::ranks::from_root(vec![mine as u32, (mine >> 32) as u32]);
        s[0] as u64 | (s[1] as u64) << 32
    };
    let mut p = Progressed {
        runs_of: vec![vec![0u32; trees.len()]; targets.len()],
        cells: Vec::new(),
        block_of_target: vec![0u32; targets.len()],
        order: 0,
        rounds: 0,
        started: Instant::now(),
        took: vec![vec![None; trees.len()]; targets.len()],
        trials_done: 0,
        seed,
    };
    let cells = (trees.len() * targets.len()) as u64;
    match d.runs {
        rounds::Runs::Adaptive(a) => progress
            .start(Some(Duration::from_secs_f64(a.max_time_s.max(0.0))), Some(cells * (d.warmup + a.max_runs) as u64)),
        rounds::Runs::Fixed(_) => progress.start(None, None),
    }
    let mut batch = first_trials(d, trees.len(), targets.len(), seed);
    loop {
        if batch.is_empty() {
            match next_round(d, &mut rs, &targets, trees, &mut p, progress) {
                Some(next) => batch = next,
                None => break,
            }
        }
        let Some((pass, ti, gi)) = batch.pop_front() else { break };
        let recorded = pass >= d.warmup;
        let run = p.runs_of[gi][ti] + 1;
        let tree = &trees[ti];
        let target = &mut targets[gi];
        let label = trial_label(d, &p, pass, run, gi, ti);
        announce(d, &p, &batch, (gi, ti, recorded), progress);
        progress.message(format!("{} · {} · {label}", target.id, tree.spec.key()));
        let block = blocks::block_of_run(run);
        if recorded && block > p.block_of_target[gi] {
            p.block_of_target[gi] = block;
            if let Err(e) = target.new_block() {
                progress.finish();
                save(d, &mut rs, export::Stage::Final)?;
                return Err(e);
            }
        }
        let t0 = Instant::now();
        let (done, mut stop) = run_trial(d, target, tree, ti, &mut trial);
        if let Some(c) = p.cells.get_mut(gi).and_then(|c| c.get_mut(ti)) {
            c.last = t0.elapsed();
        }
        p.took[gi][ti] = Some(t0.elapsed());
        p.trials_done += 1;
        if stop.is_none() && signals::pending() != 0 {
            stop = Some(Stop::Signal(signals::pending())); // arrived after the last phase
        }
        rs.targets[gi] = target.info.clone(); // format count and details as of this trial
        if recorded {
            p.runs_of[gi][ti] = run;
            let at_s = p.started.elapsed().as_secs_f64();
            record(d, &mut rs, &mut p.order, target, tree, (run, block, at_s), done)?;
        }
        if let Some(stop) = stop {
            progress.finish();
            save(d, &mut rs, export::Stage::Final)?;
            let signal = match stop {
                Stop::Signal(s) => s,
                // A helper (mkfs, mount) that failed because the signal reached it too.
                Stop::Failed(_) => signals::pending(),
            };
            if signal != 0 {
                print_partial(d, &rs, &p, planned(d, &p, &batch, None), signal);
            }
            let err = stopped(d, stop, target, tree);
            drop(targets);
            return Err(err);
        }
    }
    progress.finish();
    rs.complete = true;
    save(d, &mut rs, export::Stage::Final)?;
    for t in targets {
        t.finish()?;
    }
    Ok(rs)
}

/// Derive the results and rewrite every output.
fn save(d: &Driver, rs: &mut ResultSet, stage: export::Stage) -> Result<()> {
    rs.derive();
    export::write_all(&d.outputs, rs, stage).map_err(Error::failed)
}

/// The trials known from the start: every pass with fixed runs; the warmups (not
/// recorded) with adaptive runs, whose rounds are decided as results come in.
fn first_trials(d: &Driver, trees: usize, targets: usize, seed: u64) -> Batch {
    match d.runs {
        rounds::Runs::Fixed(n) => rounds::trials(d.order, d.warmup + n, trees, targets, seed),
        rounds::Runs::Adaptive(_) => rounds::trials(d.order, d.warmup, trees, targets, seed),
    }
    .into()
}

/// Adaptive runs: the next round over the cells still short of the precision, as rank 0
/// decided it; None when the runs are done (fixed runs, or the rounds finished).
fn next_round(
    d: &Driver,
    rs: &mut ResultSet,
    targets: &[LiveTarget],
    trees: &[TreeMeta],
    p: &mut Progressed,
    progress: &Progress,
) -> Option<Batch> {
    let rounds::Runs::Adaptive(a) = d.runs else { return None };
    let target_ids: Vec<String> = targets.iter().map(|t| t.id.clone()).collect();
    let tree_keys: Vec<String> = trees.iter().map(|t| t.spec.key()).collect();
    p.cells = rounds::states(rs, &target_ids, &tree_keys, &p.cells);
    if p.rounds == 1 {
        // After the first round: what the minimum runs will take, said before the budget
        // cuts them.
        let round: Duration = p.cells.iter().flatten().map(|c| c.last).sum();
        let need = p.started.elapsed() + round * a.min_runs.saturating_sub(1);
        if need.as_secs_f64() > a.max_time_s && crate::ranks::is_root() {
            let stretch = a.min_runs_budget_s();
            progress.println(&min_runs_line(&a, need.as_secs_f64(), round.as_secs_f64()));
            if stretch > a.max_time_s {
                progress.set_budget(Some(Duration::from_secs_f64(need.as_secs_f64().min(stretch))));
            }
        }
    }
    let (elapsed, sequential) = (p.started.elapsed(), d.order == Order::Sequential);
    let mut next = rounds::next_round(&a, &p.cells, elapsed, sequential);
    // Did the stretch let in trials the budget alone would not? (The footers say so.)
    if let (rounds::Next::Round(r), Some(_)) = (&next, a.stretch_s) {
        let promise = crate::results::adaptive::Adaptive { stretch_s: None, ..a };
        let kept = match rounds::next_round(&promise, &p.cells, elapsed, sequential) {
            rounds::Next::Round(k) => k.len(),
            rounds::Next::Finished { .. } => 0,
        };
        if let (true, Some(info)) = (kept < r.len(), rs.experiment.adaptive.as_mut()) {
            info.stretched = true;
        }
    }
    p.rounds += 1;
    if let (rounds::Next::Round(r), Order::Interleaved) = (&mut next, d.order) {
        rounds::shuffle(r, p.seed, 1 << 32 | p.rounds);
    }
    // Every rank runs what rank 0 decided (clocks and machine activity differ).
    let next = crate::ranks::from_root(match next {
        rounds::Next::Round(r) => r.iter().flat_map(|&(t, g)| [t as u32, g as u32]).collect(),
        rounds::Next::Finished { budget_spent } => vec![u32::MAX, budget_spent as u32],
    });
    if next.first() == Some(&u32::MAX) {
        if let Some(info) = rs.experiment.adaptive.as_mut() {
            info.budget_spent = next.get(1) == Some(&1);
            info.spent_s = p.started.elapsed().as_secs_f64();
        }
        return None;
    }
    Some(next.chunks(2).map(|c| (d.warmup, c[0] as usize, c[1] as usize)).collect())
}

/// The progress line's word for a trial: `warmup 1`, `run 3/5`, `run 7 (±2.1%, target ±2%)`.
fn trial_label(d: &Driver, p: &Progressed, pass: u32, run: u32, gi: usize, ti: usize) -> String {
    match (pass >= d.warmup, d.runs) {
        (false, _) => format!("warmup {}", pass + 1),
        (true, rounds::Runs::Fixed(n)) => format!("run {run}/{n}"),
        (true, rounds::Runs::Adaptive(a)) => match p.cells.get(gi).and_then(|c| c.get(ti)).and_then(|c| c.precision) {
            Some(pr) => format!("run {run} (±{:.1}%, target ±{}%)", pr * 100.0, a.precision * 100.0),
            None => format!("run {run} (target ±{}%)", a.precision * 100.0),
        },
    }
}

/// Trials planned so far, the one in flight (`current`: target, tree, recorded) included:
/// those finished, those queued, and with adaptive runs the minimum runs still owed past
/// the queue (rounds are decided as results come in; a cell may need more) — each with its
/// cell: (target, tree, how many).
fn planned_cells(
    d: &Driver,
    p: &Progressed,
    batch: &Batch,
    current: Option<(usize, usize, bool)>,
) -> Vec<(usize, usize, u64)> {
    let mut v: Vec<(usize, usize, u64)> = batch.iter().map(|&(_, ti, gi)| (gi, ti, 1)).collect();
    if let rounds::Runs::Adaptive(a) = d.runs {
        for (gi, per_tree) in p.runs_of.iter().enumerate() {
            for (ti, &runs) in per_tree.iter().enumerate() {
                let queued = batch.iter().filter(|&&(pass, t, g)| pass >= d.warmup && (g, t) == (gi, ti)).count();
                let now = current.is_some_and(|(g, t, recorded)| recorded && (g, t) == (gi, ti)) as usize;
                let owed = (a.min_runs as u64).saturating_sub((runs as usize + queued + now) as u64);
                if owed > 0 {
                    v.push((gi, ti, owed));
                }
            }
        }
    }
    v
}

/// The number of trials planned so far (see [`planned_cells`]).
fn planned(d: &Driver, p: &Progressed, batch: &Batch, current: Option<(usize, usize, bool)>) -> u64 {
    let in_flight = current.is_some() as u64;
    p.trials_done + in_flight + planned_cells(d, p, batch, current).iter().map(|c| c.2).sum::<u64>()
}

/// Tell the progress line where the whole experiment stands as trial `current` begins:
/// trials done and planned, and the time of this trial and of the planned ones after it,
/// each estimated by its cell's last trial (a cell not run yet: the mean of those run).
fn announce(d: &Driver, p: &Progressed, batch: &Batch, current: (usize, usize, bool), progress: &Progress) {
    let seen: Vec<Duration> = p.took.iter().flatten().flatten().copied().collect();
    let mean = (!seen.is_empty()).then(|| seen.iter().sum::<Duration>() / seen.len() as u32);
    let est = |gi: usize, ti: usize| p.took[gi][ti].or(mean);
    let after: Option<Duration> =
        planned_cells(d, p, batch, Some(current)).iter().map(|&(gi, ti, n)| est(gi, ti).map(|t| t * n as u32)).sum();
    let this = est(current.0, current.1);
    progress.trial(p.trials_done, planned(d, p, batch, Some(current)), this, after);
}

/// After a signal, the tables of what was measured, as a finished run prints them, with
/// the cells that have fewer runs than asked marked (rank 0; the results were saved first).
fn print_partial(d: &Driver, rs: &ResultSet, p: &Progressed, planned: u64, signal: i32) {
    if !crate::ranks::is_root() {
        return;
    }
    let name = match signal {
        2 => "SIGINT".to_string(),
        15 => "SIGTERM".to_string(),
        s => format!("signal {s}"),
    };
    let how = format!(
        "interrupted by {name} after {} of {planned} trials planned ({}): what was measured so far",
        p.trials_done,
        crate::measure::progress::clock(p.started.elapsed())
    );
    let body = (super::kinds::view(d.name).terminal)(rs);
    let json = d.outputs.first().map(|o| o.path.as_path());
    let text = crate::report::views::after_interrupt(rs, &body, json, &how);
    use std::io::Write;
    if crate::fs::output::stdout_taken() {
        eprint!("{text}"); // an output file is `-`: standard output carries only that
    } else {
        let mut o = std::io::stdout().lock();
        let _ = o.write_all(text.as_bytes());
        let _ = o.flush();
    }
}

/// One trial of tree `ti` on `target`: begin it (a fresh format on a managed target), run
/// the experiment's trial body, then the timed reformat if the driver asks for it.
fn run_trial(
    d: &Driver,
    target: &mut LiveTarget,
    tree: &TreeMeta,
    ti: usize,
    trial: &mut impl FnMut(&RunDir, usize, &TargetWatch) -> TrialOutcome,
) -> TrialOutcome {
    let begun = target.begin_trial().map(|_| ());
    // Cloned after the trial's mount: the processes serving it are current.
    let watch = target.watch.clone();
    let (mut done, mut stop) = match (begun, target.rundir()) {
        (Ok(()), Some(rundir)) => trial(rundir, ti, &watch),
        (Ok(()), None) => (Vec::new(), Some(Stop::Failed("run directory missing".into()))),
        (Err(e), _) => (Vec::new(), Some(Stop::Failed(e.to_string()))),
    };
    if d.reformat && stop.is_none() {
        let mut r = watched(&watch, CacheState::Warm, || reformat_phase(target, tree));
        r.cache = None; // reads nothing: no cache state to report
        if let Some(f) = &r.failed {
            stop = Some(Stop::Failed(format!("reformat failed: {f}")));
        }
        done.push((REFORMAT.to_string(), r));
    }
    (done, stop)
}

/// Record a measured trial's phases as measurements, saving after each.
fn record(
    d: &Driver,
    rs: &mut ResultSet,
    order: &mut u64,
    target: &LiveTarget,
    tree: &TreeMeta,
    (run, block, at_s): (u32, u32, f64),
    done: Vec<(String, PhaseResult)>,
) -> Result<()> {
    let ranks = crate::ranks::size() as u64;
    for (op, mut result) in done {
        if let Some(mock) = &d.mock {
            mock.apply(&mut result, tree.spec.files * ranks, tree.bytes * ranks, *order);
        }
        rs.measurements.push(Measurement {
            experiment: d.name.to_string(),
            target: target.id.clone(),
            op,
            tree: tree.spec.clone(),
            tree_key: tree.spec.key(),
            // Under MPI every rank makes its own copy of the tree: the job's totals.
            tree_files: tree.spec.files * ranks,
            tree_bytes: tree.bytes * ranks,
            tree_dirs: tree.dirs * ranks,
            run,
            order: *order,
            block: Some(block),
            at_s: Some(at_s),
            result,
        });
        *order += 1;
        save(d, rs, export::Stage::Progress)?;
    }
    Ok(())
}

/// The error a stopped run ends with (its results were saved first).
fn stopped(d: &Driver, stop: Stop, target: &LiveTarget, tree: &TreeMeta) -> Error {
    match stop {
        Stop::Signal(signal) => Error::Interrupted { signal },
        Stop::Failed(msg) => {
            let info = &target.info;
            let saved = d.outputs.first().map(|o| format!("; finished measurements saved to {}", o.path.display()));
            Error::failed(format!(
                "{msg} (target {} = {}, {}, tree {}{})",
                target.id,
                info.path.display(),
                info.fs_type,
                tree.spec.key(),
                saved.unwrap_or_default()
            ))
        }
    }
}

/// Time a reformat of `target` with `tree` on it (unmount, mkfs, mount, a new run
/// directory), counted as removing the tree's files.
fn reformat_phase(target: &mut LiveTarget, tree: &TreeMeta) -> PhaseResult {
    let t0 = std::time::Instant::now();
    let (u0, s0) = crate::measure::cpu_times();
    let r = target.reformat();
    let el = t0.elapsed().as_secs_f64();
    let (u1, s1) = crate::measure::cpu_times();
    let files = tree.spec.files;
    PhaseResult {
        elapsed_s: el,
        files,
        bytes: tree.bytes,
        dirs: tree.dirs,
        threads: 1,
        cpu_user_s: u1 - u0,
        cpu_sys_s: s1 - s0,
        failed: r.err().map(|e| e.to_string()),
        portions: vec![crate::measure::Portion { files, elapsed_s: el, end_files: files }],
        first_finish_s: el,
        last_finish_s: el,
        ..PhaseResult::default()
    }
}

/// What the minimum runs will take against the budget, said after the first round:
/// the default budget stretched for them, or `--max-time` cutting them short.
fn min_runs_line(a: &crate::results::adaptive::Adaptive, need_s: f64, round_s: f64) -> String {
    use crate::units::fmt_secs;
    let head = format!(
        "manyfiles: {} runs of every cell take about {} here (a round takes {})",
        a.min_runs,
        fmt_secs(need_s),
        fmt_secs(round_s)
    );
    let stretch = a.min_runs_budget_s();
    if stretch <= a.max_time_s {
        format!(
            "{head}; --max-time {} stops sooner: cells will have fewer runs, below {} no interval",
            fmt_secs(a.max_time_s),
            crate::analysis::stats::MEDIAN_CI_MIN_N
        )
    } else if need_s <= stretch {
        format!(
            "{head}: the default {} budget stretches to that, so that every cell gets an interval (--max-time sets a budget that holds)",
            fmt_secs(a.max_time_s)
        )
    } else {
        format!(
            "{head}: the default {} budget stretches only to {}, so cells will have fewer runs, below {} no interval (fewer files or ops, or a longer --max-time)",
            fmt_secs(a.max_time_s),
            fmt_secs(stretch),
            crate::analysis::stats::MEDIAN_CI_MIN_N
        )
    }
}

#[cfg(test)]
mod tests {
    use super::min_runs_line;
    use crate::results::adaptive::Adaptive;

    #[test]
    fn the_minimum_runs_line_says_whether_the_budget_gives_way() {
        // --max-time given: it holds, and the cells will be short.
        let given = Adaptive { max_time_s: 60.0, ..Adaptive::default_settings() };
        let line = min_runs_line(&given, 240.0, 40.0);
        assert!(line.starts_with("manyfiles: 6 runs of every cell take about"), "{line}");
        assert!(
            line.contains("--max-time") && line.contains("stops sooner") && line.contains("below 6 no interval"),
            "{line}"
        );
        // The default budget stretches to what the minimum runs take…
        let default = Adaptive::default_budget();
        let line = min_runs_line(&default, 240.0, 40.0);
        assert!(line.contains("budget stretches to that") && !line.contains("stops sooner"), "{line}");
        // … but not past its stretch.
        let line = min_runs_line(&default, 900.0, 150.0);
        assert!(line.contains("stretches only to") && line.contains("below 6 no interval"), "{line}");
    }
}
