//! Wire types of the shared sidecar: subscribing to sessions another
//! client drives, and authenticating a connection.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::MeterInfo;

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubscribeResult {
    pub session_id: String,
    /// The session is open in this server now (its notifications flow);
    /// a session opened later sends them from then on.
    pub open: bool,
    /// Its meter, when it is open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meter: Option<MeterInfo>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnsubscribeResult {
    pub session_id: String,
    /// The connection was subscribed to the session until now.
    pub was_subscribed: bool,
}

/// The first message of a WebSocket connection that sent no
/// `Authorization` header.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuthenticateParams {
    /// The token from the discovery file.
    pub token: String,
}
