use crate::protocol::{SetAutoCompactParams, SetAutoCompactResult};
use crate::server::{RpcError, RpcResult, Server};
use crate::store::{LogEntry, SessionSettings};

/// Switches auto-compaction for one session (persisted). Switching it on
/// also resets the circuit breaker.
pub fn handle(
    server: &mut Server,
    params: SetAutoCompactParams,
) -> RpcResult<SetAutoCompactResult> {
    let open = server.session_mut(&params.session_id)?;
    open.log
        .append(
            &[LogEntry::Settings(SessionSettings {
                auto_compact: Some(params.enabled),
                ..SessionSettings::default()
            })],
            false,
        )
        .map_err(|e| RpcError::internal(e.to_string()))?;
    open.session.auto_compact = Some(params.enabled);
    if params.enabled {
        open.session.auto.reset();
    }
    Ok(SetAutoCompactResult {
        session_id: params.session_id.clone(),
        enabled: server.auto_compact_allowed(&params.session_id),
    })
}
