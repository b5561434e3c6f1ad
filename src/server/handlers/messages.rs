//! `conversation/messages`: messages verbatim, by id or range, each with
//! the compaction that summarized it; images and documents stored apart
//! come back with their data, as `conversation/history` gives them.

use crate::engine;
use crate::protocol::{MessagesParams, MessagesResult, RecalledMessage};
use crate::recall::{self, Asked, Selection, Unselectable};
use crate::server::context::Context;
use crate::server::rpc::{RpcError, RpcResult};

/// The most messages, and bytes of them, one answer holds.
const MAX_MESSAGES: usize = 500;
const MAX_BYTES: usize = 8 << 20;

pub fn handle(context: &mut Context, params: MessagesParams) -> RpcResult<MessagesResult> {
    let open = context.state.sessions.get(&params.session_id)?;
    let session = &open.session;
    let selection = match (&params.ids, &params.range) {
        (Some(ids), None) => Selection::Ids(ids),
        (None, Some(range)) => Selection::Range {
            first: &range.first,
            last: &range.last,
        },
        _ => {
            return Err(RpcError::invalid_params(
                "give either `ids` or `range` (exactly one)",
            ))
        }
    };
    let selected = recall::select(session, selection).map_err(|e| refused(e, &params))?;
    let mut out = Vec::new();
    let mut bytes = 0;
    let blobs = open.log.blobs();
    for picked in &selected {
        let mut message = [picked.message.clone()];
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
            compaction_id: picked
                .summarized
                .map(|r| session.compactions()[r].id.clone()),
        });
    }
    Ok(MessagesResult {
        truncated: out.len() < selected.len(),
        messages: out,
    })
}

/// A selection refused, in the request's terms.
fn refused(e: Unselectable, params: &MessagesParams) -> RpcError {
    RpcError::invalid_params(match e {
        Unselectable::Missing { asked, id } => {
            let field = match asked {
                Asked::Id(i) => format!("ids[{i}]"),
                Asked::First => "range.first".into(),
                Asked::Last => "range.last".into(),
            };
            format!(
                "{field}: no message `{id}` in session `{}`",
                params.session_id
            )
        }
        Unselectable::Reversed { first, last } => {
            format!("range: `{first}` comes after `{last}`")
        }
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
