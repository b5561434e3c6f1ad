use crate::protocol::{HistoryResult, SessionParams};
use crate::server::{RpcResult, Server};

pub fn handle(server: &mut Server, params: SessionParams) -> RpcResult<HistoryResult> {
    let session = &server.session(&params.session_id)?.session;
    Ok(HistoryResult {
        session_id: params.session_id.clone(),
        messages: session.history(),
        meter: server.meter_info(session),
    })
}
