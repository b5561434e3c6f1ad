//! Wire types of compacting: `conversation/compact`, `preview`,
//! `compactions`, `reportError` and the notifications a compaction sends.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{ProgressToken, Strategy, Trigger, Usage};

use crate::compaction::CompactionRecord;

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
    /// Overrides the configured `keepRecentMessages` for this compaction.
    #[serde(default)]
    pub keep_recent_messages: Option<usize>,
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
    /// With `summarizer.recount`: what the provider counted for the
    /// compacted history (next to `tokensAfter`, compactd's figure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_tokens_after: Option<u64>,
    /// With `summarizer.recount`: why the provider was not asked, or could
    /// not answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recount_note: Option<String>,
    /// An agent's own compaction (a followed or imported session): what
    /// its summary left out of what must survive, by kind ("3 of 7
    /// modified files", "1 of 2 rules", "the task", "the latest request");
    /// absent when it kept all. `recall` is the share it kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dropped: Vec<String>,
    /// An agent's own compaction: what the agent re-attached right after
    /// it (the files it read last, its plan, task list), which its next
    /// requests hold and no message shows, in compactd's count; part of
    /// `tokensAfter`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unseen_tokens: Option<u64>,
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
            provider_tokens_after: record.provider_tokens_after,
            recount_note: record.recount_note.clone(),
            dropped: record.dropped.clone(),
            unseen_tokens: record.unseen_tokens,
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

#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreviewParams {
    pub session_id: String,
    #[serde(default)]
    pub strategy: Option<Strategy>,
    #[serde(default)]
    pub keep_recent_tokens: Option<u64>,
    #[serde(default)]
    pub keep_recent_messages: Option<usize>,
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
    /// An agent's own compaction: what its summary left out (see
    /// `CompactResult::dropped`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dropped: Vec<String>,
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

/// `conversation/didCompact`: a compaction was applied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DidCompactNotification {
    pub session_id: String,
    pub trigger: Trigger,
    #[serde(flatten)]
    pub result: CompactResult,
}

/// `conversation/recap`: what compactd knows of a session that an agent's
/// own compaction must keep, for an agent that compacts by itself with
/// compactd's help (the opencode plugin; Claude Code's and Codex's hooks
/// take the same from `compactd hook`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecapParams {
    pub session_id: String,
    /// The most characters `instructions` and `context` may each hold
    /// (default 10,000, what Claude Code lets a hook add; at least 500).
    #[serde(default)]
    pub max_chars: Option<usize>,
    /// The summary the agent's own compaction wrote: `dropped` says what
    /// of the session it left out.
    #[serde(default)]
    pub summary: Option<String>,
    /// The agent has `compactd mcp`'s tools: `context` ends by saying they
    /// find what the record leaves out. Default false: an agent that lacks
    /// them must not be told to use them.
    #[serde(default)]
    pub recall_tools: Option<bool>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecapResult {
    /// What the agent's summarizer is asked to keep (the task, the latest
    /// request, the user's rules verbatim, pins, the files modified and
    /// read), as instructions.
    pub instructions: String,
    /// compactd's record of the session for the model after the agent
    /// compacted: the offline digest and the `<read-files>` /
    /// `<modified-files>` sections, most important first.
    pub context: String,
    /// What `summary` left out, by kind ("2 of 5 modified files", "the
    /// task"); empty without a summary or when it kept everything.
    pub dropped: Vec<String>,
}
