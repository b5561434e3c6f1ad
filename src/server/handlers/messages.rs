//! `conversation/messages`: messages verbatim, by id or range, each with
//! the compaction that summarized it; images and documents stored apart
//! come back with their data, as `conversation/history` gives them.

use crate::engine;
use crate::protocol::{MessagesParams, MessagesResult, RecalledMessage};
use crate::recall;
use crate::server::context::Context;
use crate::server::rpc::{RpcError, RpcResult};

/// The most messages, and bytes of them, one answer holds.
const MAX_MESSAGES: usize = 500;
const MAX_BYTES: usize = 8 << 20;

pub fn handle(context: &mut Context, params: MessagesParams) -> RpcResult<MessagesResult> {
    let open = context.state.sessions.get(&params.session_id)?;
    let session = &open.session;
    let position = |id: &str, field: &str| {
        session.find(id).ok_or_else(|| {
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
    let blobs = open.log.blobs();
    for &i in &wanted {
        let mut message = [messages[i].as_ref().clone()];
        for warning in engine::blobs::restore_data(&blobs, &mut message) {
            tracing::warn!("session {}: {warning}", session.id);
        }
        let [message] = message;
        bytes += recall::searchable_text(&message).len() + data_bytes(&message);
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

/// The bytes of data (images, documents) a message carries.
fn data_bytes(message: &crate::protocol::Message) -> usize {
    message
        .content()
        .part_list()
        .into_iter()
        .flatten()
        .filter_map(|part| part.data())
        .map(str::len)
        .sum()
}
