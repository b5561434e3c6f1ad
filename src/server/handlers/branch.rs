use crate::protocol::{BranchParams, BranchResult};
use crate::server::{now_ms, OpenSession, RpcError, RpcResult, Server};
use crate::store;

/// A new session whose log holds everything logged before a message,
/// compactions included: branching before a compaction undoes it.
pub fn handle(server: &mut Server, params: BranchParams) -> RpcResult<BranchResult> {
    server.session(&params.session_id)?;
    let loaded = server
        .store
        .load(&params.session_id)
        .map_err(|e| RpcError::internal(e.to_string()))?
        .ok_or_else(|| RpcError::internal("the session log is missing"))?;
    let new_id = uuid::Uuid::new_v4().to_string();
    let entries = store::branch_entries(
        &loaded.entries,
        &new_id,
        now_ms(),
        &params.before_message_id,
    )
    .ok_or_else(|| {
        RpcError::invalid_params(format!(
            "invalid params at `beforeMessageId`: no message `{}` in session `{}`",
            params.before_message_id, params.session_id
        ))
    })?;
    let mut log = server.store.create_log(&new_id)?;
    log.append(&entries, true)
        .map_err(|e| RpcError::internal(e.to_string()))?;
    let mut session = store::replay(&new_id, entries, server.summary_prefix());
    server.files.configure(&mut session.files);
    let meter = server.meter_info(&session);
    let message_count = session.message_count();
    server.send_meter(&session);
    server
        .sessions
        .insert(new_id.clone(), OpenSession { session, log });
    server.sync_watches();
    Ok(BranchResult {
        session_id: new_id,
        message_count,
        meter,
    })
}
