//! Command-line work that is not serving: `compactd compact FILE`.

use std::path::PathBuf;

use crate::config::Config;
use crate::import;
use crate::protocol::CompactResult;
use crate::session::{Session, Trigger};
use crate::store::{self, LogEntry};
use crate::summarize::{self, Progress};

pub struct CompactArgs {
    pub file: PathBuf,
    pub keep_recent_tokens: Option<u64>,
    pub instructions: Option<String>,
    pub json: bool,
}

/// What `compact` produced, for printing.
pub struct CompactOutcome {
    pub messages: usize,
    pub result: CompactResult,
}

/// Compacts a conversation file offline with the built-in summarizer.
pub async fn compact(args: &CompactArgs, config: &Config) -> anyhow::Result<CompactOutcome> {
    let imported = import::read_file(&args.file)?;
    for skipped in &imported.skipped {
        tracing::warn!("{}: {skipped}", args.file.display());
    }
    let prefix = config.summary_prefix.clone().unwrap_or_else(|| {
        crate::compaction::DEFAULT_SUMMARY_PREFIX
            .trim_end()
            .to_string()
    });
    let session = match imported.log_entries {
        Some(entries) => store::replay("cli", entries, prefix),
        None => {
            let mut session = Session::new(
                "cli".into(),
                imported.model.clone().or_else(|| config.model.clone()),
                config.context_window,
                imported.system_prompt.clone(),
                prefix,
            );
            let mut messages = imported.messages;
            for m in &mut messages {
                // Ids from foreign files may repeat; ours are assigned fresh.
                if !m.id.is_empty() && session.assign_ids(std::slice::from_mut(m)).is_err() {
                    m.id.clear();
                }
            }
            session
                .assign_ids(&mut messages)
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            session.push(messages);
            session
        }
    };
    let count = session.view_messages().count();
    let tokens_before = session.estimated_tokens();
    let keep = args.keep_recent_tokens.unwrap_or(config.keep_recent_tokens);
    let Some(job) = session.plan_compaction(
        keep,
        tokens_before,
        args.instructions.clone(),
        config.max_tool_output_chars,
    ) else {
        return Ok(CompactOutcome {
            messages: count,
            result: CompactResult {
                compacted: false,
                reason: Some(format!(
                    "nothing to compact: {count} messages fit in keepRecentTokens ({keep})"
                )),
                tokens_before,
                tokens_after: tokens_before,
                summarizer: "none".into(),
                ..CompactResult::default()
            },
        });
    };
    let started = std::time::Instant::now();
    let summarizer = summarize::from_config(&config.summarizer);
    let output = summarizer
        .summarize(job.request.clone(), &|_: Progress| {})
        .await?;
    let record = session.record_compaction(
        &job,
        &output,
        Trigger::Manual,
        0,
        started.elapsed().as_millis() as u64,
    );
    let _ = LogEntry::Compaction(record.clone());
    Ok(CompactOutcome {
        messages: job.messages_summarized,
        result: CompactResult::from_record(&record),
    })
}

/// `Conversation compacted: N messages → summary; tokens A → B`.
pub fn summary_line(outcome: &CompactOutcome) -> String {
    let r = &outcome.result;
    format!(
        "Conversation compacted: {} messages → summary; tokens {} → {}",
        outcome.messages, r.tokens_before, r.tokens_after
    )
}
