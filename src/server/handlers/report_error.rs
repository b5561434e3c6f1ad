//! `conversation/reportError`: a client's model request failed. A context
//! overflow compacts the session (trigger `overflow`) and the answer tells
//! the client to retry the turn; anything else is only classified.

use lsp_server::RequestId;

use crate::engine;
use crate::protocol::{ReportErrorParams, ReportErrorResult, Strategy, Trigger};
use crate::provider_error::{classify_error, ErrorKind};
use crate::server::compactions::{CompactionRequest, Waiter};
use crate::server::context::Context;
use crate::server::rpc::Reply;

pub fn start(context: &mut Context, id: RequestId, params: ReportErrorParams) -> Reply {
    let Context {
        state,
        caller,
        effects,
        ..
    } = context;
    if let Err(e) = state.sessions.get(&params.session_id) {
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
    // Recovering compacts: refused for a session open read-only, or one
    // following an agent (whose overflows only the agent recovers from).
    let session = match state.sessions.writable(&params.session_id) {
        Ok(open) => &open.session,
        Err(e) => return Reply::Now(Err(e)),
    };
    let keep = engine::compaction::overflow_keep(&state.config, session);
    let request = CompactionRequest {
        strategy: Strategy::Checkpoint,
        keep_recent_tokens: keep,
        keep_recent_messages: None,
        instructions: None,
        trigger: Trigger::Overflow,
        progress: params.work_done_token,
        waiter: Some(Waiter::ReportError {
            id,
            kind: kind_name.into(),
        }),
        auto: false,
    };
    state.start_compaction(
        &params.session_id,
        request,
        &mut || caller.create_token(),
        effects,
    );
    Reply::Later
}
