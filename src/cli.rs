//! Command-line work that is not serving: `compactd compact FILE`.

use std::path::PathBuf;

use crate::config::Config;
use crate::import;
use crate::protocol::CompactResult;
use crate::session::{PlanOptions, Session, Trigger};
use crate::store;
use crate::summarize::{self, driver, Progress};

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

/// Reads a conversation file into a session.
pub fn load_session(file: &std::path::Path, config: &Config) -> anyhow::Result<Session> {
    let imported = import::read_file(file)?;
    for skipped in &imported.skipped {
        tracing::warn!("{}: {skipped}", file.display());
    }
    let prefix = config.summary_prefix.clone().unwrap_or_else(|| {
        crate::compaction::DEFAULT_SUMMARY_PREFIX
            .trim_end()
            .to_string()
    });
    Ok(match imported.log_entries {
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
    })
}

/// Compacts a conversation file with the configured summarizer (the
/// offline one by default).
pub async fn compact(args: &CompactArgs, config: &Config) -> anyhow::Result<CompactOutcome> {
    let session = load_session(&args.file, config)?;
    let tokens_before = session.estimated_tokens();
    let keep = args.keep_recent_tokens.unwrap_or(config.keep_recent_tokens);
    let options = PlanOptions {
        strategy: config.strategy,
        keep_recent_tokens: keep,
        retention_window: config.retention_window,
        prune_protect_tokens: config.prune_protect_tokens,
        prune_minimum_tokens: config.prune_minimum_tokens,
        instructions: args.instructions.clone(),
        max_tool_output_chars: config.max_tool_output_chars,
        compact_prompt: config.compact_prompt.clone(),
        update_prompt: config.update_prompt.clone(),
    };
    let job = match session.plan(&options, tokens_before) {
        Ok(job) => job,
        Err(reason) => {
            return Ok(CompactOutcome {
                messages: session.view_messages().count(),
                result: CompactResult::not_compacted(reason, tokens_before, config.strategy),
            })
        }
    };
    let started = std::time::Instant::now();
    let summarizer = summarize::from_config(&config.summarizer);
    let settings = driver::DriverSettings {
        window: config.summarizer.context_window,
        output_budget: config.summarizer.context_window.map(|w| w / 4).unwrap_or(0),
        encoding: session.encoding(),
    };
    let progress = |_: Progress| {};
    let mut main = None;
    if let Some(input) = &job.input {
        main = Some(driver::summarize(summarizer.as_ref(), input, settings, &progress).await);
    }
    let mut turn_prefix = None;
    if let Some(input) = &job.turn_prefix {
        turn_prefix =
            Some(driver::summarize(summarizer.as_ref(), input, settings, &progress).await);
    }
    let record = session.record_compaction(
        &job,
        main.as_ref(),
        turn_prefix.as_ref(),
        Trigger::Manual,
        0,
        started.elapsed().as_millis() as u64,
    );
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
