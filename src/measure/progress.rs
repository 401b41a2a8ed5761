//! Progress on stderr, only when stderr is a terminal and not `--quiet`: one line for the
//! whole experiment, as hyperfine's and fio's — trials done of those planned, the time
//! spent, an ETA (the smaller of the work left and the budget left, saying which) — and
//! then the phase in flight (its op, bar, files done, target, tree and run).
//!
//! The experiment's part is fed by the trial loop (`experiment::driver`: [`Progress::trial`]
//! before every trial); the phases set the bar (`ops::run_phase`: [`Progress::phase`],
//! [`Progress::set`]). Without an experiment (`gen`) the line is the phase's alone.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};
use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Clone)]
pub struct Progress {
    bar: Option<ProgressBar>,
    whole: Arc<Mutex<Whole>>,
}

/// Where the whole experiment stands, as the trial loop last said it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Whole {
    /// When the trial loop began (None: no experiment, the line is the phase's).
    pub started: Option<Instant>,
    /// Trials finished (warmups included).
    pub done: u64,
    /// Trials planned so far, the one in flight included: every trial with `--runs N`;
    /// with adaptive runs the rounds decided and the minimum runs still owed.
    pub planned: u64,
    /// Adaptive runs: the most trials there can be (`--max-runs` of every cell).
    pub most: Option<u64>,
    /// `--max-time`, for adaptive runs.
    pub budget: Option<Duration>,
    /// Estimated time of the trial in flight (its cell's last, or the mean of those seen;
    /// None before any trial finished).
    pub this_trial: Option<Duration>,
    /// Estimated time of the planned trials after the one in flight.
    pub after_this: Option<Duration>,
    /// When the trial in flight began.
    pub trial_started: Option<Instant>,
}

/// What the ETA is bound by.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum EtaBy {
    /// The trials planned (all of them with `--runs N`).
    Work,
    /// `--max-time`: the budget ends before the planned work would.
    Budget,
}

impl Whole {
    /// Time left: the planned work's estimate (the trial in flight counted down, never
    /// below the work after it) or the budget left, whichever is smaller. None before
    /// anything is known (no trial finished and no budget).
    pub fn eta(&self, now: Instant) -> Option<(Duration, EtaBy)> {
        let work = match (self.this_trial, self.after_this) {
            (Some(this), Some(after)) => {
                let in_flight = self.trial_started.map_or(Duration::ZERO, |t| now.saturating_duration_since(t));
                Some(after + this.saturating_sub(in_flight))
            }
            _ => None,
        };
        let budget = match (self.budget, self.started) {
            (Some(b), Some(s)) => Some(b.saturating_sub(now.saturating_duration_since(s))),
            _ => None,
        };
        match (work, budget) {
            (Some(w), Some(b)) if b < w => Some((b, EtaBy::Budget)),
            (Some(w), _) => Some((w, EtaBy::Work)),
            (None, Some(b)) => Some((b, EtaBy::Budget)),
            (None, None) => None,
        }
    }

    /// The experiment's part of the line: `trial 12/40 · 1m05s · eta 1m20s (work left)`;
    /// adaptive (planned so far, the most there can be): `trial 12/36 (≤ 330) · 1m05s ·
    /// eta 1m55s (--max-time 3m00s)`.
    pub fn line(&self, now: Instant) -> Option<String> {
        let started = self.started?;
        // The trial in flight is the next one, never past those planned.
        let current = (self.done + 1).min(self.planned.max(1));
        let mut s = match self.most {
            Some(most) => format!("trial {current}/{} (≤ {most})", self.planned),
            None => format!("trial {current}/{}", self.planned),
        };
        s.push_str(&format!(" · {}", clock(now.saturating_duration_since(started))));
        match self.eta(now) {
            Some((left, EtaBy::Work)) => {
                let what = if self.most.is_some() { "runs planned" } else { "work left" };
                s.push_str(&format!(" · eta {} ({what})", clock(left)));
            }
            Some((left, EtaBy::Budget)) => {
                let b = self.budget.map(clock).unwrap_or_default();
                s.push_str(&format!(" · eta {} (--max-time {b})", clock(left)));
            }
            None => s.push_str(" · eta ?"),
        }
        Some(s)
    }
}

/// `42s`, `1m05s`, `2h03m`: a duration as a clock shows it, to the second.
pub fn clock(d: Duration) -> String {
    let s = d.as_secs_f64().round() as u64;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
    }
}

impl Progress {
    pub fn new(quiet: bool) -> Progress {
        let whole = Arc::new(Mutex::new(Whole::default()));
        if quiet || !crate::ranks::is_root() || !std::io::stderr().is_terminal() {
            return Progress { bar: None, whole };
        }
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr_with_hz(4));
        let of_whole = Arc::clone(&whole);
        let whole_key = move |state: &ProgressState, w: &mut dyn std::fmt::Write| {
            let line = of_whole.lock().map(|g| g.line(Instant::now())).unwrap_or(None);
            let _ = match line {
                Some(l) => write!(w, "{l} │"),
                // No experiment: the phase's own time and ETA.
                None => write!(w, "{} · eta {}", clock(state.elapsed()), clock(state.eta())),
            };
        };
        bar.set_style(
            ProgressStyle::with_template("{whole} {prefix} [{bar:12}] {human_pos}/{human_len} {wide_msg}")
                .expect("static template")
                .with_key("whole", whole_key)
                .progress_chars("=> "),
        );
        // Redrawn while nothing moves (a format, a flush): the clock and the ETA go on.
        bar.enable_steady_tick(Duration::from_millis(500));
        Progress { bar: Some(bar), whole }
    }

    pub fn hidden() -> Progress {
        Progress { bar: None, whole: Arc::new(Mutex::new(Whole::default())) }
    }

    /// The trial loop begins (the experiment's clock starts).
    pub fn start(&self, budget: Option<Duration>, most: Option<u64>) {
        self.update(|w| {
            w.started = Some(Instant::now());
            w.budget = budget;
            w.most = most;
        });
    }

    /// The experiment's budget changed (a default budget stretched for the minimum runs).
    pub fn set_budget(&self, budget: Option<Duration>) {
        self.update(|w| w.budget = budget);
    }

    /// A trial begins: `done` finished, `planned` in all so far (this one included), the
    /// estimates of this trial and of the planned ones after it.
    pub fn trial(&self, done: u64, planned: u64, this_trial: Option<Duration>, after_this: Option<Duration>) {
        self.update(|w| {
            w.done = done;
            w.planned = planned;
            w.this_trial = this_trial;
            w.after_this = after_this;
            w.trial_started = Some(Instant::now());
        });
    }

    fn update(&self, f: impl FnOnce(&mut Whole)) {
        if self.bar.is_some()
            && let Ok(mut w) = self.whole.lock()
        {
            f(&mut w);
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn at(start: Instant, secs: u64) -> Instant {
        start + Duration::from_secs(secs)
    }

    #[test]
    fn clock_reads_like_a_clock() {
        assert_eq!(clock(Duration::from_millis(400)), "0s");
        assert_eq!(clock(Duration::from_secs(42)), "42s");
        assert_eq!(clock(Duration::from_secs(65)), "1m05s");
        assert_eq!(clock(Duration::from_secs(3 * 3600 + 120)), "3h02m");
    }

    #[test]
    fn eta_is_the_work_left_or_the_budget_whichever_ends_first() {
        let t0 = Instant::now();
        let s = |x: u64| Duration::from_secs(x);
        // Fixed runs: 40 trials, 11 done, the 12th in flight for 1 s of its 4.
        let mut w = Whole {
            started: Some(t0),
            done: 11,
            planned: 40,
            this_trial: Some(s(4)),
            after_this: Some(s(100)),
            trial_started: Some(at(t0, 60)),
            ..Whole::default()
        };
        assert_eq!(w.eta(at(t0, 61)), Some((s(103), EtaBy::Work)));
        // A trial past its estimate: the ETA stays at the work after it, never 0.
        assert_eq!(w.eta(at(t0, 70)), Some((s(100), EtaBy::Work)));
        assert_eq!(w.line(at(t0, 61)).unwrap(), "trial 12/40 · 1m01s · eta 1m43s (work left)");
        // Adaptive: 3 minutes of budget, 2m01s spent: the budget ends first.
        w.budget = Some(s(180));
        w.most = Some(330);
        assert_eq!(w.eta(at(t0, 121)), Some((s(59), EtaBy::Budget)));
        assert_eq!(w.line(at(t0, 121)).unwrap(), "trial 12/40 (≤ 330) · 2m01s · eta 59s (--max-time 3m00s)");
        // Early on the planned runs end first.
        assert_eq!(w.eta(at(t0, 61)), Some((s(103), EtaBy::Work)));
        assert!(w.line(at(t0, 61)).unwrap().ends_with("eta 1m43s (runs planned)"));
        // Nothing known yet: the budget alone, or a question mark.
        let first = Whole { started: Some(t0), planned: 40, budget: Some(s(180)), ..Whole::default() };
        assert_eq!(first.eta(at(t0, 5)), Some((s(175), EtaBy::Budget)));
        let bare = Whole { started: Some(t0), planned: 40, ..Whole::default() };
        assert_eq!(bare.line(at(t0, 5)).unwrap(), "trial 1/40 · 5s · eta ?");
        // No experiment: no line of its own.
        assert_eq!(Whole::default().line(t0), None);
    }

    #[test]
    fn hidden_progress_ignores_everything() {
        let p = Progress::hidden();
        p.start(Some(Duration::from_secs(1)), None);
        p.trial(1, 2, None, None);
        assert_eq!(*p.whole.lock().unwrap(), Whole::default(), "no bar, no state kept");
    }
}
