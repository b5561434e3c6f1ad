use crate::engine;
use crate::protocol::{SetAutoCompactParams, SetAutoCompactResult};
use crate::server::{RpcResult, Server};

/// Switches auto-compaction for one session (persisted). Switching it on
/// also resets the circuit breaker.
pub fn handle(
    server: &mut Server,
    params: SetAutoCompactParams,
) -> RpcResult<SetAutoCompactResult> {
    engine::append::set_auto_compact(server.session_mut(&params.session_id)?, params.enabled)?;
    let open = &server.sessions[&params.session_id];
    Ok(SetAutoCompactResult {
        enabled: engine::auto::allowed(&server.config, &open.session, open.access()),
        session_id: params.session_id,
    })
}
