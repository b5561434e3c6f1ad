//! Wire types of the connection's lifecycle: what `initialize` reports
//! of compactd (`CompactdCapabilities`), and work-done progress tokens.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Agent;

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
    /// What compactd does for it besides following its sessions.
    pub supports: super::Supports,
}
