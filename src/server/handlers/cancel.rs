use crate::protocol::CancelParams;
use crate::server::{compactor, Server};

/// Cancelling the request that started a compaction aborts it (history
/// untouched) and answers everyone waiting on it with -32800. A request
/// that merely joined a running job is answered alone; the job goes on.
/// Unknown or finished ids are ignored, as LSP asks.
pub fn handle(server: &mut Server, params: CancelParams) {
    let owned = server
        .running
        .iter()
        .find(|(_, job)| job.owner.as_ref() == Some(&params.id))
        .map(|(session, _)| session.clone());
    if let Some(session_id) = owned {
        tracing::info!("cancelled request {} on session {session_id}", params.id);
        compactor::cancel(server, &session_id);
        return;
    }
    let joined = server.running.values_mut().any(|job| {
        let at = job.waiters.iter().position(|w| *w.id() == params.id);
        at.map(|at| job.waiters.remove(at)).is_some()
    });
    if joined {
        server.respond(params.id, Err(compactor::cancelled()));
    }
}
