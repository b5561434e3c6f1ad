//! Gemini CLI's session JSONL (`<gemini>/tmp/<project>/chats/session-*.jsonl`),
//! appended to as it goes (0.61): a first line of metadata (`sessionId`,
//! `projectHash`, `startTime`, `kind`), then
//!
//! - **message records** (`id`, `timestamp`, `type`, `content`): `user`
//!   (text parts, or the `functionResponse` parts answering the model's
//!   calls), `gemini` (its text, `toolCalls` with their `args`, `tokens`
//!   `{input, output, cached, thoughts, tool, total}` from the response's
//!   `usageMetadata`, `model`); `info`, `error` and `warning` are shown,
//!   never sent. A record whose `id` came before is a later version of that
//!   message: the response gets its `toolCalls` (with their results) that
//!   way.
//! - **`{"$set": {…}}`** changes the session's metadata; with `messages` it
//!   replaces the whole list: at start (its `<session_context>` message), on
//!   resume (every message again, with new ids, each function response
//!   twice), after a compression (`[<session_context>, the summary as a
//!   user message holding `<state_snapshot>`, "Got it. Thanks for the
//!   additional context!", the kept messages…]`), after it masked large
//!   tool outputs or rolled a failed request back.
//! - **`{"$rewindTo": id}`**: `/rewind` dropped that message and the ones
//!   after it (skipped here: the mirror keeps them).
//!
//! One reader serves a batch import and a follow: a message list is read
//! against what was already given (by Gemini's id, else by content), so a
//! resume or a masking adds nothing and a compression becomes a foreign
//! compaction whose summary is Gemini's snapshot.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::compaction::Trigger;
use crate::conversation::{Message, MessageBody, ToolCall, Usage};
use crate::store::SessionSettings;
use crate::transcript::{Emitter, ForeignCompaction, Format, Imported, Line};

/// Its transcript format.
pub const FORMAT: Format = Format::named(super::home::NAME);

/// What its summary of a compression is wrapped in.
const SNAPSHOT: &str = "<state_snapshot>";

/// Whether a JSON line is one of its session files', from its shape.
pub(crate) fn classify(value: &Value) -> bool {
    let Some(object) = value.as_object() else {
        return false;
    };
    let has = |key: &str| object.contains_key(key);
    if has("$set") || has("$rewindTo") {
        return true;
    }
    if has("sessionId") && has("projectHash") {
        return true;
    }
    has("id")
        && has("timestamp")
        && has("content")
        && !has("uuid")
        && matches!(
            object.get("type").and_then(Value::as_str),
            Some("user" | "gemini")
        )
}

pub(crate) fn import(lines: &[Line]) -> Imported {
    crate::transcript::read_all(&mut Reader::default(), FORMAT, lines)
}

/// The user's own text is not the context Gemini CLI puts first.
pub(crate) fn is_request(text: &str) -> bool {
    !text.trim_start().starts_with("<session_context>")
}

/// A Gemini CLI session file, one line at a time.
#[derive(Debug, Default)]
pub(crate) struct Reader {
    /// Gemini's ids of the records given so far, with the position of the
    /// message each began (a function response's: its first tool result).
    ids: HashMap<String, usize>,
    /// Each record's content given so far (the hash of its
    /// `fingerprint`), with its position: a resume lists them again under
    /// new ids.
    contents: HashMap<u64, usize>,
    /// The latest response, open for its tool calls and usage: Gemini's id
    /// and the message's position.
    open: Option<(String, usize)>,
    /// The calls whose result was given.
    answered: HashSet<String>,
    /// The context the latest usage reported.
    last_context: u64,
    /// The summaries recorded so far.
    summaries: HashSet<String>,
}

impl crate::transcript::Reader for Reader {
    fn line(&mut self, number: usize, entry: &Value, out: &mut Emitter) {
        if let Some(set) = entry.get("$set") {
            match set.get("messages").and_then(Value::as_array) {
                Some(list) => self.message_list(number, list, out),
                None => out.skip(number, "$set lines (session metadata)"),
            }
        } else if entry.get("$rewindTo").is_some() {
            out.skip(number, "$rewindTo lines (a rewind, not followed)");
        } else if entry.get("id").and_then(Value::as_str).is_some() {
            self.record(number, entry, out);
        } else if entry.get("sessionId").is_some() {
            out.skip(number, "metadata lines");
        } else {
            out.skip_because(number, "unreadable lines", "not a record of Gemini CLI's");
        }
    }
}

impl Reader {
    /// A message record: a new message, or a later version of the open
    /// response.
    fn record(&mut self, number: usize, record: &Value, out: &mut Emitter) {
        let id = record.get("id").and_then(Value::as_str).unwrap_or("");
        if let Some((open_id, position)) = &self.open {
            if open_id == id {
                let position = *position;
                self.update_response(position, record, out);
                return;
            }
        }
        if self.ids.contains_key(id) {
            return out.skip(number, "records repeating an earlier message");
        }
        self.new_record(number, record, out);
    }

    /// A record not given before: its messages, the response left open.
    fn new_record(&mut self, number: usize, record: &Value, out: &mut Emitter) {
        let id = record.get("id").and_then(Value::as_str).unwrap_or("");
        let kind = record.get("type").and_then(Value::as_str).unwrap_or("");
        let first = out.next_position();
        match kind {
            "user" => {
                self.close(out);
                self.user(number, record, out);
            }
            "gemini" => {
                self.close(out);
                if let Some(model) = record.get("model").and_then(Value::as_str) {
                    out.settings(SessionSettings {
                        model: Some(model.to_string()),
                        ..SessionSettings::default()
                    });
                }
                let position = out.message(number, None, response(record), true);
                self.open = Some((id.to_string(), position));
                self.note_usage(out.open_message(position));
            }
            "info" | "error" | "warning" => {
                return out.skip(number, &format!("{kind} records (shown, not sent)"))
            }
            other => return out.skip_line_type(number, other, &[]),
        }
        if out.next_position() > first {
            self.ids.insert(id.to_string(), first);
            self.contents.insert(fingerprint(record), first);
        }
    }

    /// A user record: the person's (or Gemini CLI's) text, or the results
    /// of the model's calls, each once.
    fn user(&mut self, number: usize, record: &Value, out: &mut Emitter) {
        let parts = parts(record.get("content"));
        let responses: Vec<&Value> = parts
            .iter()
            .filter_map(|p| p.get("functionResponse"))
            .collect();
        if responses.is_empty() {
            let text = texts(&parts);
            if text.is_empty() {
                return out.skip(number, "user records without text");
            }
            out.message(number, None, Message::user("", text), false);
            return;
        }
        for response in responses {
            let call = response.get("id").and_then(Value::as_str).unwrap_or("");
            if !self.answered.insert(call.to_string()) {
                continue;
            }
            let (content, mut is_error) = result_text(response.get("response"));
            // Its shell tool says a command failed only in words.
            is_error |= exit_code(&content).is_some_and(|code| code != 0);
            let mut message = Message::tool_result("", call, content, is_error);
            if let MessageBody::Tool { tool_name, .. } = &mut message.body {
                *tool_name = response
                    .get("name")
                    .and_then(Value::as_str)
                    .map(str::to_string);
            }
            out.message(number, None, message, false);
        }
    }

    /// The open response again, with its tool calls or usage added.
    fn update_response(&mut self, position: usize, record: &Value, out: &mut Emitter) {
        let update = response(record);
        self.contents.insert(fingerprint(record), position);
        let Some(message) = out.message_mut(position) else {
            return;
        };
        if let (
            MessageBody::Assistant { tool_calls, .. },
            MessageBody::Assistant {
                tool_calls: newer, ..
            },
        ) = (&mut message.body, update.body)
        {
            for call in newer {
                if !tool_calls.iter().any(|c| c.id == call.id) {
                    tool_calls.push(call);
                }
            }
        }
        if message.usage.is_none() {
            message.usage = update.usage;
        }
        self.note_usage(out.open_message(position));
    }

    fn note_usage(&mut self, message: Option<&Message>) {
        if let Some(usage) = message.and_then(|m| m.usage) {
            self.last_context = usage.context_tokens();
        }
    }

    fn close(&mut self, out: &mut Emitter) {
        if let Some((_, position)) = self.open.take() {
            out.close(position);
        }
    }

    /// A whole message list: what it adds to what was given, and a
    /// compression when it starts from a summary not seen before.
    fn message_list(&mut self, number: usize, list: &[Value], out: &mut Emitter) {
        let summary = list.iter().position(|m| {
            m.get("type").and_then(Value::as_str) == Some("user")
                && snapshot(m).is_some_and(|s| !self.summaries.contains(&s))
        });
        let Some(at) = summary else {
            for record in list {
                self.listed(number, record, out);
            }
            return;
        };
        let text = snapshot(&list[at]).unwrap_or_default();
        // The model's acknowledgement of the summary is part of it.
        let acknowledged = list
            .get(at + 1)
            .is_some_and(|m| m.get("type").and_then(Value::as_str) == Some("gemini"));
        let kept = &list[at + 1 + usize::from(acknowledged)..];
        let first_kept = kept
            .iter()
            .find_map(|m| self.given(m))
            .and_then(|position| out.first_id_from(position));
        self.close(out);
        self.summaries.insert(text.clone());
        out.compaction(ForeignCompaction {
            summary: text,
            first_kept,
            tokens_before: self.last_context,
            tokens_after: None,
            read_files: Vec::new(),
            modified_files: Vec::new(),
            // The file does not say whether `/compress` asked for it.
            trigger: Trigger::Threshold,
            line: number,
            created_at: crate::transcript::time::timestamp_ms(&list[at]),
            duration_ms: None,
            cleared: false,
        });
        for record in list.iter().take(at + 1 + usize::from(acknowledged)) {
            self.mark_given(record, out.next_position());
        }
        for record in kept {
            self.listed(number, record, out);
        }
    }

    /// A record of a message list: given already (by id or content), else
    /// new.
    fn listed(&mut self, number: usize, record: &Value, out: &mut Emitter) {
        if self.given(record).is_some() {
            return;
        }
        self.new_record(number, record, out);
    }

    /// Where a record's message was given, by Gemini's id or its content.
    fn given(&self, record: &Value) -> Option<usize> {
        let id = record.get("id").and_then(Value::as_str).unwrap_or("");
        self.ids
            .get(id)
            .or_else(|| self.contents.get(&fingerprint(record)))
            .copied()
    }

    /// A record the compaction's summary stands for from now on.
    fn mark_given(&mut self, record: &Value, position: usize) {
        let id = record.get("id").and_then(Value::as_str).unwrap_or("");
        self.ids.entry(id.to_string()).or_insert(position);
        self.contents.entry(fingerprint(record)).or_insert(position);
    }
}

/// A `gemini` record as an assistant message: its text (thoughts left
/// out), its calls (`toolCalls`, or the `functionCall` parts a message list
/// holds), its usage and model.
fn response(record: &Value) -> Message {
    let parts = parts(record.get("content"));
    let mut calls: Vec<ToolCall> = record
        .get("toolCalls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| call(c, c.get("args")))
        .collect();
    calls.extend(
        parts
            .iter()
            .filter_map(|p| p.get("functionCall"))
            .map(|c| call(c, c.get("args"))),
    );
    let model = record.get("model").and_then(Value::as_str);
    let mut message = Message::assistant("", texts(&parts), calls);
    if let MessageBody::Assistant { model: m, .. } = &mut message.body {
        *m = model.map(str::to_string);
    }
    message.usage = record.get("tokens").filter(|t| t.is_object()).map(usage);
    message
}

fn call(call: &Value, args: Option<&Value>) -> ToolCall {
    let text = |k: &str| call.get(k).and_then(Value::as_str).unwrap_or("");
    ToolCall {
        id: text("id").to_string(),
        name: text("name").to_string(),
        arguments: args.cloned().unwrap_or(Value::Null),
    }
}

/// Its `tokens`: `input` is the whole prompt, `cached` the part of it read
/// from the cache; thoughts are output.
fn usage(tokens: &Value) -> Usage {
    let n = |k: &str| tokens.get(k).and_then(Value::as_u64).unwrap_or(0);
    let cached = n("cached");
    Usage {
        input: (n("input") + n("tool")).saturating_sub(cached),
        output: n("output") + n("thoughts"),
        cache_read: cached,
        cache_write: 0,
    }
}

/// A record's content as parts (a response's is a string while it is live).
fn parts(content: Option<&Value>) -> Vec<Value> {
    match content {
        Some(Value::String(s)) => vec![serde_json::json!({ "text": s })],
        Some(Value::Array(parts)) => parts.clone(),
        Some(part @ Value::Object(_)) => vec![part.clone()],
        _ => Vec::new(),
    }
}

/// The text parts that are not thoughts, joined.
fn texts(parts: &[Value]) -> String {
    parts
        .iter()
        .filter(|p| p.get("thought").and_then(Value::as_bool) != Some(true))
        .filter_map(|p| p.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("")
}

/// A function response's text (`output`, or `error` for a failed call).
fn result_text(response: Option<&Value>) -> (String, bool) {
    let field = |k: &str| response.and_then(|r| r.get(k));
    match (field("error"), field("output")) {
        (Some(error), _) => (string_of(error), true),
        (None, Some(output)) => (string_of(output), false),
        (None, None) => (response.map(string_of).unwrap_or_default(), false),
    }
}

/// The code of `run_shell_command`'s "Exit Code: N" line.
fn exit_code(output: &str) -> Option<i64> {
    output
        .lines()
        .find_map(|l| l.trim().strip_prefix("Exit Code: "))
        .and_then(|code| code.trim().parse().ok())
}

fn string_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The summary a compression put in this user record.
fn snapshot(record: &Value) -> Option<String> {
    let text = texts(&parts(record.get("content")));
    text.trim_start().starts_with(SNAPSHOT).then_some(text)
}

/// What a record says, whatever its id and shape (a live response's text
/// and `toolCalls`, or a listed one's parts): a hash of its type, its text
/// and the ids of its calls or results.
fn fingerprint(record: &Value) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    said(record).hash(&mut hasher);
    hasher.finish()
}

fn said(record: &Value) -> String {
    let parts = parts(record.get("content"));
    let mut ids: Vec<&str> = parts
        .iter()
        .filter_map(|p| p.get("functionCall").or_else(|| p.get("functionResponse")))
        .chain(
            record
                .get("toolCalls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten(),
        )
        .filter_map(|c| c.get("id").and_then(Value::as_str))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    let kind = record.get("type").and_then(Value::as_str).unwrap_or("");
    format!("{kind}\u{0}{}\u{0}{}", texts(&parts), ids.join("\u{0}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::Role;
    use crate::transcript::Event;

    /// Written by the real Gemini CLI 0.61.0 (tests/fixtures/README.md):
    /// `-p` with read_file, replace, write_file and a failing
    /// run_shell_command, then `--resume latest -p` under a tiny
    /// `compressionThreshold`, which compressed the whole history first.
    const FIXTURE: &str =
        include_str!("../../../tests/fixtures/gemini/session-2026-11-28T22-01-5755dbc0.jsonl");

    fn events(text: &str) -> Vec<Event> {
        crate::transcript::testing::events(&mut Reader::default(), FORMAT, text)
    }

    use crate::transcript::testing::messages;

    #[test]
    fn a_real_session_reads_as_its_conversation_once_despite_the_resume() {
        let events = events(FIXTURE);
        let messages = messages(&events);
        let roles: Vec<Role> = messages.iter().map(Message::role).collect();
        use Role::*;
        assert_eq!(
            roles,
            [
                User, User, Assistant, Tool, Assistant, Tool, Assistant, Tool, Assistant, Tool,
                Assistant, User, Assistant
            ],
            "the resume's message lists added nothing"
        );
        assert!(!is_request(messages[0].text()), "its <session_context>");
        assert_eq!(messages[1].text(), "Fix the test. Rule: never touch b.py");
        let calls: Vec<(&str, &str)> = messages
            .iter()
            .filter_map(|m| match &m.body {
                MessageBody::Assistant { tool_calls, .. } => Some(tool_calls),
                _ => None,
            })
            .flatten()
            .map(|c| (c.id.as_str(), c.name.as_str()))
            .collect();
        assert_eq!(
            calls,
            [
                ("read_file__call_read", "read_file"),
                ("replace__call_edit", "replace"),
                ("write_file__call_write", "write_file"),
                ("run_shell_command__call_sh", "run_shell_command"),
            ]
        );
        let errors: Vec<bool> = messages
            .iter()
            .filter(|m| m.role() == Tool)
            .map(Message::is_error_result)
            .collect();
        assert_eq!(
            errors,
            [false, false, false, true],
            "the shell's exit code 1"
        );
        assert_eq!(
            messages[2].usage,
            Some(Usage {
                input: 5000,
                output: 20,
                cache_read: 0,
                cache_write: 0
            })
        );
        assert_eq!(messages[11].text(), "Carry on");
        assert_eq!(messages[12].text(), "Carrying on.");
    }

    #[test]
    fn its_compression_is_a_compaction_with_its_snapshot() {
        let events = events(FIXTURE);
        let compactions: Vec<&ForeignCompaction> = events
            .iter()
            .filter_map(|e| match e {
                Event::Compaction(c) => Some(c),
                _ => None,
            })
            .collect();
        assert_eq!(compactions.len(), 1);
        let compaction = compactions[0];
        assert_eq!(
            compaction.summary,
            "<state_snapshot>some edits. Status: done.</state_snapshot>"
        );
        // It compressed everything: nothing of before was kept.
        assert_eq!(compaction.first_kept, None);
        // The context its last response before reported.
        assert_eq!(compaction.tokens_before, 1510);
        let position = |needle: &str| {
            events.iter().position(|e| match e {
                Event::Message { message, .. } => message.text().contains(needle),
                Event::Compaction(_) => needle == "compaction",
                _ => false,
            })
        };
        assert!(position("Done: test_parse") < position("compaction"));
        assert!(position("compaction") < position("Carry on"));
    }

    /// A compression that kept the newest turn lists it again under new
    /// ids: it is the kept part, not new messages; a masking of tool
    /// output (same ids) and a rollback add nothing either.
    #[test]
    fn kept_messages_and_rewritten_lists_are_not_given_twice() {
        let meta = r#"{"sessionId":"s","projectHash":"h","startTime":"t","lastUpdated":"t","kind":"main"}"#;
        let lines = [
            meta.to_string(),
            r#"{"id":"u1","timestamp":"2026-11-28T21:00:00.000Z","type":"user","content":[{"text":"first"}]}"#.into(),
            r#"{"id":"g1","timestamp":"2026-11-28T21:00:01.000Z","type":"gemini","content":"one","tokens":{"input":900,"output":10,"cached":100,"thoughts":5,"tool":0,"total":915},"model":"gemini-2.5-pro"}"#.into(),
            r#"{"id":"u2","timestamp":"2026-11-28T21:00:02.000Z","type":"user","content":[{"text":"second"}]}"#.into(),
            r#"{"id":"g2","timestamp":"2026-11-28T21:00:03.000Z","type":"gemini","content":"two","tokens":{"input":1000,"output":10,"cached":0,"thoughts":0,"tool":0,"total":1010},"model":"gemini-2.5-pro"}"#.into(),
            r#"{"$set":{"messages":[{"id":"u1","type":"user","content":[{"text":"first"}]},{"id":"g1","type":"gemini","content":[{"text":"one"}]},{"id":"u2","type":"user","content":[{"text":"second"}]}]}}"#.into(),
            r#"{"$set":{"messages":[{"id":"x1","type":"user","content":[{"text":"<state_snapshot>S</state_snapshot>"}]},{"id":"x2","type":"gemini","content":[{"text":"Got it. Thanks for the additional context!"}]},{"id":"n1","type":"user","content":[{"text":"second"}]},{"id":"n2","type":"gemini","content":[{"text":"two"}]}]}}"#.into(),
            r#"{"$set":{"messages":[{"id":"x1","type":"user","content":[{"text":"<state_snapshot>S</state_snapshot>"}]},{"id":"x2","type":"gemini","content":[{"text":"Got it. Thanks for the additional context!"}]},{"id":"n1","type":"user","content":[{"text":"second"}]},{"id":"n2","type":"gemini","content":[{"text":"two"}]}]}}"#.into(),
            r#"{"id":"u3","timestamp":"2026-11-28T21:00:04.000Z","type":"user","content":[{"text":"third"}]}"#.into(),
        ];
        let events = events(&(lines.join("\n") + "\n"));
        let texts: Vec<String> = messages(&events)
            .iter()
            .map(|m| m.text().to_string())
            .collect();
        assert_eq!(texts, ["first", "one", "second", "two", "third"]);
        let compaction = events
            .iter()
            .find_map(|e| match e {
                Event::Compaction(c) => Some(c.clone()),
                _ => None,
            })
            .expect("a compaction");
        let second = messages(&events)[2].id.clone();
        assert_eq!(compaction.first_kept, Some(second));
        assert_eq!(compaction.tokens_before, 1010);
        // Cached input is a cache read; thoughts are output.
        assert_eq!(
            messages(&events)[1].usage,
            Some(Usage {
                input: 800,
                output: 15,
                cache_read: 100,
                cache_write: 0
            })
        );
        let compactions = events
            .iter()
            .filter(|e| matches!(e, Event::Compaction(_)))
            .count();
        assert_eq!(compactions, 1, "the same list twice is one compression");
    }

    #[test]
    fn its_lines_are_told_apart() {
        let first = FIXTURE.lines().next().unwrap();
        let imported = crate::import::parse(FIXTURE.as_bytes(), None).unwrap();
        assert_eq!(imported.format, FORMAT);
        assert!(classify(&serde_json::from_str(first).unwrap()));
        let claude = serde_json::json!({"type": "user", "uuid": "u", "timestamp": "t", "id": "x", "content": "hi", "sessionId": "s"});
        assert!(!classify(&claude));
    }
}

#[cfg(test)]
mod file_tests {
    use crate::conversation::ToolCall;
    use crate::files::ledger::FileOp;
    use crate::files::FileTools;

    /// Its tools as the ledger reads them (arguments as 0.61 sends them).
    #[test]
    fn its_tools_read_and_change_files() {
        let ops = |name: &str, arguments: serde_json::Value| {
            FileTools::default().ops(&ToolCall {
                id: "c".into(),
                name: name.into(),
                arguments,
            })
        };
        let one = |op: FileOp, path: &str| vec![(op, path.to_string())];
        assert_eq!(
            ops("read_file", serde_json::json!({"file_path": "a.txt"})),
            one(FileOp::Read, "a.txt")
        );
        assert_eq!(
            ops(
                "replace",
                serde_json::json!({"file_path": "/w/a.txt", "old_string": "a", "new_string": "b", "instruction": "x"})
            ),
            one(FileOp::Modify, "/w/a.txt")
        );
        assert_eq!(
            ops(
                "write_file",
                serde_json::json!({"file_path": "c.md", "content": "x"})
            ),
            one(FileOp::Modify, "c.md")
        );
        // Its shell's `dir_path` is where the command runs, from the workspace.
        assert_eq!(
            ops(
                "run_shell_command",
                serde_json::json!({"command": "cat notes.md", "description": "d", "dir_path": "docs"})
            ),
            one(FileOp::Read, "docs/notes.md")
        );
    }
}

#[cfg(test)]
mod request_tests {
    use crate::conversation::request::request_text;

    /// Its `<session_context>` is no request, and a hook's context in a
    /// prompt (compactd's own record included) is not what the person asked.
    #[test]
    fn its_context_and_hook_output_are_no_request() {
        assert_eq!(
            request_text("<session_context>\nThis is the Gemini CLI.\n</session_context>"),
            None
        );
        assert_eq!(
            request_text("Carry on<hook_context>compactd's record…\n## Task\n- fix</hook_context>")
                .as_deref(),
            Some("Carry on")
        );
        assert_eq!(
            request_text("<hook_context>started</hook_context>\n\nFix the test").as_deref(),
            Some("Fix the test")
        );
    }
}
