use crate::protocol::{CompactionInfo, CompactionsResult, SessionParams};
use crate::server::context::Context;
use crate::server::following;
use crate::server::rpc::RpcResult;

pub fn handle(context: &mut Context, params: SessionParams) -> RpcResult<CompactionsResult> {
    let state = &*context.state;
    let (open, mirror) = state.sessions.get_followed(&params.session_id)?;
    // A followed session's: the agent's, then compactd's own of it.
    let own = following::own_compactions(mirror);
    let compactions = open
        .session
        .compactions()
        .iter()
        .chain(own)
        .map(|r| CompactionInfo {
            id: r.id.clone(),
            trigger: r.trigger,
            strategy: r.strategy,
            summarizer: r.summarizer.clone(),
            summary: r.full_summary(),
            tokens_before: r.tokens_before,
            tokens_after: r.tokens_after,
            messages_summarized: r.messages_summarized,
            chunks: r.chunks,
            degraded: r.degraded,
            recall: r.recall,
            duration_ms: r.duration_ms,
            created_at: r.created_at,
            usage: r.usage,
            dropped: r.dropped.clone(),
        })
        .collect();
    Ok(CompactionsResult {
        session_id: params.session_id,
        compactions,
    })
}
