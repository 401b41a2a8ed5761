//! One test at a time, and why a test cannot run here: the serial lock and the skip
//! checks the tests that format, mount, run `cleanup` or mpirun share (the
//! fault-injection suite's tests/reliability_common too).

use std::ffi::OsStr;
use std::sync::{Mutex, MutexGuard};

/// Tests that format file systems, run `cleanup` (which could take another test's
/// record), compare machine state before and after, or measure how work spreads over
/// ranks or in flight go one at a time within a test binary.
pub static SERIAL: Mutex<()> = Mutex::new(());

/// The serial lock (a test that panicked holding it does not spoil it).
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// The serial lock, or None (reason printed) when not root. In CI (CI=true) root is
/// required: the test fails instead of skipping.
pub fn root_only(why: &str) -> Option<MutexGuard<'static, ()>> {
    let guard = serial();
    if !is_root() {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "CI runs as root: {why}");
        eprintln!("skipped: {why}");
        return None;
    }
    Some(guard)
}

/// One thing a test needs, looked for given PATH: a reason when it is missing.
pub type Check<'a> = &'a dyn Fn(&OsStr) -> Option<String>;

/// Why this machine cannot run a test that needs root and what `checks` look for; None
/// when it can.
pub fn missing(checks: &[Check]) -> Option<String> {
    if !is_root() {
        return Some("needs root".into());
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    checks.iter().find_map(|check| check(&path))
}

/// True (the reason printed) when the test is to be skipped for `why`; under CI
/// (CI=true), which installs everything, a reason is a failure instead.
pub fn skipped(why: Option<String>) -> bool {
    let Some(why) = why else { return false };
    assert!(std::env::var("CI").as_deref() != Ok("true"), "CI must run this test: {why}");
    println!("skipped: {why}");
    true
}
