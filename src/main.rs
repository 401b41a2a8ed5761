//! Thin: parse → dispatch → exit code. Each command's config and run live in `cli/`
//! (by family) and the library; an experiment's view is found in
//! `experiment::kinds::KINDS`.

mod cli;

use cli::{Cli, Command, out};
use manyfiles::error::{Error, Result};
use manyfiles::experiment::kinds;
use manyfiles::{ranks, report, signals};
use std::process::ExitCode;

/// jemalloc serves the binary's own allocations (Cargo.toml says why); the C libraries
/// (SQLite, zstd) keep glibc's malloc, tuned by [`keep_freed_memory`].
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    keep_freed_memory();
    ranks::init();
    let code = main_here();
    ranks::finalize();
    code
}

/// glibc's malloc gives a thread arena's free top back to the kernel (MADV_DONTNEED) once
/// it passes 128 KiB, so each directory's listing (about 100 bytes an entry on each side)
/// was faulted in and zeroed again by the next: a warm `sync` of 100,000 files took 1,900
/// page faults past start-up, about 1.8% of its CPU samples (issue 41, session 22). Freed
/// memory up to 64 MiB is kept for reuse instead (650 faults). That was glibc serving
/// every allocation; since session 28 the binary's own go to jemalloc (which keeps freed
/// pages for its decay time, 10 s by default: the A/B of the local engines showed no
/// difference), and this covers what the C libraries allocate (SQLite, zstd).
fn keep_freed_memory() {
    #[cfg(target_env = "gnu")]
    // SAFETY: mallopt only sets a threshold of the allocator; called before any thread.
    unsafe {
        libc::mallopt(libc::M_TRIM_THRESHOLD, 64 << 20);
    }
}

fn main_here() -> ExitCode {
    let args: Vec<String> = std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect();
    let (cli, name) = match cli::parse(&args) {
        Ok(parsed) => parsed,
        Err(code) => return code,
    };
    match run(cli, &name, args) {
        // A helper or a phase that failed because a signal arrived: report the signal.
        Err(Error::Failed(_)) if signals::pending() != 0 => exit(Error::Interrupted { signal: signals::pending() }),
        Err(e) => exit(e),
        Ok(()) => ExitCode::SUCCESS,
    }
}

fn run(cli: Cli, name: &str, args: Vec<String>) -> Result<()> {
    cli::refuse_under_mpi(name)?;
    match cli.command {
        Command::Run(a) => {
            let (inner, name, recorded) = cli::file_command(&a, args)?;
            run(inner, &name, recorded)
        }
        Command::Experiment(e) => experiment(cli::config(&e, args)?.as_ref()),
        // Under MPI every rank has the job's summary and ends the same way.
        Command::Copy(a) => ranks::agree(cli::copy(&a, args)),
        Command::Sync(a) => ranks::agree(cli::sync(&a, args)),
        Command::Rm(a) => ranks::agree(cli::rm(&a)),
        Command::Scan(a) => ranks::agree(cli::scan(&a, args)),
        Command::Report(a) => report::run_report(cli::report_config(&a)?).map(|text| out(&text)),
        Command::Compare(a) => cli::compare(&a),
        Command::Predict(a) => cli::predict(&a, args),
        Command::Plan(a) => report::run_plan(cli::plan_config(&a)?).map(|text| out(&text)),
        Command::Gen(a) => cli::generate(&a),
        Command::Cleanup(a) => cli::cleanup(&a),
        Command::Mount(a) => cli::mount(&a),
        Command::Umount(a) => cli::umount(&a),
        Command::Completions(a) => cli::print_completions(&a),
        Command::Man(a) => cli::man(&a),
    }
}

/// Run an experiment and print what its view makes of the results.
fn experiment(cfg: &dyn kinds::Config) -> Result<()> {
    out(&kinds::run(cfg)?);
    Ok(())
}

/// The exit code of a failure, said once.
fn exit(e: Error) -> ExitCode {
    if ranks::size() > 1 && ranks::failure_agreed() {
        // Every rank knows and stops here; rank 0 tells it once.
        if ranks::is_root() {
            eprintln!("manyfiles: {e}");
        }
        return ExitCode::from(e.exit_code() as u8);
    }
    if ranks::size() > 1 {
        // One rank failing alone would leave the others waiting at a barrier: end the
        // whole job. Rank 0 saved the finished measurements before returning; the others
        // wait a moment so a failure every rank shares is told once, by rank 0 (whose
        // abort ends them first).
        if !ranks::is_root() {
            std::thread::sleep(std::time::Duration::from_secs(2));
        }
        let host = rustix::system::uname().nodename().to_string_lossy().into_owned();
        eprintln!("manyfiles: rank {} of {} ({host}): {e}", ranks::rank(), ranks::size());
        ranks::abort(e.exit_code())
    }
    eprintln!("manyfiles: {e}");
    ExitCode::from(e.exit_code() as u8)
}
