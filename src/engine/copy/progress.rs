//! Progress of a copy, sync or rm on stderr: a live line (indicatif) on a terminal, else
//! one plain line every 2 s, as the cloud copy tools print them. Reads the shared counters
//! from its own thread, so the workers pay nothing for it.

use super::{Counters, Options};
use crate::units::{fmt_size, sig3};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::{Scope, ScopedJoinHandle};
use std::time::{Duration, Instant};

/// Seconds between plain progress lines when stderr is not a terminal.
pub const PLAIN_EVERY: Duration = Duration::from_secs(2);

pub struct Reporter<'scope> {
    stop: Arc<AtomicBool>,
    handle: Option<ScopedJoinHandle<'scope, ()>>,
}

/// One progress line from the counters.
pub fn line(c: &Counters, start: Instant) -> String {
    let ld = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    let secs = start.elapsed().as_secs_f64().max(1e-9);
    let (copied, skipped, scanned) = (ld(&c.copied), ld(&c.skipped), ld(&c.src_entries));
    let (bytes, total) = (ld(&c.bytes), ld(&c.src_bytes));
    format!(
        "{:.0}s: {} done of {} scanned (copied {copied}, unchanged {skipped}, deleted {}, failed {}), {} of {} ({}/s, {} files/s)",
        secs,
        copied + skipped,
        scanned,
        ld(&c.deleted),
        ld(&c.failed),
        fmt_size(bytes as f64),
        fmt_size(total as f64),
        fmt_size(bytes as f64 / secs),
        sig3((copied + skipped) as f64 / secs)
    )
}

impl<'scope> Reporter<'scope> {
    pub fn start<'env>(
        sc: &'scope Scope<'scope, 'env>,
        o: &Options,
        c: &'env Counters,
        start: Instant,
    ) -> Reporter<'scope> {
        Reporter::with_line(sc, o.quiet, move || line(c, start))
    }

    /// A reporter printing whatever `line` says (it reads the caller's counters).
    pub fn with_line<'env: 'scope>(
        sc: &'scope Scope<'scope, 'env>,
        quiet: bool,
        line: impl Fn() -> String + Send + 'scope,
    ) -> Reporter<'scope> {
        let stop = Arc::new(AtomicBool::new(false));
        if quiet {
            return Reporter { stop, handle: None };
        }
        let tty = std::io::stderr().is_terminal();
        let flag = Arc::clone(&stop);
        let handle = sc.spawn(move || {
            let bar = tty.then(|| {
                let b = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(4));
                b.set_style(ProgressStyle::with_template("{spinner} {wide_msg}").expect("static template"));
                b
            });
            let mut last = Instant::now();
            while !flag.load(Ordering::Relaxed) {
                // Woken at once by stop(), so a short run is not stretched by the period.
                std::thread::park_timeout(Duration::from_millis(100));
                match &bar {
                    Some(b) => b.set_message(line()),
                    None if last.elapsed() >= PLAIN_EVERY => {
                        eprintln!("{}", line());
                        last = Instant::now();
                    }
                    None => {}
                }
            }
            if let Some(b) = bar {
                b.finish_and_clear();
            }
        });
        Reporter { stop, handle: Some(handle) }
    }

    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            h.thread().unpark();
            let _ = h.join();
        }
    }
}
