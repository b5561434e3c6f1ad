//! `conversation/compact`: starts (or joins) the session's compaction; the
//! answer comes when the summary is settled (`State::finish_compaction`).

use crate::engine;
use crate::protocol::methods::Compact;
use crate::protocol::{CompactParams, CompactResult, Trigger};
use crate::server::compactions::{CompactionRequest, Waiter};
use crate::server::context::Context;
use crate::server::following;
use crate::server::jobs::Pending;
use crate::server::rpc::Reply;

pub fn start(
    context: &mut Context,
    pending: Pending<Compact>,
    params: CompactParams,
) -> Reply<CompactResult> {
    let Context {
        state,
        caller,
        effects,
        ..
    } = context;
    // A read-only session is refused before any progress token exists; a
    // followed one's own log is taken, to record the compaction in. Found
    // once, for the start too.
    let ready = state
        .sessions
        .compactable(&params.session_id)
        .and_then(|(store, open, mirror)| {
            Ok((following::ready_to_compact(store, open, mirror)?, open))
        });
    let open = match ready {
        Ok(((), open)) => open,
        Err(e) => return Reply::Now(Err(e)),
    };
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
        waiter: Some(Waiter::Compact(pending)),
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
