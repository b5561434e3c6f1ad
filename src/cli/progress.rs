//! Progress on a terminal only: piped or `--quiet`, nothing is drawn.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

fn visible(quiet: bool) -> bool {
    !quiet && std::io::stderr().is_terminal()
}

/// A bar over `len` steps, drawn on stderr.
pub fn bar(len: u64, message: impl Into<String>, quiet: bool) -> ProgressBar {
    if !visible(quiet) {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} ({elapsed})")
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar.set_message(message.into());
    bar
}

/// A spinner for work of unknown length.
pub fn spinner(message: impl Into<String>, quiet: bool) -> ProgressBar {
    if !visible(quiet) {
        return ProgressBar::hidden();
    }
    let spinner = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    spinner.set_style(
        ProgressStyle::with_template("{spinner} {msg} ({elapsed})").expect("valid template"),
    );
    spinner.set_message(message.into());
    spinner.enable_steady_tick(Duration::from_millis(100));
    spinner
}
