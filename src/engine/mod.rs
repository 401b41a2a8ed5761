//! The engines that work on trees they did not generate — `copy`/`sync` ([`copy`]),
//! `scan` ([`scan`]) and `rm` ([`rm`]) — and the walk they share ([`walk`]):
//! fd-relative directory reading (getdents, `O_NOFOLLOW` opens) and a work-stealing
//! task tree with one task per directory.

pub mod copy;
pub mod rm;
pub mod scan;
pub mod walk;
