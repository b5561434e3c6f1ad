use crate::protocol::WorkDoneProgressCancelParams;
use crate::server::{compactor, Server};

/// `window/workDoneProgress/cancel`: the user cancelled a compaction from
/// its progress (automatic ones included, which no request owns). It stops
/// as with `$/cancelRequest`: the history stays as it was, the progress
/// ends, and every request waiting on it gets -32800. A token no running
/// compaction uses is ignored.
pub fn handle(server: &mut Server, params: WorkDoneProgressCancelParams) {
    let session_id = server
        .running
        .iter()
        .find(|(_, job)| job.progress.as_ref() == Some(&params.token))
        .map(|(session, _)| session.clone());
    match session_id {
        Some(session_id) => {
            tracing::info!(
                "progress {:?} cancelled: stopping the compaction of session {session_id}",
                params.token
            );
            compactor::cancel(server, &session_id);
        }
        None => tracing::debug!("cancel for progress {:?}, which no job uses", params.token),
    }
}
