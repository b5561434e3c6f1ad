//! `conversation/recap`: the recap (`engine::recap`) of a session, for an
//! agent that compacts by itself: instructions for its summarizer,
//! compactd's record for the model after it, and what its summary dropped.

use crate::engine::recap::{Recap, HOOK_LIMIT};
use crate::protocol::{RecapParams, RecapResult};
use crate::server::context::Context;
use crate::server::rpc::{RpcError, RpcResult};

/// Less than this cannot hold the instructions' first line.
const MIN_CHARS: usize = 500;

pub fn handle(context: &mut Context, params: RecapParams) -> RpcResult<RecapResult> {
    let limit = params.max_chars.unwrap_or(HOOK_LIMIT);
    if limit < MIN_CHARS {
        return Err(RpcError::invalid_params(format!(
            "maxChars must be at least {MIN_CHARS} (got {limit})"
        )));
    }
    let session = &context.state.sessions.get(&params.session_id)?.session;
    let recap = Recap::of(session);
    Ok(RecapResult {
        instructions: recap.instructions(limit),
        context: recap.context(limit, params.recall_tools == Some(true)),
        dropped: params
            .summary
            .as_deref()
            .map(|s| recap.dropped(s))
            .unwrap_or_default(),
    })
}
