//! `compactd hook <agent>`: the command an agent's hooks run to take part
//! in its own compaction (see `engine::recap` for what is handed over, and
//! the agent's module for its hooks). It never holds the agent up: on any
//! error it prints nothing to stdout, says why on stderr, and exits 0.
//!
//! The hook before a compaction reads the transcript whole and keeps what
//! it worked out (`Answers`) in `<dataDir>/hooks/`; the hooks after the
//! same compaction answer from that, since what the transcript gained in
//! between is the compaction itself. Without it (no hook ran before, or it
//! is older than the compaction could be) they read the transcript too.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::args::HookArgs;
use crate::agents::hook::{HookCall, HookEvent};
use crate::agents::{Agent, Homes};
use crate::config::Config;
use crate::engine::follow::{transcript_session, FollowSetup};
use crate::engine::recap::{Answers, Recap, HOOK_LIMIT};

/// A hook's JSON is a few hundred bytes; more is not it.
const MAX_INPUT: u64 = 1 << 20;
/// What the answers of the hook before a compaction are good for: the
/// transcript grew by at most this much (the compaction's own lines) …
const CACHE_GROWTH: u64 = 4 << 20;
/// … within this long (a compaction's summarization call).
const CACHE_AGE: Duration = Duration::from_secs(10 * 60);
const CACHE_VERSION: u32 = 1;

pub fn run(args: &HookArgs, no_user_config: bool) -> std::process::ExitCode {
    // What a hook hands over is bounded in characters and shows no count:
    // the vocabulary's load would be most of its cost.
    crate::tokens::estimate_only();
    match answer(args, no_user_config) {
        Ok(Some(text)) => {
            let _ = super::out::line(text);
        }
        Ok(None) => {}
        Err(why) => eprintln!("compactd hook: {why}"),
    }
    std::process::ExitCode::SUCCESS
}

fn answer(args: &HookArgs, no_user_config: bool) -> Result<Option<String>, String> {
    let agent =
        Agent::from_name(&args.agent).ok_or_else(|| format!("no agent named {}", args.agent))?;
    let mut input = String::new();
    std::io::stdin()
        .take(MAX_INPUT)
        .read_to_string(&mut input)
        .map_err(|e| format!("stdin: {e}"))?;
    let input: Value = serde_json::from_str(&input).map_err(|e| format!("stdin: {e}"))?;
    let Some(call) = agent.hook_call(&input) else {
        return Ok(None);
    };
    let config = config(&call, no_user_config)?;
    let context = call.event == HookEvent::AfterCompactContext;
    let handed = handed_file(&config, &call.transcript);
    if context && still_pending(agent, &handed, &call.transcript) {
        return Ok(None);
    }
    let cache = cache_file(&config, &call.transcript);
    let answers = match &call.event {
        HookEvent::BeforeCompact => {
            let answers = recap(agent, &call, config)?.answers(HOOK_LIMIT);
            save(&cache, &call.transcript, &answers);
            answers
        }
        _ => match cached(&cache, &call.transcript) {
            Some(answers) => answers,
            None => recap(agent, &call, config)?.answers(HOOK_LIMIT),
        },
    };
    let text = match &call.event {
        HookEvent::BeforeCompact => answers.instructions,
        HookEvent::AfterCompactContext => answers.context,
        HookEvent::AfterCompact { summary: None } => format!(
            "compactd: {} sent no summary with this hook, so compactd could not check what it kept; compactd's record went into the context",
            agent.display_name()
        ),
        HookEvent::AfterCompact {
            summary: Some(summary),
        } => {
            let dropped = answers.must_keep.dropped(summary);
            if dropped.is_empty() {
                return Ok(None);
            }
            format!(
                "compactd: {}'s summary dropped {}; compactd's record of them went into the context",
                agent.display_name(),
                dropped.join(", ")
            )
        }
    };
    if context {
        note_handed(&handed, &call.transcript);
    }
    Ok(Some(agent.hook_answer(&call, &text)))
}

fn config(call: &HookCall, no_user_config: bool) -> Result<Config, String> {
    let workspace: &Path = &call.workspace;
    let user_dir = (!no_user_config).then(Config::user_config_dir).flatten();
    let root = (!workspace.as_os_str().is_empty()).then_some(workspace);
    Config::resolve(None, root, user_dir.as_deref()).map_err(|e| e.to_string())
}

/// The recap of the call's transcript, read as a follow reads it.
fn recap(agent: Agent, call: &HookCall, config: Config) -> Result<Recap, String> {
    let setup = FollowSetup::new(config, Homes::from_env(), &call.workspace);
    let session = transcript_session(agent, &call.transcript, &call.workspace, &setup.env())
        .map_err(|e| e.to_string())?;
    Ok(Recap::of(&session))
}

/// The answers of the hook before a compaction of this transcript.
#[derive(Serialize, Deserialize)]
struct Cached {
    version: u32,
    transcript: PathBuf,
    /// The transcript's length when it was read.
    length: u64,
    answers: Answers,
}

fn cache_file(config: &Config, transcript: &Path) -> PathBuf {
    config.transcript_cache("hooks", transcript)
}

fn length(path: &Path) -> Option<u64> {
    std::fs::metadata(path).ok().map(|m| m.len())
}

/// Written whole then renamed; a cache that cannot be written only costs
/// the next hook a read of the transcript.
fn save(cache: &Path, transcript: &Path, answers: &Answers) {
    let Some(length) = length(transcript) else {
        return;
    };
    let cached = Cached {
        version: CACHE_VERSION,
        transcript: transcript.to_path_buf(),
        length,
        answers: answers.clone(),
    };
    write_whole(cache, &serde_json::to_vec(&cached).unwrap_or_default());
}

fn write_whole(path: &Path, bytes: &[u8]) {
    let how = crate::regular_file::Replacement::CACHE;
    if let Err(e) = crate::regular_file::replace(path, bytes, &how) {
        eprintln!("compactd hook: cache {}: {e}", path.display());
    }
}

/// Where the transcript's length is kept when the hook after a compaction
/// handed the model its context.
fn handed_file(config: &Config, transcript: &Path) -> PathBuf {
    config.transcript_cache("handed", transcript)
}

/// Whether the context handed after an earlier compaction still waits to
/// reach the model, so that a second copy would only go out beside it
/// (nothing happened in between but compactions: it is still true).
fn still_pending(agent: Agent, file: &Path, transcript: &Path) -> bool {
    let Ok(bytes) = crate::regular_file::read_capped(file, 4096) else {
        return false;
    };
    let handed: Option<Handed> = serde_json::from_slice(&bytes).ok();
    handed.is_some_and(|h| {
        h.transcript == transcript && agent.context_still_pending(transcript, h.length)
    })
}

fn note_handed(file: &Path, transcript: &Path) {
    if let Some(length) = length(transcript) {
        let handed = Handed {
            transcript: transcript.to_path_buf(),
            length,
        };
        write_whole(file, &serde_json::to_vec(&handed).unwrap_or_default());
    }
}

/// The transcript's length when context was handed after a compaction.
#[derive(Serialize, Deserialize)]
struct Handed {
    transcript: PathBuf,
    length: u64,
}

/// The cached answers, when they are of this transcript as it was just
/// before the compaction now under way.
fn cached(cache: &Path, transcript: &Path) -> Option<Answers> {
    let age = std::fs::metadata(cache)
        .ok()?
        .modified()
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())?;
    let bytes = crate::regular_file::read_capped(cache, crate::regular_file::SETTINGS_MAX_BYTES);
    let cached: Cached = serde_json::from_slice(&bytes.ok()?).ok()?;
    let now = length(transcript)?;
    let fresh = cached.version == CACHE_VERSION
        && cached.transcript == transcript
        && age < CACHE_AGE
        && now >= cached.length
        && now - cached.length <= CACHE_GROWTH;
    fresh.then_some(cached.answers)
}
