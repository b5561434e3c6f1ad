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
/// `allow_trailing_calls`, that every call has a result. Only the calls of
/// the final assistant message may be pending, so `allow_trailing_calls`
/// excuses only those.
pub fn validate_history(
    messages: &[Message],
    allow_trailing_calls: bool,
) -> Result<(), HistoryViolation> {
    // Every call seen so far: answered yet?
    let mut answered: HashMap<&str, bool> = HashMap::new();
    // The assistant message whose results may follow, and its open calls.
    let mut batch: Option<(usize, Vec<&str>)> = None;
    let dangling = |owner: usize, open: &[&str]| match open.first() {
        Some(call_id) => Err(HistoryViolation::DanglingCall {
            index: owner,
            call_id: call_id.to_string(),
        }),
        None => Ok(()),
    };
    for (index, message) in messages.iter().enumerate() {
        if let Some(call_id) = message.answers() {
            let violation =
                |make: fn(usize, String) -> HistoryViolation| Err(make(index, call_id.to_string()));
            match answered.get_mut(call_id) {
                None => {
                    return violation(|index, call_id| HistoryViolation::OrphanResult {
                        index,
                        call_id,
                    })
                }
                Some(true) => {
                    return violation(|index, call_id| HistoryViolation::DuplicateResult {
                        index,
                        call_id,
                    })
                }
                Some(done) => {
                    let open = batch.as_mut().map(|(_, open)| open);
                    match open
                        .and_then(|open| open.iter().position(|c| *c == call_id).map(|i| (open, i)))
                    {
                        Some((open, i)) => {
                            open.swap_remove(i);
                            *done = true;
                        }
                        None => {
                            return violation(|index, call_id| HistoryViolation::DetachedResult {
                                index,
                                call_id,
                            })
                        }
                    }
                }
            }
            continue;
        }
        // A new turn: every call of the previous batch must be answered.
        if let Some((owner, open)) = batch.take() {
            dangling(owner, &open)?;
        }
        if !message.tool_calls().is_empty() {
            let ids: Vec<&str> = message.tool_calls().iter().map(|c| c.id.as_str()).collect();
            for id in &ids {
                answered.insert(id, false);
            }
            batch = Some((index, ids));
        }
    }
    match batch {
        Some((owner, open)) if !allow_trailing_calls => dangling(owner, &open),
        _ => Ok(()),
    }
}
