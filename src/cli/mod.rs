//! Command-line work that is not serving: `compact`, `stats` and `replay`
//! on transcripts, `statusline` for Claude Code, `hook` and `setup` for the
//! agents' own compactions. Output goes to stdout; notes, progress and errors to
//! stderr.

pub mod args;
mod compact;
mod connect;
mod error;
mod hook;
mod load;
mod mcp;
mod out;
mod progress;
mod replay;
mod sessions;
mod setup;
mod stats;
mod statusline;

use std::process::ExitCode;

pub use args::{Cli, Command};
pub use compact::summary_line;
pub use error::CliError;

/// Runs a transcript command (or the `connect` bridge) and prints its output.
pub fn run(command: Command, no_user_config: bool) -> ExitCode {
    // Run once per render: no runtime to start.
    if let Command::Statusline(args) = &command {
        return statusline::run(args, no_user_config);
    }
    if let Command::Hook(args) = &command {
        return hook::run(args, no_user_config);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let result = match command {
        Command::Serve(_) => unreachable!("main serves"),
        Command::Connect(args) => runtime.block_on(connect::run(&args)),
        Command::Compact(args) => runtime.block_on(compact::run(&args, no_user_config)),
        Command::Stats(args) => stats::run(&args, no_user_config),
        Command::Replay(args) => runtime.block_on(replay::run(&args, no_user_config)),
        Command::Statusline(_) | Command::Hook(_) => unreachable!("answered above"),
        Command::Setup(args) => setup::run(&args),
        Command::Sessions(args) => sessions::sessions(&args),
        Command::Follow(args) => sessions::follow(&args, no_user_config),
        Command::Mcp(args) => runtime.block_on(mcp::run(&args, no_user_config)),
    };
    // `connect`'s stdin reader may still be blocked on a read the OS will
    // not finish until the client closes our stdin.
    runtime.shutdown_background();
    match result {
        Ok(()) | Err(CliError::Closed) => ExitCode::SUCCESS,
        Err(CliError::Usage(message)) => {
            eprintln!("compactd: {message}");
            ExitCode::from(2)
        }
        Err(CliError::Failure(message)) => {
            eprintln!("compactd: {message}");
            ExitCode::from(1)
        }
    }
}
