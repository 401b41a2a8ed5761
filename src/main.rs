//! Thin: parse → config → run → print → exit code.

mod cli;

use clap::Parser;
use cli::{Cli, Command};
use manyfiles::error::Result;
use manyfiles::ranks;
use manyfiles::report::table;
use manyfiles::results::ResultSet;
use manyfiles::units::{fmt_rate, fmt_secs, fmt_size};
use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    manyfiles::ranks::init();
    let code = main_here();
    manyfiles::ranks::finalize();
    code
}

fn main_here() -> ExitCode {
    let args: Vec<String> = std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect();
    if let Some((flag, value)) = cli::negative_value(&args) {
        eprintln!("manyfiles: {flag}: must not be negative: {value}");
        return ExitCode::from(2);
    }
    if let Err(e) = manyfiles::helper::check_env() {
        eprintln!("manyfiles: {e}");
        return ExitCode::from(2);
    }
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind::*;
            return match e.kind() {
                DisplayHelp | DisplayVersion => {
                    let _ = e.print();
                    ExitCode::SUCCESS
                }
                DisplayHelpOnMissingArgumentOrSubcommand => {
                    eprintln!(
                        "manyfiles: a command is needed: ladder, ops, bigfile, clusters, dirsize, run, gen, copy, sync, rm, scan, report, compare, predict, plan, pack, cleanup, mount, umount, completions or man (see manyfiles --help)"
                    );
                    ExitCode::from(2)
                }
                _ => {
                    eprintln!("manyfiles: {} (see manyfiles --help)", cli::clap_line(&e));
                    ExitCode::from(2)
                }
            };
        }
    };
    let result = match run(cli, args) {
        // A helper or a phase that failed because a signal arrived: report the signal.
        Err(manyfiles::error::Error::Failed(_)) if manyfiles::signals::pending() != 0 => {
            Err(manyfiles::error::Error::Interrupted { signal: manyfiles::signals::pending() })
        }
        r => r,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if ranks::size() > 1 && ranks::failure_agreed() => {
            // Every rank knows and stops here; rank 0 tells it once.
            if ranks::is_root() {
                eprintln!("manyfiles: {e}");
            }
            ExitCode::from(e.exit_code() as u8)
        }
        Err(e) if ranks::size() > 1 => {
            // One rank failing alone would leave the others waiting at a barrier: end
            // the whole job. Rank 0 saved the finished measurements before returning;
            // the others wait a moment so a failure every rank shares is told once, by
            // rank 0 (whose abort ends them first).
            if !ranks::is_root() {
                std::thread::sleep(std::time::Duration::from_secs(2));
            }
            let host = rustix::system::uname().nodename().to_string_lossy().into_owned();
            eprintln!("manyfiles: rank {} of {} ({host}): {e}", ranks::rank(), ranks::size());
            ranks::abort(e.exit_code())
        }
        Err(e) => {
            eprintln!("manyfiles: {e}");
            ExitCode::from(e.exit_code() as u8)
        }
    }
}

/// Print to stdout; a closed pipe (`| head`) is not an error.
fn out(text: &str) {
    if !ranks::is_root() {
        return; // under MPI, rank 0 speaks for the job
    }
    if manyfiles::fs::output::stdout_taken() {
        eprint!("{text}"); // an output file is `-`: standard output carries only that
        return;
    }
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(text.as_bytes());
    let _ = o.flush();
}

fn run(cli: Cli, args: Vec<String>) -> Result<()> {
    match cli.command {
        Command::Run(a) => {
            let file_args = cli::toml_args(&a)?;
            if let Some((flag, value)) = cli::negative_value(&file_args) {
                return Err(manyfiles::error::Error::bad(
                    "FILE",
                    format!("{}: key {}: must not be negative: {value}", a.file.display(), cli::flag_key(&flag)),
                ));
            }
            let inner = Cli::try_parse_from(&file_args).map_err(|e| {
                let line = cli::clap_line(&e);
                let key = match e.get(clap::error::ContextKind::InvalidArg) {
                    Some(clap::error::ContextValue::String(arg)) if arg.starts_with("--") => {
                        let flag = arg.split([' ', '=']).next().unwrap_or(arg);
                        format!("key {}: ", cli::flag_key(flag))
                    }
                    _ => String::new(),
                };
                manyfiles::error::Error::bad("FILE", format!("{}: {key}{line}", a.file.display()))
            })?;
            if matches!(inner.command, Command::Run(_)) {
                return Err(manyfiles::error::Error::bad("FILE", "an experiment file cannot run another"));
            }
            // Provenance records the command as typed plus what the file stood for.
            let mut recorded = args;
            recorded.push("=>".into());
            recorded.extend(file_args);
            return run(inner, recorded);
        }
        // Under MPI only the experiments run (each rank in its own run directory); the
        // other commands would have every rank work on the same paths.
        ref c
            if ranks::size() > 1
                && !matches!(
                    c,
                    Command::Ladder(_)
                        | Command::Ops(_)
                        | Command::Dirsize(_)
                        | Command::Rm(_)
                        | Command::Scan(_)
                        | Command::Copy(_)
                        | Command::Sync(_)
                ) =>
        {
            return Err(manyfiles::error::Error::bad(
                "COMMAND",
                "this command does not run under MPI (ladder, ops, dirsize, copy, sync, rm and scan do): refused, not distributed; start it without mpirun",
            ));
        }
        Command::Bigfile(a) => {
            let cfg = cli::bigfile_config(&a, args)?;
            let rs = manyfiles::experiment::bigfile::run(&cfg)?;
            print_report(&rs, &manyfiles::report::bigfile::table(&rs), cfg.json.as_deref());
        }
        Command::Clusters(a) => {
            let cfg = cli::clusters_config(&a, args)?;
            let rs = manyfiles::experiment::run(&cfg)?;
            print_report(&rs, &manyfiles::report::clusters::table(&rs, a.run.portion), cfg.json.as_deref());
        }
        Command::Dirsize(a) => {
            let cfg = cli::dirsize_config(&a, args)?;
            let rs = manyfiles::experiment::run(&cfg)?;
            print_report(&rs, &manyfiles::experiment::dirsize::report(&rs, a.run.portion), cfg.json.as_deref());
        }
        Command::Ladder(a) => {
            let cfg = cli::ladder_config(&a, args)?;
            let rs = manyfiles::experiment::run(&cfg)?;
            print_results(&rs, true, cfg.json.as_deref());
        }
        Command::Ops(a) => {
            let cfg = cli::ops_config(&a, args)?;
            let rs = manyfiles::experiment::run(&cfg)?;
            print_results(&rs, false, cfg.json.as_deref());
        }
        Command::Copy(a) => {
            let (mut o, json) = cli::copy_config(manyfiles::engine::copy::Mode::Copy, &a.src, &a.dst, &a.common, true)?;
            o.reflink = a.reflink;
            return ranks::agree(copy_report(&o, json.as_deref(), args));
        }
        Command::Sync(a) => {
            let (mut o, json) =
                cli::copy_config(manyfiles::engine::copy::Mode::Sync, &a.src, &a.dst, &a.common, !a.dry_run)?;
            (o.checksum, o.delete, o.dry_run) = (a.checksum, a.delete, a.dry_run);
            return ranks::agree(copy_report(&o, json.as_deref(), args));
        }
        // Under MPI every rank has the job's summary and ends the same way.
        Command::Rm(a) => return ranks::agree(rm(&a)),
        Command::Scan(a) => return ranks::agree(scan(&a, args)),
        Command::Report(a) => {
            let cfg = cli::report_config(&a)?;
            out(&manyfiles::report::run_report(cfg)?);
        }
        Command::Compare(a) => {
            let cfg = cli::compare_config(&a)?;
            let (text, verdict) = manyfiles::report::run_compare(&cfg);
            out(&text);
            verdict?;
        }
        Command::Predict(a) => predict(&a, args)?,
        Command::Plan(a) => {
            let cfg = cli::plan_config(&a)?;
            out(&manyfiles::report::run_plan(cfg)?);
        }
        Command::Pack(a) => {
            let cfg = cli::pack_config(&a, args)?;
            let o = manyfiles::experiment::pack::run(&cfg)?;
            let mut body = String::new();
            if let Some(p) = &a.path {
                let m = &o.results.measurements;
                let (files, bytes) = m.first().map(|m| (m.tree_files, m.tree_bytes)).unwrap_or_default();
                body.push_str(&format!(
                    "tree: {} ({files} files, {}; recorded as n={files} with their mean size)\n",
                    p.display(),
                    fmt_size(bytes as f64)
                ));
            }
            body.push_str(&manyfiles::report::pack::report(&o.results, cfg.copies, cfg.consumer));
            for w in &o.skipped {
                body.push_str(&format!("skipped: {w}\n"));
            }
            print_report(&o.results, &body, cfg.json.as_deref());
        }
        Command::Completions(a) => out(&String::from_utf8_lossy(&cli::completions(a.shell))),
        Command::Man(a) => {
            let pages = cli::man_pages(&a.dir, a.replace.force)?;
            out(&format!(
                "wrote {} man pages into {} (manyfiles.1, manyfiles-COMMAND.1)\n",
                pages.len(),
                a.dir.display()
            ));
        }
        Command::Cleanup(a) => {
            let report = manyfiles::storage::registry::cleanup_with(a.mounts)?;
            out(&format!("{report}\n"));
        }
        Command::Mount(a) => {
            let (spec, size) = cli::mount_config(&a)?;
            let m = manyfiles::storage::user_mount::mount(&spec, &a.dir, size)?;
            let d = &m.details;
            let class = d.class.as_ref().map(|c| {
                let exp = match c.expected_read_iops {
                    Some([q1, qn]) => format!("expected read IOPS {q1:.0} at qd 1, {qn:.0} at qd ≥ {}", c.threads),
                    None => "no read delay".into(),
                };
                format!(
                    " · class {} ({} thread(s), read {} ms, write {} ms per request; {exp}) · {} · {}",
                    c.class.name, c.threads, c.delay_read_ms, c.delay_write_ms, c.nbdkit_version, c.nbdfuse_version
                )
            });
            out(&format!(
                "mounted {} at {} ({}){}\nundo with: manyfiles umount {}\n",
                d.spec,
                m.dir.display(),
                d.device.as_deref().unwrap_or("no device"),
                class.unwrap_or_default(),
                m.dir.display()
            ));
        }
        Command::Umount(a) => {
            let report = manyfiles::storage::user_mount::umount(&a.dir)?;
            out(&format!("{report}\n"));
        }
        Command::Gen(a) => {
            let cfg = cli::gen_config(&a)?;
            let g = manyfiles::generate::generate(&cfg)?;
            let r = &g.result;
            out(&format!(
                "created {} files ({}) in {} directories under {} in {} on {} thread{} (one run: {}, {} MiB/s)\n",
                r.files,
                fmt_size(r.bytes as f64),
                g.dirs,
                cfg.dir.display(),
                fmt_secs(r.elapsed_s),
                g.threads,
                if g.threads == 1 { "" } else { "s" },
                fmt_rate(r.files as f64 / r.elapsed_s.max(1e-9), "files"),
                manyfiles::units::sig3(r.bytes as f64 / r.elapsed_s.max(1e-9) / 1048576.0)
            ));
            out(&format!("file system: {} on {}\n", g.info.fs_type, g.info.mount_point));
        }
    }
    Ok(())
}

/// `predict --on/--fs`: walk the tree once, calibrate on the target with trees shaped
/// like it, and hand the calibration to the prediction as its model.
fn calibrated(
    cal: &manyfiles::experiment::calibrate::CalibrateConfig,
    p: cli::PredictParts,
) -> manyfiles::error::Result<manyfiles::report::PredictConfig> {
    use manyfiles::report::TreeInput;
    let (inv, tree_path) = match p.tree {
        TreeInput::Path(path) => (manyfiles::tree::inventory::Inventory::scan(&path, p.threads)?, Some(path)),
        TreeInput::Inventory(i) => (*i, None),
    };
    let model = manyfiles::experiment::calibrate::run(cal, &inv)?;
    let model_name = match &cal.save {
        Some(s) => s.display().to_string(),
        None => "calibration (not saved: --save-calibration FILE keeps it)".into(),
    };
    Ok(manyfiles::report::PredictConfig {
        model_name,
        model,
        tree: TreeInput::Inventory(Box::new(inv)),
        interval_s: p.interval_s,
        json: p.json,
        threads: p.threads,
        runs_ahead: p.runs_ahead,
        calibrated: true,
        check_threads: p.check_threads,
        tree_path,
    })
}

/// `predict`: calibrate first if asked; the predictions are printed even when the tree
/// could not be read whole (then exit 1).
fn predict(a: &cli::PredictArgs, args: Vec<String>) -> Result<()> {
    let cfg = match cli::predict_config(a, args)? {
        cli::PredictJob::Model(cfg) => *cfg,
        cli::PredictJob::Calibrate(cal, p) => calibrated(&cal, p)?,
    };
    let (text, verdict) = manyfiles::report::run_predict(&cfg);
    out(&text);
    verdict
}

/// Title, the command's own tables, then warnings, targets, machine and the results file.
fn print_report(rs: &ResultSet, body: &str, json: Option<&std::path::Path>) {
    let mut s = table::title(rs);
    s.push('\n');
    s.push_str(body);
    s.push_str(&manyfiles::report::ranks::table(rs));
    s.push_str(&table::footer(rs));
    if let Some(p) = json {
        s.push_str(&format!("results: {}\n", p.display()));
    }
    out(&s);
}

fn print_results(rs: &ResultSet, ladder: bool, json: Option<&std::path::Path>) {
    let mut body = String::new();
    if ladder {
        body.push_str(&table::ladder(rs));
        body.push('\n');
        let m = table::models(rs);
        if !m.is_empty() {
            body.push_str(&m);
            body.push('\n');
        }
    } else {
        body.push_str(&table::ops_detail(rs));
        body.push('\n');
    }
    print_report(rs, &body, json);
}

/// Run a copy or sync, print its summary (and failures), write the JSON; non-zero exit
/// when anything failed or differed.
fn copy_report(o: &manyfiles::engine::copy::Options, json: Option<&std::path::Path>, args: Vec<String>) -> Result<()> {
    use manyfiles::error::Error;
    // --itemize --json: the changes stream into the document as they happen.
    let mut o = o.clone();
    if o.itemize
        && let Some(p) = json
    {
        if ranks::size() > 1 {
            return Err(Error::bad(
                "--itemize",
                "with --json is not supported under MPI yet (run it without --json for the lines)",
            ));
        }
        o.changes = Some(std::sync::Arc::new(manyfiles::engine::copy::itemize::JsonLog::new(p)));
    }
    // Under a launcher every rank copies part of the tree (dist::copy); one rank is the
    // local engine, as always.
    let mut s = if ranks::size() > 1 {
        manyfiles::engine::copy::mpi::run(&o, args)?
    } else {
        manyfiles::engine::copy::run(&o, args)?
    };
    out(&s.text());
    if let Some(p) = json.filter(|_| ranks::is_root()) {
        manyfiles::engine::copy::write_json(&o, &mut s, p)?;
    }
    if s.interrupted {
        return Err(interrupted());
    }
    if !s.ok() {
        let what = match s.verify.as_ref() {
            Some(v) => format!("{} failed, {} differences after verify", s.failed, v.differences),
            None => format!("{} failed", s.failed),
        };
        let what = match s.losses.iter().map(|l| l.count).sum::<u64>() {
            0 => what,
            _ if s.losses_accepted => what,
            n => format!("{what}, {n} losses (what the destination cannot hold; --lossy or --no-… accepts)"),
        };
        let what = match &s.timing.sync_error {
            Some(e) => format!("{what}; --durable: {e}"),
            None => what,
        };
        return Err(Error::failed(what));
    }
    Ok(())
}

fn rm(a: &cli::RmArgs) -> Result<()> {
    use manyfiles::error::Error;
    let (o, json) = cli::rm_config(a)?;
    // Under a launcher every rank removes part of the same trees (dist::rm); one
    // rank is the local engine, as always.
    let s = if ranks::size() > 1 { manyfiles::engine::rm::mpi::run(&o)? } else { manyfiles::engine::rm::run(&o)? };
    out(&s.text());
    if let Some(p) = json.filter(|_| ranks::is_root()) {
        let text = serde_json::to_vec_pretty(&s).map_err(|e| Error::failed(e.to_string()))?;
        manyfiles::fs::output::write_file(&p, &text)?;
    }
    if s.interrupted {
        return Err(interrupted());
    }
    if s.failed > 0 {
        let what = if s.failed == 1 { "1 entry" } else { &format!("{} entries", s.failed) };
        return Err(Error::failed(format!("{what} could not be removed")));
    }
    if let Some(e) = &s.timing.sync_error {
        return Err(Error::failed(format!("--durable: {e} (what was removed may not be on the storage)")));
    }
    Ok(())
}

fn scan(a: &cli::ScanArgs, args: Vec<String>) -> Result<()> {
    let cfg = cli::scan_config(a, args)?;
    // Under a launcher every rank scans part of the tree, rank 0 writes the index.
    let r =
        if ranks::size() > 1 { manyfiles::engine::scan::mpi::run(&cfg)? } else { manyfiles::engine::scan::scan(&cfg)? };
    out(&r.text());
    if let Some(signal) = r.interrupted_by {
        return Err(manyfiles::error::Error::Interrupted { signal });
    }
    if r.denied + r.errors > 0 {
        // Partial: the rest was indexed, but the exit code must say so (as copy/sync do).
        return Err(manyfiles::error::Error::failed(format!(
            "scan incomplete: {} directories denied, {} other errors (the rest was scanned)",
            r.denied, r.errors
        )));
    }
    if let Some(e) = &r.timing.sync_error {
        return Err(manyfiles::error::Error::failed(format!("--durable: {e} (the index may not be on the storage)")));
    }
    Ok(())
}

/// The error of a job that was interrupted: by a signal here, or (under MPI) on another
/// rank, which every rank learns from the summary.
fn interrupted() -> manyfiles::error::Error {
    match manyfiles::signals::pending() {
        0 => manyfiles::error::Error::failed("interrupted on another rank: the rest was left as it was"),
        signal => manyfiles::error::Error::Interrupted { signal },
    }
}
