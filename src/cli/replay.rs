//! `compactd replay FILE --window N`: the transcript's messages go through a
//! session one at a time, as a client would append them; whenever the
//! auto-compaction decision fires, the offline summarizer compacts.

use super::out::outln;
use serde::Serialize;

use super::args::ReplayArgs;
use super::error::CliError;
use super::load::{
    import_file, keep_recent_flags, message_or_apply, resolve_config, session_env, walking_session,
};
use super::out::thousands;
use crate::compaction::trigger::{AttemptVerdict, TriggerKind};
use crate::config::Config;
use crate::conversation::{Message, Usage};
use crate::engine::auto::AutoCompaction;
use crate::engine::compaction::{self as compaction, NotPlanned, Outcome};
use crate::engine::{self, meter, Access};
use crate::protocol::{Format, Strategy, Trigger};
use crate::session::Session;
use crate::store::LogEntry;
use crate::summarize::Progress;

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplayReport {
    pub file: String,
    pub format: Format,
    pub window: u64,
    pub auto_compact_at: u64,
    pub messages: usize,
    /// Compactions recorded in the transcript, which the replay ignores.
    pub source_compactions: usize,
    pub compactions: Vec<ReplayCompaction>,
    /// The circuit breaker stopped auto-compaction: why, and after which message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<(usize, String)>,
    /// The meter after the last message.
    pub final_tokens: u64,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplayCompaction {
    /// It fired after this many messages (1-based position of the last one).
    pub after_message: usize,
    /// The source line of that message (0 when unknown).
    pub line: usize,
    pub triggers: Vec<TriggerKind>,
    pub strategy: Strategy,
    pub tokens_before: u64,
    /// The compacted history as the provider would count it (the overhead
    /// and tokenizer difference calibrated from usage, as the server's
    /// `tokensAfter`).
    pub tokens_after: u64,
    pub messages_summarized: usize,
    pub duration_ms: u64,
}

pub async fn run(args: &ReplayArgs, no_user_config: bool) -> Result<(), CliError> {
    if args.window == 0 {
        return Err(CliError::Usage(
            "--window 0: the window must be positive".into(),
        ));
    }
    let config = resolve_config(
        no_user_config,
        keep_recent_flags(args.keep_recent_tokens, args.keep_recent_messages),
    )?;
    let quiet = args.common.quiet;
    let imported = import_file(&args.file, args.common.format.format(), quiet, &config)?;
    let window = args.window;
    let mut session = walking_session("replay", &imported, Some(window), &session_env(&config));
    // The transcript's own view (its compactions, not ours): provider usage
    // describes that context, so it is shifted by how far ours differs.
    let mut source = session.clone();
    let total = imported.message_count();
    let bar = super::progress::bar(total as u64, "replaying", quiet);
    let mut report = ReplayReport {
        file: args.file.display().to_string(),
        format: imported.format,
        window,
        auto_compact_at: meter::auto_compact_at(&config, window),
        messages: total,
        source_compactions: 0,
        compactions: Vec::new(),
        stopped: None,
        final_tokens: 0,
    };
    let mut position = 0usize;
    for entry in &imported.entries {
        // Settings reach both sessions, compactions only the transcript's.
        let Some(message) = message_or_apply(entry, &mut source) else {
            match entry {
                LogEntry::Compaction(_) => report.source_compactions += 1,
                other => {
                    message_or_apply(other, &mut session);
                }
            }
            continue;
        };
        let line = imported.message_lines.get(position).copied().unwrap_or(0);
        position += 1;
        bar.inc(1);
        let ours = session.estimated_tokens() as f64 - source.estimated_tokens() as f64;
        let shift = (ours * source.correction().scale).round() as i64;
        session.push(vec![shifted(message, shift)]);
        source.push(vec![message.clone()]);
        let decision = engine::auto::decide(&config, &session, Access::Write, false);
        let Some(auto) = decision.start else {
            continue;
        };
        bar.set_message(format!("compacting after message {position}"));
        let at = Fired {
            position,
            line,
            triggers: decision.fired,
        };
        let verdict = compact(&config, &mut session, auto, at, &mut report).await?;
        bar.set_message("replaying");
        if let AttemptVerdict::Stop { reason } = verdict {
            report.stopped = Some((position, reason));
        }
    }
    bar.finish_and_clear();
    report.final_tokens = meter::meter(&config, &session).context_tokens;
    if args.common.json {
        super::out::print_json(&report)?;
    } else {
        print_text(&report)?;
    }
    Ok(())
}

/// Where auto-compaction fired.
struct Fired {
    position: usize,
    line: usize,
    triggers: Vec<TriggerKind>,
}

/// Runs the automatic compaction the engine decided on, as the server
/// would, and reports it; returns the breaker's verdict.
async fn compact(
    config: &Config,
    session: &mut Session,
    auto: AutoCompaction,
    at: Fired,
    report: &mut ReplayReport,
) -> Result<AttemptVerdict, CliError> {
    let request = compaction::Request {
        strategy: auto.strategy,
        keep_recent_tokens: auto.keep_recent_tokens,
        instructions: None,
        trigger: Trigger::Threshold,
    };
    let settled =
        match engine::compaction::compact(config, session, request, &|_: Progress| {}).await? {
            Ok(settled) => settled,
            Err(NotPlanned { reason, .. }) => {
                return Ok(engine::auto::record_outcome(config, session, Err(reason)))
            }
        };
    let job = &settled.job;
    let after = match &settled.outcome {
        Outcome::Applied(record) => {
            report.compactions.push(ReplayCompaction {
                after_message: at.position,
                line: at.line,
                triggers: at.triggers,
                strategy: auto.strategy,
                tokens_before: record.tokens_before,
                tokens_after: record.tokens_after,
                messages_summarized: job.messages_summarized,
                duration_ms: record.duration_ms.unwrap_or_default(),
            });
            record.tokens_after
        }
        Outcome::NotSmaller { record, .. } | Outcome::Handoff(record) => record.tokens_after,
    };
    Ok(engine::auto::record_outcome(
        config,
        session,
        Ok((job.tokens_before, after)),
    ))
}

/// The message with its provider usage moved by `shift` tokens: the
/// provider counted the transcript's own context, and ours differs from it
/// by what our compactions (and not the transcript's) summarized, in the
/// provider's tokens (our count times the calibrated scale).
fn shifted(message: &Message, shift: i64) -> Message {
    let mut message = message.clone();
    if let (Some(usage), true) = (message.usage, shift != 0) {
        let prompt = (usage.input + usage.cache_read + usage.cache_write) as i64;
        message.usage = Some(Usage {
            input: (prompt + shift).max(0) as u64,
            output: usage.output,
            cache_read: 0,
            cache_write: 0,
        });
    }
    message
}

fn print_text(report: &ReplayReport) -> Result<(), CliError> {
    outln!(
        "Replaying {} ({}, {} messages) with a {}-token window; auto-compaction at {} tokens",
        report.file,
        report.format,
        report.messages,
        thousands(report.window),
        thousands(report.auto_compact_at)
    );
    if report.source_compactions > 0 {
        outln!(
            "({} compactions recorded in the transcript are ignored: compactd decides)",
            report.source_compactions
        );
    }
    for (n, c) in report.compactions.iter().enumerate() {
        let line = if c.line > 0 {
            format!(" (line {})", c.line)
        } else {
            String::new()
        };
        outln!(
            "compaction {} after message {}/{}{line}: trigger {}; {}; tokens {} → {}; {} messages summarized; {} ms",
            n + 1,
            c.after_message,
            report.messages,
            trigger_names(&c.triggers),
            c.strategy.as_str(),
            thousands(c.tokens_before),
            thousands(c.tokens_after),
            c.messages_summarized,
            c.duration_ms
        );
    }
    if let Some((position, reason)) = &report.stopped {
        outln!("after message {position}: {reason}");
    }
    outln!(
        "{} compaction{}; final context {} tokens ({:.1}% of the window)",
        report.compactions.len(),
        if report.compactions.len() == 1 {
            ""
        } else {
            "s"
        },
        thousands(report.final_tokens),
        report.final_tokens as f64 * 100.0 / report.window as f64
    );
    Ok(())
}

/// `percent+reserve`.
pub fn trigger_names(triggers: &[TriggerKind]) -> String {
    triggers
        .iter()
        .map(|t| {
            serde_json::to_value(t)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default()
        })
        .collect::<Vec<_>>()
        .join("+")
}
