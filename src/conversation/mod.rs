//! The conversation model: messages as clients send them and as the session
//! log stores them. Pure data plus the rules that keep a history valid for a
//! model (every tool result follows its call, no dangling calls).

pub(crate) mod content;
pub(crate) mod image;
pub(crate) mod request;
pub(crate) mod rules;
mod validate;

pub use content::{Content, Part, PartKind, StoredData};
pub use validate::{validate_history, HistoryViolation};

use schemars::JsonSchema;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// One message of a conversation. Fields compactd does not know (a
/// provider's `thinkingSignature`, `cache_control`, `name`, …) are kept in
/// `extra` and given back as they came.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// Unique within the session. Assigned by the server when empty.
    pub id: String,
    pub body: MessageBody,
    /// What the provider reported for the response that produced this
    /// message (usually set on assistant messages).
    pub usage: Option<Usage>,
    /// Every other field of the message, as sent.
    pub extra: Map<String, Value>,
}

/// One message of a conversation. Fields not listed here are kept and
/// given back as they came.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "Message", extend("additionalProperties" = true))]
struct MessageFields {
    /// Unique within the session. Assigned by the server when empty.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    id: String,
    #[serde(flatten)]
    body: MessageBody,
    /// What the provider reported for the response that produced this
    /// message (usually set on assistant messages).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    usage: Option<Usage>,
}

/// The fields a message of `role` has; any other is `extra`.
fn known_fields(role: &str) -> &'static [&'static str] {
    match role {
        "assistant" => &[
            "id",
            "role",
            "usage",
            "content",
            "thinking",
            "toolCalls",
            "model",
        ],
        "tool" => &[
            "id",
            "role",
            "usage",
            "content",
            "toolCallId",
            "toolName",
            "isError",
        ],
        _ => &["id", "role", "usage", "content"],
    }
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Wire<'a> {
            #[serde(skip_serializing_if = "str::is_empty")]
            id: &'a str,
            #[serde(flatten)]
            body: &'a MessageBody,
            #[serde(skip_serializing_if = "Option::is_none")]
            usage: &'a Option<Usage>,
            #[serde(flatten)]
            extra: &'a Map<String, Value>,
        }
        Wire {
            id: &self.id,
            body: &self.body,
            usage: &self.usage,
            extra: &self.extra,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Message, D::Error> {
        let mut all = Map::<String, Value>::deserialize(deserializer)?;
        let role = match all.get("role") {
            Some(Value::String(role)) => role.clone(),
            Some(_) => return Err(D::Error::custom("`role` must be a string")),
            None => return Err(D::Error::missing_field("role")),
        };
        let mut known = Map::new();
        for key in known_fields(&role) {
            if let Some(value) = all.remove(*key) {
                known.insert((*key).to_string(), value);
            }
        }
        let fields: MessageFields =
            serde_json::from_value(Value::Object(known)).map_err(D::Error::custom)?;
        Ok(Message {
            id: fields.id,
            body: fields.body,
            usage: fields.usage,
            extra: all,
        })
    }
}

impl JsonSchema for Message {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Message".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        MessageFields::json_schema(generator)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "role", rename_all = "camelCase")]
pub enum MessageBody {
    System {
        content: Content,
    },
    User {
        content: Content,
    },
    #[serde(rename_all = "camelCase")]
    Assistant {
        #[serde(default)]
        content: Content,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        thinking: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
        /// The model that produced this message; usage from another model
        /// than the session's is not trusted for the meter.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    Tool {
        tool_call_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool_name: Option<String>,
        #[serde(default)]
        content: Content,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The arguments as JSON (an object for almost every tool).
    #[serde(default)]
    pub arguments: serde_json::Value,
}

/// Token usage as a provider reported it for one response.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    #[serde(default)]
    pub input: u64,
    #[serde(default)]
    pub output: u64,
    #[serde(default)]
    pub cache_read: u64,
    #[serde(default)]
    pub cache_write: u64,
}

impl Usage {
    /// More tokens than any model reads or writes in one request, by orders
    /// of magnitude: a figure above it is no usage (a hand-edited log, a
    /// client's bug), so the meter and the calibration ignore it.
    pub const MAX_TOKENS: u64 = 1 << 32;

    /// The largest of its figures, when that is above `MAX_TOKENS`.
    pub fn implausible(&self) -> Option<u64> {
        let largest = [self.input, self.output, self.cache_read, self.cache_write]
            .into_iter()
            .max()
            .unwrap_or(0);
        (largest > Self::MAX_TOKENS).then_some(largest)
    }

    /// Tokens in the context after this response: everything the model read
    /// plus what it wrote (which becomes part of the next prompt).
    pub fn context_tokens(&self) -> u64 {
        self.prompt_tokens().saturating_add(self.output)
    }

    /// The prompt the provider counted for the request: fresh input and
    /// cached input, read or written.
    pub fn prompt_tokens(&self) -> u64 {
        // Saturating: a client may report anything.
        self.input
            .saturating_add(self.cache_read)
            .saturating_add(self.cache_write)
    }

    /// Adds `more` to a running total that may not have started yet.
    pub fn accumulate(total: &mut Option<Usage>, more: Option<Usage>) {
        if let Some(more) = more {
            let t = total.get_or_insert_with(Usage::default);
            t.input += more.input;
            t.output += more.output;
            t.cache_read += more.cache_read;
            t.cache_write += more.cache_write;
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

impl Message {
    pub fn user(id: impl Into<String>, content: impl Into<String>) -> Message {
        Message {
            id: id.into(),
            body: MessageBody::User {
                content: Content::text(content),
            },
            usage: None,
            extra: Map::new(),
        }
    }

    pub fn system(id: impl Into<String>, content: impl Into<String>) -> Message {
        Message {
            id: id.into(),
            body: MessageBody::System {
                content: Content::text(content),
            },
            usage: None,
            extra: Map::new(),
        }
    }

    pub fn assistant(
        id: impl Into<String>,
        content: impl Into<String>,
        tool_calls: Vec<ToolCall>,
    ) -> Message {
        Message {
            id: id.into(),
            body: MessageBody::Assistant {
                content: Content::text(content),
                thinking: None,
                tool_calls,
                model: None,
            },
            usage: None,
            extra: Map::new(),
        }
    }

    pub fn tool_result(
        id: impl Into<String>,
        tool_call_id: impl Into<String>,
        content: impl Into<String>,
        is_error: bool,
    ) -> Message {
        Message {
            id: id.into(),
            body: MessageBody::Tool {
                tool_call_id: tool_call_id.into(),
                tool_name: None,
                content: Content::text(content),
                is_error,
            },
            usage: None,
            extra: Map::new(),
        }
    }

    pub fn role(&self) -> Role {
        match self.body {
            MessageBody::System { .. } => Role::System,
            MessageBody::User { .. } => Role::User,
            MessageBody::Assistant { .. } => Role::Assistant,
            MessageBody::Tool { .. } => Role::Tool,
        }
    }

    /// The main text of the message, whatever its role: its content's
    /// text parts.
    pub fn text(&self) -> &str {
        self.content().as_str()
    }

    pub fn content(&self) -> &Content {
        match &self.body {
            MessageBody::System { content }
            | MessageBody::User { content }
            | MessageBody::Assistant { content, .. }
            | MessageBody::Tool { content, .. } => content,
        }
    }

    pub fn content_mut(&mut self) -> &mut Content {
        match &mut self.body {
            MessageBody::System { content }
            | MessageBody::User { content }
            | MessageBody::Assistant { content, .. }
            | MessageBody::Tool { content, .. } => content,
        }
    }

    /// Its content's parts (none for a string content).
    pub fn parts(&self) -> &[Part] {
        self.content().part_list().unwrap_or(&[])
    }

    /// A line naming each image and document it holds, for where they are
    /// not kept (a summary): `[image: image/png, 1280×720, message m12]`.
    pub fn named_parts(&self) -> Vec<String> {
        self.parts()
            .iter()
            .filter(|p| matches!(p.kind(), PartKind::Image | PartKind::Document))
            .map(|p| p.describe(&self.id))
            .collect()
    }

    pub fn tool_calls(&self) -> &[ToolCall] {
        match &self.body {
            MessageBody::Assistant { tool_calls, .. } => tool_calls,
            _ => &[],
        }
    }

    /// The call this message answers, for tool results.
    pub fn answers(&self) -> Option<&str> {
        match &self.body {
            MessageBody::Tool { tool_call_id, .. } => Some(tool_call_id),
            _ => None,
        }
    }

    /// A result compactd made up for a call that never got one.
    pub fn is_synthetic_result(&self) -> bool {
        self.answers().is_some() && self.id.starts_with(SYNTHETIC_RESULT_PREFIX)
    }

    pub fn is_error_result(&self) -> bool {
        matches!(self.body, MessageBody::Tool { is_error: true, .. })
    }

    /// Messages before which history may be cut: the kept part then starts
    /// with a user or assistant message, never with a tool result that
    /// would lose its call.
    pub fn is_cut_point(&self) -> bool {
        matches!(self.role(), Role::User | Role::Assistant)
    }
}

/// Ids of synthetic results start with this.
pub const SYNTHETIC_RESULT_PREFIX: &str = "synthetic-result-";

/// Text shown in a synthetic result for a call that never got one.
pub const NO_RESULT_NOTE: &str =
    "[compactd] No result was recorded for this tool call (the turn was interrupted).";

/// A result compactd made up for a call that never got one.
/// How a summary cites a message: its id, or the first 8 characters of an
/// id longer than 12 (an agent's UUID), which `Session::find` resolves
/// while they name one message. A 36-character UUID per citation was 11%
/// of a summary's tokens.
pub fn short_id(id: &str) -> &str {
    const SHORT: usize = 8;
    match id.char_indices().nth(12) {
        Some(_) => {
            let cut = id.char_indices().nth(SHORT).map_or(id.len(), |(i, _)| i);
            &id[..cut]
        }
        None => id,
    }
}

pub fn synthetic_result(call_id: &str, tool_name: &str) -> Message {
    Message {
        id: format!("{SYNTHETIC_RESULT_PREFIX}{call_id}"),
        body: MessageBody::Tool {
            tool_call_id: call_id.to_string(),
            tool_name: Some(tool_name.to_string()),
            content: Content::text(NO_RESULT_NOTE),
            is_error: true,
        },
        usage: None,
        extra: Map::new(),
    }
}

/// Why a tool result is kept out of the history a model sees (it stays in
/// the log).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffHistory {
    /// The conversation moved on before it arrived: its call was already
    /// closed as interrupted, with a synthetic result.
    Late,
    /// Its call already has a result.
    Duplicate,
    /// No earlier message made its call.
    Orphan,
}

impl OffHistory {
    /// Why, for a client: the result answers `call_id`.
    pub fn describe(self, call_id: &str) -> String {
        match self {
            OffHistory::Late => format!(
                "the result for tool call `{call_id}` arrived after the conversation moved on; the call stays closed as interrupted in the model's history, and this result is logged but not part of it"
            ),
            OffHistory::Duplicate => format!(
                "tool call `{call_id}` already has a result; this second one is logged but not part of the model's history"
            ),
            OffHistory::Orphan => format!(
                "no earlier message calls `{call_id}`; this result is logged but not part of the model's history"
            ),
        }
    }
}

/// What one message means for the tool calls around it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallStep {
    /// A tool result answering a call of the open batch: it is history.
    Answers,
    /// A tool result kept out of the history, and why.
    Off(OffHistory),
    /// Any other message: it closes the open batch; these calls (id,
    /// tool name) got no result and are closed as interrupted, each by a
    /// synthetic result placed before this message.
    Turn { interrupted: Vec<(String, String)> },
}

/// Follows tool calls through a conversation, message by message. The one
/// rule for results: a result belongs to the history only while its call's
/// batch is open, from the assistant message that made the call to the next
/// message that is not a tool result. A result arriving later (its call
/// already closed as interrupted), a second result for a call, or one whose
/// call never came, stays out of what a model sees: providers reject a
/// result that does not follow its call.
#[derive(Debug, Clone, Default)]
pub struct CallTracker {
    /// Calls of the open batch still waiting for a result: (id, name).
    open: Vec<(String, String)>,
    /// Every call seen: answered (or closed) yet?
    calls: std::collections::HashMap<String, bool>,
}

impl CallTracker {
    pub fn observe(&mut self, message: &Message) -> CallStep {
        if let Some(call_id) = message.answers() {
            if let Some(at) = self.open.iter().position(|(id, _)| id == call_id) {
                self.open.remove(at);
                self.calls.insert(call_id.to_string(), true);
                return CallStep::Answers;
            }
            return CallStep::Off(match self.calls.get(call_id) {
                None => OffHistory::Orphan,
                Some(_) if self.closed_unanswered(call_id) => OffHistory::Late,
                Some(_) => OffHistory::Duplicate,
            });
        }
        let interrupted = std::mem::take(&mut self.open);
        for call in message.tool_calls() {
            // A call id used again starts over: its new batch may answer it.
            self.calls.insert(call.id.clone(), false);
            self.open.push((call.id.clone(), call.name.clone()));
        }
        CallStep::Turn { interrupted }
    }

    /// A call that was closed without an answer (`false` in `calls` and
    /// not open).
    fn closed_unanswered(&self, call_id: &str) -> bool {
        self.calls.get(call_id) == Some(&false)
    }

    /// The open batch's caller was written again with more calls (an
    /// agent writes one response over several transcript lines): the
    /// calls not seen before join the open batch.
    pub fn add_to_open(&mut self, message: &Message) {
        for call in message.tool_calls() {
            if !self.calls.contains_key(&call.id) {
                self.calls.insert(call.id.clone(), false);
                self.open.push((call.id.clone(), call.name.clone()));
            }
        }
    }

    /// Calls still waiting for a result (the last batch, not closed yet).
    pub fn open_calls(&self) -> &[(String, String)] {
        &self.open
    }

    /// Closes the open batch without synthetic results: its call is no
    /// longer in the history (a compaction summarized it), so a result
    /// arriving later is late.
    pub fn close_open(&mut self) {
        self.open.clear();
    }
}

/// Makes a history safe to send to a model: a tool call that is followed by
/// another turn without a result gets a synthetic error result right after
/// its batch of results, and a result that does not answer a call of the
/// open batch (late, second, or without a call; see `CallTracker`) is
/// dropped. Calls at the very end (still running) are left alone.
pub fn repair_for_model<M>(messages: Vec<M>) -> Vec<M>
where
    M: std::borrow::Borrow<Message> + From<Message>,
{
    let mut out: Vec<M> = Vec::with_capacity(messages.len());
    let mut tracker = CallTracker::default();
    for message in messages {
        match tracker.observe(message.borrow()) {
            CallStep::Answers => out.push(message),
            CallStep::Off(_) => {}
            CallStep::Turn { interrupted } => {
                out.extend(
                    interrupted
                        .iter()
                        .map(|(id, name)| M::from(synthetic_result(id, name))),
                );
                out.push(message);
            }
        }
    }
    out
}

/// How the tool calls and results of a transcript pair up.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolPairing {
    pub calls: usize,
    pub results: usize,
    /// Results that answer an earlier call not yet answered.
    pub paired: usize,
    /// Call ids of results with no earlier call (or a second result for
    /// one call), in order.
    pub orphan_results: Vec<String>,
    /// Ids of calls that never got a result, in order.
    pub unanswered_calls: Vec<String>,
}

/// Pairs every tool result with the earlier call it answers.
pub fn tool_pairing<'a>(messages: impl IntoIterator<Item = &'a Message>) -> ToolPairing {
    use std::collections::HashMap;
    let mut pairing = ToolPairing::default();
    // call id -> answered?
    let mut open: HashMap<&str, bool> = HashMap::new();
    let mut call_order: Vec<&str> = Vec::new();
    for message in messages {
        for call in message.tool_calls() {
            pairing.calls += 1;
            if open.insert(&call.id, false).is_none() {
                call_order.push(&call.id);
            }
        }
        if let Some(call_id) = message.answers() {
            pairing.results += 1;
            match open.get_mut(call_id) {
                Some(answered @ false) => {
                    *answered = true;
                    pairing.paired += 1;
                }
                _ => pairing.orphan_results.push(call_id.to_string()),
            }
        }
    }
    pairing.unanswered_calls = call_order
        .into_iter()
        .filter(|id| open.get(id) == Some(&false))
        .map(str::to_string)
        .collect();
    pairing
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "read".into(),
            arguments: json!({"path": "a.rs"}),
        }
    }

    #[test]
    fn wire_shape_is_camel_case_and_tagged_by_role() {
        let m = Message::tool_result("m1", "c1", "ok", true);
        let v = serde_json::to_value(&m).unwrap();
        assert_eq!(
            v,
            json!({"id":"m1","role":"tool","toolCallId":"c1","content":"ok","isError":true})
        );
        let back: Message = serde_json::from_value(v).unwrap();
        assert_eq!(back, m);
        let a: Message = serde_json::from_value(json!({
            "role":"assistant","content":"x","toolCalls":[{"id":"c","name":"n","arguments":{}}],
            "usage":{"input":5,"output":2}
        }))
        .unwrap();
        assert_eq!(a.id, "");
        assert_eq!(a.tool_calls().len(), 1);
        assert_eq!(a.usage.unwrap().context_tokens(), 7);
    }

    #[test]
    fn repair_closes_interrupted_calls_and_drops_orphans() {
        let history = vec![
            Message::tool_result("orphan", "nowhere", "x", false),
            Message::user("u1", "go"),
            Message::assistant("a1", "", vec![call("c1"), call("c2")]),
            Message::tool_result("t1", "c1", "ok", false),
            Message::user("u2", "stop, do something else"),
            Message::assistant("a2", "", vec![call("c3")]),
        ];
        let repaired = repair_for_model(history);
        let ids: Vec<&str> = repaired.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(
            ids,
            ["u1", "a1", "t1", "synthetic-result-c2", "u2", "a2"],
            "orphan dropped, c2 closed before u2, trailing c3 left running"
        );
        assert!(validate_history(&repaired, true).is_ok());
    }

    #[test]
    fn late_and_second_results_stay_out_of_the_history() {
        let history = vec![
            Message::user("u1", "go"),
            Message::assistant("a1", "", vec![call("c1"), call("c2")]),
            Message::tool_result("t2", "c2", "ok", false),
            Message::tool_result("t2b", "c2", "again", false),
            Message::user("u2", "stop, do something else"),
            Message::tool_result("t1", "c1", "finally", false),
            Message::assistant("a2", "ok", vec![]),
        ];
        let mut tracker = CallTracker::default();
        let steps: Vec<CallStep> = history.iter().map(|m| tracker.observe(m)).collect();
        assert_eq!(steps[3], CallStep::Off(OffHistory::Duplicate));
        assert_eq!(
            steps[4],
            CallStep::Turn {
                interrupted: vec![("c1".into(), "read".into())]
            }
        );
        assert_eq!(steps[5], CallStep::Off(OffHistory::Late));
        let repaired = repair_for_model(history);
        let ids: Vec<&str> = repaired.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(
            ids,
            ["u1", "a1", "t2", "synthetic-result-c1", "u2", "a2"],
            "the late result does not follow the synthetic one"
        );
        assert!(validate_history(&repaired, false).is_ok());
    }

    #[test]
    fn pairing_counts_orphans_and_unanswered_calls() {
        let history = vec![
            Message::tool_result("orphan", "nowhere", "x", false),
            Message::assistant("a1", "", vec![call("c1"), call("c2")]),
            Message::tool_result("t1", "c1", "ok", false),
            Message::tool_result("t1b", "c1", "again", false),
        ];
        let pairing = tool_pairing(&history);
        assert_eq!(pairing.calls, 2);
        assert_eq!(pairing.results, 3);
        assert_eq!(pairing.paired, 1);
        assert_eq!(pairing.orphan_results, ["nowhere", "c1"]);
        assert_eq!(pairing.unanswered_calls, ["c2"]);
    }
}
