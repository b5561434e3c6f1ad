//! `conversation/compact`: starts (or joins) the session's compaction; the
//! answer comes when the summary is settled (`State::finish_compaction`).

use lsp_server::RequestId;

use crate::engine;
use crate::protocol::{CompactParams, Trigger};
use crate::server::compactions::{CompactionRequest, Waiter};
use crate::server::context::Context;
use crate::server::rpc::Reply;

pub fn start(context: &mut Context, id: RequestId, params: CompactParams) -> Reply {
    let Context {
        state,
        caller,
        effects,
        ..
    } = context;
    // A read-only session is refused before any progress token exists; a
    // followed one's own log is taken, to record the compaction in.
    let ready = match state.sessions.compactable(&params.session_id) {
        Ok(_) => state
            .following
            .ready_to_compact(&mut state.sessions, &params.session_id),
        Err(e) => Err(e),
    };
    if let Err(e) = ready {
        return Reply::Now(Err(e));
    }
    let strategy = params.strategy.unwrap_or(state.config.strategy);
    let instructions = match engine::compaction::instructions(
        strategy,
        params.goal.as_deref(),
        params.instructions,
    ) {
        Ok(instructions) => instructions,
        Err(e) => return Reply::Now(Err(e.into())),
    };
    let request = CompactionRequest {
        strategy,
        keep_recent_tokens: params
            .keep_recent_tokens
            .unwrap_or(state.config.keep_recent_tokens),
        keep_recent_messages: params.keep_recent_messages,
        instructions,
        trigger: Trigger::Manual,
        progress: params.work_done_token,
        waiter: Some(Waiter::Compact(id)),
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
