//! `conversation/messages`: messages verbatim, by id or range, each with
//! the compaction that summarized it.

use crate::protocol::{MessagesParams, MessagesResult, RecalledMessage};
use crate::recall;
use crate::server::context::Context;
use crate::server::rpc::{RpcError, RpcResult};

/// The most messages, and bytes of them, one answer holds.
const MAX_MESSAGES: usize = 500;
const MAX_BYTES: usize = 8 << 20;

pub fn handle(context: &mut Context, params: MessagesParams) -> RpcResult<MessagesResult> {
    let session = &context.state.sessions.get(&params.session_id)?.session;
    let position = |id: &str, field: &str| {
        session.position(id).ok_or_else(|| {
            RpcError::invalid_params(format!(
                "{field}: no message `{id}` in session `{}`",
                params.session_id
            ))
        })
    };
    let wanted: Vec<usize> = match (&params.ids, &params.range) {
        (Some(ids), None) => {
            let mut at = ids
                .iter()
                .enumerate()
                .map(|(i, id)| position(id, &format!("ids[{i}]")))
                .collect::<RpcResult<Vec<usize>>>()?;
            at.sort_unstable();
            at.dedup();
            at
        }
        (None, Some(range)) => {
            let (from, to) = (
                position(&range.first, "range.first")?,
                position(&range.last, "range.last")?,
            );
            if from > to {
                return Err(RpcError::invalid_params(format!(
                    "range: `{}` comes after `{}`",
                    range.first, range.last
                )));
            }
            (from..=to).collect()
        }
        _ => {
            return Err(RpcError::invalid_params(
                "give either `ids` or `range` (exactly one)",
            ))
        }
    };
    let messages: Vec<_> = session.shared_messages().collect();
    let ids: Vec<&str> = messages.iter().map(|m| m.id.as_str()).collect();
    let summarized = recall::summarized_by(session.compactions(), &ids);
    let mut out = Vec::new();
    let mut bytes = 0;
    for &i in &wanted {
        let message = messages[i].as_ref().clone();
        bytes += recall::searchable_text(&message).len();
        if out.len() == MAX_MESSAGES || (bytes > MAX_BYTES && !out.is_empty()) {
            break;
        }
        out.push(RecalledMessage {
            message,
            compaction_id: summarized[i].map(|r| session.compactions()[r].id.clone()),
        });
    }
    Ok(MessagesResult {
        truncated: out.len() < wanted.len(),
        messages: out,
    })
}
