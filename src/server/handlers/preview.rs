use crate::compaction::retention::Required;
use crate::compaction::Strategy;
use crate::protocol::{PreviewParams, PreviewResult};
use crate::server::{RpcResult, Server};
use crate::session::JobTarget;
use crate::tokens::Encoding;

/// A dry run: plans the compaction without calling a summarizer. The
/// summary's size is estimated as a tenth of what it replaces (at most the
/// reserve), plus the file sections.
pub fn handle(server: &mut Server, params: PreviewParams) -> RpcResult<PreviewResult> {
    let strategy = params.strategy.unwrap_or(server.config.strategy);
    let keep = params
        .keep_recent_tokens
        .unwrap_or(server.config.keep_recent_tokens);
    let options = server.plan_options(strategy, keep, None);
    let open = server.session(&params.session_id)?;
    let tokens_before = server.meter_info(&open.session).context_tokens;
    let job = match open.session.plan(&options, tokens_before) {
        Ok(job) => job,
        Err(reason) => {
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
                required: Vec::new(),
            })
        }
    };
    let summarized_tokens: u64 = job
        .input
        .iter()
        .chain(job.turn_prefix.iter())
        .flat_map(|i| i.tokens.iter())
        .sum();
    let sections = job.files.render();
    let summary_estimate = if strategy == Strategy::Prune {
        0
    } else {
        (summarized_tokens / 10).min(server.config.reserve_tokens.max(1))
            + Encoding::O200k.count(&sections)
    };
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
        tokens_before,
        estimated_tokens_after: job.tokens_without_summary + summary_estimate,
        required: job.required.iter().map(describe).collect(),
    })
}

fn describe(required: &Required) -> String {
    let (label, text) = match required {
        Required::Path(t) => ("modified file", t),
        Required::LatestRequest(t) => ("latest request", t),
        Required::Rule(t) => ("rule", t),
        Required::Verbatim(t) => ("verbatim", t),
    };
    let short: String = text.chars().take(120).collect();
    format!("{label}: {short}")
}
