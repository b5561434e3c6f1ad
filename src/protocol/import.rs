//! Wire types of `conversation/import`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Format, MeterInfo};

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
