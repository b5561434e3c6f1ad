use crate::engine;
use crate::protocol::{CheckResult, SessionParams};
use crate::server::context::Context;
use crate::server::following;
use crate::server::rpc::RpcResult;

/// Decides whether the session should compact, and starts an automatic
/// compaction if a trigger fires and auto-compaction is allowed.
pub fn handle(context: &mut Context, params: SessionParams) -> RpcResult<CheckResult> {
    let Context {
        state,
        caller,
        effects,
        ..
    } = context;
    // Found once, for the decision and the answer.
    let (open, mirror) = state.sessions.get_mut_followed(&params.session_id)?;
    let triggers = state.compactions.maybe_auto_compact(
        open,
        &state.config,
        &mut || caller.create_token(),
        effects,
    );
    let session = &open.session;
    Ok(CheckResult {
        should_compact: !triggers.is_empty(),
        triggers,
        meter: following::meter(&state.config, open, mirror.as_deref()),
        auto_compact: engine::auto::allowed(&state.config, session, open.access()),
        compacting: state.compactions.is_running(&params.session_id),
        stopped_reason: session.breaker.stopped.clone(),
    })
}
