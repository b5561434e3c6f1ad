//! Telling a file's format from its content: compactd's own entries by
//! their shape, then each agent's (`AgentKind::classify`); the format most
//! of the first lines agree on.

use serde_json::Value;

use super::formats::{formats, tried};
use crate::agents::Agent;
use crate::transcript::{Format, Line};

/// NUL bytes, or mostly invalid UTF-8, in the first 8 KB.
pub(super) fn looks_binary(bytes: &[u8]) -> bool {
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
pub(super) fn agent_of(format: Format) -> Result<Agent, String> {
    Agent::from_format(format).ok_or_else(|| format!("no reader for the format `{format}`"))
}

/// Which format a JSON line belongs to, from its shape: compactd's own
/// entries first, then the agent whose transcripts have it.
pub(super) fn classify(value: &Value) -> Option<Format> {
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

/// How many of the first lines detection looks at.
pub(super) const DETECTED_FROM: usize = 200;

/// The format most classified lines agree on.
pub(super) fn detect_lines(lines: &[Line]) -> Result<Format, String> {
    let mut votes: Vec<(Format, usize)> = formats().into_iter().map(|f| (f, 0)).collect();
    for value in lines
        .iter()
        .take(DETECTED_FROM)
        .filter_map(|l| l.value.as_ref().ok())
    {
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
