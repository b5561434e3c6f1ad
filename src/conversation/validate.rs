//! The history invariant, checked after every rewrite of the LLM view.

use std::collections::HashMap;

use super::Message;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HistoryViolation {
    /// A tool result whose call is not in an earlier assistant message.
    OrphanResult { index: usize, call_id: String },
    /// A tool result separated from its call by a user or assistant turn.
    DetachedResult { index: usize, call_id: String },
    /// A call that never got a result although the conversation moved on.
    DanglingCall { index: usize, call_id: String },
    /// Two results for one call.
    DuplicateResult { index: usize, call_id: String },
}

/// Checks that every tool result directly follows (within its batch of
/// results) the assistant message that called it, and, unless
/// `allow_trailing_calls`, that every call has a result. Calls in the final
/// assistant message may be pending, so `allow_trailing_calls` only excuses
/// those.
pub fn validate_history(
    messages: &[Message],
    allow_trailing_calls: bool,
) -> Result<(), HistoryViolation> {
    // call id -> (index of the calling message, answered?)
    let mut calls: HashMap<&str, (usize, bool)> = HashMap::new();
    let mut batch_owner: Option<usize> = None;
    let mut last_assistant_with_calls: Option<usize> = None;
    for (index, message) in messages.iter().enumerate() {
        if let Some(call_id) = message.answers() {
            match calls.get_mut(call_id) {
                None => {
                    return Err(HistoryViolation::OrphanResult {
                        index,
                        call_id: call_id.to_string(),
                    })
                }
                Some((_, true)) => {
                    return Err(HistoryViolation::DuplicateResult {
                        index,
                        call_id: call_id.to_string(),
                    })
                }
                Some((owner, answered)) => {
                    if batch_owner != Some(*owner) {
                        return Err(HistoryViolation::DetachedResult {
                            index,
                            call_id: call_id.to_string(),
                        });
                    }
                    *answered = true;
                }
            }
            continue;
        }
        // A new turn: every call of the previous batch must be answered.
        if let Some(owner) = batch_owner.take() {
            if let Some((call_id, _)) = calls
                .iter()
                .find(|(_, (calling, answered))| *calling == owner && !answered)
            {
                return Err(HistoryViolation::DanglingCall {
                    index: owner,
                    call_id: call_id.to_string(),
                });
            }
        }
        if !message.tool_calls().is_empty() {
            batch_owner = Some(index);
            last_assistant_with_calls = Some(index);
            for call in message.tool_calls() {
                calls.insert(call.id.as_str(), (index, false));
            }
        }
    }
    if let Some(owner) = batch_owner {
        let trailing_ok = allow_trailing_calls && last_assistant_with_calls == Some(owner);
        if !trailing_ok {
            if let Some((call_id, _)) = calls
                .iter()
                .find(|(_, (calling, answered))| *calling == owner && !answered)
            {
                return Err(HistoryViolation::DanglingCall {
                    index: owner,
                    call_id: call_id.to_string(),
                });
            }
        }
    }
    Ok(())
}
