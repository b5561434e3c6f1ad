use crate::protocol::CancelParams;
use crate::server::compactions::cancelled;
use crate::server::context::Context;

/// Cancelling the request that started a compaction aborts it (history
/// untouched) and answers everyone waiting on it with -32800. A request
/// that merely joined a running job is answered alone; the job goes on.
/// Unknown or finished ids are ignored, as LSP asks.
pub fn handle(context: &mut Context, params: CancelParams) {
    let compactions = &mut context.state.compactions;
    if let Some(session_id) = compactions.started_by(&params.id) {
        tracing::info!("cancelled request {} on session {session_id}", params.id);
        compactions.cancel(&session_id, &mut context.effects);
        return;
    }
    if compactions.leave(&params.id) {
        context.effects.respond(params.id, Err(cancelled()));
    }
}
