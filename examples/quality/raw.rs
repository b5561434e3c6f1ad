//! Reads the shared transcripts with code of its own, not compactd's
//! importers: the probes must not inherit the importers' view of what a
//! message, a tool call or an error is.

use serde_json::Value;

/// The layouts of the shared transcripts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// pi session JSONL: `message` entries with roles user, assistant,
    /// toolResult (and bashExecution, the user's own shell commands).
    Pi,
    /// Claude Code JSONL: `user`/`assistant` lines with content blocks.
    ClaudeCode,
    /// One JSON document holding an OpenAI chat array (`history` in a
    /// SWE-agent `.traj`).
    OpenAiDocument,
}

#[derive(Debug, Clone)]
pub enum Event {
    /// Text the user side sent. `meta` marks what the client generated
    /// (Claude Code's `isMeta`), not the person.
    User { text: String, meta: bool },
    Call {
        id: String,
        name: String,
        args: Value,
    },
    Result {
        call_id: String,
        is_error: bool,
        text: String,
    },
}

#[derive(Debug, Default)]
pub struct Raw {
    pub events: Vec<Event>,
    /// The directory the agent worked in, where the transcript says.
    pub cwd: Option<String>,
}

/// The units a transcript can be cut after: its lines, or for one JSON
/// document the elements of its message array.
pub fn unit_count(layout: Layout, bytes: &[u8]) -> usize {
    match layout {
        Layout::OpenAiDocument => document_messages(bytes).len(),
        _ => lines(bytes).count(),
    }
}

/// The transcript cut after `units` units, as bytes in its own format.
pub fn prefix(layout: Layout, bytes: &[u8], units: usize) -> Vec<u8> {
    match layout {
        Layout::OpenAiDocument => {
            let messages: Vec<Value> = document_messages(bytes).into_iter().take(units).collect();
            serde_json::to_vec(&serde_json::json!({ "history": messages })).expect("json")
        }
        _ => {
            let mut out = Vec::new();
            for line in lines(bytes).take(units) {
                out.extend_from_slice(line);
                out.push(b'\n');
            }
            out
        }
    }
}

pub fn read(layout: Layout, bytes: &[u8]) -> Raw {
    match layout {
        Layout::Pi => read_pi(bytes),
        Layout::ClaudeCode => read_claude_code(bytes),
        Layout::OpenAiDocument => read_openai(bytes),
    }
}

fn lines(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    bytes
        .split(|b| *b == b'\n')
        .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
}

fn json_lines(bytes: &[u8]) -> impl Iterator<Item = Value> + '_ {
    lines(bytes).filter_map(|l| serde_json::from_slice(l).ok())
}

fn document_messages(bytes: &[u8]) -> Vec<Value> {
    let doc: Value = serde_json::from_slice(bytes).unwrap_or(Value::Null);
    let list = match &doc {
        Value::Array(_) => Some(&doc),
        Value::Object(map) => map.get("history").or_else(|| map.get("messages")),
        _ => None,
    };
    list.and_then(Value::as_array).cloned().unwrap_or_default()
}

/// Text of a string, or of the `text` blocks of an array.
fn text_of(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn str_field(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn read_pi(bytes: &[u8]) -> Raw {
    let mut raw = Raw::default();
    for line in json_lines(bytes) {
        match line.get("type").and_then(Value::as_str) {
            Some("session") => raw.cwd = line.get("cwd").and_then(Value::as_str).map(String::from),
            Some("message") => {}
            _ => continue,
        }
        let Some(message) = line.get("message") else {
            continue;
        };
        match message.get("role").and_then(Value::as_str) {
            Some("user") => raw.events.push(Event::User {
                text: text_of(message.get("content")),
                meta: false,
            }),
            Some("assistant") => {
                for block in message
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter(|b| b.get("type").and_then(Value::as_str) == Some("toolCall"))
                {
                    raw.events.push(Event::Call {
                        id: str_field(block, "id"),
                        name: str_field(block, "name"),
                        args: block.get("arguments").cloned().unwrap_or(Value::Null),
                    });
                }
            }
            Some("toolResult") => raw.events.push(Event::Result {
                call_id: str_field(message, "toolCallId"),
                is_error: message.get("isError").and_then(Value::as_bool) == Some(true),
                text: text_of(message.get("content")),
            }),
            _ => {}
        }
    }
    raw
}

fn read_claude_code(bytes: &[u8]) -> Raw {
    let mut raw = Raw::default();
    for line in json_lines(bytes) {
        if raw.cwd.is_none() {
            raw.cwd = line.get("cwd").and_then(Value::as_str).map(String::from);
        }
        let kind = line.get("type").and_then(Value::as_str);
        let Some(content) = line.get("message").and_then(|m| m.get("content")) else {
            continue;
        };
        // The agent's own compaction summary is sent as the user's too.
        let meta = line.get("isMeta").and_then(Value::as_bool) == Some(true)
            || line.get("isCompactSummary").and_then(Value::as_bool) == Some(true);
        let blocks = match content {
            Value::String(text) => {
                if kind == Some("user") {
                    raw.events.push(Event::User {
                        text: text.clone(),
                        meta,
                    });
                }
                continue;
            }
            Value::Array(blocks) => blocks,
            _ => continue,
        };
        for block in blocks {
            match (kind, block.get("type").and_then(Value::as_str)) {
                (Some("user"), Some("text")) => raw.events.push(Event::User {
                    text: str_field(block, "text"),
                    meta,
                }),
                (Some("user"), Some("tool_result")) => raw.events.push(Event::Result {
                    call_id: str_field(block, "tool_use_id"),
                    is_error: block.get("is_error").and_then(Value::as_bool) == Some(true),
                    text: text_of(block.get("content")),
                }),
                (Some("assistant"), Some("tool_use")) => raw.events.push(Event::Call {
                    id: str_field(block, "id"),
                    name: str_field(block, "name"),
                    args: block.get("input").cloned().unwrap_or(Value::Null),
                }),
                _ => {}
            }
        }
    }
    raw
}

fn read_openai(bytes: &[u8]) -> Raw {
    let mut raw = Raw::default();
    for message in document_messages(bytes) {
        let text = text_of(message.get("content"));
        match message.get("role").and_then(Value::as_str) {
            Some("user") => raw.events.push(Event::User { text, meta: false }),
            Some("assistant") => {
                for call in message
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let function = call.get("function").cloned().unwrap_or(Value::Null);
                    let args = match function.get("arguments") {
                        Some(Value::String(s)) => serde_json::from_str(s).unwrap_or(Value::Null),
                        Some(other) => other.clone(),
                        None => Value::Null,
                    };
                    raw.events.push(Event::Call {
                        id: str_field(call, "id"),
                        name: str_field(&function, "name"),
                        args,
                    });
                }
            }
            Some("tool") => {
                let call_id = message
                    .get("tool_call_id")
                    .and_then(Value::as_str)
                    .or_else(|| {
                        message
                            .get("tool_call_ids")
                            .and_then(|ids| ids.get(0))
                            .and_then(Value::as_str)
                    })
                    .unwrap_or_default()
                    .to_string();
                raw.events.push(Event::Result {
                    call_id,
                    is_error: false,
                    text,
                });
            }
            _ => {}
        }
    }
    raw
}
