use lsp_server::{ErrorCode, RequestId};
use serde::Deserialize;

use crate::server::{send_progress, RpcError, Server};

#[derive(Debug, Deserialize)]
pub struct CancelParams {
    pub id: RequestId,
}

/// Aborts a running request and answers it with -32800. A request that
/// merely joined a running job is answered alone; the job goes on for the
/// others. Unknown or finished ids are ignored, as LSP asks.
pub fn handle(server: &mut Server, params: CancelParams) {
    let cancelled = || {
        Err(RpcError::new(
            ErrorCode::RequestCanceled,
            "request cancelled",
        ))
    };
    if let Some(job) = server.running.remove(&params.id) {
        job.abort.abort();
        if let Some(token) = &job.progress {
            send_progress(
                &server.out,
                token,
                serde_json::json!({"kind": "end", "message": "cancelled"}),
            );
        }
        tracing::info!(
            "cancelled request {} on session {}",
            params.id,
            job.session_id
        );
        server.respond(params.id, cancelled());
        for joined in job.joined {
            server.respond(joined, cancelled());
        }
        return;
    }
    let joined_job = server
        .running
        .values_mut()
        .find(|job| job.joined.contains(&params.id));
    if let Some(job) = joined_job {
        job.joined.retain(|id| *id != params.id);
        server.respond(params.id, cancelled());
    }
}
