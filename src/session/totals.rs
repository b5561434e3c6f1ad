//! The running sums a session keeps over its view, and what the synthetic
//! results closing interrupted calls count: the figures `meter.rs` keeps
//! up to date and `Session` reads.

use crate::conversation::synthetic_result;
use crate::tokens::{self, Encoding};

/// Running sums over the view, kept up to date on every append so the
/// meter and the triggers cost nothing per message.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct ViewTotals {
    /// Estimated tokens of every slot.
    pub(super) tokens: u64,
    /// Raw messages, and the user messages among them.
    pub(super) messages: u64,
    pub(super) user_turns: u64,
    /// The latest current provider report: the context it gives, and the
    /// estimated tokens of the slots after it.
    pub(super) latest_usage: Option<(u64, u64)>,
}

/// Tokens of the synthetic results closing these calls.
pub(super) fn synthetic_tokens(encoding: Encoding, calls: &[(String, String)]) -> u64 {
    calls
        .iter()
        .map(|(id, name)| tokens::count_message(encoding, &synthetic_result(id, name)))
        .sum()
}
