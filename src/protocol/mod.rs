//! Every wire type: params, results and notifications, the method table
//! (`methods`) and compactd's own error codes (`error_codes`). Types the
//! core defines and the wire carries (messages, strategies, triggers, the
//! configuration, file operations, transcript formats) are re-exported
//! here, so the front ends take every wire type from this module. Serde +
//! schemars, no logic beyond building results from core values;
//! `schemas/` is generated from these and committed.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use crate::compaction::trigger::TriggerKind;
pub use crate::compaction::{Strategy, Trigger};
pub use crate::config::{Config, FollowMode, SummarizerConfig, SummarizerProvider};
pub use crate::conversation::{Message, MessageBody, Role, ToolCall, Usage};
pub use crate::files::watch::WatchMode;
pub use crate::files::{FileToolRule, ToolOperation};
pub use crate::import::Format;
pub use crate::store::Durability;

use crate::compaction::CompactionRecord;

mod files;
mod follow;
mod lsp;
pub mod methods;
mod shared;
pub use files::*;
pub use follow::*;
pub use lsp::*;
pub use shared::*;

/// Error codes compactd defines (JSON-RPC's server-defined range).
pub mod error_codes {
    /// The session is open for writing in another process (or is being
    /// written by this one under another open); the message names the
    /// holder's pid. `conversation/open` with `readOnly: true` still reads it.
    pub const SESSION_LOCKED: i32 = -32010;
    /// The session was opened with `readOnly: true`: it cannot be changed.
    pub const SESSION_READ_ONLY: i32 = -32011;
    /// A shared sidecar's connection without the right token (answered to
    /// its first request, then closed).
    pub const UNAUTHORIZED: i32 = crate::transport::ws::UNAUTHORIZED;
}

/// A `$/progress` token, as LSP defines it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ProgressToken {
    Number(i64),
    String(String),
}

/// `window/workDoneProgress/cancel`'s params, as LSP defines them: the
/// token of the progress the user cancelled. A schema of its own, because
/// a client sends it (the generated clients type every method they send).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct WorkDoneProgressCancelParams {
    pub token: ProgressToken,
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
    /// Tool results that were logged but are not part of the model's
    /// history: a result arriving after the conversation moved on (its call
    /// already closed as interrupted), a second result for a call, or one
    /// whose call never came. One line each, `messages[i]: why`; absent
    /// when there are none.
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
    /// Overrides the configured strategy for this compaction.
    #[serde(default)]
    pub strategy: Option<Strategy>,
    /// `handoff`: what the new session is for.
    #[serde(default)]
    pub goal: Option<String>,
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
    pub strategy: Strategy,
    /// Which summarizer wrote the summary (`none` for `prune`).
    pub summarizer: String,
    /// Summarizer calls over chunks of the input (more than one when the
    /// input exceeded the summarizer's window).
    pub chunks: u32,
    /// A lower rung of the fallback ladder wrote the summary.
    pub degraded: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub degraded_reason: Option<String>,
    /// Share of what must survive (modified files, latest request, user
    /// rules, the task, pins) that the summary and kept messages held
    /// before `<preserved>` added the rest.
    pub recall: f64,
    /// Tool results whose output `prune` replaced.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pruned_message_ids: Vec<String>,
    /// `handoff`: the new session that starts with the handoff message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff_session_id: Option<String>,
    /// `handoff`: that message's text, a prompt to start a fresh agent
    /// session with (a followed agent's, say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff_prompt: Option<String>,
    /// What the summarizer's provider reported for its calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// How long it took; absent for an agent's own compaction whose
    /// transcript does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

impl CompactResult {
    pub fn from_record(record: &CompactionRecord) -> CompactResult {
        CompactResult {
            compacted: true,
            reason: None,
            summary: if record.strategy == Strategy::Prune {
                String::new()
            } else {
                record.full_summary()
            },
            tokens_before: record.tokens_before,
            tokens_after: record.tokens_after,
            messages_summarized: record.messages_summarized,
            first_kept_message_id: record.first_kept_message_id.clone(),
            read_files: record.read_files.clone(),
            modified_files: record.modified_files.clone(),
            strategy: record.strategy,
            summarizer: record.summarizer.clone(),
            chunks: record.chunks,
            degraded: record.degraded,
            degraded_reason: record.degraded_reason.clone(),
            recall: record.recall,
            pruned_message_ids: record.pruned_message_ids.clone(),
            handoff_session_id: None,
            handoff_prompt: None,
            usage: record.usage,
            duration_ms: record.duration_ms,
        }
    }

    /// A summary that would not have made the history smaller: written,
    /// not applied.
    pub fn not_applied(record: &CompactionRecord, reason: String) -> CompactResult {
        let mut result =
            CompactResult::not_compacted(reason, record.tokens_before, record.strategy);
        result.summary = record.full_summary();
        result.tokens_after = record.tokens_after;
        result
    }

    /// A handoff: the summary starts the new session `new_session_id`,
    /// which holds `tokens_after`; this session is unchanged. The first
    /// message of the new session is also given as a prompt to start a
    /// fresh agent session with.
    pub fn handed_off(
        record: &CompactionRecord,
        tokens_after: u64,
        new_session_id: &str,
    ) -> CompactResult {
        CompactResult {
            compacted: false,
            tokens_after,
            reason: Some(format!(
                "handoff written to the new session {new_session_id}; this session is unchanged"
            )),
            handoff_session_id: Some(new_session_id.to_string()),
            handoff_prompt: Some(
                crate::compaction::handoff_message(&record.full_summary())
                    .text()
                    .to_string(),
            ),
            ..CompactResult::from_record(record)
        }
    }

    /// "Nothing to compact" is a result, not an error.
    pub fn not_compacted(reason: String, tokens: u64, strategy: Strategy) -> CompactResult {
        CompactResult {
            compacted: false,
            reason: Some(reason),
            tokens_before: tokens,
            tokens_after: tokens,
            strategy,
            summarizer: "none".into(),
            recall: 1.0,
            ..CompactResult::default()
        }
    }
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

#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreviewParams {
    pub session_id: String,
    #[serde(default)]
    pub strategy: Option<Strategy>,
    #[serde(default)]
    pub keep_recent_tokens: Option<u64>,
}

/// A dry run: what a compaction would do, without calling a summarizer.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreviewResult {
    pub strategy: Strategy,
    /// Always false: a preview changes nothing.
    pub compacted: bool,
    /// Why nothing would be compacted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub first_kept_message_id: Option<String>,
    pub summarize_message_ids: Vec<String>,
    pub keep_message_ids: Vec<String>,
    pub prune_message_ids: Vec<String>,
    pub tokens_before: u64,
    /// Our estimate after the compaction, as the provider would count it
    /// (like the meter, with `overheadTokens`); the summary's size is
    /// estimated.
    pub estimated_tokens_after: u64,
    /// The part of both figures that is in every request but in no
    /// message (the meter's `overheadTokens`): a compaction cannot remove
    /// it.
    pub overhead_tokens: u64,
    /// Items the retention check will look for.
    pub required: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompactionInfo {
    pub id: String,
    pub trigger: Trigger,
    pub strategy: Strategy,
    pub summarizer: String,
    pub summary: String,
    pub tokens_before: u64,
    pub tokens_after: u64,
    pub messages_summarized: usize,
    pub chunks: u32,
    pub degraded: bool,
    pub recall: f64,
    /// How long it took; absent when unknown (an agent's own compaction
    /// whose transcript does not say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// Milliseconds since the Unix epoch; absent when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompactionsResult {
    pub session_id: String,
    /// Oldest first.
    pub compactions: Vec<CompactionInfo>,
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

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReportErrorParams {
    pub session_id: String,
    /// The HTTP status of the failed model request, if known.
    #[serde(default)]
    pub status: Option<u16>,
    /// The provider's error message, as received.
    pub message: String,
    /// Report the recovery compaction's progress under this token.
    #[serde(default)]
    pub work_done_token: Option<ProgressToken>,
}

/// `conversation/reportError`'s result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReportErrorResult {
    /// The error says the context window overflowed.
    pub overflow: bool,
    /// `overflow`, `rateLimit`, `outputLimit` or `other`.
    pub kind: String,
    /// Retry the turn: the history was compacted to fit.
    pub retry: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction: Option<CompactResult>,
}

/// `conversation/autoCompactStopped`: the circuit breaker stopped
/// auto-compaction for a session.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutoCompactStoppedNotification {
    pub session_id: String,
    pub reason: String,
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
    /// The part of contextTokens in every request but in no message: the
    /// declared system prompt and tool definitions, and what the provider's
    /// usage shows beyond compactd's count of the messages (an agent's
    /// undeclared system prompt and tools, the provider's framing). Learned
    /// from usage; 0 before any was reported and nothing was declared.
    pub overhead_tokens: u64,
    /// A session following an agent (`conversation/follow`): where the
    /// agent compacts by itself and how that is known, as of this reading
    /// (`autoCompactAt` is its `at`, else the window). It changes when the
    /// agent's model or stated window does. Absent for other sessions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_auto_compact: Option<AutoCompactPoint>,
}

impl From<crate::tokens::Meter> for MeterInfo {
    fn from(meter: crate::tokens::Meter) -> MeterInfo {
        MeterInfo {
            context_tokens: meter.context_tokens,
            context_window: meter.context_window,
            percent: meter.percent(),
            auto_compact_at: meter.auto_compact_at,
            overhead_tokens: meter.overhead_tokens,
            agent_auto_compact: None,
            source: match meter.source {
                crate::tokens::MeterSource::Usage => MeterSource::Usage,
                crate::tokens::MeterSource::Estimate => MeterSource::Estimate,
            },
        }
    }
}

/// `conversation/import`: a transcript (a file the server can read, or its
/// content) becomes a new session.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImportParams {
    /// A transcript file on the server's machine (absolute, or relative to
    /// the server's working directory). Give `path` or `content`.
    #[serde(default)]
    pub path: Option<String>,
    /// The transcript itself.
    #[serde(default)]
    pub content: Option<String>,
    /// The transcript's format; detected from the content when omitted.
    #[serde(default)]
    pub format: Option<Format>,
    /// The id of the new session; generated when omitted. Must not exist.
    #[serde(default)]
    pub session_id: Option<String>,
    /// Overrides the model found in the transcript.
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub context_window: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImportResult {
    pub session_id: String,
    pub format: Format,
    /// Messages imported.
    pub messages: usize,
    /// Compactions the transcript recorded, imported as ours.
    pub compactions: usize,
    /// Lines (or array items) skipped.
    pub skipped: usize,
    /// Why, one line per kind: `summary lines: 6 (first at line 1)`.
    pub skipped_reasons: Vec<String>,
    pub meter: MeterInfo,
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
    /// The agents whose transcripts it follows, in the order to list them.
    pub agents: Vec<AgentInfo>,
}

/// An agent compactd follows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentInfo {
    pub name: Agent,
    /// The name people know it by (`Claude Code`).
    pub display_name: String,
}

/// Every file generated under `schemas/`, by file stem: the JSON Schema
/// of each wire type, and `methods`, the method table.
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
        schema!("config", Config),
        schema!("message", Message),
        schema!("OpenParams", OpenParams),
        schema!("OpenResult", OpenResult),
        schema!("CloseResult", CloseResult),
        schema!("AppendParams", AppendParams),
        schema!("AppendResult", AppendResult),
        schema!("SessionParams", SessionParams),
        schema!("HistoryResult", HistoryResult),
        schema!("CompactParams", CompactParams),
        schema!("CompactResult", CompactResult),
        schema!("ImportParams", ImportParams),
        schema!("ImportResult", ImportResult),
        schema!("TokensNotification", TokensNotification),
        schema!("DidCompactNotification", DidCompactNotification),
        schema!("CompactdCapabilities", CompactdCapabilities),
        schema!("CheckResult", CheckResult),
        schema!("SetAutoCompactParams", SetAutoCompactParams),
        schema!("SetAutoCompactResult", SetAutoCompactResult),
        schema!("PreviewParams", PreviewParams),
        schema!("PreviewResult", PreviewResult),
        schema!("CompactionsResult", CompactionsResult),
        schema!("BranchParams", BranchParams),
        schema!("BranchResult", BranchResult),
        schema!("PinParams", PinParams),
        schema!("PinResult", PinResult),
        schema!("ReportErrorParams", ReportErrorParams),
        schema!("ReportErrorResult", ReportErrorResult),
        schema!(
            "AutoCompactStoppedNotification",
            AutoCompactStoppedNotification
        ),
        schema!("FollowParams", FollowParams),
        schema!("FollowResult", FollowResult),
        schema!("UnfollowResult", UnfollowResult),
        schema!("ListAgentSessionsParams", ListAgentSessionsParams),
        schema!("ListAgentSessionsResult", ListAgentSessionsResult),
        schema!("DidFollowNotification", DidFollowNotification),
        schema!("SubscribeResult", SubscribeResult),
        schema!("UnsubscribeResult", UnsubscribeResult),
        schema!("AuthenticateParams", AuthenticateParams),
        schema!("FileNotificationParams", FileNotificationParams),
        schema!("FilesListResult", FilesListResult),
        schema!("UnchangedSinceReadResult", UnchangedSinceReadResult),
        schema!("FileDidChangeNotification", FileDidChangeNotification),
        schema!("DidOpenTextDocumentParams", DidOpenTextDocumentParams),
        schema!("DidChangeTextDocumentParams", DidChangeTextDocumentParams),
        schema!("DidSaveTextDocumentParams", DidSaveTextDocumentParams),
        schema!("DidCloseTextDocumentParams", DidCloseTextDocumentParams),
        schema!("DidChangeWatchedFilesParams", DidChangeWatchedFilesParams),
        schema!("WorkDoneProgressCancelParams", WorkDoneProgressCancelParams),
        ("methods", methods::table_json()),
    ]
}
