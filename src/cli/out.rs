//! The transcript commands' stdout. A reader that stops reading early
//! (`compactd stats … | head -1`) ends the command quietly, exit 0, as
//! command-line tools do, instead of a panic on the broken pipe.

use std::fmt::Display;
use std::io::{self, Write};

use super::error::CliError;

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

/// 1234567 → "1,234,567".
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

pub fn print_json(value: &impl serde::Serialize) -> Result<(), CliError> {
    line(serde_json::to_string_pretty(value).expect("reports serialize"))
}
