//! Where an agent compacts by itself, as a status bar says it ("Claude
//! Code will auto-compact at 977k"): the point, how far it can be trusted,
//! and the rule it came from. Each agent's rule, checked against the real
//! program, is in its module; what could not be checked is marked
//! `estimate`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How far an agent's auto-compaction point can be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Basis {
    /// The agent's own setting or rule, checked against the real program.
    Exact,
    /// The agent's rule applied where it was not checked (another window,
    /// a window from compactd's table).
    Estimate,
    /// The agent will not compact by itself.
    Off,
}

/// An agent's auto-compaction point.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutoCompactPoint {
    /// The context size at which the agent compacts; `null` when it will not.
    pub at: Option<u64>,
    pub basis: Basis,
    /// The rule and where its figures came from, for people.
    pub rule: String,
}

/// A point that is not: the agent will not compact by itself.
pub(crate) fn off(rule: String) -> AutoCompactPoint {
    AutoCompactPoint {
        at: None,
        basis: Basis::Off,
        rule,
    }
}
