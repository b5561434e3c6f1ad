//! `compactd compact FILE`: import, compact once, print (and optionally
//! write the compacted session as our log).

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::json;

use super::args::CompactArgs;
use super::{
    configure_files, import_file, keep_recent_flag, resolve_config, summarize_job, summary_prefix,
    CliError, ConfigFlag,
};
use crate::compaction::Strategy;
use crate::import::Format;
use crate::protocol::CompactResult;
use crate::session::{JobTarget, PlanOptions, Session, Trigger};
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

pub async fn run(args: &CompactArgs, no_user_config: bool) -> Result<(), CliError> {
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
    flags.extend(keep_recent_flag(args.keep_recent_tokens));
    let config = resolve_config(no_user_config, flags)?;
    if let Some(out) = &args.out {
        refuse_input_as_output(&args.file, out)?;
    }
    let quiet = args.common.quiet;
    let imported = import_file(&args.file, args.common.format.format(), quiet, &config)?;
    let mut session = imported.session("cli", summary_prefix(&config));
    configure_files(&mut session, &config);
    let messages = session.view_messages().count();
    let tokens_before = session.estimated_tokens();
    let keep = config.keep_recent_tokens;
    let report = |result: CompactResult, out: Option<String>| CompactReport {
        file: args.file.display().to_string(),
        format: imported.format,
        messages,
        skipped: imported.skipped.total(),
        skipped_reasons: imported.skipped.reasons(),
        out,
        result,
    };
    let options =
        PlanOptions::from_config(&config, config.strategy, keep, args.instructions.clone());
    let job = match session.plan(&options, tokens_before) {
        Ok(job) => job,
        Err(reason) => {
            let result = CompactResult::not_compacted(reason, tokens_before, config.strategy);
            if args.common.json {
                super::print_json(&report(result, None));
            } else {
                println!(
                    "Nothing to compact: {}; tokens {tokens_before} → {tokens_before}",
                    result.reason.as_deref().unwrap_or_default()
                );
            }
            return Ok(());
        }
    };
    let spinner = super::progress::spinner(
        format!("summarizing {} messages", job.messages_summarized),
        quiet,
    );
    let started = std::time::Instant::now();
    let progress = |p: Progress| spinner.set_message(p.message);
    let (main, turn_prefix) = summarize_job(&config, &session, &job, &progress).await;
    spinner.finish_and_clear();
    let record = session.record_compaction(
        &job,
        main.as_ref(),
        turn_prefix.as_ref(),
        Trigger::Manual,
        crate::server::now_ms(),
        started.elapsed().as_millis() as u64,
    );
    let mut result = CompactResult::from_record(&record);
    // A handoff leaves this conversation as it is and starts a new one
    // with the summary as its first message.
    let handoff = (job.target == JobTarget::Handoff)
        .then(|| crate::compaction::handoff_message(&record.full_summary()));
    let entries = match &handoff {
        Some(first) => {
            let mut fresh = Session::new(
                "handoff".into(),
                session.model.clone(),
                session.context_window,
                session.system_prompt.clone(),
                summary_prefix(&config),
            );
            fresh.push(vec![first.clone()]);
            result.tokens_after = fresh.estimated_tokens();
            let header = imported.log_entries("", 0).swap_remove(0);
            vec![header, LogEntry::message(first.clone())]
        }
        None => {
            session.apply_compaction(record.clone());
            let mut entries = imported.log_entries("", 0);
            entries.push(LogEntry::Compaction(Box::new(record.clone())));
            entries
        }
    };
    let out = match &args.out {
        Some(path) => {
            let mut entries = entries;
            if let LogEntry::Header(header) = &mut entries[0] {
                header.session_id = session_id_for(path);
                header.created_at = record.created_at;
            }
            write_log(path, &entries)?;
            Some(path.display().to_string())
        }
        None => None,
    };
    if args.common.json {
        super::print_json(&report(result, out));
    } else {
        println!("{}\n", result.summary);
        let change = match job.strategy {
            Strategy::Prune => format!(
                "pruned: {} tool outputs → placeholders",
                job.pruned_ids.len()
            ),
            Strategy::Handoff => {
                format!("handed off: {} messages → summary", job.messages_summarized)
            }
            _ => format!("compacted: {} messages → summary", job.messages_summarized),
        };
        println!("{}", summary_line(&change, &result));
        if let Some(out) = out {
            println!("Compacted session written to {out}");
        }
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
    let file_name = path
        .file_name()
        .ok_or_else(|| CliError::Usage(format!("--out {}: not a file name", path.display())))?;
    let mut temp = PathBuf::from(path);
    temp.set_file_name(format!(
        ".{}.{}.tmp",
        file_name.to_string_lossy(),
        std::process::id()
    ));
    let fail = |e: std::io::Error| CliError::Failure(format!("{}: {e}", path.display()));
    std::fs::write(&temp, &buf).map_err(fail)?;
    std::fs::rename(&temp, path).map_err(|e| {
        let _ = std::fs::remove_file(&temp);
        fail(e)
    })
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
