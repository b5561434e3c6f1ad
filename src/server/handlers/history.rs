use crate::protocol::{HistoryResult, SessionParams};
use crate::server::context::Context;
use crate::server::rpc::RpcResult;

pub fn handle(context: &mut Context, params: SessionParams) -> RpcResult<HistoryResult> {
    let state = &*context.state;
    let session = &state.sessions.get(&params.session_id)?.session;
    Ok(HistoryResult {
        session_id: params.session_id.clone(),
        messages: session.history(),
        meter: state.meter(session),
    })
}
