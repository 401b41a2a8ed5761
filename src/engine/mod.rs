//! The engines that work on trees they did not generate — `copy`/`sync` ([`copy`]),
//! `scan` ([`scan`]) and `rm` ([`rm`]) — and the walk they share ([`walk`]):
//! fd-relative directory reading (getdents, `O_NOFOLLOW` opens) and a work-stealing
//! task tree with one task per directory; [`overlap`] tells whether two directories
//! are one inside the other by identity (bind mounts included); [`timing`] what their
//! times include (`--cold`, `--durable`).

pub mod copy;
pub mod inflight;
pub mod overlap;
pub mod rm;
pub mod scan;
pub mod timing;
pub mod walker;
