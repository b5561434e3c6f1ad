//! `conversation/unsubscribe`: the connection stops getting a session's
//! notifications.

use crate::protocol::{SessionParams, UnsubscribeResult};
use crate::server::context::Context;
use crate::server::rpc::RpcResult;

pub fn handle(context: &mut Context, params: SessionParams) -> RpcResult<UnsubscribeResult> {
    let was_subscribed = context.caller.unsubscribe(&params.session_id);
    Ok(UnsubscribeResult {
        session_id: params.session_id,
        was_subscribed,
    })
}
