//! Reading a conversation another tool wrote, as one batch: the formats
//! compactd reads (its own log, an OpenAI chat message array, and every
//! agent's transcript, read by the agent's reader in `agents`), told apart
//! by their content. Importers never fail on a bad line: they skip it and
//! say why (`Skips`); only a file in no known format, or one that is not
//! text at all, is an error.
//!
//! Every importer produces the same thing: a list of our session log
//! entries (messages, settings changes, compactions), so an imported
//! conversation replays, meters and compacts exactly like one a client
//! appended.

mod file;
pub mod openai;

use std::path::Path;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

pub use crate::transcript::{Format, Imported, Skips};

use crate::agents::Agent;
use crate::store::{self, LogEntry, SessionSettings};
use crate::transcript::{split_lines, Line};

/// Every format compactd reads: its own log, each agent's transcript (in
/// the registry's order), an OpenAI chat message array.
pub fn formats() -> Vec<Format> {
    std::iter::once(Format::COMPACTD)
        .chain(Agent::all().iter().map(|a| a.format()))
        .chain(std::iter::once(Format::OPENAI))
        .collect()
}

/// The format named `name` on the wire.
pub fn parse_name(name: &str) -> Option<Format> {
    formats().into_iter().find(|f| f.name() == name)
}

/// What a format is, for people (`Claude Code JSONL`).
pub fn description(format: Format) -> &'static str {
    match format {
        Format::COMPACTD => "compactd session JSONL",
        Format::OPENAI => "OpenAI chat message array (incl. SWE-agent .traj)",
        other => Agent::from_format(other).map_or("an unknown format", |a| a.format_description()),
    }
}

fn tried() -> String {
    formats()
        .into_iter()
        .map(description)
        .collect::<Vec<_>>()
        .join(", ")
}

impl<'de> Deserialize<'de> for Format {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Format, D::Error> {
        let name = String::deserialize(deserializer)?;
        parse_name(&name).ok_or_else(|| {
            let known: Vec<&str> = formats().into_iter().map(Format::name).collect();
            serde::de::Error::custom(format!(
                "unknown format `{name}`, expected one of {}",
                known.join(", ")
            ))
        })
    }
}

impl JsonSchema for Format {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Format".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let names: Vec<Value> = formats()
            .into_iter()
            .map(|f| Value::from(f.name()))
            .collect();
        let described: Vec<String> = formats()
            .into_iter()
            .map(|f| format!("`{}`: {}", f.name(), description(f)))
            .collect();
        schemars::json_schema!({
            "description": format!("A conversation format compactd reads: {}.", described.join("; ")),
            "type": "string",
            "enum": names,
        })
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
    if let Some(agent) = Agent::from_format(imported.format) {
        imported.subagents = agent.companions(path);
    }
    Ok(imported)
}

/// Imports bytes; `format: None` detects the format from the content.
pub fn parse(bytes: &[u8], format: Option<Format>) -> Result<Imported, String> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err("the file is empty".into());
    }
    if looks_binary(bytes) {
        return Err(format!(
            "not a conversation: the file is binary, not text (tried: {})",
            tried()
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
            Format::COMPACTD => compactd_log(bytes),
            Format::OPENAI => return Err(
                "not an OpenAI chat message array: the file is JSON lines, not one JSON document"
                    .into(),
            ),
            other => agent_of(other)?.import(&lines),
        };
    let recognized = lines
        .iter()
        .filter(|l| matches!(&l.value, Ok(v) if classify(v) == Some(format)))
        .count();
    if recognized == 0 && imported.message_count() == 0 {
        let guess = detect_lines(&lines)
            .map(|f| format!("it looks like {}", description(f)))
            .unwrap_or_else(|e| e);
        return Err(format!(
            "not a {} file: none of its {} lines is a {} entry ({guess})",
            description(format),
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
        (Some(Format::OPENAI), None) => openai::from_value(&document),
        (None, None) => openai::from_value(&document)
            .map_err(|e| format!("not a known conversation format (tried: {}); {e}", tried())),
        (Some(format), None) => Err(format!(
            "not a {}: the file is one JSON document ({})",
            description(format),
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
                Format::COMPACTD => {
                    let text = serde_json::to_vec(lines[0].value.as_ref().expect("parsed"))
                        .expect("JSON serializes");
                    Ok(compactd_log(&text))
                }
                Format::OPENAI => openai::from_value(lines[0].value.as_ref().expect("parsed")),
                other => Ok(agent_of(other)?.import(&lines)),
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

/// The agent whose transcript format this is; only the registry makes
/// formats, so every one but compactd's and OpenAI's is an agent's.
fn agent_of(format: Format) -> Result<Agent, String> {
    Agent::from_format(format).ok_or_else(|| format!("no reader for the format `{format}`"))
}

/// Which format a JSON line belongs to, from its shape: compactd's own
/// entries first, then the agent whose transcripts have it.
fn classify(value: &Value) -> Option<Format> {
    if is_compactd_entry(value) {
        return Some(Format::COMPACTD);
    }
    Agent::all()
        .iter()
        .find(|agent| agent.classify(value))
        .map(|agent| agent.format())
}

fn is_compactd_entry(value: &Value) -> bool {
    let Some(object) = value.as_object() else {
        return false;
    };
    let has = |key: &str| object.contains_key(key);
    match object.get("type").and_then(Value::as_str).unwrap_or("") {
        "header" => has("sessionId") && has("version"),
        "settings" => true,
        "compaction" => has("lastSummarizedMessageId"),
        "message" if !has("timestamp") && !has("parentId") => matches!(
            value.pointer("/message/role").and_then(Value::as_str),
            Some("system" | "user" | "assistant" | "tool")
        ),
        _ => false,
    }
}

/// The format most classified lines agree on.
fn detect_lines(lines: &[Line]) -> Result<Format, String> {
    let mut votes: Vec<(Format, usize)> = formats().into_iter().map(|f| (f, 0)).collect();
    for value in lines.iter().take(200).filter_map(|l| l.value.as_ref().ok()) {
        if let Some(format) = classify(value) {
            if let Some(vote) = votes.iter_mut().find(|(f, _)| *f == format) {
                vote.1 += 1;
            }
        }
    }
    // The first format with the most votes, as the list orders them.
    let best = votes
        .iter()
        .rev()
        .max_by_key(|(_, n)| *n)
        .filter(|(_, n)| *n > 0);
    if let Some((format, _)) = best {
        return Ok(*format);
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
        tried()
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
        format: Format::COMPACTD,
        settings,
        entries,
        message_lines,
        skipped,
        subagents: Vec::new(),
    };
    imported.message_lines.truncate(imported.message_count());
    imported
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each agent's lines are told apart in its module's tests.
    #[test]
    fn detects_its_own_log_from_one_line() {
        let line = r#"{"type":"header","version":1,"sessionId":"s","createdAt":0}"#;
        let value: Value = serde_json::from_str(line).unwrap();
        assert_eq!(classify(&value), Some(Format::COMPACTD));
        let names: Vec<&str> = formats().into_iter().map(Format::name).collect();
        assert_eq!(names.first(), Some(&"compactd"));
        assert_eq!(names.last(), Some(&"openai"));
        for name in names {
            assert_eq!(parse_name(name).map(Format::name), Some(name));
        }
    }

    #[test]
    fn unknown_formats_name_what_was_tried() {
        let err = parse(b"{\"type\":\"wat\"}\n{\"type\":\"wat\"}\n", None).unwrap_err();
        assert!(err.contains("tried: compactd session JSONL, "), "{err}");
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
