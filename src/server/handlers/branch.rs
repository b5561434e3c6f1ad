use crate::engine;
use crate::protocol::{BranchParams, BranchResult};
use crate::server::context::Context;
use crate::server::rpc::RpcResult;

/// A new session whose log holds everything logged before a message,
/// compactions included: branching before a compaction undoes it.
pub fn handle(context: &mut Context, params: BranchParams) -> RpcResult<BranchResult> {
    let state = &mut *context.state;
    let open = engine::create::branch(
        &state.sessions.store,
        state.sessions.get(&params.session_id)?,
        &params.before_message_id,
        &state.session_env(),
    )?;
    let meter = state.meter(&open, None);
    let result = BranchResult {
        session_id: open.session.id.clone(),
        message_count: open.session.message_count(),
        meter: meter.clone(),
    };
    context.effects.meter(&result.session_id, meter);
    state.insert_session(open, &mut context.effects);
    Ok(result)
}
