//! Wire types of following agent transcripts: `conversation/follow`,
//! `conversation/unfollow`, `conversation/listAgentSessions` and the
//! `conversation/didFollow` notification.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use crate::agents::{Agent, AutoCompactPoint, Basis as AutoCompactBasis};

use super::MeterInfo;

/// `conversation/follow`: mirror an agent's transcript as a read-only
/// session. Give `path`, or `agent` for that agent's newest session of the
/// workspace.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FollowParams {
    /// A transcript file (absolute, or relative to the server's working
    /// directory); its agent is told from where it lives or its content.
    #[serde(default)]
    pub path: Option<String>,
    /// Follow this agent's most recently written session of the workspace.
    #[serde(default)]
    pub agent: Option<Agent>,
    /// The directory the agent runs in. Default: the server's workspace
    /// root (else its working directory).
    #[serde(default)]
    pub workspace: Option<String>,
}

/// A followed transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FollowResult {
    /// The read-only session that mirrors the transcript: the same id
    /// whenever this file is followed.
    pub session_id: String,
    pub agent: Agent,
    /// The agent's name as people know it (`AgentInfo.displayName`), for
    /// a status bar.
    pub agent_name: String,
    /// The transcript.
    pub path: String,
    /// The agent's working directory.
    pub workspace: String,
    /// Where the agent compacts by itself, and how that is known.
    pub auto_compact: AutoCompactPoint,
    pub meter: MeterInfo,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnfollowResult {
    pub session_id: String,
    /// False when the session was not followed.
    pub unfollowed: bool,
}

/// `conversation/listAgentSessions`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListAgentSessionsParams {
    /// Default: the server's workspace root (else its working directory).
    #[serde(default)]
    pub workspace: Option<String>,
    /// At most this many sessions (default 20), most recent first.
    #[serde(default)]
    pub limit: Option<usize>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentSessionInfo {
    pub agent: Agent,
    /// The agent's name as people know it.
    pub agent_name: String,
    pub path: String,
    /// The name the user gave the session, else their first request (cut
    /// to 100 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Last written, in milliseconds since the Unix epoch.
    pub modified: u64,
    /// Bytes.
    pub size: u64,
    /// The session following it here, if one does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListAgentSessionsResult {
    /// The workspace as the agents name it (its real path).
    pub workspace: String,
    /// Every agent's sessions, most recently written first.
    pub sessions: Vec<AgentSessionInfo>,
}

/// `conversation/didFollow`: with `follow: "auto"`, the server started
/// following a session (the newest at start, then each one that starts).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DidFollowNotification {
    #[serde(flatten)]
    pub follow: FollowResult,
    /// The session auto-follow followed before, now closed (unless a
    /// client followed it explicitly).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_session_id: Option<String>,
}
