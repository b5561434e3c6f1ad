//! Reading conversations that other tools wrote: one module per format,
//! auto-detected from the content. Importers never fail on a bad line: they
//! skip it and say why (`Skips`); only a file in no known format, or one
//! that is not text at all, is an error.
//!
//! Every importer produces the same thing: a list of our session log
//! entries (messages, settings changes, compactions), so an imported
//! conversation replays, meters and compacts exactly like one a client
//! appended. The agents' formats are read one line at a time (`emit`): a
//! batch import feeds its reader every line, a followed transcript
//! (`engine::follow`) the lines as they are written.

mod builder;
pub mod claude_code;
pub mod codex;
pub(crate) mod emit;
mod file;
pub mod time;

pub(crate) use file::open_regular;
pub mod openai;
pub mod pi;

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub(crate) use builder::place;
pub(crate) use emit::{Emitter, Event, Reader};

use crate::conversation::Message;
use crate::files::{FileTools, Workspace};
use crate::session::Session;
use crate::store::{self, LogEntry, SessionHeader, SessionSettings, LOG_VERSION};

/// A conversation format compactd can read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// compactd's own session log (JSONL).
    Compactd,
    /// pi coding-agent session JSONL (linear, or the tree layout with
    /// `id`/`parentId`).
    Pi,
    /// Claude Code `~/.claude/projects/*/*.jsonl`.
    ClaudeCode,
    /// Codex CLI rollout JSONL (`~/.codex/sessions/**/rollout-*.jsonl`).
    Codex,
    /// An OpenAI chat-completions message array, bare or under `messages`
    /// or `history` (SWE-agent `.traj`).
    Openai,
}

impl Format {
    pub const ALL: [Format; 5] = [
        Format::Compactd,
        Format::Pi,
        Format::ClaudeCode,
        Format::Codex,
        Format::Openai,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Format::Compactd => "compactd",
            Format::Pi => "pi",
            Format::ClaudeCode => "claude-code",
            Format::Codex => "codex",
            Format::Openai => "openai",
        }
    }

    fn description(self) -> &'static str {
        match self {
            Format::Compactd => "compactd session JSONL",
            Format::Pi => "pi session JSONL",
            Format::ClaudeCode => "Claude Code JSONL",
            Format::Codex => "Codex rollout JSONL",
            Format::Openai => "OpenAI chat message array (incl. SWE-agent .traj)",
        }
    }

    pub fn parse_name(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name() == name)
    }

    fn tried() -> String {
        Format::ALL
            .iter()
            .map(|f| f.description())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
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
    /// Claude Code subagent transcripts beside the session
    /// (`<session>/subagents/*.jsonl`); imported on their own.
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

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("{path}: {message}")]
    Read { path: String, message: String },
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
}

/// Reads and imports a file; `format: None` detects it. Only a regular
/// file of at most `max_bytes` is read (see `file.rs`).
pub fn read_file(
    path: &Path,
    format: Option<Format>,
    max_bytes: u64,
) -> Result<Imported, ImportError> {
    let bytes = file::read_regular(path, max_bytes).map_err(|message| ImportError::Read {
        path: path.display().to_string(),
        message,
    })?;
    let mut imported = parse(&bytes, format).map_err(|message| ImportError::Invalid {
        path: path.display().to_string(),
        message,
    })?;
    if imported.format == Format::ClaudeCode {
        imported.subagents = claude_code::subagent_files(path);
    }
    Ok(imported)
}

/// A whole transcript through its reader: the batch import.
pub(crate) fn read_all(reader: &mut dyn Reader, format: Format, lines: &[Line]) -> Imported {
    let mut out = Emitter::new(format);
    emit::feed(reader, lines, &mut out);
    reader.finish(&mut out);
    let events = out.drain();
    builder::collect(format, events, out.skipped)
}

/// The reader of an agent's transcript format, to follow a file as it
/// grows; `None` for formats no agent writes line by line. pi's reader is
/// given the path of the file read so far (`pi::active_path`) and told to
/// `follow` once caught up.
pub(crate) fn line_reader(format: Format) -> Option<Box<dyn Reader + Send>> {
    match format {
        Format::ClaudeCode => Some(Box::new(claude_code::Reader::default())),
        Format::Codex => Some(Box::new(codex::Reader::default())),
        Format::Pi => Some(Box::new(pi::Reader::default())),
        Format::Compactd | Format::Openai => None,
    }
}

/// The format of a JSONL transcript, from its first lines.
pub fn detect_head(bytes: &[u8]) -> Option<Format> {
    detect_lines(&split_lines(bytes)).ok()
}

/// The user's first request in a transcript's first lines (for pi, the
/// name the session was given, if any), as its reader sees it: slash
/// commands, harness text and Codex's own context are not requests.
pub fn first_prompt(format: Format, bytes: &[u8]) -> Option<String> {
    let lines = split_lines(bytes);
    let values = || lines.iter().filter_map(|l| l.value.as_ref().ok());
    if format == Format::Pi {
        let named = values().find_map(|v| {
            (v.get("type")?.as_str()? == "session_info").then(|| v.get("name")?.as_str())?
        });
        if let Some(name) = named.filter(|n| !n.trim().is_empty()) {
            return Some(name.to_string());
        }
    }
    let mut reader = line_reader(format)?;
    let mut out = Emitter::new(format);
    for line in &lines {
        if let Some(value) = out.readable(line) {
            reader.line(line.number, value, &mut out);
        }
        for event in out.drain() {
            match event {
                Event::Message { message, .. }
                    if message.role() == crate::conversation::Role::User
                        && (format != Format::Codex || codex::is_users_own(message.text())) =>
                {
                    return Some(message.text().to_string());
                }
                Event::Restart => return None,
                _ => {}
            }
        }
    }
    None
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

/// Imports bytes; `format: None` detects the format from the content.
pub fn parse(bytes: &[u8], format: Option<Format>) -> Result<Imported, String> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err("the file is empty".into());
    }
    if looks_binary(bytes) {
        return Err(format!(
            "not a conversation: the file is binary, not text (tried: {})",
            Format::tried()
        ));
    }
    let text = String::from_utf8_lossy(bytes);
    let trimmed = text.trim_start();
    // A JSON document (array or object) rather than JSON lines.
    if trimmed.starts_with('[') || trimmed.starts_with('{') {
        if let Ok(document) = serde_json::from_str::<Value>(trimmed) {
            return parse_document(document, format);
        }
        if trimmed.starts_with('[') {
            if let Err(e) = serde_json::from_str::<Value>(trimmed) {
                return Err(format!("invalid JSON: {e}"));
            }
        }
    }
    let lines = split_lines(bytes);
    let format = match format {
        Some(format) => format,
        None => detect_lines(&lines)?,
    };
    let imported =
        match format {
            Format::Compactd => compactd_log(bytes),
            Format::Pi => pi::import(&lines),
            Format::ClaudeCode => claude_code::import(&lines),
            Format::Codex => codex::import(&lines),
            Format::Openai => return Err(
                "not an OpenAI chat message array: the file is JSON lines, not one JSON document"
                    .into(),
            ),
        };
    let recognized = lines
        .iter()
        .filter(|l| matches!(&l.value, Ok(v) if classify(v) == Some(format)))
        .count();
    if recognized == 0 && imported.message_count() == 0 {
        let guess = detect_lines(&lines)
            .map(|f| format!("it looks like {}", f.description()))
            .unwrap_or_else(|e| e);
        return Err(format!(
            "not a {} file: none of its {} lines is a {} entry ({guess})",
            format.description(),
            lines.len(),
            format.name()
        ));
    }
    Ok(imported)
}

fn parse_document(document: Value, format: Option<Format>) -> Result<Imported, String> {
    let is_chat = match &document {
        Value::Array(_) => true,
        Value::Object(map) => map.contains_key("messages") || map.contains_key("history"),
        _ => false,
    };
    // A single pretty-printed entry of a JSONL format is a one-line file.
    let single = if is_chat { None } else { classify(&document) };
    match (format, single) {
        (Some(Format::Openai), None) => openai::from_value(&document),
        (None, None) => openai::from_value(&document).map_err(|e| {
            format!(
                "not a known conversation format (tried: {}); {e}",
                Format::tried()
            )
        }),
        (Some(format), None) => Err(format!(
            "not a {}: the file is one JSON document ({})",
            format.description(),
            if is_chat {
                "it looks like an OpenAI chat message array"
            } else {
                "in no known format"
            }
        )),
        (format, Some(detected)) => {
            let format = format.unwrap_or(detected);
            let line = Line {
                number: 1,
                value: Ok(document),
            };
            let lines = [line];
            match format {
                Format::Pi => Ok(pi::import(&lines)),
                Format::ClaudeCode => Ok(claude_code::import(&lines)),
                Format::Codex => Ok(codex::import(&lines)),
                Format::Compactd => {
                    let text = serde_json::to_vec(lines[0].value.as_ref().expect("parsed"))
                        .expect("JSON serializes");
                    Ok(compactd_log(&text))
                }
                Format::Openai => openai::from_value(lines[0].value.as_ref().expect("parsed")),
            }
        }
    }
}

/// NUL bytes, or mostly invalid UTF-8, in the first 8 KB.
fn looks_binary(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(8192)];
    if head.contains(&0) {
        return true;
    }
    let lossy = String::from_utf8_lossy(head);
    let bad = lossy
        .chars()
        .filter(|c| *c == char::REPLACEMENT_CHARACTER)
        .count();
    bad * 10 > lossy.chars().count().max(1)
}

fn split_lines(bytes: &[u8]) -> Vec<Line> {
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

/// Which format a JSON line belongs to, from its shape.
fn classify(value: &Value) -> Option<Format> {
    let object = value.as_object()?;
    let kind = object.get("type").and_then(Value::as_str).unwrap_or("");
    let has = |key: &str| object.contains_key(key);
    if has("payload")
        && matches!(
            kind,
            "session_meta" | "response_item" | "event_msg" | "turn_context" | "compacted"
        )
    {
        return Some(Format::Codex);
    }
    match kind {
        "header" if has("sessionId") && has("version") => return Some(Format::Compactd),
        "settings" => return Some(Format::Compactd),
        "compaction" if has("lastSummarizedMessageId") => return Some(Format::Compactd),
        "message" if !has("timestamp") && !has("parentId") => {
            let role = value.pointer("/message/role").and_then(Value::as_str);
            if matches!(role, Some("system" | "user" | "assistant" | "tool")) {
                return Some(Format::Compactd);
            }
        }
        _ => {}
    }
    match kind {
        "session" if has("id") => return Some(Format::Pi),
        "message" if value.pointer("/message/role").is_some() => return Some(Format::Pi),
        "thinking_level_change"
        | "model_change"
        | "branch_summary"
        | "custom"
        | "custom_message"
        | "label"
        | "session_info" => return Some(Format::Pi),
        "compaction" if has("firstKeptEntryIndex") || has("firstKeptEntryId") => {
            return Some(Format::Pi)
        }
        _ => {}
    }
    if matches!(kind, "file-history-snapshot" | "queue-operation") {
        return Some(Format::ClaudeCode);
    }
    let claude_kind = matches!(
        kind,
        "user"
            | "assistant"
            | "system"
            | "summary"
            | "file-history-snapshot"
            | "queue-operation"
            | "attachment"
            | "progress"
    );
    if claude_kind && (has("uuid") || has("sessionId") || has("leafUuid") || has("messageId")) {
        return Some(Format::ClaudeCode);
    }
    None
}

/// The format most classified lines agree on.
fn detect_lines(lines: &[Line]) -> Result<Format, String> {
    let mut votes = [0usize; Format::ALL.len()];
    for line in lines.iter().take(200) {
        if let Ok(value) = &line.value {
            if let Some(format) = classify(value) {
                votes[Format::ALL
                    .iter()
                    .position(|f| *f == format)
                    .expect("listed")] += 1;
            }
        }
    }
    let (best, count) = votes
        .iter()
        .enumerate()
        .max_by_key(|(_, n)| **n)
        .expect("non-empty");
    if *count > 0 {
        return Ok(Format::ALL[best]);
    }
    let first = match lines.first().map(|l| &l.value) {
        Some(Ok(Value::Object(map))) => match map.get("type").and_then(Value::as_str) {
            Some(kind) => format!("its first line has type `{kind}`"),
            None => "its first line is JSON without a `type`".to_string(),
        },
        Some(Ok(_)) => "its first line is not a JSON object".to_string(),
        Some(Err(e)) => format!("its first line is not JSON: {e}"),
        None => "it has no lines".to_string(),
    };
    Err(format!(
        "not a known conversation format (tried: {}); {first}",
        Format::tried()
    ))
}

/// Our own session log, read back as it is.
fn compactd_log(bytes: &[u8]) -> Imported {
    let loaded = store::parse_log(bytes);
    let mut skipped = Skips::default();
    for warning in &loaded.warnings {
        let (line, detail) = warning
            .strip_prefix("line ")
            .and_then(|rest| rest.split_once(": "))
            .map(|(n, d)| (n.parse().unwrap_or(0), d.to_string()))
            .unwrap_or((0, warning.clone()));
        skipped.add(line, "unreadable lines", Some(detail));
    }
    let mut settings = SessionSettings::default();
    let mut entries = Vec::new();
    for entry in loaded.entries {
        match entry {
            LogEntry::Header(header) if entries.is_empty() => settings = header.settings,
            LogEntry::Header(header) => entries.push(LogEntry::Settings(header.settings)),
            other => entries.push(other),
        }
    }
    let message_lines = vec![0; entries.len()];
    let mut imported = Imported {
        format: Format::Compactd,
        settings,
        entries,
        message_lines,
        skipped,
        subagents: Vec::new(),
    };
    imported.message_lines.truncate(imported.message_count());
    imported
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_each_format_from_one_line() {
        let cases = [
            (r#"{"type":"session","id":"x","cwd":"/"}"#, Format::Pi),
            (
                r#"{"type":"user","uuid":"u","sessionId":"s","message":{"role":"user","content":"hi"}}"#,
                Format::ClaudeCode,
            ),
            (
                r#"{"timestamp":"t","type":"session_meta","payload":{"id":"x"}}"#,
                Format::Codex,
            ),
            (
                r#"{"type":"header","version":1,"sessionId":"s","createdAt":0}"#,
                Format::Compactd,
            ),
        ];
        for (line, format) in cases {
            let value: Value = serde_json::from_str(line).unwrap();
            assert_eq!(classify(&value), Some(format), "{line}");
        }
    }

    #[test]
    fn unknown_formats_name_what_was_tried() {
        let err = parse(b"{\"type\":\"wat\"}\n{\"type\":\"wat\"}\n", None).unwrap_err();
        assert!(
            err.contains("tried: compactd session JSONL, pi session JSONL"),
            "{err}"
        );
        assert!(err.contains("type `wat`"), "{err}");
        assert_eq!(parse(b"  \n", None).unwrap_err(), "the file is empty");
        assert!(parse(&[0u8, 1, 2, 0xff], None)
            .unwrap_err()
            .contains("binary"));
    }

    #[test]
    fn skips_group_by_kind() {
        let mut skips = Skips::default();
        skips.add(3, "file-history-snapshot lines", None);
        skips.add(9, "file-history-snapshot lines", None);
        skips.add(4, "unreadable lines", Some("invalid JSON".into()));
        assert_eq!(skips.total(), 3);
        assert_eq!(
            skips.reasons(),
            [
                "file-history-snapshot lines: 2 (first at line 3)",
                "unreadable lines: 1 (first at line 4: invalid JSON)"
            ]
        );
    }
}
