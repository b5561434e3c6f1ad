//! Its `statusLine` command (`compactd statusline`). Claude Code runs it
//! after each turn with the session's JSON on stdin (`transcript_path`,
//! `model`, `workspace`, `context_window`, …, as Claude Code 2.1.330 sends
//! it) and shows the one line it prints:
//!
//! `⛁ 90.4k/200k 45% · auto-compact 177k · 12 files changed`
//!
//! The context is the follow meter's figure, so the status line and an
//! editor following the session show one number: the last request's usage
//! from the JSON (`context_window.current_usage`), else the latest usage
//! its transcript records, when that usage covers the whole transcript;
//! when messages came after it (tool results, a prompt) or Claude Code
//! compacted since (its own figure then leaves out its system prompt and
//! tools), the follow meter of the transcript itself
//! (`engine::follow::transcript_meter`), worked out once per transcript
//! size, which reads the whole transcript; the window is
//! `context_window_size`; the auto-compaction point is its rule (`point`);
//! the files are those the transcript's successful tool calls changed.
//! What was read of the transcript is cached per transcript under
//! compactd's data directory (`statusline/`), with the size, modification
//! time and offset read, so a render reads only what the transcript
//! gained.

use crate::tokens::human;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::auto_compact::{point, DEFAULT_WINDOW};
use super::status::{FollowMeter, TranscriptStatus};
use crate::agents::limits::Basis;
use crate::agents::{Agent, Homes, StatusLineEnv};
use crate::config::Config;
use crate::files::{disk, FileTools};
use crate::tokens;

/// The cache's layout; another one is read again from scratch.
const CACHE_VERSION: u32 = 3;

/// The line for the JSON Claude Code sent.
pub(super) fn render(input: &str, env: &StatusLineEnv, agent: Agent) -> Result<String, String> {
    let json: Value = serde_json::from_str(input).map_err(|e| format!("stdin is not JSON: {e}"))?;
    let transcript = json
        .get("transcript_path")
        .and_then(Value::as_str)
        .map(PathBuf::from)
        .ok_or("no transcript_path in the JSON")?;
    let workspace = json
        .pointer("/workspace/current_dir")
        .or_else(|| json.get("cwd"))
        .and_then(Value::as_str)
        .map(PathBuf::from)
        .unwrap_or_default();
    let config = (env.config)(&workspace)?;
    let status = transcript_status(&config, &transcript, &workspace, env, agent)?;
    Ok(line(&json, &status, env))
}

/// One cached transcript.
#[derive(Serialize, Deserialize)]
struct Cached {
    version: u32,
    /// Modification time at the last read, in milliseconds: the same size
    /// with another time is a file rewritten in place.
    modified_ms: u64,
    status: TranscriptStatus,
}

/// The transcript as far as it is written, from the cache plus what it
/// gained; the cache is written back when it changed.
fn transcript_status(
    config: &Config,
    transcript: &Path,
    workspace: &Path,
    env: &StatusLineEnv,
    agent: Agent,
) -> Result<TranscriptStatus, String> {
    let meta = match std::fs::metadata(transcript) {
        Ok(meta) => meta,
        // At startup Claude Code names the transcript before writing it.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(TranscriptStatus::new(transcript))
        }
        Err(e) => return Err(format!("{}: {e}", transcript.display())),
    };
    let modified_ms = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_millis() as u64);
    let cache = cache_file(config, transcript);
    let cached = crate::regular_file::read_capped(&cache, crate::regular_file::SETTINGS_MAX_BYTES)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Cached>(&bytes).ok())
        .filter(|c| c.version == CACHE_VERSION && c.status.tail.path() == transcript);
    let unchanged =
        |c: &Cached| c.modified_ms == modified_ms && c.status.tail.offset() == meta.len();
    match cached {
        Some(cached) if unchanged(&cached) => Ok(cached.status),
        cached => {
            let mut status = match cached {
                // The same size at another time: rewritten in place.
                Some(c) if c.status.tail.offset() != meta.len() => c.status,
                _ => TranscriptStatus::new(transcript),
            };
            let tools = FileTools::new(&config.file_tools);
            status
                .update(&tools, &disk::workspace(vec![workspace.to_path_buf()]))
                .map_err(|e| format!("{}: {e}", transcript.display()))?;
            if status.needs_follow_meter() {
                // The latest usage leaves out what came after it (or Claude
                // Code's own figure after compacting, its system prompt and
                // tools): the follow meter counts it, so the status line and
                // a follow of the session show one figure.
                status.follow_meter = match (env.follow_meter)(agent, config, transcript, workspace)
                {
                    Ok(context_tokens) => Some(FollowMeter {
                        offset: status.tail.offset(),
                        context_tokens,
                    }),
                    Err(e) => {
                        eprintln!("compactd statusline: the follow meter: {e}");
                        None
                    }
                };
            }
            save(
                &cache,
                &Cached {
                    version: CACHE_VERSION,
                    modified_ms,
                    status: status.clone(),
                },
            );
            Ok(status)
        }
    }
}

/// `<data dir>/statusline/<hash of the transcript's path>.json`.
fn cache_file(config: &Config, transcript: &Path) -> PathBuf {
    config.transcript_cache("statusline", transcript)
}

/// Written whole then renamed, so a render running at the same time reads
/// the old cache or the new one, never half of one. A cache that cannot be
/// written only costs the next render a longer read.
fn save(path: &Path, cached: &Cached) {
    let bytes = serde_json::to_vec(cached).unwrap_or_default();
    let how = crate::regular_file::Replacement::CACHE;
    if let Err(e) = crate::regular_file::replace(path, &bytes, &how) {
        eprintln!("compactd statusline: cache {}: {e}", path.display());
    }
}

/// The line: the meter (coloured), the auto-compaction point, the files.
fn line(json: &Value, status: &TranscriptStatus, env: &StatusLineEnv) -> String {
    let figures = &status.figures;
    let usage = json.pointer("/context_window/current_usage").map(|u| {
        [
            "input_tokens",
            "output_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
        ]
        .iter()
        .filter_map(|k| u.get(*k).and_then(Value::as_u64))
        .sum::<u64>()
    });
    let context = status
        .current_follow_meter()
        .or(usage.filter(|n| *n > 0))
        .or(figures.usage_context)
        .or(figures.compacted_to);
    let model = json
        .pointer("/model/id")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| figures.model.clone());
    let window = json
        .pointer("/context_window/context_window_size")
        .and_then(Value::as_u64)
        .or(figures.stated_window)
        .or_else(|| model.as_deref().and_then(tokens::context_window_for))
        .unwrap_or(DEFAULT_WINDOW);
    let point = point(&Homes::from_env(), window, figures.max_output);
    let mut parts = vec![meter(context, window, env)];
    parts.push(match (point.basis, point.at) {
        (Basis::Off, _) | (_, None) => "auto-compact off".to_string(),
        (Basis::Exact, Some(at)) => format!("auto-compact {}", human(at)),
        (Basis::Estimate, Some(at)) => format!("auto-compact ~{}", human(at)),
    });
    match figures.changed_files.len() {
        0 => {}
        1 => parts.push("1 file changed".into()),
        n => parts.push(format!("{n} files changed")),
    }
    parts.join(" · ")
}

fn meter(context: Option<u64>, window: u64, env: &StatusLineEnv) -> String {
    let Some(context) = context else {
        return format!("⛁ –/{}", human(window));
    };
    let percent = context as f64 * 100.0 / window.max(1) as f64;
    let text = format!("⛁ {}/{} {:.0}%", human(context), human(window), percent);
    let colour = if percent >= env.error {
        "31"
    } else if percent >= env.warn {
        "33"
    } else {
        return text;
    };
    // https://no-color.org: present and not empty.
    match std::env::var_os("NO_COLOR") {
        Some(v) if !v.is_empty() => text,
        _ => format!("\x1b[{colour}m{text}\x1b[0m"),
    }
}
