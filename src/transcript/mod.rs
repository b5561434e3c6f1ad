//! What every transcript reader shares: a transcript's lines (`Line`), the
//! `Format` it is in, what a reader emits as it reads (`emit`: the
//! `Emitter`, its `Event`s, the `Reader` trait), how a whole transcript's
//! events become log entries and how a foreign compaction is placed
//! (`builder`), reading only what a growing file gained (`tail`), and
//! when a line says something happened (`time`). The agents' own readers
//! live in their modules (`agents`); `import` detects a file's format and
//! reads it through them.

pub(crate) mod builder;
pub mod emit;
pub mod tail;
pub mod time;

use std::path::PathBuf;

use serde::Serialize;
use serde_json::Value;

pub(crate) use builder::place;
pub use emit::{Emitter, Event, ForeignCompaction, Reader};

use crate::conversation::Message;
use crate::files::{FileTools, Workspace};
use crate::session::Session;
use crate::store::{self, LogEntry, SessionHeader, SessionSettings, LOG_VERSION};

/// A conversation format compactd reads, by its name on the wire:
/// compactd's own session log, an OpenAI chat message array, or an agent's
/// transcript, named as the agent is (`agents`). `import` lists them all,
/// reads the name back and describes each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Format(&'static str);

impl Format {
    /// compactd's own session log (JSONL).
    pub const COMPACTD: Format = Format("compactd");
    /// An OpenAI chat-completions message array, bare or under `messages`
    /// or `history` (SWE-agent `.traj`).
    pub const OPENAI: Format = Format("openai");

    /// An agent's transcript format, by the agent's name.
    pub const fn named(name: &'static str) -> Format {
        Format(name)
    }

    pub fn name(self) -> &'static str {
        self.0
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl Serialize for Format {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.0)
    }
}

/// Lines (or array items) an importer did not use, grouped by kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Skips {
    groups: Vec<SkipGroup>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkipGroup {
    pub kind: String,
    pub count: usize,
    /// The first line (1-based; array index for JSON documents) of the kind.
    pub first: usize,
    /// Why the first one was skipped, when there is more to say than the kind.
    pub detail: Option<String>,
}

impl Skips {
    pub fn add(&mut self, line: usize, kind: &str, detail: Option<String>) {
        match self.groups.iter_mut().find(|g| g.kind == kind) {
            Some(group) => group.count += 1,
            None => self.groups.push(SkipGroup {
                kind: kind.to_string(),
                count: 1,
                first: line,
                detail,
            }),
        }
    }

    pub fn total(&self) -> usize {
        self.groups.iter().map(|g| g.count).sum()
    }

    pub fn groups(&self) -> &[SkipGroup] {
        &self.groups
    }

    /// One line per kind: `file-history-snapshot lines: 15 (first at line 3)`.
    pub fn reasons(&self) -> Vec<String> {
        self.groups
            .iter()
            .map(|g| {
                let detail = g
                    .detail
                    .as_deref()
                    .map(|d| format!(": {d}"))
                    .unwrap_or_default();
                format!(
                    "{}: {} (first at line {}{detail})",
                    g.kind, g.count, g.first
                )
            })
            .collect()
    }
}

/// A conversation read from a file.
#[derive(Debug, Clone)]
pub struct Imported {
    pub format: Format,
    /// Model, context window and system prompt at the start.
    pub settings: SessionSettings,
    /// Everything after the header, in order: messages (with ids), settings
    /// changes and compactions.
    pub entries: Vec<LogEntry>,
    /// For each message entry, in order, the source line it came from (1-based).
    pub message_lines: Vec<usize>,
    pub skipped: Skips,
    /// Transcripts that travel with this one and are imported on their own
    /// (an agent's subagents: `AgentKind::companions`).
    pub subagents: Vec<PathBuf>,
}

impl Imported {
    /// Adds the file events of the transcript's successful tool calls, so
    /// the session it becomes has its file ledger.
    pub fn track_files(&mut self, tools: &FileTools, workspace: &Workspace) {
        let entries = std::mem::take(&mut self.entries);
        self.entries = store::with_tool_file_events(entries, tools, workspace);
    }

    pub fn messages(&self) -> impl Iterator<Item = &Message> {
        self.entries.iter().filter_map(|e| match e {
            LogEntry::Message { message, .. } => Some(message),
            _ => None,
        })
    }

    pub fn message_count(&self) -> usize {
        self.messages().count()
    }

    pub fn compaction_count(&self) -> usize {
        self.entries
            .iter()
            .filter(|e| matches!(e, LogEntry::Compaction(_)))
            .count()
    }

    /// The whole log of a new session holding this conversation.
    pub fn log_entries(&self, session_id: &str, created_at: u64) -> Vec<LogEntry> {
        std::iter::once(self.header(session_id, created_at))
            .chain(self.entries.iter().cloned())
            .collect()
    }

    /// `log_entries` without a copy of the conversation.
    pub fn into_log_entries(self, session_id: &str, created_at: u64) -> Vec<LogEntry> {
        std::iter::once(self.header(session_id, created_at))
            .chain(self.entries)
            .collect()
    }

    fn header(&self, session_id: &str, created_at: u64) -> LogEntry {
        LogEntry::Header(SessionHeader {
            version: LOG_VERSION,
            session_id: session_id.to_string(),
            created_at,
            settings: self.settings.clone(),
            follows: None,
        })
    }

    /// The conversation as a session, compactions applied.
    pub fn session(&self, session_id: &str, summary_prefix: String) -> Session {
        store::replay(session_id, self.log_entries(session_id, 0), summary_prefix)
    }
}

/// A whole transcript through its reader: the batch import.
pub(crate) fn read_all(reader: &mut dyn Reader, format: Format, lines: &[Line]) -> Imported {
    let mut out = Emitter::new(format);
    emit::feed(reader, lines, &mut out);
    reader.finish(&mut out);
    let events = out.drain();
    builder::collect(format, events, out.skipped)
}

/// One line of a JSONL text: its 1-based number and its JSON, or why it
/// could not be read.
pub(crate) fn parse_line(number: usize, bytes: &[u8]) -> Line {
    Line {
        number,
        value: match std::str::from_utf8(bytes) {
            Err(_) => Err("not UTF-8 text".to_string()),
            Ok(text) => {
                serde_json::from_str::<Value>(text).map_err(|e| format!("invalid JSON ({e})"))
            }
        },
    }
}

/// One line of a JSONL file: its 1-based number and its JSON, or why it
/// could not be read.
pub struct Line {
    pub number: usize,
    pub value: Result<Value, String>,
}

/// The non-blank lines of a JSONL text, each parsed (a last line without
/// its newline that does not parse is said to be torn).
pub(crate) fn split_lines(bytes: &[u8]) -> Vec<Line> {
    let torn_tail = !bytes.ends_with(b"\n");
    let raw: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    let last = raw.len().saturating_sub(1);
    raw.iter()
        .enumerate()
        .filter(|(_, line)| !line.iter().all(u8::is_ascii_whitespace))
        .map(|(index, line)| Line {
            number: index + 1,
            value: match std::str::from_utf8(line) {
                Err(_) => Err("not UTF-8 text".to_string()),
                Ok(text) => serde_json::from_str::<Value>(text).map_err(|e| {
                    if index == last && torn_tail {
                        format!("torn last line ({e})")
                    } else {
                        format!("invalid JSON ({e})")
                    }
                }),
            },
        })
        .collect()
}

/// Text of a string or of the text parts of a content array; images become
/// a short placeholder so the message keeps its place.
pub fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| match p.get("type").and_then(Value::as_str) {
                Some("image") | Some("input_image") | Some("image_url") => Some("[image]".into()),
                _ => p
                    .get("text")
                    .and_then(Value::as_str)
                    .or_else(|| p.as_str())
                    .map(str::to_string),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Appends `text` as a new line of `to`.
pub(crate) fn append_line(to: &mut String, text: &str) {
    if text.is_empty() {
        return;
    }
    if !to.is_empty() {
        to.push('\n');
    }
    to.push_str(text);
}
