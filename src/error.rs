//! Error kinds and the exit codes they map to (one place, so every command agrees).

use std::fmt;

/// Everything that can end a command early.
#[derive(Debug)]
pub enum Error {
    /// Malformed or impossible input: exit code 2, nothing created.
    /// `flag` names the option at fault ("--total"), `reason` says why.
    BadInput { flag: String, reason: String },
    /// The work failed while running (out of space, I/O error, ...): exit code 1.
    Failed(String),
    /// Stopped by a signal; results so far were saved. Exit code 128 + signal.
    Interrupted { signal: i32 },
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn bad(flag: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::BadInput { flag: flag.into(), reason: reason.into() }
    }
    pub fn failed(msg: impl Into<String>) -> Self {
        Error::Failed(msg.into())
    }
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::BadInput { .. } => 2,
            Error::Failed(_) => 1,
            Error::Interrupted { signal } => 128 + signal,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::BadInput { flag, reason } => write!(f, "{flag}: {reason}"),
            Error::Failed(msg) => write!(f, "{msg}"),
            Error::Interrupted { signal } => {
                let name = match *signal {
                    2 => "SIGINT",
                    15 => "SIGTERM",
                    _ => "signal",
                };
                write!(f, "interrupted by {name}; finished measurements were kept")
            }
        }
    }
}

impl std::error::Error for Error {}
