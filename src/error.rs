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
            Error::BadInput { flag, reason } => write!(f, "{}: {}", one_line(flag), one_line(reason)),
            Error::Failed(msg) => write!(f, "{}", one_line(msg)),
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

/// An error is one line: control characters echoed from the input (a value or file name
/// with a newline) are shown escaped (`\n`), so the message cannot split or forge lines.
fn one_line(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return s.into();
    }
    s.chars()
        .map(|c| if c.is_control() { c.escape_default().to_string() } else { c.to_string() })
        .collect::<String>()
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Scenario 9 (bad input) regression: a value with a newline gave a two-line error.
    #[test]
    fn reliability_badinput_error_is_one_line() {
        let e = Error::bad("--cluster", "'x\ny' is not a size");
        assert_eq!(e.to_string(), "--cluster: 'x\\ny' is not a size");
        assert_eq!(Error::failed("a\tb\r").to_string(), "a\\tb\\r");
        assert_eq!(Error::failed("plain ünïcode").to_string(), "plain ünïcode");
    }
}
