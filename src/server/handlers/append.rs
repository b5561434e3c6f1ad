use crate::engine;
use crate::protocol::{AppendParams, AppendResult};
use crate::server::{compactor, RpcResult, Server};

/// Appends messages (persisted, then applied), sends the meter, and starts
/// an automatic compaction when a trigger fires and it is allowed.
pub fn handle(server: &mut Server, params: AppendParams) -> RpcResult<AppendResult> {
    let tools = server.file_tracking.tools.clone();
    let open = server.session_mut(&params.session_id)?;
    let appended = engine::append::append(open, params.messages, &tools)?;
    for warning in &appended.warnings {
        tracing::info!("session {}: {warning}", params.session_id);
    }
    if appended.touched_files {
        server.sync_watches();
    }
    let session = &server.sessions[&params.session_id].session;
    let meter = server.meter_info(session);
    server.send_meter(session);
    let fired = compactor::maybe_auto_compact(server, &params.session_id);
    Ok(AppendResult {
        ids: appended.ids,
        warnings: appended.warnings,
        should_compact: !fired.is_empty(),
        compacting: server.running.contains_key(&params.session_id),
        meter,
    })
}
