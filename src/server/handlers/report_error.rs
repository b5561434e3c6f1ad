//! `conversation/reportError`: a client's model request failed. A context
//! overflow compacts the session (trigger `overflow`) and the answer tells
//! the client to retry the turn; anything else is only classified.

use lsp_server::RequestId;

use crate::compaction::overflow::{classify_error, ErrorKind};
use crate::compaction::Strategy;
use crate::protocol::{ReportErrorParams, ReportErrorResult};
use crate::server::compactor::{self, Request, Waiter};
use crate::server::{Reply, Server};
use crate::session::Trigger;

pub fn start(server: &mut Server, id: RequestId, params: ReportErrorParams) -> Reply {
    if let Err(e) = server.session(&params.session_id) {
        return Reply::Now(Err(e));
    }
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
    // The context no longer fits: keep as much of the tail as still leaves
    // something to summarize (full, half, then nothing).
    let full = server.config.keep_recent_tokens;
    let keep = [full, full / 2, 0]
        .into_iter()
        .find(|&keep| {
            let options = server.plan_options(Strategy::Checkpoint, keep, None);
            server.sessions[&params.session_id]
                .session
                .plan(&options, 0)
                .is_ok()
        })
        .unwrap_or(0);
    let progress = server.progress_token(params.work_done_token);
    compactor::start(
        server,
        &params.session_id,
        Request {
            strategy: Strategy::Checkpoint,
            keep_recent_tokens: keep,
            instructions: None,
            trigger: Trigger::Overflow,
            progress,
            waiter: Some(Waiter::ReportError {
                id,
                kind: kind_name.into(),
            }),
            auto: false,
        },
    );
    Reply::Later
}
