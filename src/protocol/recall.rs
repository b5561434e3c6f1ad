//! Wire types of recall: `conversation/search` and `conversation/messages`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Message, Role};

/// `conversation/search`: messages of a session (or of every open one),
/// compacted away or not, found by what they say.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchParams {
    /// The session; every open session (followed ones included) when
    /// omitted.
    #[serde(default)]
    pub session_id: Option<String>,
    /// Words and "quoted phrases", each of which must occur (ASCII case
    /// ignored; any character is itself, so `src/a_b.rs`, `E0425` or
    /// `foo(` are found as written). At most 1,000 characters, 16 terms.
    pub query: String,
    /// The most hits (default 20, at most 200).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Only messages of these roles.
    #[serde(default)]
    pub roles: Option<Vec<Role>>,
    /// Only messages a compaction summarized or pruned (what the model no
    /// longer sees verbatim). Default false; `null` is the default, as for
    /// the other fields.
    #[serde(default)]
    pub compacted_only: Option<bool>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchResult {
    /// Best first (BM25 over the terms' occurrences; equal scores newest
    /// first).
    pub hits: Vec<SearchHit>,
    /// Messages searched.
    pub searched: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchHit {
    pub session_id: String,
    pub message_id: String,
    pub role: Role,
    /// About 240 characters around the first term's first occurrence.
    pub snippet: String,
    pub score: f64,
    /// The compaction that summarized (or pruned) the message: the model
    /// no longer sees it verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction_id: Option<String>,
}

/// `conversation/messages`: messages verbatim, by id or as a range.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessagesParams {
    pub session_id: String,
    /// These messages, in session order. Give `ids` or `range`.
    #[serde(default)]
    pub ids: Option<Vec<String>>,
    #[serde(default)]
    pub range: Option<MessageRange>,
}

/// From one message to another, both included (message ids).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessageRange {
    pub first: String,
    pub last: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessagesResult {
    pub messages: Vec<RecalledMessage>,
    /// More matched than one answer holds (500 messages or 8 MB); ask again
    /// from the message after the last one.
    pub truncated: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecalledMessage {
    /// The message as it was appended: every part and field.
    pub message: Message,
    /// The compaction that summarized (or pruned) it, if one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction_id: Option<String>,
}
