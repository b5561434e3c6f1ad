//! pi coding-agent session JSONL. Two layouts: the old linear one (a
//! `session` header, then entries without ids; a compaction names its first
//! kept entry by index) and the tree one (entries with `id`/`parentId`; the
//! conversation is the path from the last entry to the root, a compaction
//! names `firstKeptEntryId`). pi's compactions become ours.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::{content_text, Builder, FirstKept, ForeignCompaction, Format, Imported, Line};
use crate::compaction::Trigger;
use crate::conversation::{Message, MessageBody, ToolCall, Usage};
use crate::store::SessionSettings;

pub(crate) fn import(lines: &[Line]) -> Imported {
    let mut builder = Builder::new(Format::Pi);
    let on_path = active_path(lines);
    // Entry index (pi counts parsed entries only) and entry id → item index
    // of the message built from it.
    let mut by_index: HashMap<usize, usize> = HashMap::new();
    let mut by_id: HashMap<String, usize> = HashMap::new();
    let mut entry_index = 0usize;
    for line in lines {
        let Some(entry) = builder.readable(line) else {
            continue;
        };
        let index = entry_index;
        entry_index += 1;
        let entry_id = entry.get("id").and_then(Value::as_str);
        if let (Some(path), Some(id)) = (&on_path, entry_id) {
            if entry.get("type").and_then(Value::as_str) != Some("session") && !path.contains(id) {
                builder.skip(line.number, "entries on other branches of the session tree");
                continue;
            }
        }
        // Items added from here on start at this index.
        let first_item = builder.items.len();
        entry_to_items(&mut builder, line.number, entry, &by_index, &by_id);
        if builder.items.len() > first_item {
            by_index.insert(index, first_item);
            if let Some(id) = entry_id {
                by_id.insert(id.to_string(), first_item);
            }
        }
    }
    builder.finish()
}

/// For the tree layout, the ids on the path from the last entry to the root.
fn active_path(lines: &[Line]) -> Option<HashSet<String>> {
    let entries: Vec<&Value> = lines
        .iter()
        .filter_map(|l| l.value.as_ref().ok())
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

fn entry_to_items(
    builder: &mut Builder,
    line: usize,
    entry: &Value,
    by_index: &HashMap<usize, usize>,
    by_id: &HashMap<String, usize>,
) {
    let id = entry.get("id").and_then(Value::as_str);
    match entry.get("type").and_then(Value::as_str).unwrap_or("") {
        "session" => builder.settings(SessionSettings {
            model: str_field(entry, "modelId"),
            ..SessionSettings::default()
        }),
        "model_change" => builder.settings(SessionSettings {
            model: str_field(entry, "modelId"),
            ..SessionSettings::default()
        }),
        "message" => match entry.get("message").map(message_from) {
            Some(Ok(Some(message))) => {
                builder.message(line, id, message);
            }
            Some(Ok(None)) => builder.skip(line, "bash executions excluded from the context (!!)"),
            Some(Err(why)) => builder.skip_because(line, "unreadable messages", why),
            None => builder.skip_because(line, "unreadable messages", "no `message`"),
        },
        "custom_message" => {
            let content = content_text(entry.get("content"));
            builder.message(line, id, Message::user("", content));
        }
        "branch_summary" => {
            let summary = str_field(entry, "summary").unwrap_or_default();
            builder.message(line, id, Message::user("", branch_summary_text(&summary)));
        }
        "compaction" => compaction(builder, line, entry, by_index, by_id),
        kind @ ("thinking_level_change" | "custom" | "label" | "session_info") => builder.skip(
            line,
            &format!("{kind} entries (not part of the conversation)"),
        ),
        other => builder.skip(line, &format!("unknown entry type `{other}`")),
    }
}

/// A pi compaction, placed at its first kept message.
fn compaction(
    builder: &mut Builder,
    line: usize,
    entry: &Value,
    by_index: &HashMap<usize, usize>,
    by_id: &HashMap<String, usize>,
) {
    let first_kept = entry
        .get("firstKeptEntryIndex")
        .and_then(Value::as_u64)
        .and_then(|i| first_item_from(by_index, i as usize))
        .or_else(|| {
            entry
                .get("firstKeptEntryId")
                .and_then(Value::as_str)
                .and_then(|id| by_id.get(id).copied())
        });
    let Some(first_kept) = first_kept else {
        builder.skip_because(
            line,
            "compactions that could not be placed",
            "its first kept entry is not a message of this session",
        );
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
    builder.compaction(ForeignCompaction {
        // The record renders the file sections from the lists in `details`.
        summary: if listed {
            without_file_sections(&summary)
        } else {
            summary
        },
        first_kept: FirstKept::Item(first_kept),
        tokens_before: entry
            .get("tokensBefore")
            .and_then(Value::as_u64)
            .unwrap_or(0),
        read_files: files("readFiles"),
        modified_files: files("modifiedFiles"),
        // pi does not record whether it was asked or hit its limit.
        trigger: Trigger::Threshold,
        line,
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

/// The item built from the entry at `index`, or from the next entry that
/// built one (the index may name a non-message entry).
fn first_item_from(by_index: &HashMap<usize, usize>, index: usize) -> Option<usize> {
    by_index
        .iter()
        .filter(|(entry, _)| **entry >= index)
        .min_by_key(|(entry, _)| **entry)
        .map(|(_, item)| *item)
}

fn branch_summary_text(summary: &str) -> String {
    format!("The following is a summary of a branch that this conversation came back from:\n\n<summary>\n{summary}\n</summary>")
}

/// `Ok(None)`: a message pi keeps out of the model's context.
fn message_from(m: &Value) -> Result<Option<Message>, String> {
    let role = m.get("role").and_then(Value::as_str).ok_or("no `role`")?;
    let body = match role {
        "user" => MessageBody::User {
            content: content_text(m.get("content")),
        },
        "assistant" => {
            let parts = m.get("content").and_then(Value::as_array);
            let of_type = |kind: &str, field: &str| -> Vec<String> {
                parts
                    .into_iter()
                    .flatten()
                    .filter(|p| p.get("type").and_then(Value::as_str) == Some(kind))
                    .filter_map(|p| p.get(field).and_then(Value::as_str))
                    .map(str::to_string)
                    .collect()
            };
            let thinking = of_type("thinking", "thinking");
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
                content: of_type("text", "text").join("\n"),
                thinking: (!thinking.is_empty()).then(|| thinking.join("\n")),
                tool_calls,
                model: str_field(m, "model"),
            }
        }
        "toolResult" => MessageBody::Tool {
            tool_call_id: str_field(m, "toolCallId").ok_or("tool result without `toolCallId`")?,
            tool_name: str_field(m, "toolName"),
            content: content_text(m.get("content")),
            is_error: m.get("isError").and_then(Value::as_bool).unwrap_or(false),
        },
        "bashExecution" => {
            if m.get("excludeFromContext").and_then(Value::as_bool) == Some(true) {
                return Ok(None);
            }
            MessageBody::User {
                content: bash_execution_text(m),
            }
        }
        "custom" | "hookMessage" => MessageBody::User {
            content: content_text(m.get("content")),
        },
        "branchSummary" => MessageBody::User {
            content: branch_summary_text(&str_field(m, "summary").unwrap_or_default()),
        },
        "compactionSummary" => MessageBody::User {
            content: str_field(m, "summary").unwrap_or_default(),
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
    use super::super::{parse, LogEntry};
    use super::*;

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
        assert_eq!(imported.format, Format::Pi);
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
