//! Progress on stderr, only when stderr is a terminal and not `--quiet`.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

#[derive(Clone)]
pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    pub fn new(quiet: bool) -> Progress {
        if quiet || !crate::ranks::is_root() || !std::io::stderr().is_terminal() {
            return Progress { bar: None };
        }
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr_with_hz(4));
        bar.set_style(
            ProgressStyle::with_template(
                "{prefix:>6} [{bar:24}] {human_pos}/{human_len} ({elapsed}, eta {eta}) {wide_msg}",
            )
            .expect("static template")
            .progress_chars("=> "),
        );
        Progress { bar: Some(bar) }
    }

    pub fn hidden() -> Progress {
        Progress { bar: None }
    }

    /// Start a phase of `total` items labelled `label`.
    pub fn phase(&self, label: &str, total: u64) {
        if let Some(b) = &self.bar {
            b.set_prefix(label.to_string());
            b.set_length(total);
            b.set_position(0);
            b.reset_eta();
        }
    }

    #[inline]
    pub fn set(&self, done: u64) {
        if let Some(b) = &self.bar {
            b.set_position(done);
        }
    }

    pub fn message(&self, msg: String) {
        if let Some(b) = &self.bar {
            b.set_message(msg);
        }
    }

    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }

    /// Print a line without tearing the bar.
    pub fn println(&self, line: &str) {
        match &self.bar {
            Some(b) => b.println(line),
            None => eprintln!("{line}"),
        }
    }
}
