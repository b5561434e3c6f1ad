//! `conversation/unsubscribe`: the connection stops following a session.

use crate::protocol::{SessionParams, UnsubscribeResult};
use crate::server::{RpcResult, Server};

pub fn handle(server: &mut Server, params: SessionParams) -> RpcResult<UnsubscribeResult> {
    let was_subscribed = server.clients.unsubscribe_current(&params.session_id);
    Ok(UnsubscribeResult {
        session_id: params.session_id,
        was_subscribed,
    })
}
