//! `conversation/compact`: starts (or joins) the session's compaction; the
//! compactor answers when the summary is applied.

use lsp_server::RequestId;

use crate::compaction::Strategy;
use crate::protocol::CompactParams;
use crate::server::compactor::{self, Request, Waiter};
use crate::server::{Reply, RpcError, Server};
use crate::session::Trigger;

pub fn start(server: &mut Server, id: RequestId, params: CompactParams) -> Reply {
    // `session_mut`: a read-only session is refused before any progress.
    if let Err(e) = server.session_mut(&params.session_id) {
        return Reply::Now(Err(e));
    }
    let strategy = params.strategy.unwrap_or(server.config.strategy);
    let instructions = match (strategy, params.goal.as_deref().map(str::trim)) {
        (Strategy::Handoff, Some(goal)) if !goal.is_empty() => Some(format!(
            "Write the first message of a new session whose goal is: {goal}\nCarry over only what that goal needs.{}",
            params.instructions.map(|i| format!("\n\n{i}")).unwrap_or_default()
        )),
        (Strategy::Handoff, _) => {
            return Reply::Now(Err(RpcError::invalid_params("invalid params at `goal`: the handoff strategy needs a goal")))
        }
        _ => params.instructions,
    };
    let progress = server.progress_token(params.work_done_token);
    compactor::start(
        server,
        &params.session_id,
        Request {
            strategy,
            keep_recent_tokens: params
                .keep_recent_tokens
                .unwrap_or(server.config.keep_recent_tokens),
            instructions,
            trigger: Trigger::Manual,
            progress,
            waiter: Some(Waiter::Compact(id)),
            auto: false,
        },
    );
    Reply::Later
}
