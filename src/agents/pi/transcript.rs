//! pi coding-agent session JSONL. Two layouts: the old linear one (a
//! `session` header, then entries without ids; a compaction names its first
//! kept entry by index) and the tree one (entries with `id`/`parentId`; the
//! conversation is the path from the last entry to the root, a compaction
//! names `firstKeptEntryId`). pi's compactions become ours. Read one entry
//! at a time: a whole file knows its path first (`active_path`); a
//! followed one grows along its path, and moving to another branch asks
//! for the file to be read again.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::compaction::Trigger;
use crate::conversation::{Message, MessageBody, Part, ToolCall, Usage};
use crate::store::SessionSettings;
use crate::transcript::parts::{content_of, Dialect};
use crate::transcript::{content_text, Emitter, ForeignCompaction, Format, Imported, Line};

/// Its transcript format.
pub const FORMAT: Format = Format::named(super::home::NAME);

/// Whether a JSON line is one of its sessions', from its shape.
pub(crate) fn classify(value: &Value) -> bool {
    let Some(object) = value.as_object() else {
        return false;
    };
    let has = |key: &str| object.contains_key(key);
    match object.get("type").and_then(Value::as_str).unwrap_or("") {
        "session" => has("id"),
        "message" => value.pointer("/message/role").is_some(),
        "thinking_level_change"
        | "model_change"
        | "branch_summary"
        | "custom"
        | "custom_message"
        | "label"
        | "session_info" => true,
        "compaction" => has("firstKeptEntryIndex") || has("firstKeptEntryId"),
        _ => false,
    }
}

pub(crate) fn import(lines: &[Line]) -> Imported {
    let entries = lines.iter().filter_map(|l| l.value.as_ref().ok());
    crate::transcript::read_all(&mut Reader::on_path(active_path(entries)), FORMAT, lines)
}

/// A pi session, one entry at a time.
#[derive(Debug, Default)]
pub(crate) struct Reader {
    /// The ids on the conversation's path, when the whole file is known
    /// (tree layout): entries off it are skipped.
    path: Option<HashSet<String>>,
    /// The newest entry on the path. While following, an entry whose
    /// parent is another one means pi moved to another branch.
    leaf: Option<String>,
    /// Per parsed entry (pi counts them), the position of the first message
    /// given at or after it.
    positions: Vec<usize>,
    /// Entry id → the same, for entries on the path.
    by_id: HashMap<String, usize>,
}

impl Reader {
    /// For a whole file: `path` from `active_path`.
    pub fn on_path(path: Option<HashSet<String>>) -> Reader {
        Reader {
            path,
            ..Reader::default()
        }
    }
}

impl crate::transcript::Reader for Reader {
    /// From here on the file grows: the path is the chain of entries as
    /// they are appended.
    fn caught_up(&mut self) {
        self.path = None;
    }

    fn line(&mut self, number: usize, entry: &Value, out: &mut Emitter) {
        self.positions.push(out.next_position());
        let id = entry.get("id").and_then(Value::as_str);
        let is_header = entry.get("type").and_then(Value::as_str) == Some("session");
        if let (Some(id), false) = (id, is_header) {
            match &self.path {
                Some(path) if !path.contains(id) => {
                    out.skip(number, "entries on other branches of the session tree");
                    return;
                }
                Some(_) => {}
                None if entry.get("parentId").is_some() && self.leaf.is_some() => {
                    let parent = entry.get("parentId").and_then(Value::as_str);
                    if parent != self.leaf.as_deref() {
                        out.restart();
                        return;
                    }
                }
                None => {}
            }
            self.leaf = Some(id.to_string());
            self.by_id.insert(id.to_string(), out.next_position());
        }
        entry_to_events(self, number, entry, out);
    }
}

/// For the tree layout, the ids on the path from the last entry to the root.
pub(crate) fn active_path<'a>(entries: impl Iterator<Item = &'a Value>) -> Option<HashSet<String>> {
    let entries: Vec<&Value> = entries
        .filter(|e| e.get("type").and_then(Value::as_str) != Some("session"))
        .collect();
    let parent_of: HashMap<&str, Option<&str>> = entries
        .iter()
        .filter(|e| e.get("parentId").is_some())
        .filter_map(|e| {
            let id = e.get("id")?.as_str()?;
            Some((id, e.get("parentId").and_then(Value::as_str)))
        })
        .collect();
    if parent_of.is_empty() {
        return None;
    }
    let leaf = entries
        .iter()
        .rev()
        .find_map(|e| e.get("id").and_then(Value::as_str))?;
    let mut path = HashSet::new();
    let mut cursor = Some(leaf);
    while let Some(id) = cursor {
        if !path.insert(id.to_string()) {
            break; // a cycle in a corrupt file
        }
        cursor = parent_of.get(id).copied().flatten();
    }
    Some(path)
}

fn entry_to_events(reader: &Reader, line: usize, entry: &Value, out: &mut Emitter) {
    let id = entry.get("id").and_then(Value::as_str);
    match entry.get("type").and_then(Value::as_str).unwrap_or("") {
        "session" | "model_change" => out.settings(SessionSettings {
            model: str_field(entry, "modelId"),
            ..SessionSettings::default()
        }),
        "message" => match entry.get("message").map(message_from) {
            Some(Ok(Some(message))) => {
                out.message(line, id, message, false);
            }
            Some(Ok(None)) => out.skip(line, "bash executions excluded from the context (!!)"),
            Some(Err(why)) => out.skip_because(line, "unreadable messages", why),
            None => out.skip_because(line, "unreadable messages", "no `message`"),
        },
        "custom_message" => {
            let content = content_text(entry.get("content"));
            out.message(line, id, Message::user("", content), false);
        }
        "branch_summary" => {
            let summary = str_field(entry, "summary").unwrap_or_default();
            let message = Message::user("", branch_summary_text(&summary));
            out.message(line, id, message, false);
        }
        "compaction" => compaction(reader, line, entry, out),
        kind @ ("thinking_level_change" | "custom" | "label" | "session_info") => out.skip(
            line,
            &format!("{kind} entries (not part of the conversation)"),
        ),
        other => out.skip(line, &format!("unknown entry type `{other}`")),
    }
}

/// A pi compaction, placed at its first kept message.
fn compaction(reader: &Reader, line: usize, entry: &Value, out: &mut Emitter) {
    let position = entry
        .get("firstKeptEntryIndex")
        .and_then(Value::as_u64)
        .and_then(|i| reader.positions.get(i as usize).copied())
        .or_else(|| {
            entry
                .get("firstKeptEntryId")
                .and_then(Value::as_str)
                .and_then(|id| reader.by_id.get(id).copied())
        });
    let Some(position) = position else {
        out.skip_because(
            line,
            "compactions that could not be placed",
            "its first kept entry is not a message of this session",
        );
        return;
    };
    let Some(first_kept) = out.first_id_from(position) else {
        out.skip(line, "compactions that keep no earlier message");
        return;
    };
    let files = |key: &str| -> Vec<String> {
        entry
            .pointer(&format!("/details/{key}"))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    let summary = str_field(entry, "summary").unwrap_or_default();
    let listed = ["readFiles", "modifiedFiles"]
        .iter()
        .any(|key| entry.pointer(&format!("/details/{key}")).is_some());
    out.compaction(ForeignCompaction {
        // The record renders the file sections from the lists in `details`.
        summary: if listed {
            without_file_sections(&summary)
        } else {
            summary
        },
        first_kept: Some(first_kept),
        tokens_before: entry
            .get("tokensBefore")
            .and_then(Value::as_u64)
            .unwrap_or(0),
        tokens_after: None,
        read_files: files("readFiles"),
        modified_files: files("modifiedFiles"),
        // pi does not record whether it was asked or hit its limit.
        trigger: Trigger::Threshold,
        line,
        created_at: crate::transcript::time::timestamp_ms(entry),
        duration_ms: None,
        cleared: false,
    });
}

/// A summary without the `<read-files>`/`<modified-files>` blocks pi (and
/// compactd, writing pi's compaction) appends to it, so they are not shown
/// twice once the record renders them again.
fn without_file_sections(summary: &str) -> String {
    let mut body = summary.to_string();
    for tag in ["read-files", "modified-files"] {
        let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
        while let Some(start) = body.find(&open) {
            let Some(end) = body[start..].find(&close) else {
                break;
            };
            body.replace_range(start..start + end + close.len(), "");
        }
    }
    body.trim_end().to_string()
}

fn branch_summary_text(summary: &str) -> String {
    format!("The following is a summary of a branch that this conversation came back from:\n\n<summary>\n{summary}\n</summary>")
}

/// pi's blocks that are not text: `image` (`data`, `mimeType`) and
/// `thinking` (with its `thinkingSignature`).
fn pi_part(block: &Value) -> Option<Part> {
    let get = |key: &str| block.get(key).cloned();
    match block.get("type").and_then(Value::as_str)? {
        "image" => Some(Part::new(
            "image",
            get("mimeType")
                .map(|m| ("mediaType", m))
                .into_iter()
                .chain(get("data").map(|d| ("data", d))),
        )),
        "thinking" => Some(Part::new(
            "thinking",
            [("thinking", get("thinking")?)]
                .into_iter()
                .chain(get("thinkingSignature").map(|s| ("signature", s))),
        )),
        _ => None,
    }
}

/// `Ok(None)`: a message pi keeps out of the model's context.
fn message_from(m: &Value) -> Result<Option<Message>, String> {
    let role = m.get("role").and_then(Value::as_str).ok_or("no `role`")?;
    let body = match role {
        "user" => MessageBody::User {
            content: content_of(m.get("content"), Dialect::Agent(pi_part)),
        },
        "assistant" => {
            let parts = m.get("content").and_then(Value::as_array);
            let tool_calls = parts
                .into_iter()
                .flatten()
                .filter(|p| p.get("type").and_then(Value::as_str) == Some("toolCall"))
                .map(|p| ToolCall {
                    id: str_field(p, "id").unwrap_or_default(),
                    name: str_field(p, "name").unwrap_or_default(),
                    arguments: p.get("arguments").cloned().unwrap_or(Value::Null),
                })
                .collect();
            MessageBody::Assistant {
                // Thinking stays a part, with its signature.
                content: content_of(m.get("content"), Dialect::Agent(pi_part)),
                thinking: None,
                tool_calls,
                model: str_field(m, "model"),
            }
        }
        "toolResult" => MessageBody::Tool {
            tool_call_id: str_field(m, "toolCallId").ok_or("tool result without `toolCallId`")?,
            tool_name: str_field(m, "toolName"),
            content: content_of(m.get("content"), Dialect::Agent(pi_part)),
            is_error: m.get("isError").and_then(Value::as_bool).unwrap_or(false),
        },
        "bashExecution" => {
            if m.get("excludeFromContext").and_then(Value::as_bool) == Some(true) {
                return Ok(None);
            }
            MessageBody::User {
                content: bash_execution_text(m).into(),
            }
        }
        "custom" | "hookMessage" => MessageBody::User {
            content: content_text(m.get("content")).into(),
        },
        "branchSummary" => MessageBody::User {
            content: branch_summary_text(&str_field(m, "summary").unwrap_or_default()).into(),
        },
        "compactionSummary" => MessageBody::User {
            content: str_field(m, "summary").unwrap_or_default().into(),
        },
        other => return Err(format!("unknown role `{other}`")),
    };
    let usage = m.get("usage").map(|u| {
        let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
        Usage {
            input: n("input"),
            output: n("output"),
            cache_read: n("cacheRead"),
            cache_write: n("cacheWrite"),
        }
    });
    Ok(Some(Message {
        id: String::new(),
        body,
        usage: usage.filter(|u| *u != Usage::default()),
        extra: Default::default(),
    }))
}

/// pi shows a `!command` the user ran to the model as a user message.
fn bash_execution_text(m: &Value) -> String {
    let command = str_field(m, "command").unwrap_or_default();
    let output = str_field(m, "output").unwrap_or_default();
    let mut text = format!("Ran `{command}`\n```\n{}\n```", output.trim_end());
    if m.get("cancelled").and_then(Value::as_bool) == Some(true) {
        text.push_str("\n(command cancelled)");
    } else if let Some(code) = m
        .get("exitCode")
        .and_then(Value::as_i64)
        .filter(|c| *c != 0)
    {
        text.push_str(&format!("\nCommand exited with code {code}"));
    }
    text
}

fn str_field(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::parse;
    use crate::store::LogEntry;

    fn first_compaction(imported: &Imported) -> &crate::compaction::CompactionRecord {
        imported
            .entries
            .iter()
            .find_map(|e| match e {
                LogEntry::Compaction(c) => Some(c),
                _ => None,
            })
            .expect("a compaction")
    }

    #[test]
    fn tree_layout_follows_the_active_branch_and_maps_compactions() {
        let text = [
            r#"{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/"}"#,
            r#"{"type":"model_change","id":"e0","parentId":null,"timestamp":"t","provider":"anthropic","modelId":"claude-sonnet-4-5"}"#,
            r#"{"type":"message","id":"e1","parentId":"e0","timestamp":"t","message":{"role":"user","content":"first"}}"#,
            r#"{"type":"message","id":"e2","parentId":"e1","timestamp":"t","message":{"role":"assistant","content":[{"type":"text","text":"abandoned"}],"usage":{"input":5,"output":1,"cacheRead":0,"cacheWrite":0}}}"#,
            r#"{"type":"message","id":"e3","parentId":"e1","timestamp":"t","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"a.rs"}}]}}"#,
            r#"{"type":"message","id":"e4","parentId":"e3","timestamp":"t","message":{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"fn a(){}"}],"isError":false}}"#,
            r#"{"type":"message","id":"e5","parentId":"e4","timestamp":"t","message":{"role":"user","content":"second"}}"#,
            r#"{"type":"compaction","id":"e6","parentId":"e5","timestamp":"t","summary":"did things","firstKeptEntryId":"e5","tokensBefore":900,"details":{"readFiles":["a.rs"],"modifiedFiles":[]}}"#,
            r#"{"type":"label","id":"e7","parentId":"e6","timestamp":"t","targetId":"e1","label":"x"}"#,
            r#"{"type":"message","id":"e8","parentId":"e7","timestamp":"t","message":{"role":"bashExecution","command":"ls","output":"a.rs\n","exitCode":0,"cancelled":false,"truncated":false}}"#,
        ]
        .join("\n");
        let imported = parse(text.as_bytes(), None).unwrap();
        assert_eq!(imported.format, FORMAT);
        assert_eq!(
            imported.settings.model.as_deref(),
            Some("claude-sonnet-4-5")
        );
        let ids: Vec<&str> = imported.messages().map(|m| m.id.as_str()).collect();
        assert_eq!(
            ids,
            ["e1", "e3", "e4", "e5", "e8"],
            "e2 is on another branch"
        );
        assert!(imported
            .messages()
            .last()
            .unwrap()
            .text()
            .starts_with("Ran `ls`"));
        let compaction = first_compaction(&imported);
        assert_eq!(compaction.first_kept_message_id.as_deref(), Some("e5"));
        assert_eq!(compaction.last_summarized_message_id.as_deref(), Some("e4"));
        assert_eq!(compaction.messages_summarized, 3);
        assert_eq!(compaction.read_files, ["a.rs"]);
        assert!(compaction.tokens_after > 0);
        assert_eq!(
            imported.skipped.total(),
            2,
            "{:?}",
            imported.skipped.reasons()
        );
        let session = imported.session("s", "PREFIX".into());
        let history = session.history();
        assert!(history[0].text().contains("did things"));
        assert_eq!(history[1].id, "e5");
    }

    #[test]
    fn file_sections_pi_appended_to_a_summary_are_shown_once() {
        let compaction = |summary: &str, details: &str| {
            let text = [
                r#"{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/"}"#,
                r#"{"type":"message","id":"e1","parentId":null,"timestamp":"t","message":{"role":"user","content":"first"}}"#,
                r#"{"type":"message","id":"e2","parentId":"e1","timestamp":"t","message":{"role":"user","content":"second"}}"#,
                &format!(
                    r#"{{"type":"compaction","id":"e3","parentId":"e2","timestamp":"t","summary":{},"firstKeptEntryId":"e2","tokensBefore":9{details}}}"#,
                    serde_json::to_string(summary).unwrap()
                ),
            ]
            .join("\n");
            let imported = parse(text.as_bytes(), None).unwrap();
            first_compaction(&imported).clone()
        };
        let sections = "## Goal\nDid things.\n\n<read-files>\na.rs\n</read-files>\n\n<modified-files>\nb.rs\n</modified-files>";
        let listed = compaction(
            sections,
            r#","details":{"readFiles":["a.rs"],"modifiedFiles":["b.rs"]}"#,
        );
        assert_eq!(listed.summary, "## Goal\nDid things.");
        assert_eq!(listed.full_summary(), sections);
        // Without lists in `details`, the summary's own sections are all there is.
        assert_eq!(compaction(sections, "").full_summary(), sections);
    }

    #[test]
    fn linear_layout_counts_entries_by_index() {
        let text = [
            r#"{"type":"session","id":"s","timestamp":"t","cwd":"/","provider":"anthropic","modelId":"m","thinkingLevel":"off"}"#,
            r#"{"type":"message","timestamp":"t","message":{"role":"user","content":[{"type":"text","text":"one"}]}}"#,
            r#"not json"#,
            r#"{"type":"thinking_level_change","timestamp":"t","thinkingLevel":"high"}"#,
            r#"{"type":"message","timestamp":"t","message":{"role":"assistant","content":[{"type":"text","text":"two"}]}}"#,
            r#"{"type":"message","timestamp":"t","message":{"role":"user","content":[{"type":"text","text":"three"}]}}"#,
            r#"{"type":"compaction","timestamp":"t","summary":"s","firstKeptEntryIndex":4,"tokensBefore":10}"#,
        ]
        .join("\n");
        let imported = parse(text.as_bytes(), None).unwrap();
        let compaction = first_compaction(&imported);
        // Index 4 counts parsed entries: session, one, thinking, two, three.
        let three = imported.messages().nth(2).unwrap();
        assert_eq!(three.text(), "three");
        assert_eq!(
            compaction.first_kept_message_id.as_deref(),
            Some(three.id.as_str())
        );
        assert_eq!(
            imported.skipped.reasons()[0],
            "unreadable lines: 1 (first at line 3: invalid JSON (expected ident at line 1 column 2))"
        );
    }
}
