//! `compactd stats FILE...`: what each transcript holds, and how close
//! compactd's meter comes to what the provider reported.

use super::out::outln;
use serde::Serialize;

use super::args::StatsArgs;
use super::error::CliError;
use super::load::{
    import_file_under, message_or_apply, resolve_config, session_env, walking_session,
};
use super::out::thousands;
use super::replay::trigger_names;
use crate::compaction::trigger::TriggerKind;
use crate::config::Config;
use crate::conversation::{tool_pairing, Message, MessageBody, Role};
use crate::engine::{self, meter, Access};
use crate::files::{disk, SessionFileLedger};
use crate::import::Imported;
use crate::protocol::Format;
use crate::session::Session;
use crate::store::LogEntry;
use crate::tokens::MeterSource;

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileStats {
    pub file: String,
    pub format: Format,
    pub model: Option<String>,
    pub messages: usize,
    pub by_role: RoleCounts,
    pub tool_calls: usize,
    pub tool_results: usize,
    pub paired_results: usize,
    pub orphan_results: usize,
    pub calls_without_result: usize,
    pub files_read: Vec<String>,
    pub files_modified: Vec<String>,
    pub source_compactions: usize,
    pub skipped: usize,
    pub skipped_reasons: Vec<String>,
    pub subagents: Vec<String>,
    /// Highest prompt size the provider reported.
    pub peak_reported_context: Option<u64>,
    pub accuracy: Accuracy,
    pub auto_compaction: AutoCompaction,
}

#[derive(Debug, Default, Serialize)]
pub struct RoleCounts {
    pub system: usize,
    pub user: usize,
    pub assistant: usize,
    pub tool: usize,
}

/// Estimate against the prompt size the provider reported
/// (input + cacheRead + cacheWrite) at each assistant turn.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Accuracy {
    /// The meter as the server computes it just before the request, at the
    /// turns where it has current usage: the latest provider usage plus
    /// compactd's count of newer messages.
    pub meter: ErrorStats,
    /// compactd's count of the view alone, without the overhead.
    pub estimate: ErrorStats,
    /// compactd's count with the calibration learned from the turns before
    /// (`tokens::calibration`): what the meter shows when no usage is
    /// current, as right after a compaction. From the second reported turn
    /// (before it nothing was learned).
    pub calibrated: ErrorStats,
    /// The calibration at the end of the transcript: tokens in every
    /// request that no message holds (system prompt, tool definitions)…
    pub overhead_tokens: u64,
    /// …and the provider's tokens per compactd token of the messages.
    pub scale: f64,
    /// The first reported turn after each compaction the transcript
    /// recorded: where the meter has only the calibrated estimate.
    pub after_compactions: Vec<AfterCompaction>,
    /// Every reported turn, with `--turns` (otherwise empty, and left out).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub turns: Vec<Turn>,
}

/// One reported assistant turn, as `--turns` lists it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Turn {
    /// Position (1-based) of the assistant message.
    pub message: usize,
    /// The transcript's line it was read from, when known.
    pub line: Option<usize>,
    /// What the meter showed just before the request, and from what.
    pub meter: u64,
    /// "usage" (the latest provider usage plus newer messages) or
    /// "estimate" (the calibrated count: no usage current).
    pub source: &'static str,
    /// The calibrated count (what the meter shows without usage).
    pub calibrated: u64,
    /// The prompt the provider reported.
    pub provider: u64,
    /// What came since the reported turn before.
    pub after: String,
}

/// The meter at the first reported turn after a compaction.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AfterCompaction {
    /// Position (1-based) of the assistant message.
    pub message: usize,
    /// What the meter showed: the calibrated estimate.
    pub meter: u64,
    /// compactd's count alone.
    pub estimate: u64,
    /// The prompt the provider reported.
    pub provider: u64,
}

/// Relative errors in percent: (ours − provider) / provider.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorStats {
    pub turns: usize,
    pub mean_abs_percent: f64,
    pub mean_percent: f64,
    pub max_abs_percent: f64,
    /// Position (1-based) of the message with the largest error.
    pub worst_message: usize,
    /// What came since the reported turn before it ("3 tool results:
    /// Read 10,912, Read 18,640, Read 3,101 tokens").
    pub worst_after: String,
    #[serde(skip)]
    sum_abs: f64,
    #[serde(skip)]
    sum: f64,
}

impl ErrorStats {
    fn add(&mut self, ours: u64, provider: u64, position: usize, since: &Since) {
        let error = percent_off(ours, provider);
        self.turns += 1;
        self.sum += error;
        self.sum_abs += error.abs();
        if error.abs() > self.max_abs_percent {
            self.max_abs_percent = error.abs();
            self.worst_message = position;
            self.worst_after = since.describe();
        }
        self.mean_abs_percent = self.sum_abs / self.turns as f64;
        self.mean_percent = self.sum / self.turns as f64;
    }
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AutoCompaction {
    pub window: u64,
    pub auto_compact_at: u64,
    /// Where it would first fire, if it would.
    pub fires_after_message: Option<usize>,
    pub line: Option<usize>,
    pub context_tokens: Option<u64>,
    pub triggers: Vec<TriggerKind>,
    /// The meter's highest reading over the transcript.
    pub peak_meter: u64,
}

pub fn run(args: &StatsArgs, no_user_config: bool) -> Result<(), CliError> {
    let config = resolve_config(no_user_config, Vec::new())?;
    let quiet = args.common.quiet;
    let bar = super::progress::bar(args.files.len() as u64, "reading transcripts", quiet);
    let mut reports = Vec::new();
    let mut failures = Vec::new();
    for path in &args.files {
        match import_file_under(
            path,
            args.common.format.format(),
            quiet,
            &config,
            Some(&bar),
        ) {
            Ok(imported) => {
                let mut stats = file_stats(&imported, &config, args.window);
                if !args.turns {
                    stats.accuracy.turns.clear();
                }
                stats.file = path.display().to_string();
                reports.push(stats);
            }
            Err(CliError::Failure(message) | CliError::Usage(message)) => {
                bar.suspend(|| eprintln!("compactd: {message}"));
                failures.push(message);
            }
            Err(CliError::Closed) => return Err(CliError::Closed),
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    if args.common.json {
        super::out::print_json(&reports)?;
    } else {
        for (n, stats) in reports.iter().enumerate() {
            if n > 0 {
                outln!();
            }
            print_text(stats)?;
        }
    }
    match failures.len() {
        0 => Ok(()),
        n => Err(CliError::Failure(format!(
            "{n} of {} files could not be read",
            args.files.len()
        ))),
    }
}

pub fn file_stats(imported: &Imported, config: &Config, window: Option<u64>) -> FileStats {
    let messages: Vec<&Message> = imported.messages().collect();
    let mut by_role = RoleCounts::default();
    for m in &messages {
        match m.role() {
            Role::System => by_role.system += 1,
            Role::User => by_role.user += 1,
            Role::Assistant => by_role.assistant += 1,
            Role::Tool => by_role.tool += 1,
        }
    }
    let pairing = tool_pairing(messages.iter().copied());
    let mut ledger = SessionFileLedger::new(disk::workspace(Vec::new()), usize::MAX);
    for entry in &imported.entries {
        if let LogEntry::File(event) = entry {
            ledger.apply(event, 0);
        }
    }
    let files = ledger.sections();
    let model = imported.settings.model.clone();
    // The window the server would give the session, unless `--window`.
    let mut session = walking_session("stats", imported, window, &session_env(config));
    let window = meter::context_window(config, &session);
    session.context_window = Some(window);
    let at = meter::auto_compact_at(config, window);
    let mut stats = FileStats {
        file: String::new(),
        format: imported.format,
        model,
        messages: messages.len(),
        by_role,
        tool_calls: pairing.calls,
        tool_results: pairing.results,
        paired_results: pairing.paired,
        orphan_results: pairing.orphan_results.len(),
        calls_without_result: pairing.unanswered_calls.len(),
        files_read: files.read,
        files_modified: files.modified,
        source_compactions: imported.compaction_count(),
        skipped: imported.skipped.total(),
        skipped_reasons: imported.skipped.reasons(),
        subagents: imported
            .subagents
            .iter()
            .map(|p| p.display().to_string())
            .collect(),
        peak_reported_context: None,
        accuracy: Accuracy::default(),
        auto_compaction: AutoCompaction {
            window,
            auto_compact_at: at,
            fires_after_message: None,
            line: None,
            context_tokens: None,
            triggers: Vec::new(),
            peak_meter: 0,
        },
    };
    measure(imported, config, session, &mut stats);
    stats
}

/// Walks the transcript in order, as the server would see it, scoring the
/// meter before each reported assistant turn.
fn measure(imported: &Imported, config: &Config, mut session: Session, stats: &mut FileStats) {
    let mut position = 0usize;
    let mut since = Since::default();
    for entry in &imported.entries {
        // The import counted the messages when it placed compactions.
        let known = match entry {
            LogEntry::Message {
                message,
                tokens: Some(tokens),
            } if tokens.is_for(session.encoding(), message) => Some(tokens.count),
            _ => None,
        };
        let Some(message) = message_or_apply(entry, &mut session) else {
            match entry {
                LogEntry::Compaction(_) => since.compacted = true,
                LogEntry::Attached { tokens } => since.attached += tokens,
                _ => {}
            }
            continue;
        };
        position += 1;
        let prompt = message
            .usage
            .filter(|_| message.role() == Role::Assistant)
            .map(|u| u.prompt_tokens())
            .filter(|p| *p > 0);
        if let Some(prompt) = prompt {
            let line = imported.message_lines.get(position - 1).copied();
            score(config, &session, prompt, (position, line), &since, stats);
            since = Since {
                names: std::mem::take(&mut since.names),
                ..Since::default()
            };
        }
        since.add(message);
        session.push_counted([(message.clone(), known)]);
        let meter = meter::meter(config, &session);
        let auto = &mut stats.auto_compaction;
        auto.peak_meter = auto.peak_meter.max(meter.context_tokens);
        if auto.fires_after_message.is_none() {
            // Where the server would start an automatic compaction.
            let decision = engine::auto::decide(config, &session, Access::Write, false);
            if decision.start.is_some() {
                auto.fires_after_message = Some(position);
                auto.line = imported.message_lines.get(position - 1).copied();
                auto.context_tokens = Some(meter.context_tokens);
                auto.triggers = decision.fired;
            }
        }
    }
    let correction = session.correction();
    stats.accuracy.overhead_tokens = correction.overhead;
    stats.accuracy.scale = (correction.scale * 1000.0).round() / 1000.0;
}

/// What came between two reported turns: the kind of content before a
/// turn the meter got wrong.
#[derive(Default)]
struct Since {
    compacted: bool,
    user_messages: usize,
    /// Tool results: the tool's name and compactd's count of the result.
    results: Vec<(String, u64)>,
    /// Tool names by call id, for results that do not carry theirs.
    names: std::collections::HashMap<String, String>,
    /// What the agent attached to its requests in no message.
    attached: u64,
}

impl Since {
    fn add(&mut self, message: &Message) {
        match &message.body {
            MessageBody::User { .. } => self.user_messages += 1,
            MessageBody::Assistant { tool_calls, .. } => {
                for call in tool_calls {
                    self.names.insert(call.id.clone(), call.name.clone());
                }
            }
            MessageBody::Tool {
                tool_call_id,
                tool_name,
                ..
            } => {
                let name = tool_name
                    .clone()
                    .or_else(|| self.names.get(tool_call_id).cloned())
                    .unwrap_or_else(|| "a tool".to_string());
                let tokens = crate::tokens::Encoding::O200k.count(message.text());
                self.results.push((name, tokens));
            }
            MessageBody::System { .. } => {}
        }
    }

    /// "a compaction, 1 user message, 3 tool results (Read 10,912, …
    /// tokens)"; "nothing new" when the turn only continued.
    fn describe(&self) -> String {
        let mut parts = Vec::new();
        if self.compacted {
            parts.push("a compaction".to_string());
        }
        match self.user_messages {
            0 => {}
            1 => parts.push("1 user message".to_string()),
            n => parts.push(format!("{n} user messages")),
        }
        if !self.results.is_empty() {
            let each: Vec<String> = self
                .results
                .iter()
                .map(|(name, tokens)| format!("{name} {}", thousands(*tokens)))
                .collect();
            let noun = if each.len() == 1 { "result" } else { "results" };
            parts.push(format!(
                "{} tool {noun} ({} tokens)",
                each.len(),
                each.join(", ")
            ));
        }
        if self.attached > 0 {
            parts.push(format!(
                "{} tokens the agent attached",
                thousands(self.attached)
            ));
        }
        if parts.is_empty() {
            "nothing new".to_string()
        } else {
            parts.join(", ")
        }
    }
}

/// Scores what compactd would say before a request the provider reported
/// `prompt` tokens for.
fn score(
    config: &Config,
    session: &Session,
    prompt: u64,
    (position, line): (usize, Option<usize>),
    since: &Since,
    stats: &mut FileStats,
) {
    let peak = stats.peak_reported_context.get_or_insert(0);
    *peak = (*peak).max(prompt);
    let accuracy = &mut stats.accuracy;
    let meter = meter::meter(config, session);
    // Every turn the meter is shown for but the first of the transcript
    // (nothing reported yet) and those right after a compaction (scored
    // apart): where no usage is current (another model's, a resume's) it
    // shows the calibrated count.
    let calibrated_only = accuracy.estimate.turns > 0 && !since.compacted;
    if meter.source == MeterSource::Usage || calibrated_only {
        accuracy
            .meter
            .add(meter.context_tokens, prompt, position, since);
    }
    let (estimate, calibrated) = (session.estimated_tokens(), session.calibrated_tokens());
    accuracy.estimate.add(estimate, prompt, position, since);
    if accuracy.estimate.turns > 1 {
        accuracy.calibrated.add(calibrated, prompt, position, since);
    }
    accuracy.turns.push(Turn {
        message: position,
        line,
        meter: meter.context_tokens,
        source: match meter.source {
            MeterSource::Usage => "usage",
            MeterSource::Estimate => "estimate",
        },
        calibrated,
        provider: prompt,
        after: since.describe(),
    });
    if since.compacted {
        accuracy.after_compactions.push(AfterCompaction {
            message: position,
            meter: meter.context_tokens,
            estimate,
            provider: prompt,
        });
    }
}

/// The meter's errors against the provider, and the calibration.
fn print_accuracy(peak_reported_context: Option<u64>, a: &Accuracy) -> Result<(), CliError> {
    match peak_reported_context {
        None => outln!("meter         no provider usage in the transcript to compare with"),
        Some(peak) => {
            outln!(
                "meter         against the provider's reported prompt at each assistant turn (peak {}):",
                thousands(peak)
            );
            let line = |name: &str, e: &ErrorStats| -> Result<(), CliError> {
                if e.turns == 0 {
                    outln!("                {name}: no turns to compare");
                } else {
                    outln!(
                        "                {name}: {} turns, mean error {:.1}% (bias {:+.1}%), max {:.1}% (message {}, after {})",
                        e.turns, e.mean_abs_percent, e.mean_percent, e.max_abs_percent, e.worst_message, e.worst_after
                    );
                }
                Ok(())
            };
            line(
                "meter (latest usage + count of newer messages, else the calibrated count)",
                &a.meter,
            )?;
            line("count alone (no overhead)", &a.estimate)?;
            line(
                &format!(
                    "count calibrated (overhead {} + {:.2} × count)",
                    thousands(a.overhead_tokens),
                    a.scale
                ),
                &a.calibrated,
            )?;
            for t in &a.turns {
                outln!(
                    "                turn (message {}{}): meter {} ({:+.1}%, {}), calibrated {} ({:+.1}%), provider {}, after {}",
                    t.message,
                    t.line.map(|l| format!(", line {l}")).unwrap_or_default(),
                    thousands(t.meter),
                    percent_off(t.meter, t.provider),
                    t.source,
                    thousands(t.calibrated),
                    percent_off(t.calibrated, t.provider),
                    thousands(t.provider),
                    t.after
                );
            }
            for c in &a.after_compactions {
                outln!(
                    "                after a compaction (message {}): meter {} ({:+.1}%), count alone {} ({:+.1}%), provider {}",
                    c.message,
                    thousands(c.meter),
                    percent_off(c.meter, c.provider),
                    thousands(c.estimate),
                    percent_off(c.estimate, c.provider),
                    thousands(c.provider)
                );
            }
        }
    }
    Ok(())
}

/// (ours − provider) / provider, in percent.
fn percent_off(ours: u64, provider: u64) -> f64 {
    (ours as f64 - provider as f64) * 100.0 / provider as f64
}

fn print_text(s: &FileStats) -> Result<(), CliError> {
    outln!("== {} ({})", s.file, s.format);
    let r = &s.by_role;
    outln!(
        "messages      {}: {} user, {} assistant, {} tool results, {} system",
        s.messages,
        r.user,
        r.assistant,
        r.tool,
        r.system
    );
    outln!(
        "tool calls    {} calls, {} results: {} paired, {} orphan results, {} calls without a result",
        s.tool_calls, s.tool_results, s.paired_results, s.orphan_results, s.calls_without_result
    );
    outln!(
        "files         {} read, {} modified",
        s.files_read.len(),
        s.files_modified.len()
    );
    outln!(
        "source        model {}; {} compactions recorded; {} lines skipped",
        s.model.as_deref().unwrap_or("unknown"),
        s.source_compactions,
        s.skipped
    );
    for reason in &s.skipped_reasons {
        outln!("                {reason}");
    }
    print_accuracy(s.peak_reported_context, &s.accuracy)?;
    let auto = &s.auto_compaction;
    match auto.fires_after_message {
        Some(position) => {
            outln!(
            "auto-compact  window {}, limit {}: first fires after message {}{} at {} tokens ({})",
            thousands(auto.window),
            thousands(auto.auto_compact_at),
            position,
            auto.line.map(|l| format!(" (line {l})")).unwrap_or_default(),
            thousands(auto.context_tokens.unwrap_or(0)),
            trigger_names(&auto.triggers)
        )
        }
        None => outln!(
            "auto-compact  window {}, limit {}: never fires (peak meter {})",
            thousands(auto.window),
            thousands(auto.auto_compact_at),
            thousands(auto.peak_meter)
        ),
    }
    for subagent in &s.subagents {
        outln!("subagent      {subagent}");
    }
    Ok(())
}
