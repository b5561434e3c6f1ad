//! The append-only JSONL session log: one file per session, one entry per
//! line. Nothing is ever rewritten in place; compaction appends an entry.
//! Loading skips a torn last line (a crash mid-write) and any corrupt line,
//! with a warning, and keeps everything else.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::compaction::CompactionRecord;
use crate::conversation::Message;
use crate::files::{FileEvent, FileTools, SessionFileLedger, Workspace};
use crate::session::Session;

pub const LOG_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum LogEntry {
    Header(SessionHeader),
    /// Session settings changed (on reopen, or by setAutoCompact).
    Settings(SessionSettings),
    Message {
        message: Message,
    },
    Compaction(Box<CompactionRecord>),
    /// Text the user pinned: kept verbatim through every compaction.
    Pin {
        text: String,
    },
    /// A change to the file ledger.
    File(FileEvent),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionHeader {
    pub version: u32,
    pub session_id: String,
    pub created_at: u64,
    #[serde(flatten)]
    pub settings: SessionSettings,
    /// The agent transcript this session follows (`conversation/follow`):
    /// the conversation is read from there, and this log holds only
    /// compactd's own entries about it (its compactions, pins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub follows: Option<FollowedTranscript>,
}

/// An agent's transcript, as a followed session's log names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FollowedTranscript {
    /// `claude-code`, `codex` or `pi`.
    pub agent: String,
    pub path: PathBuf,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSettings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Auto-compaction switched on or off for this session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_compact: Option<bool>,
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("invalid sessionId `{0}`: use 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit")]
    InvalidId(String),
    #[error("session log {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: io::Error,
    },
}

/// Session ids become file names, so only a conservative alphabet is
/// accepted: no separators, no `..`, nothing hidden.
pub fn validate_session_id(id: &str) -> Result<(), StoreError> {
    let ok = !id.is_empty()
        && id.len() <= 128
        && id.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        && !id.contains("..");
    if ok {
        Ok(())
    } else {
        Err(StoreError::InvalidId(id.to_string()))
    }
}

#[derive(Debug, Clone)]
pub struct SessionStore {
    dir: PathBuf,
}

/// A session read back from its log.
#[derive(Debug)]
pub struct Loaded {
    pub entries: Vec<LogEntry>,
    pub warnings: Vec<String>,
    /// The file does not end with a newline (a torn write); appends must
    /// start on a fresh line.
    pub torn_tail: bool,
}

impl SessionStore {
    pub fn new(dir: impl Into<PathBuf>) -> SessionStore {
        SessionStore { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn path_for(&self, id: &str) -> Result<PathBuf, StoreError> {
        validate_session_id(id)?;
        Ok(self.dir.join(format!("{id}.jsonl")))
    }

    fn io_error(path: &Path) -> impl FnOnce(io::Error) -> StoreError + '_ {
        move |source| StoreError::Io {
            path: path.display().to_string(),
            source,
        }
    }

    /// Reads a session's log; `None` when it does not exist.
    pub fn load(&self, id: &str) -> Result<Option<Loaded>, StoreError> {
        let path = self.path_for(id)?;
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Self::io_error(&path)(e)),
        };
        Ok(Some(parse_log(&bytes)))
    }

    /// Opens a log for appending, creating the directory and file.
    pub fn open_log(&self, id: &str, torn_tail: bool) -> Result<SessionLog, StoreError> {
        let path = self.path_for(id)?;
        std::fs::create_dir_all(&self.dir).map_err(Self::io_error(&self.dir))?;
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(Self::io_error(&path))?;
        let mut log = SessionLog { file, path };
        if torn_tail {
            // End the torn fragment so it stays a line of its own.
            log.write_raw(b"\n")?;
        }
        Ok(log)
    }
}

/// Parses log bytes, skipping lines that do not parse.
pub fn parse_log(bytes: &[u8]) -> Loaded {
    let torn_tail = !bytes.is_empty() && !bytes.ends_with(b"\n");
    let mut entries = Vec::new();
    let mut warnings = Vec::new();
    let lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    let last_index = lines.len().saturating_sub(1);
    for (index, line) in lines.iter().enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<LogEntry>(line) {
            Ok(entry) => entries.push(entry),
            Err(e) if index == last_index && torn_tail => {
                warnings.push(format!("line {}: torn last line skipped ({e})", index + 1));
            }
            Err(e) => warnings.push(format!(
                "line {}: unreadable entry skipped ({e})",
                index + 1
            )),
        }
    }
    Loaded {
        entries,
        warnings,
        torn_tail,
    }
}

/// An open session log.
#[derive(Debug)]
pub struct SessionLog {
    file: File,
    path: PathBuf,
}

impl SessionLog {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends entries with one write, so a crash tears at most the end.
    /// `durable` also syncs to disk (used for compactions).
    pub fn append(&mut self, entries: &[LogEntry], durable: bool) -> Result<(), StoreError> {
        let mut buf = Vec::with_capacity(256 * entries.len());
        for entry in entries {
            serde_json::to_writer(&mut buf, entry).expect("log entries serialize");
            buf.push(b'\n');
        }
        self.write_raw(&buf)?;
        if durable {
            self.file
                .sync_data()
                .map_err(SessionStore::io_error(&self.path))?;
        }
        Ok(())
    }

    fn write_raw(&mut self, bytes: &[u8]) -> Result<(), StoreError> {
        self.file
            .write_all(bytes)
            .map_err(SessionStore::io_error(&self.path))
    }
}

/// Adds, after each result that completes a successful tool call, the
/// file events of that call: for logs written without them (imported
/// transcripts). A log that already has file events is left as it is.
pub fn with_tool_file_events(
    entries: Vec<LogEntry>,
    tools: &FileTools,
    workspace: &Workspace,
) -> Vec<LogEntry> {
    if entries.iter().any(|e| matches!(e, LogEntry::File(_))) {
        return entries;
    }
    let mut files = SessionFileLedger::new(workspace.clone(), 0);
    let mut out = Vec::with_capacity(entries.len());
    for entry in entries {
        let mut events = Vec::new();
        if let LogEntry::Message { message } = &entry {
            events = files.tool_events(std::slice::from_ref(message), tools);
            files.observe(message);
        }
        out.push(entry);
        out.extend(events.into_iter().map(|(_, event)| LogEntry::File(event)));
    }
    out
}

/// Rebuilds a session from its entries. Only the latest compaction decides
/// the view; earlier ones are history.
pub fn replay(id: &str, entries: Vec<LogEntry>, summary_prefix: String) -> Session {
    let mut session = Session::new(id.to_string(), None, None, None, summary_prefix);
    for entry in entries {
        apply_entry(&mut session, entry);
    }
    session
}

/// Applies one log entry to a session: the one way a logged change becomes
/// state, whether a log is replayed or a transcript walked.
pub fn apply_entry(session: &mut Session, entry: LogEntry) {
    match entry {
        LogEntry::Header(header) => apply_settings(session, header.settings),
        LogEntry::Settings(settings) => apply_settings(session, settings),
        LogEntry::Message { message } => {
            let mut batch = vec![message];
            // A duplicate id can only come from a hand-edited log; keep
            // the message under a fresh id rather than lose it.
            if session.assign_ids(&mut batch).is_err() {
                batch[0].id.clear();
                let _ = session.assign_ids(&mut batch);
            }
            session.push(batch);
        }
        LogEntry::Compaction(record) => session.apply_compaction(*record),
        LogEntry::Pin { text } => session.add_pin(text),
        LogEntry::File(event) => session.apply_file_event(&event),
    }
}

/// Applies the settings an entry sets; absent ones stay.
pub fn apply_settings(session: &mut Session, settings: SessionSettings) {
    if settings.model.is_some() {
        session.set_model(settings.model);
    }
    if settings.context_window.is_some() {
        session.context_window = settings.context_window;
    }
    if settings.system_prompt.is_some() {
        session.set_system_prompt(settings.system_prompt);
    }
    if settings.auto_compact.is_some() {
        session.auto_compact_switch = settings.auto_compact;
    }
}

/// The entries of a new session branched from `entries` before the message
/// `before_message_id`: everything logged before it, compactions included,
/// so branching before a compaction undoes it. `None` if no such message.
pub fn branch_entries(
    entries: &[LogEntry],
    new_id: &str,
    created_at: u64,
    before_message_id: &str,
) -> Option<Vec<LogEntry>> {
    let position = entries.iter().position(
        |e| matches!(e, LogEntry::Message { message } if message.id == before_message_id),
    )?;
    let mut out = Vec::with_capacity(position + 1);
    for entry in &entries[..position] {
        out.push(match entry {
            LogEntry::Header(header) => LogEntry::Header(SessionHeader {
                session_id: new_id.to_string(),
                created_at,
                ..header.clone()
            }),
            other => other.clone(),
        });
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_cannot_escape_the_directory() {
        for bad in [
            "",
            "../x",
            "a/b",
            "a\\b",
            ".hidden",
            "a..b",
            "-x",
            &"x".repeat(129),
            "a b",
        ] {
            assert!(validate_session_id(bad).is_err(), "{bad:?} accepted");
        }
        for good in ["abc", "0f9e-11", "my_session.2", &"x".repeat(128)] {
            assert!(validate_session_id(good).is_ok(), "{good:?} rejected");
        }
    }

    #[test]
    fn torn_and_corrupt_lines_are_skipped() {
        let good = |id: &str| {
            serde_json::to_string(&LogEntry::Message {
                message: Message::user(id, "hi"),
            })
            .unwrap()
        };
        let text = format!(
            "{}\n{{not json\n{}\n{}",
            good("a"),
            good("b"),
            &good("c")[..20]
        );
        let loaded = parse_log(text.as_bytes());
        assert_eq!(loaded.entries.len(), 2);
        assert!(loaded.torn_tail);
        assert_eq!(loaded.warnings.len(), 2);
        assert!(loaded.warnings[0].contains("line 2: unreadable"));
        assert!(loaded.warnings[1].contains("line 4: torn last line"));
    }

    #[test]
    fn appends_after_a_torn_tail_start_on_a_new_line() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path());
        std::fs::write(dir.path().join("s.jsonl"), "{\"type\":\"message\",\"mess").unwrap();
        let loaded = store.load("s").unwrap().unwrap();
        let mut log = store.open_log("s", loaded.torn_tail).unwrap();
        log.append(
            &[LogEntry::Message {
                message: Message::user("x", "y"),
            }],
            false,
        )
        .unwrap();
        let reloaded = store.load("s").unwrap().unwrap();
        assert_eq!(reloaded.entries.len(), 1);
        assert!(!reloaded.torn_tail);
    }
}
