//! `conversation/reportError`: a client's model request failed. A context
//! overflow compacts the session (trigger `overflow`) and the answer tells
//! the client to retry the turn; anything else is only classified.

use crate::engine;
use crate::protocol::methods::ReportError;
use crate::protocol::{ReportErrorParams, ReportErrorResult, Strategy, Trigger};
use crate::provider_error::{classify_error, ErrorKind};
use crate::server::compactions::{CompactionRequest, Waiter};
use crate::server::context::Context;
use crate::server::jobs::Pending;
use crate::server::rpc::Reply;

pub fn start(
    context: &mut Context,
    pending: Pending<ReportError>,
    params: ReportErrorParams,
) -> Reply<ReportErrorResult> {
    let Context {
        state,
        caller,
        effects,
        ..
    } = context;
    // Found once, for the recovery too.
    let open = match state.sessions.get_mut(&params.session_id) {
        Ok(open) => open,
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
        return Reply::Now(Ok(ReportErrorResult {
            overflow: false,
            kind: kind_name.into(),
            retry: false,
            compaction: None,
        }));
    }
    // Recovering compacts: refused for a session open read-only, or one
    // following an agent (whose overflows only the agent recovers from).
    if let Err(e) = open.check_writable() {
        return Reply::Now(Err(e.into()));
    }
    let keep = engine::compaction::overflow_keep(&state.config, &open.session);
    let request = CompactionRequest {
        strategy: Strategy::Checkpoint,
        keep_recent_tokens: keep,
        keep_recent_messages: None,
        instructions: None,
        trigger: Trigger::Overflow,
        progress: params.work_done_token,
        waiter: Some(Waiter::ReportError {
            pending,
            kind: kind_name.into(),
        }),
        auto: false,
    };
    state.compactions.start(
        open,
        &state.config,
        request,
        &mut || caller.create_token(),
        effects,
    );
    Reply::Later
}
