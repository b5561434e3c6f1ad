use crate::protocol::WorkDoneProgressCancelParams;
use crate::server::context::Context;

/// `window/workDoneProgress/cancel`: the user cancelled a compaction from
/// its progress (automatic ones included, which no request owns). It stops
/// as with `$/cancelRequest`: the history stays as it was, the progress
/// ends, and every request waiting on it gets -32800. A token no running
/// compaction uses is ignored.
pub fn handle(context: &mut Context, params: WorkDoneProgressCancelParams) {
    let compactions = &mut context.state.compactions;
    match compactions.reporting_under(&params.token) {
        Some(session_id) => {
            tracing::info!(
                "progress {:?} cancelled: stopping the compaction of session {session_id}",
                params.token
            );
            compactions.cancel(&session_id, &mut context.effects);
        }
        None => tracing::debug!("cancel for progress {:?}, which no job uses", params.token),
    }
}
