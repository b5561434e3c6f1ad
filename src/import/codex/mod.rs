//! Codex CLI rollout JSONL (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`):
//! `{timestamp, type, payload}` lines. `response_item`s are the
//! conversation: messages, reasoning, `function_call`/`custom_tool_call`/
//! `local_shell_call` and their outputs. The items of one model response
//! become one assistant message; the `event_msg` `token_count` that ends the
//! response becomes its usage. Other `event_msg`s repeat the items for the
//! UI and are skipped.

mod compacted;

use std::collections::HashMap;

use serde_json::Value;

use super::{
    append_line, content_text, Builder, FirstKept, ForeignCompaction, Format, Imported, Line,
};
use crate::compaction::Trigger;
use crate::conversation::{Message, MessageBody, ToolCall, Usage};
use crate::store::SessionSettings;

/// Line types Codex writes for itself; none is conversation.
const BOOKKEEPING: [&str; 2] = ["world_state", "token_usage_record"];

pub(crate) fn import(lines: &[Line]) -> Imported {
    let mut reader = Reader {
        builder: Builder::new(Format::Codex),
        response: None,
        last_assistant: None,
        tool_names: HashMap::new(),
        last_context: 0,
        user_messages: Vec::new(),
    };
    // The window Codex itself used is preferred over our table.
    let context_window = lines.iter().find_map(|l| {
        l.value
            .as_ref()
            .ok()?
            .pointer("/payload/info/model_context_window")?
            .as_u64()
    });
    reader.builder.settings(SessionSettings {
        context_window,
        ..SessionSettings::default()
    });
    for line in lines {
        if let Some(entry) = reader.builder.readable(line) {
            reader.line(line.number, entry);
        }
    }
    reader.builder.finish()
}

struct Reader {
    builder: Builder,
    /// The assistant message the current model response is filling.
    response: Option<usize>,
    last_assistant: Option<usize>,
    tool_names: HashMap<String, String>,
    /// The context size the latest `token_count` reported.
    last_context: u64,
    /// The user's own messages since the last compaction, oldest first:
    /// what an older Codex keeps when it compacts.
    user_messages: Vec<String>,
}

impl Reader {
    fn line(&mut self, number: usize, entry: &Value) {
        let payload = entry.get("payload").unwrap_or(&Value::Null);
        match entry.get("type").and_then(Value::as_str).unwrap_or("") {
            "session_meta" => {
                let instructions =
                    payload
                        .get("instructions")
                        .and_then(Value::as_str)
                        .or_else(|| {
                            payload
                                .pointer("/base_instructions/text")
                                .and_then(Value::as_str)
                        });
                self.builder.settings(SessionSettings {
                    system_prompt: instructions.map(str::to_string),
                    ..SessionSettings::default()
                });
            }
            "turn_context" => {
                let model = payload.get("model").and_then(Value::as_str);
                self.builder.settings(SessionSettings {
                    model: model.map(str::to_string),
                    ..SessionSettings::default()
                });
            }
            "response_item" => self.response_item(number, payload),
            "event_msg" => match payload.get("type").and_then(Value::as_str) {
                Some("token_count") => self.token_count(number, payload),
                Some(kind) => self
                    .builder
                    .skip(number, &format!("event_msg {kind} lines (UI events)")),
                None => self.builder.skip(number, "event_msg lines (UI events)"),
            },
            "compacted" => self.compacted(number, payload),
            other => self.builder.skip_line_type(number, other, &BOOKKEEPING),
        }
    }

    /// Everything before is summarized; the summary is the history Codex
    /// replaced it with.
    fn compacted(&mut self, number: usize, payload: &Value) {
        self.response = None;
        let message = payload.get("message").and_then(Value::as_str).unwrap_or("");
        let replacement = match payload.get("replacement_history").and_then(Value::as_array) {
            Some(history) => compacted::from_history(history, message),
            None => compacted::rebuilt(&self.user_messages, message),
        };
        self.user_messages = replacement.user_messages;
        self.builder.compaction(ForeignCompaction {
            summary: replacement.summary,
            first_kept: FirstKept::Nothing,
            tokens_before: self.last_context,
            read_files: Vec::new(),
            modified_files: Vec::new(),
            // A rollout does not say whether it was asked for.
            trigger: Trigger::Threshold,
            line: number,
        });
    }

    fn response_item(&mut self, number: usize, item: &Value) {
        let kind = item.get("type").and_then(Value::as_str).unwrap_or("");
        match kind {
            "message" => self.response_message(number, item),
            "reasoning" => self.reasoning(number, item),
            "function_call" | "custom_tool_call" | "local_shell_call" => {
                self.tool_call(number, kind, item)
            }
            "function_call_output" | "custom_tool_call_output" => self.tool_output(number, item),
            "web_search_call" => self.builder.skip(
                number,
                "web_search_call items (run by the provider, no result item)",
            ),
            "ghost_snapshot" | "compaction" | "compaction_summary" => self.builder.skip(
                number,
                &format!("{kind} items (not part of the conversation)"),
            ),
            other => self
                .builder
                .skip(number, &format!("unknown response item type `{other}`")),
        }
    }

    fn response_message(&mut self, number: usize, item: &Value) {
        let content = content_text(item.get("content"));
        match item.get("role").and_then(Value::as_str).unwrap_or("") {
            "assistant" => {
                let index = self.assistant(number);
                if let Some(MessageBody::Assistant { content: c, .. }) =
                    self.builder.message_mut(index).map(|m| &mut m.body)
                {
                    append_line(c, &content);
                }
            }
            "user" => {
                self.response = None;
                if compacted::is_users_own(&content) {
                    self.user_messages.push(content.clone());
                }
                self.builder
                    .message(number, None, Message::user("", content));
            }
            "developer" | "system" => {
                self.response = None;
                self.builder
                    .message(number, None, Message::system("", content));
            }
            other => self.builder.skip_because(
                number,
                "unreadable response items",
                format!("message with role `{other}`"),
            ),
        }
    }

    fn reasoning(&mut self, number: usize, item: &Value) {
        let summary: Vec<&str> = item
            .get("summary")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .chain(
                item.get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten(),
            )
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect();
        let index = self.assistant(number);
        if let (false, Some(MessageBody::Assistant { thinking, .. })) = (
            summary.is_empty(),
            self.builder.message_mut(index).map(|m| &mut m.body),
        ) {
            append_line(
                thinking.get_or_insert_with(String::new),
                &summary.join("\n"),
            );
        }
    }

    fn tool_call(&mut self, number: usize, kind: &str, item: &Value) {
        let text = |field: &str| item.get(field).and_then(Value::as_str).unwrap_or("");
        let call_id = item
            .get("call_id")
            .or_else(|| item.get("id"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let (name, arguments) = match kind {
            "function_call" => {
                let raw = text("arguments");
                let parsed =
                    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_string()));
                (text("name").to_string(), parsed)
            }
            "custom_tool_call" => (
                text("name").to_string(),
                serde_json::json!({ "input": text("input") }),
            ),
            _ => (
                "local_shell".to_string(),
                item.get("action").cloned().unwrap_or(Value::Null),
            ),
        };
        self.tool_names.insert(call_id.clone(), name.clone());
        let index = self.assistant(number);
        if let Some(MessageBody::Assistant { tool_calls, .. }) =
            self.builder.message_mut(index).map(|m| &mut m.body)
        {
            tool_calls.push(ToolCall {
                id: call_id,
                name,
                arguments,
            });
        }
    }

    fn tool_output(&mut self, number: usize, item: &Value) {
        self.response = None;
        let call_id = item
            .get("call_id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let (content, is_error) = output_text(item.get("output"));
        let message = Message {
            id: String::new(),
            body: MessageBody::Tool {
                tool_name: self.tool_names.get(&call_id).cloned(),
                tool_call_id: call_id,
                content,
                is_error,
            },
            usage: None,
        };
        self.builder.message(number, None, message);
    }

    /// The assistant message of the current response, opened on demand.
    fn assistant(&mut self, number: usize) -> usize {
        if let Some(index) = self.response {
            return index;
        }
        let index = self
            .builder
            .message(number, None, Message::assistant("", "", Vec::new()));
        self.response = Some(index);
        self.last_assistant = Some(index);
        index
    }

    fn token_count(&mut self, number: usize, payload: &Value) {
        // The response is over either way.
        self.response = None;
        let Some(last) = payload.pointer("/info/last_token_usage") else {
            self.builder.skip(
                number,
                "token_count events without usage (rate limits only)",
            );
            return;
        };
        let n = |k: &str| last.get(k).and_then(Value::as_u64).unwrap_or(0);
        let cached = n("cached_input_tokens");
        // OpenAI counts cached tokens inside input_tokens.
        let usage = Usage {
            input: n("input_tokens").saturating_sub(cached),
            output: n("output_tokens"),
            cache_read: cached,
            cache_write: 0,
        };
        self.last_context = usage.context_tokens();
        let target = self
            .last_assistant
            .and_then(|i| self.builder.message_mut(i));
        match target {
            Some(message) if message.usage.is_none() => message.usage = Some(usage),
            _ => self
                .builder
                .skip(number, "token_count events repeating the previous one"),
        }
    }
}

/// The text of a tool output: a string (older rollouts wrap it in JSON with
/// `output` and `metadata.exit_code`), content items, or `{content, success}`.
fn output_text(output: Option<&Value>) -> (String, bool) {
    match output {
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(Value::Object(wrapped)) if wrapped.contains_key("output") => {
                let text = wrapped.get("output").and_then(Value::as_str).unwrap_or("");
                let code = wrapped
                    .get("metadata")
                    .and_then(|m| m.get("exit_code"))
                    .and_then(Value::as_i64);
                (text.to_string(), code.is_some_and(|c| c != 0))
            }
            _ => (s.clone(), false),
        },
        Some(Value::Array(_)) => (content_text(output), false),
        Some(Value::Object(map)) => {
            let failed = map.get("success").and_then(Value::as_bool) == Some(false);
            (content_text(map.get("content")), failed)
        }
        _ => (String::new(), false),
    }
}
