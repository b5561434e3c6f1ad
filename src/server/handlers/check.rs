use crate::engine;
use crate::protocol::{CheckResult, SessionParams};
use crate::server::{compactor, RpcResult, Server};

/// Decides whether the session should compact, and starts an automatic
/// compaction if a trigger fires and auto-compaction is allowed.
pub fn handle(server: &mut Server, params: SessionParams) -> RpcResult<CheckResult> {
    server.session(&params.session_id)?;
    let triggers = compactor::maybe_auto_compact(server, &params.session_id);
    let open = server.session(&params.session_id)?;
    let session = &open.session;
    Ok(CheckResult {
        should_compact: !triggers.is_empty(),
        triggers,
        meter: server.meter_info(session),
        auto_compact: engine::auto::allowed(&server.config, session, open.access()),
        compacting: server.running.contains_key(&params.session_id),
        stopped_reason: session.breaker.stopped.clone(),
    })
}
