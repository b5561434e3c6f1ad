//! What every transcript command does first: its configuration from the
//! files and its flags, the transcript read (with a progress bar on a
//! terminal), and a session to walk the conversation in.

use std::path::Path;

use serde_json::{json, Value};

use super::error::CliError;
use super::progress;
use crate::config::Config;
use crate::conversation::Message;
use crate::engine::{self, SessionEnv};
use crate::files::{disk, FileTools};
use crate::import::{self, Format, Imported};
use crate::session::Session;
use crate::store::LogEntry;

/// A flag that sets a configuration value.
pub(super) struct ConfigFlag {
    pub(super) flag: &'static str,
    pub(super) value: String,
    pub(super) overlay: Value,
}

/// Resolves configuration (files, then the flags on top). Each flag is
/// checked on its own first, so a bad value is reported against the flag.
pub(super) fn resolve_config(
    no_user_config: bool,
    flags: Vec<ConfigFlag>,
) -> Result<Config, CliError> {
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

/// `--keep-recent-tokens` and `--keep-recent-messages`, as they are set.
pub(super) fn keep_recent_flags(tokens: Option<u64>, messages: Option<usize>) -> Vec<ConfigFlag> {
    let tokens = tokens.map(|n| ConfigFlag {
        flag: "--keep-recent-tokens",
        value: n.to_string(),
        overlay: json!({ "keepRecentTokens": n }),
    });
    let messages = messages.map(|n| ConfigFlag {
        flag: "--keep-recent-messages",
        value: n.to_string(),
        overlay: json!({ "keepRecentMessages": n }),
    });
    tokens.into_iter().chain(messages).collect()
}

/// Imports a transcript behind a spinner and notes what was skipped.
pub(super) fn import_file(
    path: &Path,
    format: Option<Format>,
    quiet: bool,
    config: &Config,
) -> Result<Imported, CliError> {
    import_file_under(path, format, quiet, config, None)
}

/// `import_file`, reporting on `bar` (the bar over several files) instead
/// of a spinner of its own: its notes are printed above the bar, so no
/// copy of the bar stays frozen on the terminal.
pub(super) fn import_file_under(
    path: &Path,
    format: Option<Format>,
    quiet: bool,
    config: &Config,
    bar: Option<&indicatif::ProgressBar>,
) -> Result<Imported, CliError> {
    let spinner = match bar {
        Some(bar) => {
            bar.set_message(format!("reading {}", path.display()));
            None
        }
        None => Some(progress::spinner(
            format!("reading {}", path.display()),
            quiet,
        )),
    };
    let imported = import::read_file(path, format, config.max_import_bytes);
    if let Some(spinner) = spinner {
        spinner.finish_and_clear();
    }
    let mut imported = imported?;
    imported.track_files(
        &FileTools::new(&config.file_tools),
        &disk::workspace(Vec::new()),
    );
    if !quiet && imported.skipped.total() > 0 {
        let note = format!(
            "compactd: {}: skipped {} of its lines ({})",
            path.display(),
            imported.skipped.total(),
            imported.skipped.reasons().join("; ")
        );
        match bar {
            Some(bar) => bar.suspend(|| eprintln!("{note}")),
            None => eprintln!("{note}"),
        }
    }
    Ok(imported)
}

/// Where the transcript commands open sessions: paths show relative to
/// the working directory, listed up to the configured cap.
pub(super) fn session_env(config: &Config) -> SessionEnv {
    SessionEnv::new(config, disk::workspace(Vec::new()))
}

/// A session to walk a transcript in, message by message: the
/// transcript's starting settings, in `window` when given.
pub(super) fn walking_session(
    id: &str,
    imported: &Imported,
    window: Option<u64>,
    env: &SessionEnv,
) -> Session {
    let header = engine::create::header(id, 0, imported.settings.clone());
    let mut session = engine::create::replay(id, vec![header], env);
    if window.is_some() {
        session.context_window = window;
    }
    session
}

/// The message of a transcript entry; any other entry (a settings change,
/// a compaction the transcript recorded, a pin, a file event) is applied
/// to `session` as a resumed log would apply it, except that the walk keeps
/// the window its command chose.
pub(super) fn message_or_apply<'a>(
    entry: &'a LogEntry,
    session: &mut Session,
) -> Option<&'a Message> {
    if let LogEntry::Message { message, .. } = entry {
        return Some(message);
    }
    let window = session.context_window;
    crate::store::apply_entry(session, entry.clone());
    session.context_window = window;
    None
}
