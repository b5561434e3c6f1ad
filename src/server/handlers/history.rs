use crate::engine;
use crate::protocol::{HistoryResult, SessionParams};
use crate::server::context::Context;
use crate::server::rpc::RpcResult;

pub fn handle(context: &mut Context, params: SessionParams) -> RpcResult<HistoryResult> {
    let state = &*context.state;
    let open = state.sessions.get(&params.session_id)?;
    Ok(HistoryResult {
        session_id: params.session_id.clone(),
        messages: engine::blobs::history(open),
        meter: state.meter(&open.session),
    })
}
