//! Codex CLI rollout JSONL (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`):
//! `{timestamp, type, payload}` lines. `response_item`s are the
//! conversation: messages, reasoning, `function_call`/`custom_tool_call`/
//! `local_shell_call` and their outputs. The items of one model response
//! become one assistant message; the `event_msg` `token_count` that ends the
//! response becomes its usage. Other `event_msg`s repeat the items for the
//! UI and are skipped. Read one line at a time: a response's message stays
//! open until its `token_count` (or the next response) arrives.

use super::compacted;

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::compaction::Trigger;
use crate::conversation::{Message, MessageBody, Part, ToolCall, Usage};
use crate::files::tools::runs_patch;
use crate::store::SessionSettings;
use crate::transcript::parts::{content_of, Dialect};
use crate::transcript::{content_text, Emitter, ForeignCompaction, Format, Imported, Line};

/// Line types Codex writes for itself; none is conversation.
const BOOKKEEPING: [&str; 2] = ["world_state", "token_usage_record"];

/// Its transcript format.
pub const FORMAT: Format = Format::named(super::home::NAME);

/// Whether a JSON line is one of its rollouts', from its shape.
pub(crate) fn classify(value: &Value) -> bool {
    let kind = value.get("type").and_then(Value::as_str).unwrap_or("");
    value.get("payload").is_some()
        && matches!(
            kind,
            "session_meta" | "response_item" | "event_msg" | "turn_context" | "compacted"
        )
}

pub(crate) fn import(lines: &[Line]) -> Imported {
    crate::transcript::read_all(&mut Reader::default(), FORMAT, lines)
}

/// A Codex rollout, one line at a time.
#[derive(Debug, Default)]
pub(crate) struct Reader {
    /// The assistant message the current model response is filling.
    response: Option<usize>,
    /// The latest assistant message, open until its usage arrives.
    last_assistant: Option<usize>,
    tool_names: HashMap<String, String>,
    /// The calls that apply a patch (its `apply_patch` tool, or
    /// `apply_patch` through the shell): only a result saying it
    /// succeeded is a success.
    patches: HashSet<String>,
    /// The context size the latest `token_count` reported.
    last_context: u64,
    /// The user's own messages since the last compaction, oldest first:
    /// what an older Codex keeps when it compacts.
    user_messages: Vec<String>,
    /// The window Codex itself states was seen (it is preferred over our
    /// table).
    window_stated: bool,
}

impl crate::transcript::Reader for Reader {
    fn line(&mut self, number: usize, entry: &Value, out: &mut Emitter) {
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
                out.settings(SessionSettings {
                    system_prompt: instructions.map(str::to_string),
                    ..SessionSettings::default()
                });
            }
            "turn_context" => {
                let model = payload.get("model").and_then(Value::as_str);
                out.settings(SessionSettings {
                    model: model.map(str::to_string),
                    ..SessionSettings::default()
                });
            }
            "response_item" => self.response_item(number, payload, out),
            "event_msg" => match payload.get("type").and_then(Value::as_str) {
                Some("token_count") => self.token_count(number, payload, out),
                Some(kind) => out.skip(number, &format!("event_msg {kind} lines (UI events)")),
                None => out.skip(number, "event_msg lines (UI events)"),
            },
            "compacted" => self.compacted(
                number,
                payload,
                crate::transcript::time::timestamp_ms(entry),
                out,
            ),
            other => out.skip_line_type(number, other, &BOOKKEEPING),
        }
    }
}

impl Reader {
    /// Everything before is summarized; the summary is the history Codex
    /// replaced it with.
    fn compacted(&mut self, number: usize, payload: &Value, at: Option<u64>, out: &mut Emitter) {
        self.response = None;
        self.last_assistant = None;
        let message = payload.get("message").and_then(Value::as_str).unwrap_or("");
        let replacement = match payload.get("replacement_history").and_then(Value::as_array) {
            Some(history) => compacted::from_history(history, message),
            None => compacted::rebuilt(&self.user_messages, message),
        };
        self.user_messages = replacement.user_messages;
        out.compaction(ForeignCompaction {
            summary: replacement.summary,
            first_kept: None,
            tokens_before: self.last_context,
            tokens_after: None,
            read_files: Vec::new(),
            modified_files: Vec::new(),
            // A rollout does not say whether it was asked for.
            trigger: Trigger::Threshold,
            line: number,
            created_at: at,
            duration_ms: None,
            cleared: false,
        });
    }

    fn response_item(&mut self, number: usize, item: &Value, out: &mut Emitter) {
        let kind = item.get("type").and_then(Value::as_str).unwrap_or("");
        match kind {
            "message" => self.response_message(number, item, out),
            "reasoning" => self.reasoning(number, item, out),
            "function_call" | "custom_tool_call" | "local_shell_call" => {
                self.tool_call(number, kind, item, out)
            }
            "function_call_output" | "custom_tool_call_output" => {
                self.tool_output(number, item, out)
            }
            "web_search_call" => out.skip(
                number,
                "web_search_call items (run by the provider, no result item)",
            ),
            "ghost_snapshot" | "compaction" | "compaction_summary" => out.skip(
                number,
                &format!("{kind} items (not part of the conversation)"),
            ),
            other => out.skip(number, &format!("unknown response item type `{other}`")),
        }
    }

    fn response_message(&mut self, number: usize, item: &Value, out: &mut Emitter) {
        let content = content_text(item.get("content"));
        match item.get("role").and_then(Value::as_str).unwrap_or("") {
            "assistant" => {
                let position = self.assistant(number, out);
                if let Some(MessageBody::Assistant { content: c, .. }) =
                    out.message_mut(position).map(|m| &mut m.body)
                {
                    c.append_line(&content);
                }
            }
            "user" => {
                self.response = None;
                if compacted::is_users_own(&content) {
                    self.user_messages.push(content.clone());
                }
                let mut message = Message::user("", "");
                *message.content_mut() = content_of(item.get("content"), Dialect::Responses);
                out.message(number, None, message, false);
            }
            "developer" | "system" => {
                self.response = None;
                out.message(number, None, Message::system("", content), false);
            }
            other => out.skip_because(
                number,
                "unreadable response items",
                format!("message with role `{other}`"),
            ),
        }
    }

    fn reasoning(&mut self, number: usize, item: &Value, out: &mut Emitter) {
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
        let position = self.assistant(number, out);
        let encrypted = item.get("encrypted_content").cloned();
        if summary.is_empty() && encrypted.is_none() {
            return;
        }
        // A thinking part: its summary, and the encrypted reasoning kept as
        // the rollout has it.
        let part = Part::new(
            "thinking",
            [("thinking", summary.join("\n").into())]
                .into_iter()
                .chain(encrypted.map(|e| ("encrypted_content", e))),
        );
        if let Some(message) = out.message_mut(position) {
            message.content_mut().push(part);
        }
    }

    fn tool_call(&mut self, number: usize, kind: &str, item: &Value, out: &mut Emitter) {
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
        if name == "apply_patch" || runs_patch(&arguments) {
            self.patches.insert(call_id.clone());
        }
        self.tool_names.insert(call_id.clone(), name.clone());
        let position = self.assistant(number, out);
        if let Some(MessageBody::Assistant { tool_calls, .. }) =
            out.message_mut(position).map(|m| &mut m.body)
        {
            tool_calls.push(ToolCall {
                id: call_id,
                name,
                arguments,
            });
        }
    }

    fn tool_output(&mut self, number: usize, item: &Value, out: &mut Emitter) {
        self.response = None;
        let call_id = item
            .get("call_id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let (content, mut is_error) = output_text(item.get("output"));
        // A patch that failed says so only in words ("apply_patch
        // verification failed: …", "patch rejected by user", "Exit code: 1").
        if self.patches.remove(&call_id) && !content.contains(PATCH_APPLIED) {
            is_error = true;
        }
        let message = Message {
            id: String::new(),
            body: MessageBody::Tool {
                tool_name: self.tool_names.remove(&call_id),
                tool_call_id: call_id,
                content: content.into(),
                is_error,
            },
            usage: None,
            extra: Default::default(),
        };
        out.message(number, None, message, false);
    }

    /// The assistant message of the current response, opened on demand.
    fn assistant(&mut self, number: usize, out: &mut Emitter) -> usize {
        if let Some(position) = self.response {
            return position;
        }
        if let Some(previous) = self.last_assistant.take() {
            out.close(previous);
        }
        let position = out.message(number, None, Message::assistant("", "", Vec::new()), true);
        self.response = Some(position);
        self.last_assistant = Some(position);
        position
    }

    fn token_count(&mut self, number: usize, payload: &Value, out: &mut Emitter) {
        // The response is over either way.
        self.response = None;
        if let (false, Some(window)) = (
            self.window_stated,
            payload
                .pointer("/info/model_context_window")
                .and_then(Value::as_u64),
        ) {
            self.window_stated = true;
            out.facts(SessionSettings {
                context_window: Some(window),
                ..SessionSettings::default()
            });
        }
        let Some(last) = payload.pointer("/info/last_token_usage") else {
            out.skip(
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
        let waiting = self
            .last_assistant
            .filter(|p| out.open_message(*p).is_some_and(|m| m.usage.is_none()));
        match waiting.and_then(|p| out.message_mut(p)) {
            Some(message) => message.usage = Some(usage),
            None => out.skip(number, "token_count events repeating the previous one"),
        }
        if let Some(position) = self.last_assistant.take() {
            out.close(position);
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
            // 0.169's exec_command: "…\nProcess exited with code 127\n…".
            _ => (s.clone(), exit_code(s).is_some_and(|c| c != 0)),
        },
        Some(Value::Array(_)) => (content_text(output), false),
        Some(Value::Object(map)) => {
            let failed = map.get("success").and_then(Value::as_bool) == Some(false);
            (content_text(map.get("content")), failed)
        }
        _ => (String::new(), false),
    }
}

/// What the output of a patch that was applied says.
const PATCH_APPLIED: &str = "Success. Updated the following files";

/// The code of a "Process exited with code N" line.
fn exit_code(output: &str) -> Option<i64> {
    output
        .lines()
        .take(8)
        .find_map(|l| l.trim().strip_prefix("Process exited with code "))
        .and_then(|code| code.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_that_exited_with_a_code_failed() {
        let failed = "Chunk ID: 0f6024\nWall time: 0.0005 seconds\nProcess exited with code 127\nOutput:\n/bin/bash: line 1: cargo: command not found\n";
        assert!(output_text(Some(&Value::String(failed.into()))).1);
        let ok = failed.replace("code 127", "code 0");
        assert!(!output_text(Some(&Value::String(ok))).1);
        assert!(!output_text(Some(&Value::String("plain".into()))).1);
    }

    /// 0.169 edits and reads through `exec_command` (lines as a real
    /// rollout has them): the patches that applied and the plain reads are
    /// the session's files; a patch Codex refused is a failed call; a file
    /// added and deleted again is not listed.
    #[test]
    fn edits_and_reads_through_exec_command_are_its_files() {
        let call = |id: &str, cmd: &str, workdir: Option<&str>| {
            let mut args = serde_json::json!({ "cmd": cmd });
            if let Some(w) = workdir {
                args["workdir"] = w.into();
            }
            serde_json::json!({"type": "response_item", "payload": {"type": "function_call",
                "name": "exec_command", "arguments": args.to_string(), "call_id": id}})
        };
        let output = |id: &str, text: &str| {
            serde_json::json!({"type": "response_item", "payload": {"type": "function_call_output",
                "call_id": id, "output": text}})
        };
        let applied = |files: &str| {
            format!("Wall time: 0.0000 seconds\nOutput:\nExit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\n{files}")
        };
        let ran = |out: &str| {
            format!("Chunk ID: 4f1e59\nWall time: 0.0000 seconds\nProcess exited with code 0\nOriginal token count: 3\nOutput:\n{out}")
        };
        let patch = |body: &str| {
            format!("apply_patch <<'PATCH'\n*** Begin Patch\n{body}\n*** End Patch\nPATCH")
        };
        let lines = [
            serde_json::json!({"type": "session_meta", "payload": {"id": "x", "cwd": "/w"}}),
            call("p1", &patch("*** Update File: src/b.py\n@@\n-print(\"b\")\n+print(\"B\")\n*** Add File: scratch.md\n+hello"), Some("/w")),
            output("p1", &applied("A scratch.md\nM src/b.py\n")),
            call("r1", "cat a.txt", None),
            output("r1", &ran("alpha\n")),
            call("p2", &patch("*** Update File: missing.py\n@@\n-x\n+y"), None),
            output("p2", "apply_patch verification failed: Failed to read file to update /w/missing.py: No such file or directory (os error 2)"),
            call("p3", &patch("*** Delete File: scratch.md"), None),
            output("p3", &applied("D scratch.md\n")),
            call("r2", "sed -n '1,80p' src/b.py", Some("/w")),
            output("r2", &ran("print(\"B\")\n")),
            call("r3", "cat docs/*.md", None),
            output("r3", &ran("")),
        ];
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let mut imported = crate::import::parse(text.as_bytes(), None).unwrap();
        let failed: Vec<bool> = imported
            .messages()
            .filter_map(|m| match &m.body {
                MessageBody::Tool { is_error, .. } => Some(*is_error),
                _ => None,
            })
            .collect();
        assert_eq!(failed, [false, false, true, false, false, false]);
        let workspace = crate::files::Workspace::new(vec!["/w".into()], None);
        imported.track_files(&crate::files::FileTools::default(), &workspace);
        let session = imported.session("s", String::new());
        let files = session.file_ledger.ledger.sections(&workspace, 50);
        assert_eq!(files.modified, ["src/b.py"]);
        assert_eq!(files.read, ["a.txt"]);
    }

    #[test]
    fn its_lines_are_told_apart() {
        let meta = r#"{"timestamp":"t","type":"session_meta","payload":{"id":"x","cwd":"/w"}}"#;
        let message = r#"{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}}"#;
        let imported =
            crate::import::parse(format!("{meta}\n{message}\n").as_bytes(), None).unwrap();
        assert_eq!(imported.format, FORMAT);
        assert!(
            !classify(&serde_json::json!({"type": "session_meta"})),
            "no payload"
        );
    }
}
