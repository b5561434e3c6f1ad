//! A compaction as the session log records it, and how its summary shows in
//! the view. Pure.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{FileMarks, FileSections, Strategy};
use crate::conversation::{Message, Usage};
use crate::tokens::{self, Encoding};

/// Why a compaction ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Trigger {
    Manual,
    Threshold,
    Overflow,
}

/// The run of messages an `incremental` compaction replaced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplacedRange {
    pub from_message_id: String,
    pub to_message_id: String,
}

fn full_recall() -> f64 {
    1.0
}

/// A compaction as the session log records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompactionRecord {
    pub id: String,
    #[serde(default)]
    pub strategy: Strategy,
    /// The summary body (with any `<preserved>` section), without the file
    /// sections. Empty for `prune`.
    #[serde(default)]
    pub summary: String,
    /// `checkpoint`: the first message kept verbatim, if any was.
    #[serde(default)]
    pub first_kept_message_id: Option<String>,
    /// `checkpoint`: the newest message the summary replaces; the view
    /// starts after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_summarized_message_id: Option<String>,
    /// `incremental`: the run the summary replaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaces: Option<ReplacedRange>,
    /// `prune`: tool results whose output is replaced by a placeholder.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pruned_message_ids: Vec<String>,
    pub messages_summarized: usize,
    pub tokens_before: u64,
    pub tokens_after: u64,
    #[serde(default)]
    pub read_files: Vec<String>,
    #[serde(default)]
    pub modified_files: Vec<String>,
    /// Created and deleted files among `modified_files`, and how many
    /// files the sections left out.
    #[serde(default, skip_serializing_if = "FileMarks::is_empty")]
    pub file_marks: FileMarks,
    pub trigger: Trigger,
    pub summarizer: String,
    #[serde(default)]
    pub chunks: u32,
    /// A lower rung of the fallback ladder wrote the summary.
    #[serde(default)]
    pub degraded: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub degraded_reason: Option<String>,
    /// Share of the required items (modified files, latest request, user
    /// rules, the task, pins) the summary and kept messages held before
    /// `<preserved>` added the missing ones.
    #[serde(default = "full_recall")]
    pub recall: f64,
    /// User rules carried to the next compaction's retention check.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retained_rules: Vec<String>,
    /// What the summarizer's provider reported for its calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Milliseconds since the Unix epoch; `None` when the source of an
    /// imported compaction does not say (older logs wrote 0 then, which
    /// reads back as unknown: no compaction happened in 1970).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "zero_is_unknown"
    )]
    pub created_at: Option<u64>,
    /// How long it took; `None` when the source does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// The images and documents of the summarized messages, one line each
    /// (`[image: image/png, 1280×720, message m12]`): named in the
    /// summary's `<images>` section, their data still in the log.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<String>,
    /// What the provider counted for the compacted history
    /// (`summarizer.recount`); fed to the calibration when it is applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_tokens_after: Option<u64>,
    /// Why the provider was not asked, or could not answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recount_note: Option<String>,
    /// An agent's own compaction: what its summary left out of what must
    /// survive ("3 of 7 modified files", "the task"), as compactd checks
    /// its own summaries.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dropped: Vec<String>,
    /// An agent's own compaction: what the agent sends after it that its
    /// transcript does not show (the files, plan and task list Claude Code
    /// re-attaches, hook output), in compactd's count: the agent's own
    /// count of its context right after (`postTokens`) less compactd's
    /// count of the summary and kept messages. Counted in the view until
    /// the next compaction, as those attachments stay in the agent's
    /// requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unseen_tokens: Option<u64>,
}

fn zero_is_unknown<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let value: Option<u64> = serde::Deserialize::deserialize(d)?;
    Ok(value.filter(|&v| v != 0))
}

/// The summary of the record that stands for a new conversation started
/// in the same transcript (an older Claude Code's `/clear`): the record
/// keeps nothing, and this text says so in the view.
pub const CLEARED: &str = "(A new conversation started here: the one before it was cleared and is not in the model's context.)";

/// What an agent's own compaction, imported, names as its summarizer.
pub const IMPORTED: &str = " (imported)";

impl CompactionRecord {
    /// An agent wrote it (imported from its transcript), not compactd.
    pub fn is_agents(&self) -> bool {
        self.summarizer.ends_with(IMPORTED)
    }

    /// It stands for a `/clear`, not a summary (see `CLEARED`).
    pub fn clears(&self) -> bool {
        self.is_agents() && self.summary == CLEARED
    }

    /// The newest message it replaced (`checkpoint`, `incremental`).
    pub fn last_replaced_id(&self) -> Option<&str> {
        self.last_summarized_message_id
            .as_deref()
            .or(self.replaces.as_ref().map(|r| r.to_message_id.as_str()))
    }

    /// The messages it names as summarized, replaced or pruned (all must
    /// stand before it in the log).
    pub fn named_message_ids(&self) -> impl Iterator<Item = &str> {
        let range = self
            .replaces
            .iter()
            .flat_map(|r| [r.from_message_id.as_str(), r.to_message_id.as_str()]);
        self.last_summarized_message_id
            .as_deref()
            .into_iter()
            .chain(range)
            .chain(self.pruned_message_ids.iter().map(String::as_str))
    }

    pub fn file_sections(&self) -> FileSections {
        FileSections {
            read: self.read_files.clone(),
            modified: self.modified_files.clone(),
            marks: self.file_marks.clone(),
        }
    }

    /// The summary as the model sees it: body, file sections, and the
    /// images it no longer holds.
    pub fn full_summary(&self) -> String {
        let mut out = format!(
            "{}\n{}",
            self.summary.trim_end(),
            self.file_sections().render()
        )
        .trim()
        .to_string();
        if !self.images.is_empty() {
            out.push_str(&format!(
                "\n\n<images>\n{}\n</images>",
                self.images.join("\n")
            ));
        }
        out
    }

    /// The message that stands for this compaction in the view: for
    /// `incremental` an assistant message in place of the run, otherwise
    /// the user message carrying the summary after `prefix`.
    pub fn view_message(&self, prefix: &str) -> Message {
        match self.strategy {
            Strategy::Incremental => Message::assistant(
                summary_id(&self.id),
                format!(
                    "[compactd] Summary of {} earlier assistant and tool messages:\n\n{}",
                    self.messages_summarized,
                    self.summary.trim()
                ),
                vec![],
            ),
            _ => summary_message(&self.id, prefix, &self.full_summary()),
        }
    }

    /// Tokens the summary message takes in the view (none for `prune`).
    pub fn summary_tokens(&self, encoding: Encoding, prefix: &str) -> u64 {
        match self.strategy {
            Strategy::Prune => 0,
            _ => tokens::count_message(encoding, &self.view_message(prefix)),
        }
    }
}

/// How the id of a summary message starts.
pub const SUMMARY_ID_PREFIX: &str = "summary-";

/// The id of a record's summary message in the view.
pub fn summary_id(record_id: &str) -> String {
    format!("{SUMMARY_ID_PREFIX}{record_id}")
}

/// What a tool result whose output `prune` removed shows instead: a
/// placeholder naming the size of the output it replaced.
pub fn pruned_placeholder(tokens: u64) -> Message {
    Message::tool_result(
        "pruned",
        "pruned",
        format!("[compactd] Output pruned to save context (was {tokens} tokens). Run the tool again if you need it."),
        false,
    )
}

/// The user message that carries a summary into the compacted history.
pub fn summary_message(compaction_id: &str, prefix: &str, summary: &str) -> Message {
    Message::user(
        summary_id(compaction_id),
        format!(
            "{}\n\n<summary>\n{}\n</summary>",
            prefix.trim_end(),
            summary.trim_end()
        ),
    )
}
