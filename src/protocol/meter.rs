//! The meter, as `conversation/tokens` and every result that carries one
//! send it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::AutoCompactPoint;

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

/// `conversation/tokens`: the meter of a session changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokensNotification {
    pub session_id: String,
    #[serde(flatten)]
    pub meter: MeterInfo,
}
