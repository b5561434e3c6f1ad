//! Claude Code `~/.claude/projects/<project>/<session>.jsonl`. One API
//! response is written as several `assistant` lines that share
//! `message.id` (one content block each), sometimes with tool results in
//! between: they are merged into one message before results are paired
//! with calls. Lines that are not conversation (`summary`, `system`,
//! `file-history-snapshot`, `queue-operation`, `attachment`, the
//! `isCompactSummary` message, …) are skipped and counted. Subagent
//! transcripts live in `<session>/subagents/*.jsonl` and import on their own.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{append_line, content_text, Builder, Format, Imported, Line};
use crate::conversation::{Message, MessageBody, ToolCall, Usage};
use crate::store::SessionSettings;

pub(crate) fn import(lines: &[Line]) -> Imported {
    let mut builder = Builder::new(Format::ClaudeCode);
    // A subagent's own file holds only sidechain lines; in a main session
    // file they belong to another context and are skipped.
    let main_conversation = lines.iter().any(|l| {
        l.value.as_ref().is_ok_and(|v| {
            matches!(
                v.get("type").and_then(Value::as_str),
                Some("user" | "assistant")
            ) && v.get("isSidechain").and_then(Value::as_bool) != Some(true)
        })
    });
    if let Some(model) = lines.iter().find_map(|l| {
        let v = l.value.as_ref().ok()?;
        let model = v.pointer("/message/model")?.as_str()?;
        (v.get("type").and_then(Value::as_str) == Some("assistant") && model != "<synthetic>")
            .then(|| model.to_string())
    }) {
        builder.settings(SessionSettings {
            model: Some(model),
            ..SessionSettings::default()
        });
    }
    // message.id → item index of the merged assistant message.
    let mut assistants: HashMap<String, usize> = HashMap::new();
    // tool_use id → tool name, to name the results.
    let mut tool_names: HashMap<String, String> = HashMap::new();
    for line in lines {
        let Some(entry) = builder.readable(line) else {
            continue;
        };
        let kind = entry.get("type").and_then(Value::as_str).unwrap_or("");
        let sidechain = entry.get("isSidechain").and_then(Value::as_bool) == Some(true);
        match kind {
            "user" | "assistant" if sidechain && main_conversation => {
                builder.skip(line.number, "sidechain (subagent) lines")
            }
            "user" if entry.get("isCompactSummary").and_then(Value::as_bool) == Some(true) => {
                builder.skip(line.number, "compact summary messages (isCompactSummary)")
            }
            "user" => user_line(&mut builder, line.number, entry, &tool_names),
            "assistant" => assistant_line(
                &mut builder,
                line.number,
                entry,
                &mut assistants,
                &mut tool_names,
            ),
            "system" => {
                let kind = match entry.get("subtype").and_then(Value::as_str) {
                    Some("compact_boundary") => "system compact_boundary lines".to_string(),
                    Some(subtype) => format!("system {subtype} lines"),
                    None => "system lines (hook and status output)".to_string(),
                };
                builder.skip(line.number, &kind)
            }
            "summary" | "file-history-snapshot" | "queue-operation" | "attachment" | "progress" => {
                builder.skip(line.number, &format!("{kind} lines"))
            }
            "" => builder.skip_because(line.number, "unreadable lines", "no `type`"),
            other => builder.skip(line.number, &format!("unknown line type `{other}`")),
        }
    }
    builder.finish()
}

fn user_line(builder: &mut Builder, line: usize, entry: &Value, names: &HashMap<String, String>) {
    let id = entry.get("uuid").and_then(Value::as_str);
    let content = entry.pointer("/message/content");
    let Some(Value::Array(blocks)) = content else {
        let text = content_text(content);
        builder.message(line, id, Message::user("", text));
        return;
    };
    let (results, rest): (Vec<&Value>, Vec<&Value>) = blocks
        .iter()
        .partition(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"));
    // One line may carry several results: only the first keeps the uuid.
    let mut preferred = id;
    for result in &results {
        let call_id = result
            .get("tool_use_id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let message = Message {
            id: String::new(),
            body: MessageBody::Tool {
                tool_name: names.get(&call_id).cloned(),
                tool_call_id: call_id,
                content: content_text(result.get("content")),
                is_error: result.get("is_error").and_then(Value::as_bool) == Some(true),
            },
            usage: None,
        };
        builder.message(line, preferred.take(), message);
    }
    if !rest.is_empty() {
        let text = content_text(Some(&Value::Array(rest.into_iter().cloned().collect())));
        builder.message(line, preferred.take(), Message::user("", text));
    }
}

fn assistant_line(
    builder: &mut Builder,
    line: usize,
    entry: &Value,
    assistants: &mut HashMap<String, usize>,
    names: &mut HashMap<String, String>,
) {
    let message = entry.get("message").unwrap_or(&Value::Null);
    let blocks = message
        .get("content")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let api_id = message
        .get("id")
        .and_then(Value::as_str)
        .map(str::to_string);
    let index = match api_id.as_ref().and_then(|id| assistants.get(id)) {
        Some(index) => *index,
        None => {
            let model = message
                .get("model")
                .and_then(Value::as_str)
                .map(str::to_string);
            let mut response = Message::assistant("", "", Vec::new());
            if let MessageBody::Assistant { model: m, .. } = &mut response.body {
                *m = model;
            }
            let index = builder.message(line, entry.get("uuid").and_then(Value::as_str), response);
            if let Some(id) = api_id {
                assistants.insert(id, index);
            }
            index
        }
    };
    let target = builder.message_mut(index).expect("an assistant item");
    if let Some(usage) = message.get("usage").and_then(usage_from) {
        // Every line of a response repeats the usage; the last is final.
        target.usage = Some(usage);
    }
    let MessageBody::Assistant {
        content,
        thinking,
        tool_calls,
        ..
    } = &mut target.body
    else {
        unreachable!("created as an assistant message");
    };
    for block in &blocks {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => append_line(
                content,
                block.get("text").and_then(Value::as_str).unwrap_or(""),
            ),
            Some("thinking") => {
                let text = thinking.get_or_insert_with(String::new);
                append_line(
                    text,
                    block.get("thinking").and_then(Value::as_str).unwrap_or(""),
                );
            }
            Some("tool_use") => {
                let id = block.get("id").and_then(Value::as_str).unwrap_or("");
                if tool_calls.iter().any(|c| c.id == id) {
                    continue; // a repeated line
                }
                let name = block.get("name").and_then(Value::as_str).unwrap_or("");
                names.insert(id.to_string(), name.to_string());
                tool_calls.push(ToolCall {
                    id: id.to_string(),
                    name: name.to_string(),
                    arguments: block.get("input").cloned().unwrap_or(Value::Null),
                });
            }
            _ => {}
        }
    }
}

fn usage_from(usage: &Value) -> Option<Usage> {
    let n = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
    let usage = Usage {
        input: n("input_tokens"),
        output: n("output_tokens"),
        cache_read: n("cache_read_input_tokens"),
        cache_write: n("cache_creation_input_tokens"),
    };
    (usage != Usage::default()).then_some(usage)
}

/// `<dir>/<session>/subagents/*.jsonl` beside `<dir>/<session>.jsonl`.
pub fn subagent_files(session_file: &Path) -> Vec<PathBuf> {
    let dir = session_file.with_extension("").join("subagents");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    files
}

#[cfg(test)]
mod tests {
    use super::super::parse;
    use super::*;

    #[test]
    fn split_responses_merge_before_pairing() {
        let text = [
            r#"{"type":"summary","summary":"x","leafUuid":"l"}"#,
            r#"{"type":"user","uuid":"u1","sessionId":"s","message":{"role":"user","content":"go"}}"#,
            r#"{"type":"assistant","uuid":"a1","sessionId":"s","message":{"id":"msg_1","role":"assistant","model":"claude-x","content":[{"type":"thinking","thinking":"hmm"}],"usage":{"input_tokens":3,"cache_read_input_tokens":100,"cache_creation_input_tokens":20,"output_tokens":1}}}"#,
            r#"{"type":"assistant","uuid":"a2","sessionId":"s","message":{"id":"msg_1","role":"assistant","model":"claude-x","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"a.rs"}}],"usage":{"input_tokens":3,"cache_read_input_tokens":100,"cache_creation_input_tokens":20,"output_tokens":9}}}"#,
            r#"{"type":"user","uuid":"u2","sessionId":"s","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"fn a(){}"}]}}"#,
            r#"{"type":"assistant","uuid":"a3","sessionId":"s","message":{"id":"msg_1","role":"assistant","model":"claude-x","content":[{"type":"tool_use","id":"t2","name":"Bash","input":{"command":"ls"}}]}}"#,
            r#"{"type":"user","uuid":"u3","sessionId":"s","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":"a.rs"}],"is_error":true},{"type":"text","text":"and then?"}]}}"#,
            r#"{"type":"system","subtype":"compact_boundary","uuid":"b","sessionId":"s","content":"Conversation compacted"}"#,
            r#"{"type":"user","uuid":"u4","sessionId":"s","isCompactSummary":true,"message":{"role":"user","content":"This session is being continued"}}"#,
            r#"{"type":"user","uuid":"u5","sessionId":"s","isSidechain":true,"message":{"role":"user","content":"Warmup"}}"#,
            r#"{"type":"file-history-snapshot","messageId":"m","snapshot":{}}"#,
        ]
        .join("\n");
        let imported = parse(text.as_bytes(), None).unwrap();
        assert_eq!(imported.format, Format::ClaudeCode);
        assert_eq!(imported.settings.model.as_deref(), Some("claude-x"));
        let messages: Vec<&Message> = imported.messages().collect();
        let roles: Vec<&str> = messages.iter().map(|m| m.role().as_str()).collect();
        assert_eq!(roles, ["user", "assistant", "tool", "tool", "user"]);
        assert_eq!(
            messages[1].tool_calls().len(),
            2,
            "three lines, one response"
        );
        assert_eq!(messages[1].usage.unwrap().output, 9, "the last usage wins");
        assert_eq!(messages[1].usage.unwrap().context_tokens(), 132);
        assert!(messages[3].is_error_result());
        assert_eq!(messages[4].text(), "and then?");
        let pairing = crate::conversation::tool_pairing(messages.iter().copied());
        assert_eq!((pairing.paired, pairing.orphan_results.len()), (2, 0));
        assert_eq!(
            imported.skipped.total(),
            5,
            "{:?}",
            imported.skipped.reasons()
        );
        let reasons = imported.skipped.reasons().join("; ");
        for kind in [
            "summary lines",
            "compact_boundary",
            "isCompactSummary",
            "sidechain",
            "file-history-snapshot",
        ] {
            assert!(reasons.contains(kind), "{kind} in {reasons}");
        }
    }
}
