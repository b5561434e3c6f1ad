use crate::compaction::JobTarget;
use crate::engine::{self, compaction::NotPlanned};
use crate::protocol::{PreviewParams, PreviewResult};
use crate::server::context::Context;
use crate::server::rpc::RpcResult;

/// A dry run: plans the compaction without calling a summarizer.
pub fn handle(context: &mut Context, params: PreviewParams) -> RpcResult<PreviewResult> {
    let state = &*context.state;
    let strategy = params.strategy.unwrap_or(state.config.strategy);
    let keep = params
        .keep_recent_tokens
        .unwrap_or(state.config.keep_recent_tokens);
    let (open, mirror) = state.sessions.get_followed(&params.session_id)?;
    let session = &open.session;
    let overhead_tokens = state.meter(open, mirror).overhead_tokens;
    let config = state.config.with_kept_messages(params.keep_recent_messages);
    let preview = match engine::compaction::preview(&config, session, strategy, keep) {
        Ok(preview) => preview,
        Err(NotPlanned {
            reason,
            tokens_before,
        }) => {
            return Ok(PreviewResult {
                strategy,
                compacted: false,
                reason: Some(reason),
                first_kept_message_id: None,
                summarize_message_ids: Vec::new(),
                keep_message_ids: Vec::new(),
                prune_message_ids: Vec::new(),
                tokens_before,
                estimated_tokens_after: tokens_before,
                overhead_tokens,
                required: Vec::new(),
            })
        }
    };
    let job = preview.job;
    Ok(PreviewResult {
        strategy,
        compacted: false,
        reason: None,
        first_kept_message_id: match &job.target {
            JobTarget::Checkpoint {
                first_kept_message_id,
                ..
            } => first_kept_message_id.clone(),
            _ => None,
        },
        summarize_message_ids: job.summarized_ids,
        keep_message_ids: job.kept_ids,
        prune_message_ids: job.pruned_ids,
        tokens_before: job.tokens_before,
        estimated_tokens_after: preview.estimated_tokens_after,
        overhead_tokens,
        required: job
            .required
            .iter()
            .map(engine::compaction::describe_required)
            .collect(),
    })
}
