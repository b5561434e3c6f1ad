//! `compactd replay FILE --window N`: the transcript's messages go through a
//! session one at a time, as a client would append them; whenever the
//! auto-compaction decision fires, the offline summarizer compacts.

use serde::Serialize;

use super::args::ReplayArgs;
use super::{
    configure_files, import_file, keep_recent_flag, message_or_apply, resolve_config,
    summarize_job, thousands, walking_session, CliError,
};
use crate::compaction::trigger::{self, auto_compact_at, AttemptVerdict, TriggerKind};
use crate::compaction::Strategy;
use crate::config::Config;
use crate::conversation::{Message, Usage};
use crate::import::Format;
use crate::session::{PlanOptions, Session, Trigger};
use crate::store::LogEntry;
use crate::summarize::Progress;

/// The triggers that fire for a session, when automatic compaction may
/// run (the config's `autoCompact`, the `COMPACTD_DISABLE_AUTOCOMPACT` kill
/// switch and the session's circuit breaker agree). The one place `replay`
/// and `stats` decide, with the server's own evaluation.
pub fn auto_compaction_triggers(
    config: &Config,
    session: &Session,
    window: u64,
) -> Vec<TriggerKind> {
    let env = std::env::var("COMPACTD_DISABLE_AUTOCOMPACT").ok();
    let switch = session.auto_compact.unwrap_or(config.auto_compact);
    if !trigger::auto_compact_enabled(switch, env.as_deref()) || session.auto.stopped.is_some() {
        return Vec::new();
    }
    let at = trigger::auto_compact_at(config, window);
    trigger::evaluate(config, session.trigger_input(window, at))
}

/// The strategy an automatic compaction uses, as the server picks it:
/// prune when that alone gets under the limit; never a handoff.
fn auto_strategy(config: &Config, session: &Session, at: u64) -> Strategy {
    let strategy = match config.strategy {
        Strategy::Handoff => Strategy::Checkpoint,
        other => other,
    };
    if matches!(strategy, Strategy::Checkpoint | Strategy::Incremental) {
        let prune = PlanOptions::from_config(config, Strategy::Prune, 0, None);
        if session
            .plan(&prune, 0)
            .is_ok_and(|job| job.tokens_without_summary < at)
        {
            return Strategy::Prune;
        }
    }
    strategy
}

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
    /// The meter's reading before minus what the compaction removed: what
    /// the provider would report once the compacted history is sent.
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
        keep_recent_flag(args.keep_recent_tokens)
            .into_iter()
            .collect(),
    )?;
    let quiet = args.common.quiet;
    let imported = import_file(&args.file, args.common.format.format(), quiet, &config)?;
    let window = args.window;
    let at = auto_compact_at(&config, window);
    let mut session = walking_session("replay", &imported, window, &config);
    configure_files(&mut session, &config);
    // The transcript's own view (its compactions, not ours): provider usage
    // describes that context, so it is shifted by how far ours differs.
    let mut source = session.clone();
    let total = imported.message_count();
    let bar = super::progress::bar(total as u64, "replaying", quiet);
    let mut report = ReplayReport {
        file: args.file.display().to_string(),
        format: imported.format,
        window,
        auto_compact_at: at,
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
                LogEntry::Settings(settings) if settings.model.is_some() => {
                    session.set_model(settings.model.clone())
                }
                LogEntry::Compaction(_) => report.source_compactions += 1,
                LogEntry::Pin { text } => session.add_pin(text.clone()),
                LogEntry::File(event) => session.apply_file_event(event),
                _ => {}
            }
            continue;
        };
        let line = imported.message_lines.get(position).copied().unwrap_or(0);
        position += 1;
        bar.inc(1);
        let shift = session.estimated_tokens() as i64 - source.estimated_tokens() as i64;
        session.push(vec![shifted(message, shift)]);
        source.push(vec![message.clone()]);
        let triggers = auto_compaction_triggers(&config, &session, window);
        if triggers.is_empty() {
            continue;
        }
        let before = session.meter(window, at).context_tokens;
        let keep =
            trigger::keep_for_attempt(config.keep_recent_tokens, session.auto.failed_attempts);
        let strategy = auto_strategy(&config, &session, at);
        let options = PlanOptions::from_config(&config, strategy, keep, None);
        let estimated_before = session.estimated_tokens();
        let verdict = match session.plan(&options, before) {
            Err(why) => session.auto.record_no_progress(&why),
            Ok(job) => {
                let started = std::time::Instant::now();
                bar.set_message(format!("compacting after message {position}"));
                let (main, turn_prefix) =
                    summarize_job(&config, &session, &job, &|_: Progress| {}).await;
                let duration_ms = started.elapsed().as_millis() as u64;
                let record = session.record_compaction(
                    &job,
                    main.as_ref(),
                    turn_prefix.as_ref(),
                    Trigger::Threshold,
                    0,
                    duration_ms,
                );
                session.apply_compaction(record);
                bar.set_message("replaying");
                let cut = estimated_before.saturating_sub(session.estimated_tokens());
                let after = before.saturating_sub(cut);
                report.compactions.push(ReplayCompaction {
                    after_message: position,
                    line,
                    triggers,
                    strategy,
                    tokens_before: before,
                    tokens_after: after,
                    messages_summarized: job.messages_summarized,
                    duration_ms,
                });
                let still_over = !auto_compaction_triggers(&config, &session, window).is_empty();
                session.auto.record_attempt(before, after, still_over)
            }
        };
        if let AttemptVerdict::Stop { reason } = verdict {
            report.stopped = Some((position, reason));
        }
    }
    bar.finish_and_clear();
    report.final_tokens = session.meter(window, at).context_tokens;
    if args.common.json {
        super::print_json(&report);
    } else {
        print_text(&report);
    }
    Ok(())
}

/// The message with its provider usage moved by `shift` tokens: the
/// provider counted the transcript's own context, and ours differs from it
/// by what our compactions (and not the transcript's) summarized.
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

fn print_text(report: &ReplayReport) {
    println!(
        "Replaying {} ({}, {} messages) with a {}-token window; auto-compaction at {} tokens",
        report.file,
        report.format,
        report.messages,
        thousands(report.window),
        thousands(report.auto_compact_at)
    );
    if report.source_compactions > 0 {
        println!(
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
        println!(
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
        println!("after message {position}: {reason}");
    }
    println!(
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
