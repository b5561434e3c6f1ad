//! `conversation/subscribe`: the connection gets the notifications of a
//! session another client may drive (its meter, compactions, file
//! changes; not progress). The session need not be open yet.

use crate::engine;
use crate::protocol::{SessionParams, SubscribeResult};
use crate::server::context::Context;
use crate::server::rpc::RpcResult;

pub fn handle(context: &mut Context, params: SessionParams) -> RpcResult<SubscribeResult> {
    let id = engine::create::session_id(Some(params.session_id))?;
    context.caller.subscribe(&id);
    let state = &*context.state;
    let meter = state
        .sessions
        .find_followed(&id)
        .map(|(open, mirror)| state.meter(open, mirror));
    Ok(SubscribeResult {
        open: meter.is_some(),
        session_id: id,
        meter,
    })
}
