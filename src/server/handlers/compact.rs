//! `conversation/compact`: starts (or joins) the session's compaction; the
//! compactor answers when the summary is applied.

use lsp_server::RequestId;

use crate::engine;
use crate::protocol::{CompactParams, Trigger};
use crate::server::compactor::{self, CompactionRequest, Waiter};
use crate::server::{Reply, Server};

pub fn start(server: &mut Server, id: RequestId, params: CompactParams) -> Reply {
    // A read-only session is refused before any progress token exists; a
    // followed one's own log is taken, to record the compaction in.
    if let Err(e) = server.ready_to_compact(&params.session_id) {
        return Reply::Now(Err(e));
    }
    let strategy = params.strategy.unwrap_or(server.config.strategy);
    let instructions = match engine::compaction::instructions(
        strategy,
        params.goal.as_deref(),
        params.instructions,
    ) {
        Ok(instructions) => instructions,
        Err(e) => return Reply::Now(Err(e.into())),
    };
    compactor::start(
        server,
        &params.session_id,
        CompactionRequest {
            strategy,
            keep_recent_tokens: params
                .keep_recent_tokens
                .unwrap_or(server.config.keep_recent_tokens),
            instructions,
            trigger: Trigger::Manual,
            progress: params.work_done_token,
            waiter: Some(Waiter::Compact(id)),
            auto: false,
        },
    );
    Reply::Later
}
