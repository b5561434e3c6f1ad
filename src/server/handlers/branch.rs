use crate::engine;
use crate::protocol::{BranchParams, BranchResult};
use crate::server::{RpcResult, Server};

/// A new session whose log holds everything logged before a message,
/// compactions included: branching before a compaction undoes it.
pub fn handle(server: &mut Server, params: BranchParams) -> RpcResult<BranchResult> {
    let open = engine::create::branch(
        &server.store,
        server.session(&params.session_id)?,
        &params.before_message_id,
        &server.session_env(),
    )?;
    let result = BranchResult {
        session_id: open.session.id.clone(),
        message_count: open.session.message_count(),
        meter: server.meter_info(&open.session),
    };
    server.send_meter(&open.session);
    server.insert_session(open);
    Ok(result)
}
