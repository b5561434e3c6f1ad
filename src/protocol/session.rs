//! Wire types of a session's life: open, close, append, history, check,
//! auto-compaction's switch, branch and pin.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Message, MeterInfo, MirroredSession, TriggerKind};

#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OpenParams {
    /// Resume this session (from its log) or create it under this id.
    /// Omitted: a new session with a generated id.
    #[serde(default)]
    pub session_id: Option<String>,
    /// The conversation's model: picks the tokenizer and context window.
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub context_window: Option<u64>,
    /// The agent's system prompt, sent with every request: counted in the
    /// meter's `overheadTokens`.
    #[serde(default)]
    pub system_prompt: Option<String>,
    /// The tool definitions sent with every request, as the provider gets
    /// them (e.g. Anthropic's `tools`, OpenAI's `tools`): each counted as
    /// its JSON in `overheadTokens`. What a provider adds around them is
    /// learned from its usage.
    #[serde(default)]
    pub tool_definitions: Option<Vec<serde_json::Value>>,
    /// Open an existing session to read it only, without its lock (for
    /// example while another compactd process writes it): a snapshot of
    /// its log as of now; appends, compactions, pins and settings on it
    /// fail with error -32011. Settings given here are not applied.
    #[serde(default)]
    pub read_only: bool,
    /// The agent's session this one mirrors, message by message (the
    /// opencode plugin gives `{agent: "opencode", sessionId}`), recorded
    /// in a new session's log: a follow of that agent session
    /// (`conversation/follow`) is then this session, not a second one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mirrors: Option<MirroredSession>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OpenResult {
    pub session_id: String,
    /// True when the session was resumed from an existing log.
    pub resumed: bool,
    /// Messages in the session (all of them, compacted or not).
    pub message_count: usize,
    /// Problems found while loading the log (skipped lines).
    pub warnings: Vec<String>,
    /// The session is open read-only in this server.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_only: bool,
    pub meter: MeterInfo,
}

/// `conversation/close`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CloseResult {
    pub session_id: String,
    /// The session was closed: its log and lock released, its running
    /// compaction cancelled. False when it was not open, or (on a shared
    /// compactd) another connection still uses it: then only this
    /// connection stopped following it.
    pub closed: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppendParams {
    pub session_id: String,
    pub messages: Vec<Message>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppendResult {
    /// The ids of the appended messages, assigned where the client gave none.
    pub ids: Vec<String>,
    pub meter: MeterInfo,
    /// A compaction trigger fired.
    pub should_compact: bool,
    /// A compaction of this session is running (auto-compaction starts
    /// one when a trigger fires and it is allowed).
    pub compacting: bool,
    /// What the append assumed or kept apart, one line each, `messages[i]:
    /// why` (`messages[i].content[j]: why` for a part); absent when there
    /// is nothing to say: an image counted on an assumption (its data has
    /// no header compactd reads a size from, or the header claims a side
    /// of 0 or over 8,000 px) and what it was counted as; a tool result logged
    /// but not part of the model's history (arriving after the conversation
    /// moved on, its call already closed as interrupted; a second result
    /// for a call; one whose call never came).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionParams {
    pub session_id: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HistoryResult {
    pub session_id: String,
    /// System prompt, then the summary message (if any), then the kept and
    /// newer messages.
    pub messages: Vec<Message>,
    pub meter: MeterInfo,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CheckResult {
    /// A trigger fired.
    pub should_compact: bool,
    pub triggers: Vec<TriggerKind>,
    pub meter: MeterInfo,
    /// Auto-compaction is on for this session (config, environment,
    /// `conversation/setAutoCompact` and the circuit breaker agree).
    pub auto_compact: bool,
    /// A compaction of this session is running (perhaps just started by
    /// this check).
    pub compacting: bool,
    /// Why the circuit breaker stopped auto-compaction, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_reason: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SetAutoCompactParams {
    pub session_id: String,
    pub enabled: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SetAutoCompactResult {
    pub session_id: String,
    pub enabled: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BranchParams {
    pub session_id: String,
    /// The new session holds everything logged before this message.
    pub before_message_id: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BranchResult {
    /// The new session's id.
    pub session_id: String,
    pub message_count: usize,
    pub meter: MeterInfo,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PinParams {
    pub session_id: String,
    /// Kept verbatim through every compaction.
    pub text: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PinResult {
    pub pins: Vec<String>,
}
