//! `compactd compact FILE`: import, compact once, print (and optionally
//! write the compacted session as our log).

use super::out::outln;
use std::path::Path;

use serde::Serialize;
use serde_json::json;

use super::args::CompactArgs;
use super::error::CliError;
use super::load::{import_file, keep_recent_flags, resolve_config, session_env, ConfigFlag};
use crate::compaction::CompactionJob;
use crate::engine::compaction::{self as compaction, NotPlanned, Outcome};
use crate::engine::{self, SessionEnv};
use crate::import::Imported;
use crate::protocol::{CompactResult, Format, Strategy, Trigger};
use crate::session::Session;
use crate::store::{validate_session_id, LockError, LogEntry, SessionLock};
use crate::summarize::Progress;

/// What `--json` prints: the compact result plus where it came from.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactReport {
    pub file: String,
    pub format: Format,
    /// Messages in the conversation that was compacted (after any
    /// compaction the file already recorded).
    pub messages: usize,
    pub skipped: usize,
    pub skipped_reasons: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub out: Option<String>,
    #[serde(flatten)]
    pub result: CompactResult,
}

fn config_flags(args: &CompactArgs) -> Vec<ConfigFlag> {
    let mut flags: Vec<ConfigFlag> = Vec::new();
    if let Some(strategy) = &args.strategy {
        flags.push(ConfigFlag {
            flag: "--strategy",
            value: strategy.clone(),
            overlay: json!({ "strategy": strategy }),
        });
    }
    if let Some(provider) = &args.summarizer {
        flags.push(ConfigFlag {
            flag: "--summarizer",
            value: provider.clone(),
            overlay: json!({ "summarizer": { "provider": provider } }),
        });
    }
    if let Some(model) = &args.model {
        flags.push(ConfigFlag {
            flag: "--model",
            value: model.clone(),
            overlay: json!({ "summarizer": { "model": model } }),
        });
    }
    flags.extend(keep_recent_flags(
        args.keep_recent_tokens,
        args.keep_recent_messages,
    ));
    flags
}

/// Imports the transcript, compacts it once with the engine (as
/// `conversation/compact` would after `conversation/import`), prints the
/// outcome and writes the compacted session with `--out`.
pub async fn run(args: &CompactArgs, no_user_config: bool) -> Result<(), CliError> {
    let config = resolve_config(no_user_config, config_flags(args))?;
    if let Some(out) = &args.out {
        refuse_input_as_output(&args.file, out)?;
    }
    let quiet = args.common.quiet;
    let imported = import_file(&args.file, args.common.format.format(), quiet, &config)?;
    let env = session_env(&config);
    let id = args.out.as_deref().map_or("cli".into(), session_id_for);
    let mut session = engine::create::replay(&id, imported.log_entries(&id, 0), &env);
    let messages = session.view_messages().count();
    let report = |result: CompactResult, out: Option<String>| CompactReport {
        file: args.file.display().to_string(),
        format: imported.format,
        messages,
        skipped: imported.skipped.total(),
        skipped_reasons: imported.skipped.reasons(),
        out,
        result,
    };
    let spinner = super::progress::spinner(format!("compacting {messages} messages"), quiet);
    let progress = |p: Progress| spinner.set_message(p.message);
    let request = compaction::Request {
        strategy: config.strategy,
        keep_recent_tokens: config.keep_recent_tokens,
        instructions: args.instructions.clone(),
        trigger: Trigger::Manual,
    };
    let compacted = engine::compaction::compact(&config, &mut session, request, &progress).await;
    spinner.finish_and_clear();
    let settled = match compacted? {
        Ok(settled) => settled,
        Err(NotPlanned {
            reason,
            tokens_before,
        }) => {
            let result = CompactResult::not_compacted(reason, tokens_before, config.strategy);
            if args.common.json {
                super::out::print_json(&report(result, None))?;
            } else {
                // The reason starts "nothing to compact: …" itself.
                outln!(
                    "{}; tokens {tokens_before} → {tokens_before}",
                    capitalized(result.reason.as_deref().unwrap_or("nothing to compact"))
                );
            }
            return Ok(());
        }
    };
    let compacted = carry_out(&session, &settled.outcome, &imported, &env);
    let out = match (&args.out, &compacted.entries) {
        (Some(path), Some(entries)) => {
            write_log(path, entries)?;
            Some(path.display().to_string())
        }
        _ => None,
    };
    if args.common.json {
        super::out::print_json(&report(compacted.result, out))?;
    } else {
        print_text(&settled.job, &compacted.result, out)?;
    }
    Ok(())
}

/// A compaction done: its result, and the log of the session it leaves
/// (`None` when nothing changed).
struct Compacted {
    result: CompactResult,
    entries: Option<Vec<LogEntry>>,
}

/// The outcome, as this command reports it: the log of the compacted
/// session (the imported entries and the record), or of the new session a
/// handoff starts (this conversation stays as it is).
fn carry_out(
    session: &Session,
    outcome: &Outcome,
    imported: &Imported,
    env: &SessionEnv,
) -> Compacted {
    match outcome {
        Outcome::Applied(record) => {
            let created_at = record.created_at.unwrap_or_else(engine::now_ms);
            let mut entries = imported.log_entries(&session.id, created_at);
            entries.push(LogEntry::Compaction(Box::new(record.clone())));
            Compacted {
                result: CompactResult::from_record(record),
                entries: Some(entries),
            }
        }
        Outcome::NotSmaller { record, reason } => Compacted {
            result: CompactResult::not_applied(record, reason.clone()),
            entries: None,
        },
        Outcome::Handoff(record) => {
            let created_at = record.created_at.unwrap_or_else(engine::now_ms);
            let entries = engine::create::handoff_entries(session, record, &session.id, created_at);
            let fresh = engine::create::replay(&session.id, entries.clone(), env);
            let tokens = engine::compaction::handoff_tokens(session, &fresh);
            Compacted {
                result: CompactResult::handed_off(record, tokens, &session.id),
                entries: Some(entries),
            }
        }
    }
}

fn print_text(
    job: &CompactionJob,
    result: &CompactResult,
    out: Option<String>,
) -> Result<(), CliError> {
    outln!("{}\n", result.summary);
    let change = match (job.strategy, result.compacted) {
        (Strategy::Handoff, _) => {
            format!("handed off: {} messages → summary", job.messages_summarized)
        }
        (_, false) => format!(
            "not compacted ({})",
            result.reason.as_deref().unwrap_or_default()
        ),
        (Strategy::Prune, true) => format!(
            "pruned: {} tool outputs → placeholders",
            job.pruned_ids.len()
        ),
        _ => format!("compacted: {} messages → summary", job.messages_summarized),
    };
    outln!("{}", summary_line(&change, result));
    // A summary the fallback wrote is said on stdout too, not only on
    // stderr and in `--json`: the reader must know what wrote it.
    if let (true, Some(why)) = (result.degraded, &result.degraded_reason) {
        outln!("Written by the {} summarizer: {why}", result.summarizer);
    }
    if let Some(out) = out {
        outln!("Compacted session written to {out}");
    }
    Ok(())
}

/// `Conversation compacted: N messages → summary; tokens A → B (saved S, x%)`,
/// where `change` is the part after "Conversation ".
pub fn summary_line(change: &str, result: &CompactResult) -> String {
    let (before, after) = (result.tokens_before, result.tokens_after);
    let saved = before.saturating_sub(after);
    let percent = if before == 0 {
        0.0
    } else {
        saved as f64 * 100.0 / before as f64
    };
    format!("Conversation {change}; tokens {before} → {after} (saved {saved}, {percent:.1}%)")
}

/// History is never rewritten in place: `--out` must name another file.
fn refuse_input_as_output(input: &Path, out: &Path) -> Result<(), CliError> {
    let same = match (input.canonicalize(), out.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if same {
        return Err(CliError::Usage(format!(
            "--out {}: that is the input file; compactd never rewrites a transcript in place",
            out.display()
        )));
    }
    Ok(())
}

/// The out file's stem when it is a valid session id, so the log can be
/// opened from a data dir under that name.
fn session_id_for(path: &Path) -> String {
    path.file_stem()
        .and_then(|s| s.to_str())
        .filter(|s| validate_session_id(s).is_ok())
        .unwrap_or("imported")
        .to_string()
}

/// Writes beside the destination, then renames, so a failure never leaves
/// half a log behind. A destination that is a session log a compactd
/// server has open is refused (the rename would cut the server off its
/// log); otherwise its lock, if it has one, is held until the rename is done.
fn write_log(path: &Path, entries: &[LogEntry]) -> Result<(), CliError> {
    let _lock = lock_destination(path)?;
    let mut buf = Vec::new();
    for entry in entries {
        serde_json::to_writer(&mut buf, entry).expect("log entries serialize");
        buf.push(b'\n');
    }
    if path.file_name().is_none() {
        return Err(CliError::Usage(format!(
            "--out {}: not a file name",
            path.display()
        )));
    }
    let how = crate::regular_file::Replacement::DURABLE;
    crate::regular_file::replace(path, &buf, &how)
        .map_err(|e| CliError::Failure(format!("{}: {e}", path.display())))
}

/// The lock of the session whose log `path` would be (`<dir>/<stem>.lock`
/// for `<dir>/<stem>.jsonl`), when some compactd opened that session: held
/// here, or an error naming the process that holds it.
fn lock_destination(path: &Path) -> Result<Option<SessionLock>, CliError> {
    let stem = path.file_stem().and_then(|s| s.to_str());
    let is_log = path.extension().is_some_and(|e| e == "jsonl");
    let Some(stem) = stem.filter(|s| is_log && validate_session_id(s).is_ok()) else {
        return Ok(None);
    };
    match SessionLock::acquire_existing(&path.with_file_name(format!("{stem}.lock"))) {
        Ok(lock) => Ok(lock),
        Err(LockError::Held { pid }) => Err(CliError::Failure(format!(
            "--out {}: session `{stem}` is open in a compactd server ({}); close it there or write to another file",
            path.display(),
            pid.map_or("pid not recorded".to_string(), |p| format!("pid {p}"))
        ))),
        Err(LockError::Io(e)) => Err(CliError::Failure(format!("{}: {e}", path.display()))),
    }
}

/// `nothing to compact: …` → `Nothing to compact: …`.
fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}
