use crate::engine;
use crate::protocol::{AppendParams, AppendResult};
use crate::server::context::Context;
use crate::server::following;
use crate::server::rpc::RpcResult;

/// Appends messages (persisted, then applied), sends the meter (worked out
/// once), and starts an automatic compaction when a trigger fires and it
/// is allowed.
pub fn handle(context: &mut Context, params: AppendParams) -> RpcResult<AppendResult> {
    let Context {
        state,
        caller,
        effects,
        ..
    } = context;
    // Found once: the append, the meter and the auto-compaction decision
    // all take this session.
    let (open, mirror) = state.sessions.get_mut_followed(&params.session_id)?;
    let appended = engine::append::append(open, params.messages, &state.files.tools)?;
    for warning in &appended.warnings {
        tracing::info!("session {}: {warning}", params.session_id);
    }
    let meter = following::meter(&state.config, open, mirror.as_deref());
    effects.meter(&params.session_id, meter.clone());
    let fired = state.compactions.maybe_auto_compact(
        open,
        &state.config,
        &mut || caller.create_token(),
        effects,
    );
    if appended.touched_files {
        state.sessions.mark_changed();
    }
    Ok(AppendResult {
        ids: appended.ids,
        warnings: appended.warnings,
        should_compact: !fired.is_empty(),
        compacting: state.compactions.is_running(&params.session_id),
        meter,
    })
}
