//! Why a command failed.

/// Why a command failed, which decides the exit code.
#[derive(Debug)]
pub enum CliError {
    /// A bad flag value: exit 2, like clap's own usage errors.
    Usage(String),
    /// Anything else: exit 1.
    Failure(String),
    /// Whoever read stdout stopped reading (a closed pipe): exit 0, quietly.
    Closed,
}

impl<E: std::error::Error> From<E> for CliError {
    fn from(e: E) -> CliError {
        CliError::Failure(e.to_string())
    }
}
