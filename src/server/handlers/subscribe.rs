//! `conversation/subscribe`: the connection follows a session another
//! client may drive (its meter, compactions, progress-free notifications,
//! file changes). The session need not be open yet.

use crate::engine;
use crate::protocol::{SessionParams, SubscribeResult};
use crate::server::{RpcResult, Server};

pub fn handle(server: &mut Server, params: SessionParams) -> RpcResult<SubscribeResult> {
    let id = engine::create::session_id(Some(params.session_id))?;
    server.clients.subscribe_current(&id);
    let meter = server
        .sessions
        .get(&id)
        .map(|open| server.meter_info(&open.session));
    Ok(SubscribeResult {
        open: meter.is_some(),
        session_id: id,
        meter,
    })
}
