//! `compactd stats FILE...`: what each transcript holds, and how close
//! compactd's meter comes to what the provider reported.

use serde::Serialize;

use super::args::StatsArgs;
use super::replay::trigger_names;
use super::{
    import_file, message_or_apply, resolve_config, session_env, thousands, walking_session,
    CliError,
};
use crate::compaction::trigger::TriggerKind;
use crate::config::Config;
use crate::conversation::{tool_pairing, Message, Role};
use crate::engine::{self, window, Access};
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
    /// The meter as the server computes it just before the request: the
    /// latest provider usage plus compactd's count of newer messages.
    pub meter: ErrorStats,
    /// compactd's count alone, plus the part of the prompt no transcript
    /// shows (system prompt, tool definitions), measured once at the first
    /// reported turn.
    pub estimate: ErrorStats,
    /// That unseen part, in tokens.
    pub unseen_tokens: Option<i64>,
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
    #[serde(skip)]
    sum_abs: f64,
    #[serde(skip)]
    sum: f64,
}

impl ErrorStats {
    fn add(&mut self, ours: u64, provider: u64, position: usize) {
        let error = (ours as f64 - provider as f64) * 100.0 / provider as f64;
        self.turns += 1;
        self.sum += error;
        self.sum_abs += error.abs();
        if error.abs() > self.max_abs_percent {
            self.max_abs_percent = error.abs();
            self.worst_message = position;
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
        match import_file(path, args.common.format.format(), quiet, &config) {
            Ok(imported) => {
                let mut stats = file_stats(&imported, &config, args.window);
                stats.file = path.display().to_string();
                reports.push(stats);
            }
            Err(CliError::Failure(message) | CliError::Usage(message)) => {
                bar.suspend(|| eprintln!("compactd: {message}"));
                failures.push(message);
            }
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    if args.common.json {
        super::print_json(&reports);
    } else {
        for (n, stats) in reports.iter().enumerate() {
            if n > 0 {
                println!();
            }
            print_text(stats);
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
    let window = window::context_window(config, &session);
    session.context_window = Some(window);
    let at = window::auto_compact_at(config, window);
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
    for entry in &imported.entries {
        let Some(message) = message_or_apply(entry, &mut session) else {
            continue;
        };
        position += 1;
        let prompt = message
            .usage
            .filter(|_| message.role() == Role::Assistant)
            .map(|u| u.input + u.cache_read + u.cache_write)
            .filter(|p| *p > 0);
        if let Some(prompt) = prompt {
            let peak = stats.peak_reported_context.get_or_insert(0);
            *peak = (*peak).max(prompt);
            let meter = window::meter(config, &session);
            if meter.source == MeterSource::Usage {
                stats
                    .accuracy
                    .meter
                    .add(meter.context_tokens, prompt, position);
            }
            let estimate = session.estimated_tokens() as i64;
            match stats.accuracy.unseen_tokens {
                None => stats.accuracy.unseen_tokens = Some(prompt as i64 - estimate),
                Some(unseen) => {
                    let ours = (estimate + unseen).max(0) as u64;
                    stats.accuracy.estimate.add(ours, prompt, position);
                }
            }
        }
        session.push(vec![message.clone()]);
        let meter = window::meter(config, &session);
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
}

fn print_text(s: &FileStats) {
    println!("== {} ({})", s.file, s.format);
    let r = &s.by_role;
    println!(
        "messages      {}: {} user, {} assistant, {} tool results, {} system",
        s.messages, r.user, r.assistant, r.tool, r.system
    );
    println!(
        "tool calls    {} calls, {} results: {} paired, {} orphan results, {} calls without a result",
        s.tool_calls, s.tool_results, s.paired_results, s.orphan_results, s.calls_without_result
    );
    println!(
        "files         {} read, {} modified",
        s.files_read.len(),
        s.files_modified.len()
    );
    println!(
        "source        model {}; {} compactions recorded; {} lines skipped",
        s.model.as_deref().unwrap_or("unknown"),
        s.source_compactions,
        s.skipped
    );
    for reason in &s.skipped_reasons {
        println!("                {reason}");
    }
    let a = &s.accuracy;
    match s.peak_reported_context {
        None => println!("meter         no provider usage in the transcript to compare with"),
        Some(peak) => {
            println!(
                "meter         against the provider's reported prompt at each assistant turn (peak {}):",
                thousands(peak)
            );
            let line = |name: &str, e: &ErrorStats| {
                if e.turns == 0 {
                    println!("                {name}: no turns to compare");
                } else {
                    println!(
                        "                {name}: {} turns, mean error {:.1}% (bias {:+.1}%), max {:.1}% (message {})",
                        e.turns, e.mean_abs_percent, e.mean_percent, e.max_abs_percent, e.worst_message
                    );
                }
            };
            line("meter (latest usage + count of newer messages)", &a.meter);
            let unseen = a.unseen_tokens.unwrap_or(0);
            line(
                &format!("count alone (+ {unseen} unseen tokens: system prompt, tool definitions)"),
                &a.estimate,
            );
        }
    }
    let auto = &s.auto_compaction;
    match auto.fires_after_message {
        Some(position) => {
            println!(
            "auto-compact  window {}, limit {}: first fires after message {}{} at {} tokens ({})",
            thousands(auto.window),
            thousands(auto.auto_compact_at),
            position,
            auto.line.map(|l| format!(" (line {l})")).unwrap_or_default(),
            thousands(auto.context_tokens.unwrap_or(0)),
            trigger_names(&auto.triggers)
        )
        }
        None => println!(
            "auto-compact  window {}, limit {}: never fires (peak meter {})",
            thousands(auto.window),
            thousands(auto.auto_compact_at),
            thousands(auto.peak_meter)
        ),
    }
    for subagent in &s.subagents {
        println!("subagent      {subagent}");
    }
}
