//! `conversation/recap`: the recap (`engine::recap`) of a session, for an
//! agent that compacts by itself: instructions for its summarizer,
//! compactd's record for the model after it, and what its summary dropped.
//! Written off the state owner: a recap reads every message of the session
//! (a 50 MB message took seconds on the owner, stalling every other
//! session), so the owner only takes a snapshot (the session, its messages
//! shared) and a blocking thread answers.

use crate::engine::recap::{Recap, HOOK_LIMIT};
use crate::protocol::methods::Recap as RecapMethod;
use crate::protocol::{RecapParams, RecapResult};
use crate::server::context::Context;
use crate::server::jobs::Pending;
use crate::server::rpc::{Reply, RpcError};

/// Less than this cannot hold the instructions' first line.
const MIN_CHARS: usize = 500;

pub fn start(
    context: &mut Context,
    pending: Pending<RecapMethod>,
    params: RecapParams,
) -> Reply<RecapResult> {
    let limit = params.max_chars.unwrap_or(HOOK_LIMIT);
    if limit < MIN_CHARS {
        return Reply::Now(Err(RpcError::invalid_params(format!(
            "maxChars must be at least {MIN_CHARS} (got {limit})"
        ))));
    }
    let session = match context.state.sessions.get(&params.session_id) {
        Ok(open) => open.session.clone(),
        Err(e) => return Reply::Now(Err(e)),
    };
    let results = context.results.clone();
    tokio::task::spawn_blocking(move || {
        let outcome = std::panic::catch_unwind(|| {
            let recap = Recap::of(&session);
            RecapResult {
                instructions: recap.instructions(limit),
                context: recap.context(limit, params.recall_tools == Some(true)),
                dropped: params
                    .summary
                    .as_deref()
                    .map(|s| recap.dropped(s))
                    .unwrap_or_default(),
            }
        })
        .map_err(|_| RpcError::internal("the recap failed (see the log)"));
        pending.send(&results, outcome);
    });
    Reply::Later
}
