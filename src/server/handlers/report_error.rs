//! `conversation/reportError`: a client's model request failed. A context
//! overflow compacts the session (trigger `overflow`) and the answer tells
//! the client to retry the turn; anything else is only classified.

use lsp_server::RequestId;

use crate::compaction::overflow::{classify_error, ErrorKind};
use crate::engine;
use crate::protocol::{ReportErrorParams, ReportErrorResult, Strategy, Trigger};
use crate::server::compactor::{self, CompactionRequest, Waiter};
use crate::server::{Reply, Server};

pub fn start(server: &mut Server, id: RequestId, params: ReportErrorParams) -> Reply {
    let session = match server.session(&params.session_id) {
        Ok(open) => &open.session,
        Err(e) => return Reply::Now(Err(e)),
    };
    let kind = classify_error(params.status, &params.message);
    let kind_name = match kind {
        ErrorKind::Overflow => "overflow",
        ErrorKind::RateLimit => "rateLimit",
        ErrorKind::OutputLimit => "outputLimit",
        ErrorKind::Other => "other",
    };
    tracing::info!(
        "session {}: client reported a {kind_name} error",
        params.session_id
    );
    if kind != ErrorKind::Overflow {
        return Reply::from(Ok(ReportErrorResult {
            overflow: false,
            kind: kind_name.into(),
            retry: false,
            compaction: None,
        }));
    }
    // Recovering compacts: refused for a session open read-only, or one
    // following an agent (whose overflows only the agent recovers from).
    if let Err(e) = server.writable_session(&params.session_id) {
        return Reply::Now(Err(e));
    }
    let keep = engine::compaction::overflow_keep(&server.config, session);
    compactor::start(
        server,
        &params.session_id,
        CompactionRequest {
            strategy: Strategy::Checkpoint,
            keep_recent_tokens: keep,
            instructions: None,
            trigger: Trigger::Overflow,
            progress: params.work_done_token,
            waiter: Some(Waiter::ReportError {
                id,
                kind: kind_name.into(),
            }),
            auto: false,
        },
    );
    Reply::Later
}
