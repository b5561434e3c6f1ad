//! Command-line work that is not serving: `compact`, `stats` and `replay`
//! on transcripts. Output goes to stdout; notes, progress and errors to
//! stderr.

pub mod args;
mod compact;
mod progress;
mod replay;
mod stats;

use std::path::Path;
use std::process::ExitCode;

use serde_json::{json, Value};

pub use args::{Cli, Command};
pub use compact::summary_line;
pub use replay::auto_compaction_triggers;

use crate::config::Config;
use crate::conversation::Message;
use crate::files::{disk, FileTools};
use crate::import::{self, Format, Imported};
use crate::session::{CompactionJob, Session};
use crate::store::LogEntry;
use crate::summarize::driver::{self, DriverOutput, DriverSettings};
use crate::summarize::{self, ProgressSink};

/// Why a command failed, which decides the exit code.
#[derive(Debug)]
pub enum CliError {
    /// A bad flag value: exit 2, like clap's own usage errors.
    Usage(String),
    /// Anything else: exit 1.
    Failure(String),
}

impl<E: std::error::Error> From<E> for CliError {
    fn from(e: E) -> CliError {
        CliError::Failure(e.to_string())
    }
}

/// Runs a transcript command and prints its output.
pub fn run(command: Command, no_user_config: bool) -> ExitCode {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let result = match command {
        Command::Serve => unreachable!("main serves"),
        Command::Compact(args) => runtime.block_on(compact::run(&args, no_user_config)),
        Command::Stats(args) => stats::run(&args, no_user_config),
        Command::Replay(args) => runtime.block_on(replay::run(&args, no_user_config)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
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

/// A flag that sets a configuration value.
struct ConfigFlag {
    flag: &'static str,
    value: String,
    overlay: Value,
}

/// Resolves configuration (files, then the flags on top). Each flag is
/// checked on its own first, so a bad value is reported against the flag.
fn resolve_config(no_user_config: bool, flags: Vec<ConfigFlag>) -> Result<Config, CliError> {
    let mut merged = json!({});
    for flag in flags {
        match Config::resolve(Some(&flag.overlay), None, None) {
            Ok(_) => crate::config::merge(&mut merged, flag.overlay),
            Err(e) => {
                let message = e.to_string();
                let unknown_field = message.contains("unknown field");
                let why = match (flag.flag, unknown_field) {
                    ("--model", true) => {
                        "this build's summarizers take no model (the offline summarizer has none)"
                            .into()
                    }
                    _ => message
                        .split_once("`: ")
                        .map(|(_, why)| why.to_string())
                        .unwrap_or(message),
                };
                return Err(CliError::Usage(format!(
                    "{} {}: {why}",
                    flag.flag, flag.value
                )));
            }
        }
    }
    let user_dir = if no_user_config {
        None
    } else {
        Config::user_config_dir()
    };
    let cwd = std::env::current_dir().ok();
    Ok(Config::resolve(
        Some(&merged),
        cwd.as_deref(),
        user_dir.as_deref(),
    )?)
}

fn keep_recent_flag(value: Option<u64>) -> Option<ConfigFlag> {
    value.map(|n| ConfigFlag {
        flag: "--keep-recent-tokens",
        value: n.to_string(),
        overlay: json!({ "keepRecentTokens": n }),
    })
}

/// Imports a transcript behind a spinner and notes what was skipped.
fn import_file(
    path: &Path,
    format: Option<Format>,
    quiet: bool,
    config: &Config,
) -> Result<Imported, CliError> {
    let spinner = progress::spinner(format!("reading {}", path.display()), quiet);
    let imported = import::read_file(path, format);
    spinner.finish_and_clear();
    let mut imported = imported?;
    imported.track_files(
        &FileTools::new(&config.file_tools),
        &disk::workspace(Vec::new()),
    );
    if !quiet && imported.skipped.total() > 0 {
        eprintln!(
            "compactd: {}: skipped {} of its lines ({})",
            path.display(),
            imported.skipped.total(),
            imported.skipped.reasons().join("; ")
        );
    }
    Ok(imported)
}

/// The message of a transcript entry; any other entry (a settings change,
/// a compaction the transcript recorded) is applied to `session` instead.
fn message_or_apply<'a>(entry: &'a LogEntry, session: &mut Session) -> Option<&'a Message> {
    match entry {
        LogEntry::Message { message, .. } => return Some(message),
        LogEntry::Settings(settings) if settings.model.is_some() => {
            session.set_model(settings.model.clone())
        }
        LogEntry::Compaction(record) => session.apply_compaction((**record).clone()),
        LogEntry::Pin { text } => session.add_pin(text.clone()),
        LogEntry::File(event) => session.apply_file_event(event),
        LogEntry::Settings(_) | LogEntry::Header(_) => {}
    }
    None
}

/// Paths show relative to the working directory, listed up to the cap.
fn configure_files(session: &mut Session, config: &Config) {
    session.files.workspace = disk::workspace(Vec::new());
    session.files.max_listed_files = config.max_listed_files;
}

/// A session to walk a transcript in, with `window` as its context window.
fn walking_session(id: &str, imported: &Imported, window: u64, config: &Config) -> Session {
    Session::new(
        id.into(),
        imported.settings.model.clone(),
        Some(window),
        imported.settings.system_prompt.clone(),
        summary_prefix(config),
    )
}

/// Writes the summaries a planned job needs (the main one, and a split
/// turn's prefix), with the configured summarizer and its fallback ladder.
async fn summarize_job(
    config: &Config,
    session: &Session,
    job: &CompactionJob,
    progress: ProgressSink<'_>,
) -> (Option<DriverOutput>, Option<DriverOutput>) {
    let summarizer = summarize::from_config(&config.summarizer);
    let settings = DriverSettings::from_config(config, session.encoding());
    let mut outputs = [None, None];
    for (output, input) in outputs.iter_mut().zip([&job.input, &job.turn_prefix]) {
        if let Some(input) = input {
            *output = Some(driver::summarize(summarizer.as_ref(), input, settings, progress).await);
        }
    }
    let [main, turn_prefix] = outputs;
    (main, turn_prefix)
}

fn summary_prefix(config: &Config) -> String {
    config.summary_prefix.clone().unwrap_or_else(|| {
        crate::compaction::DEFAULT_SUMMARY_PREFIX
            .trim_end()
            .to_string()
    })
}

/// 1234567 → "1,234,567".
fn thousands(n: u64) -> String {
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

fn print_json(value: &impl serde::Serialize) {
    println!(
        "{}",
        serde_json::to_string_pretty(value).expect("reports serialize")
    );
}
