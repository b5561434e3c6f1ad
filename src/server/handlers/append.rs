use crate::protocol::{AppendParams, AppendResult};
use crate::server::{compactor, RpcError, RpcResult, Server};
use crate::store::LogEntry;

/// Appends messages: persisted first, then applied, so a message the
/// client saw acknowledged is always in the log. Then decides whether to
/// compact, and starts an automatic compaction when a trigger fires.
pub fn handle(server: &mut Server, params: AppendParams) -> RpcResult<AppendResult> {
    let AppendParams {
        session_id,
        mut messages,
    } = params;
    let open = server.session_mut(&session_id)?;
    open.session
        .assign_ids(&mut messages)
        .map_err(|e| RpcError::invalid_params(e.to_string()))?;
    let entries: Vec<LogEntry> = messages
        .iter()
        .map(|m| LogEntry::Message { message: m.clone() })
        .collect();
    open.log
        .append(&entries, false)
        .map_err(|e| RpcError::internal(e.to_string()))?;
    let ids = messages.iter().map(|m| m.id.clone()).collect();
    open.session.push(messages);
    let session = &server.sessions[&session_id].session;
    let meter = server.meter_info(session);
    server.send_meter(session);
    let fired = compactor::maybe_auto_compact(server, &session_id);
    Ok(AppendResult {
        ids,
        should_compact: !fired.is_empty(),
        compacting: server.running.contains_key(&session_id),
        meter,
    })
}
