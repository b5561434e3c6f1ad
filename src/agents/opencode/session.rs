//! An opencode session as compactd's conversation: each of its messages
//! (a `StoredMessage` of `store.rs`, given to the reader as one entry
//! `{"id", "data", "parts"}`) becomes compactd's messages, as measured on
//! the pinned 1.18.33:
//!
//! - a user message's `text` parts are its text; one with a `compaction`
//!   part is opencode asking for a compaction (`auto` says whether it
//!   decided itself), not something the person typed;
//! - an assistant message's `text` parts are its text, its `tool` parts
//!   its calls (`callID`, `tool`, `state.input`: `read`, `edit` and `write`
//!   name the file in `filePath`, which the file ledger reads) and, once
//!   `state.status` is `completed` or `error`, their results, after it;
//!   `tokens` is the provider's usage (`input` without the cache, `cache`
//!   read and written, `output` and `reasoning`);
//! - the assistant message opencode marks `summary: true` (its
//!   `compaction` agent) holds opencode's summary: a foreign compaction of
//!   everything before it.
//!
//! opencode rewrites a message while it streams (more parts, then its
//! usage), so the same message may come again: it is amended, and only the
//! results not given yet are added.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::compaction::Trigger;
use crate::conversation::{Message, MessageBody, ToolCall, Usage};
use crate::store::SessionSettings;
use crate::transcript::{Emitter, ForeignCompaction};

/// The reader of one opencode session.
#[derive(Default)]
pub struct Reader {
    /// Where each of opencode's assistant messages was given, to amend.
    given: HashMap<String, usize>,
    /// opencode's messages given and not to be given again (user messages,
    /// summaries).
    done: HashSet<String>,
    /// Tool calls whose result was given.
    answered: HashSet<String>,
    /// The compaction opencode asked for and has not summarized yet:
    /// whether it decided it itself.
    asked: Option<bool>,
    /// The context of the latest response (the provider's usage).
    last_context: u64,
}

impl crate::transcript::Reader for Reader {
    fn line(&mut self, number: usize, entry: &Value, out: &mut Emitter) {
        let id = entry.get("id").and_then(Value::as_str).unwrap_or("");
        let data = entry.get("data").unwrap_or(&Value::Null);
        let parts: &[Value] = entry
            .get("parts")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice);
        if self.done.contains(id) {
            return;
        }
        match data.get("role").and_then(Value::as_str) {
            Some("user") => self.user(number, id, parts, out),
            Some("assistant") if data.get("summary") == Some(&Value::Bool(true)) => {
                self.summary(number, id, data, parts, out)
            }
            Some("assistant") => self.response(number, id, data, parts, out),
            _ => out.skip_because(number, "unreadable lines", "not a message of opencode's"),
        }
    }
}

impl Reader {
    fn user(&mut self, number: usize, id: &str, parts: &[Value], out: &mut Emitter) {
        if let Some(compaction) = parts.iter().find(|p| kind(p) == "compaction") {
            self.asked = Some(compaction.get("auto") == Some(&Value::Bool(true)));
            self.done.insert(id.to_string());
            return;
        }
        let text = texts(parts);
        if text.is_empty() {
            // Its parts may not be written yet: read it again next time.
            return out.skip(number, "user messages without text");
        }
        self.done.insert(id.to_string());
        out.message(number, Some(id), Message::user("", text), false);
    }

    /// opencode's summary, once it is complete (its `step-finish`).
    fn summary(
        &mut self,
        number: usize,
        id: &str,
        data: &Value,
        parts: &[Value],
        out: &mut Emitter,
    ) {
        if !parts.iter().any(|p| kind(p) == "step-finish") {
            return;
        }
        self.done.insert(id.to_string());
        let trigger = match self.asked.take() {
            Some(false) => Trigger::Manual,
            _ => Trigger::Threshold,
        };
        // What it summarized is closed: given again (a live read looks
        // at recent messages again), it is not given twice.
        for (id, position) in std::mem::take(&mut self.given) {
            out.close(position);
            self.done.insert(id);
        }
        out.compaction(ForeignCompaction {
            summary: texts(parts),
            first_kept: None,
            tokens_before: self.last_context,
            tokens_after: None,
            read_files: Vec::new(),
            modified_files: Vec::new(),
            trigger,
            line: number,
            created_at: data.pointer("/time/created").and_then(Value::as_u64),
            duration_ms: None,
            cleared: false,
        });
    }

    /// A response: given, or amended when given before; then the results
    /// of its calls not given yet.
    fn response(
        &mut self,
        number: usize,
        id: &str,
        data: &Value,
        parts: &[Value],
        out: &mut Emitter,
    ) {
        let message = assistant(data, parts);
        if let Some(usage) = &message.usage {
            self.last_context = usage.input + usage.cache_read + usage.cache_write;
        }
        if let MessageBody::Assistant {
            model: Some(model), ..
        } = &message.body
        {
            if out.model() != Some(model.as_str()) {
                out.settings(SessionSettings {
                    model: Some(model.clone()),
                    ..SessionSettings::default()
                });
            }
        }
        match self.given.get(id).copied() {
            // Read again unchanged (a live read looks at it again): nothing.
            Some(position)
                if out.open_message(position).is_some_and(|open| {
                    Message {
                        id: open.id.clone(),
                        ..message.clone()
                    } == *open
                }) => {}
            Some(position) => {
                if let Some(open) = out.message_mut(position) {
                    let given_id = std::mem::take(&mut open.id);
                    *open = Message {
                        id: given_id,
                        ..message
                    };
                }
            }
            None => {
                let position = out.message(number, Some(id), message, true);
                self.given.insert(id.to_string(), position);
            }
        }
        for part in parts.iter().filter(|p| kind(p) == "tool") {
            self.result(number, part, out);
        }
    }

    /// A finished call's result, once.
    fn result(&mut self, number: usize, part: &Value, out: &mut Emitter) {
        let call = part.get("callID").and_then(Value::as_str).unwrap_or("");
        let state = part.get("state").unwrap_or(&Value::Null);
        let (content, is_error) = match state.get("status").and_then(Value::as_str) {
            // Its shell says a failed command only by `metadata.exit`.
            Some("completed") => (
                text_of(state.get("output")),
                state
                    .pointer("/metadata/exit")
                    .and_then(Value::as_i64)
                    .is_some_and(|code| code != 0),
            ),
            Some("error") => (text_of(state.get("error")), true),
            _ => return,
        };
        if call.is_empty() || !self.answered.insert(call.to_string()) {
            return;
        }
        let mut message = Message::tool_result("", call, content, is_error);
        if let MessageBody::Tool { tool_name, .. } = &mut message.body {
            *tool_name = part.get("tool").and_then(Value::as_str).map(str::to_string);
        }
        out.message(number, None, message, false);
    }
}

/// An assistant message: its text, its calls, its model and usage.
fn assistant(data: &Value, parts: &[Value]) -> Message {
    let calls = parts
        .iter()
        .filter(|p| kind(p) == "tool")
        .map(|p| ToolCall {
            id: str_of(p, "callID"),
            name: str_of(p, "tool"),
            arguments: p.pointer("/state/input").cloned().unwrap_or(Value::Null),
        })
        .collect();
    let mut message = Message::assistant("", texts(parts), calls);
    if let MessageBody::Assistant { model, .. } = &mut message.body {
        *model = model_name(data);
    }
    message.usage = data.get("tokens").and_then(usage);
    message
}

/// The model as opencode names it in its configuration,
/// `<providerID>/<modelID>` (what `auto_compact::settings` looks up), or
/// the model's id alone when the provider is not said.
fn model_name(data: &Value) -> Option<String> {
    let model = data.get("modelID").and_then(Value::as_str)?;
    Some(match data.get("providerID").and_then(Value::as_str) {
        Some(provider) if !provider.is_empty() => format!("{provider}/{model}"),
        _ => model.to_string(),
    })
}

/// Its `tokens`, when the provider reported any: `input` is what was not
/// read from or written to the cache, reasoning is output.
fn usage(tokens: &Value) -> Option<Usage> {
    let n = |pointer: &str| tokens.pointer(pointer).and_then(Value::as_u64).unwrap_or(0);
    let usage = Usage {
        input: n("/input"),
        output: n("/output") + n("/reasoning"),
        cache_read: n("/cache/read"),
        cache_write: n("/cache/write"),
    };
    (usage != Usage::default()).then_some(usage)
}

fn kind(part: &Value) -> &str {
    part.get("type").and_then(Value::as_str).unwrap_or("")
}

fn str_of(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

fn text_of(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// The `text` parts, one after the other.
fn texts(parts: &[Value]) -> String {
    let texts: Vec<&str> = parts
        .iter()
        .filter(|p| kind(p) == "text")
        .filter_map(|p| p.get("text").and_then(Value::as_str))
        .filter(|t| !t.is_empty())
        .collect();
    texts.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::Role;
    use crate::files::ledger::FileOp;
    use crate::files::FileTools;
    use crate::transcript::{Event, Format};

    /// A session the real opencode 1.18.33 wrote (tests/fixtures/README.md):
    /// a read, an edit, a failing test run, a reply over its compaction
    /// point, its auto-compaction and the turn after it; each message with
    /// its parts as `Store::messages` gives them.
    const FIXTURE: &str = include_str!("../../../tests/fixtures/opencode/session.jsonl");

    fn events(text: &str) -> Vec<Event> {
        crate::transcript::testing::events(&mut Reader::default(), Format::named("opencode"), text)
    }

    use crate::transcript::testing::messages;

    #[test]
    fn a_real_session_reads_as_its_conversation_with_its_compaction() {
        let events = events(FIXTURE);
        let messages = messages(&events);
        let roles: Vec<Role> = messages.iter().map(Message::role).collect();
        use Role::*;
        assert_eq!(
            roles,
            [User, Assistant, Tool, Assistant, Tool, Assistant, Tool, Assistant, User, Assistant]
        );
        assert_eq!(
            messages[0].text(),
            "Run the tests. Never use sudo. Keep it to the files in this folder."
        );
        // The provider's usage, as opencode recorded it.
        assert_eq!(
            messages[7].usage,
            Some(Usage {
                input: 7600,
                output: 20,
                cache_read: 0,
                cache_write: 0
            })
        );
        assert_eq!(messages[7].text(), "The tests fail.");
        // Its shell says a failed command only by its exit code.
        assert!(messages[6].text().contains("tests failed: 2 of 5"));
        assert!(messages[6].is_error_result());
        assert!(!messages[2].is_error_result());
        let compactions: Vec<&ForeignCompaction> = events
            .iter()
            .filter_map(|e| match e {
                Event::Compaction(c) => Some(c),
                _ => None,
            })
            .collect();
        assert_eq!(compactions.len(), 1);
        assert_eq!(
            compactions[0].summary,
            "SCRIPTED OPENCODE SUMMARY: some work was done."
        );
        assert_eq!(compactions[0].trigger, Trigger::Threshold);
        assert_eq!(compactions[0].tokens_before, 7600);
        assert_eq!(compactions[0].first_kept, None);
        // What came after the compaction: its synthetic "Continue" and the reply.
        assert!(messages[8]
            .text()
            .starts_with("Continue if you have next steps"));
        assert_eq!(messages[9].text(), "Continued after compaction.");
    }

    #[test]
    fn its_read_and_edit_are_the_file_ledger_s() {
        let messages = messages(&events(FIXTURE));
        let ops: Vec<(FileOp, String)> = messages
            .iter()
            .flat_map(|m| m.tool_calls().to_vec())
            .flat_map(|call| FileTools::default().ops(&call))
            .collect();
        assert_eq!(
            ops,
            [
                (FileOp::Read, "/tmp/oc/ws/src/b.py".to_string()),
                (FileOp::Modify, "/tmp/oc/ws/src/b.py".to_string()),
            ]
        );
    }

    #[test]
    fn a_message_read_again_as_it_streams_is_amended_and_its_results_given_once() {
        let started = r#"{"id":"msg_a","data":{"role":"assistant","modelID":"m"},"parts":[{"type":"step-start"},{"type":"tool","tool":"read","callID":"c1","state":{"status":"running","input":{"filePath":"/w/a"}}}]}"#;
        let finished = r#"{"id":"msg_a","data":{"role":"assistant","modelID":"m","tokens":{"input":100,"output":5,"reasoning":1,"cache":{"read":10,"write":2}}},"parts":[{"type":"step-start"},{"type":"tool","tool":"read","callID":"c1","state":{"status":"completed","input":{"filePath":"/w/a"},"output":"x"}},{"type":"step-finish"}]}"#;
        let text = format!("{started}\n{finished}\n{finished}\n");
        let messages = messages(&events(&text));
        assert_eq!(messages.len(), 2, "{messages:?}");
        assert_eq!(
            messages[0].usage,
            Some(Usage {
                input: 100,
                output: 6,
                cache_read: 10,
                cache_write: 2
            })
        );
        assert_eq!(messages[1].role(), Role::Tool);
    }
}
