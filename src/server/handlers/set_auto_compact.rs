use crate::engine;
use crate::protocol::{SetAutoCompactParams, SetAutoCompactResult};
use crate::server::context::Context;
use crate::server::rpc::RpcResult;

/// Switches auto-compaction for one session (persisted). Switching it on
/// also resets the circuit breaker.
pub fn handle(
    context: &mut Context,
    params: SetAutoCompactParams,
) -> RpcResult<SetAutoCompactResult> {
    let state = &mut *context.state;
    let open = state.sessions.get_mut(&params.session_id)?;
    engine::append::set_auto_compact(open, params.enabled)?;
    Ok(SetAutoCompactResult {
        enabled: engine::auto::allowed(&state.config, &open.session, open.access()),
        session_id: params.session_id,
    })
}
