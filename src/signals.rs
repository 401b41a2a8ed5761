//! SIGINT / SIGTERM: set a flag that workers poll, so a phase stops cleanly, results are
//! saved and the run directory is removed. A second signal of the same kind ends the
//! process at once (the user insisted).

use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

static PENDING: OnceLock<Arc<AtomicUsize>> = OnceLock::new();

/// Install the handlers (idempotent).
pub fn install() {
    PENDING.get_or_init(|| {
        let flag = Arc::new(AtomicUsize::new(0));
        let seen = Arc::new(AtomicBool::new(false));
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            // Order matters: the conditional shutdown is checked before the flag is set.
            let _ = signal_hook::flag::register_conditional_shutdown(sig, 128 + sig, Arc::clone(&seen));
            let _ = signal_hook::flag::register(sig, Arc::clone(&seen));
            let _ = signal_hook::flag::register_usize(sig, Arc::clone(&flag), sig as usize);
        }
        flag
    });
}

/// The signal received, if any (0 when none). Cheap: one relaxed load.
#[inline]
pub fn pending() -> i32 {
    PENDING.get().map(|f| f.load(Ordering::Relaxed) as i32).unwrap_or(0)
}
