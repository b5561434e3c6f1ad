//! Every wire type: params, results and notifications. Serde + schemars,
//! no logic; `schemas/` is generated from these and committed.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::conversation::Message;
use crate::session::Trigger;

pub mod methods {
    pub const OPEN: &str = "conversation/open";
    pub const APPEND: &str = "conversation/append";
    pub const HISTORY: &str = "conversation/history";
    pub const COMPACT: &str = "conversation/compact";
    /// Server → client: the meter changed.
    pub const TOKENS: &str = "conversation/tokens";
    /// Server → client: a compaction was applied.
    pub const DID_COMPACT: &str = "conversation/didCompact";
}

/// A `$/progress` token, as LSP defines it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ProgressToken {
    Number(i64),
    String(String),
}

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
    #[serde(default)]
    pub system_prompt: Option<String>,
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
    pub meter: MeterInfo,
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
    /// The context reached the auto-compaction limit.
    pub should_compact: bool,
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

#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompactParams {
    pub session_id: String,
    /// Steers what the summary focuses on.
    #[serde(default)]
    pub instructions: Option<String>,
    /// Overrides the configured `keepRecentTokens` for this compaction.
    #[serde(default)]
    pub keep_recent_tokens: Option<u64>,
    /// Report progress under this token.
    #[serde(default)]
    pub work_done_token: Option<ProgressToken>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompactResult {
    pub compacted: bool,
    /// Why nothing was compacted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The summary as the model sees it, file sections included.
    pub summary: String,
    pub tokens_before: u64,
    pub tokens_after: u64,
    pub messages_summarized: usize,
    pub first_kept_message_id: Option<String>,
    pub read_files: Vec<String>,
    pub modified_files: Vec<String>,
    /// Which summarizer wrote the summary.
    pub summarizer: String,
    pub chunks: u32,
    pub duration_ms: u64,
}

impl CompactResult {
    pub fn from_record(record: &crate::session::CompactionRecord) -> CompactResult {
        CompactResult {
            compacted: true,
            reason: None,
            summary: record.full_summary(),
            tokens_before: record.tokens_before,
            tokens_after: record.tokens_after,
            messages_summarized: record.messages_summarized,
            first_kept_message_id: record.first_kept_message_id.clone(),
            read_files: record.read_files.clone(),
            modified_files: record.modified_files.clone(),
            summarizer: record.summarizer.clone(),
            chunks: record.chunks,
            duration_ms: record.duration_ms,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum MeterSource {
    Usage,
    Estimate,
}

/// The token meter of a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MeterInfo {
    pub context_tokens: u64,
    pub context_window: u64,
    /// contextTokens as a percentage of contextWindow, one decimal.
    pub percent: f64,
    /// The token count at which auto-compaction fires.
    pub auto_compact_at: u64,
    pub source: MeterSource,
}

/// `conversation/tokens`: the meter of a session changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokensNotification {
    pub session_id: String,
    #[serde(flatten)]
    pub meter: MeterInfo,
}

/// `conversation/didCompact`: a compaction was applied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DidCompactNotification {
    pub session_id: String,
    pub trigger: Trigger,
    #[serde(flatten)]
    pub result: CompactResult,
}

/// What `initialize` reports under `capabilities.experimental.compactd`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompactdCapabilities {
    pub version: String,
    /// Methods this server answers.
    pub methods: Vec<String>,
    /// Notifications this server sends.
    pub notifications: Vec<String>,
}

/// Every schema committed under `schemas/`, by file stem.
pub fn schemas() -> Vec<(&'static str, serde_json::Value)> {
    macro_rules! schema {
        ($name:literal, $ty:ty) => {
            (
                $name,
                serde_json::to_value(schemars::schema_for!($ty)).expect("schema serializes"),
            )
        };
    }
    vec![
        schema!("config", crate::config::Config),
        schema!("message", Message),
        schema!("OpenParams", OpenParams),
        schema!("OpenResult", OpenResult),
        schema!("AppendParams", AppendParams),
        schema!("AppendResult", AppendResult),
        schema!("SessionParams", SessionParams),
        schema!("HistoryResult", HistoryResult),
        schema!("CompactParams", CompactParams),
        schema!("CompactResult", CompactResult),
        schema!("TokensNotification", TokensNotification),
        schema!("DidCompactNotification", DidCompactNotification),
        schema!("CompactdCapabilities", CompactdCapabilities),
    ]
}
