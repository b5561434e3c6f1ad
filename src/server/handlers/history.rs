use crate::protocol::{HistoryResult, SessionParams};
use crate::server::{RpcResult, Server};

pub fn handle(server: &mut Server, params: SessionParams) -> RpcResult<HistoryResult> {
    let session = &server.session(&params.session_id)?.session;
    let messages = session.history();
    Ok(HistoryResult {
        session_id: params.session_id.clone(),
        messages,
        meter: server.meter_info(session),
    })
}
