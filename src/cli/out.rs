//! The transcript commands' stdout. A reader that stops reading early
//! (`compactd stats … | head -1`) ends the command quietly, exit 0, as
//! command-line tools do, instead of a panic on the broken pipe.

use std::fmt::Display;
use std::io::{self, Write};

use super::CliError;

/// Prints `text` and a newline on stdout.
pub fn line(text: impl Display) -> Result<(), CliError> {
    let mut out = io::stdout().lock();
    writeln!(out, "{text}")
        .and_then(|()| out.flush())
        .map_err(output_error)
}

/// What a failed write to stdout means: the reader went away (`Closed`),
/// or a real failure.
pub fn output_error(e: io::Error) -> CliError {
    if e.kind() == io::ErrorKind::BrokenPipe {
        CliError::Closed
    } else {
        CliError::Failure(format!("writing to stdout: {e}"))
    }
}

/// `println!` for the transcript commands: returns `CliError::Closed` from
/// the enclosing function when the reader went away.
macro_rules! outln {
    () => {
        $crate::cli::out::line("")?
    };
    ($($arg:tt)*) => {
        $crate::cli::out::line(format_args!($($arg)*))?
    };
}
pub(crate) use outln;
