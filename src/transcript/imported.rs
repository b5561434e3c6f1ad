//! A conversation read from a file, and what of it was not used.

use std::path::PathBuf;

use crate::conversation::Message;
use crate::files::{FileTools, Workspace};
use crate::session::Session;
use crate::store::{self, LogEntry, SessionHeader, SessionSettings, LOG_VERSION};

use super::format::Format;

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

    /// Adds the skips `later` counted after these, as if each had been
    /// added here in turn; `later` is left as it is (its allocations stay
    /// with the thread that made them).
    pub fn merge_from(&mut self, later: &Skips) {
        for group in &later.groups {
            match self.groups.iter_mut().find(|g| g.kind == group.kind) {
                Some(mine) => mine.count += group.count,
                None => self.groups.push(group.clone()),
            }
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
            mirrors: None,
        })
    }

    /// The conversation as a session, compactions applied.
    pub fn session(&self, session_id: &str, summary_prefix: String) -> Session {
        store::replay(session_id, self.log_entries(session_id, 0), summary_prefix)
    }
}

/// What an agent added to a request in no message
/// (`Event::AttachedMidway`).
#[derive(Debug, Clone, PartialEq)]
pub enum Attachment {
    /// Its text, as the agent wrote it.
    Text(String),
    /// Only its size in o200k tokens: the agent wrote nothing of it, and
    /// its rule says it was sent (Claude Code's plan-mode instructions).
    Estimated(u64),
}

impl Attachment {
    pub fn tokens(&self, encoding: crate::tokens::Encoding) -> u64 {
        match self {
            Attachment::Text(text) => encoding.count(text),
            Attachment::Estimated(tokens) => *tokens,
        }
    }
}
