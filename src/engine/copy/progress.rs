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

/// One progress line from the counters: what azcopy's lines say (percent, done, failed,
/// pending, total, throughput), with "total" what is listed so far (the walk runs
/// alongside the transfer, so the total grows until the listing ends).
pub fn line(c: &Counters, start: Instant) -> String {
    let ld = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    let secs = start.elapsed().as_secs_f64().max(1e-9);
    let [copied, skipped, bytes] = c.progress.each_ref().map(ld);
    // Entries other than directories, as in the summary: copied + unchanged (data unchanged:
    // attributes updated in place counted here too) + failed.
    let listed = ld(&c.src_entries).saturating_sub(ld(&c.src_dirs));
    let (done, failed) = (copied + skipped, ld(&c.failed_entries));
    let pending = listed.saturating_sub(done + failed);
    let pct = if listed == 0 { 0.0 } else { 100.0 * (done + failed) as f64 / listed as f64 };
    let total = ld(&c.src_bytes);
    format!(
        "{:.0}s: {pct:.1}% of {listed} listed so far: {done} done (copied {copied}, unchanged {skipped}), \
         {failed} failed, {pending} pending, deleted {}; {} of {} ({}/s, {} files/s)",
        secs,
        ld(&c.deleted),
        fmt_size(bytes as f64),
        fmt_size(total as f64),
        fmt_size(bytes as f64 / secs),
        sig3(done as f64 / secs)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_says_percent_done_failed_pending_and_what_is_listed() {
        let c = Counters::default();
        let set = |a: &std::sync::atomic::AtomicU64, v| a.store(v, Ordering::Relaxed);
        // 110 entries listed, 10 of them directories: 100 to do; 70 done, 5 failed.
        set(&c.src_entries, 110);
        set(&c.src_dirs, 10);
        set(&c.progress[0], 50);
        set(&c.progress[1], 20);
        set(&c.failed_entries, 5);
        set(&c.deleted, 3);
        let l = line(&c, Instant::now());
        assert!(l.contains("75.0% of 100 listed so far"), "{l}");
        assert!(l.contains("70 done (copied 50, unchanged 20)"), "{l}");
        assert!(l.contains("5 failed, 25 pending, deleted 3"), "{l}");
        // Nothing listed yet: 0%, not a division by zero.
        let l = line(&Counters::default(), Instant::now());
        assert!(l.contains("0.0% of 0 listed so far"), "{l}");
    }
}
