//! Gemini CLI's hooks, as compactd takes part in its compressions
//! (measured with 0.61.0 against the scripted model):
//!
//! - `BeforeAgent` (stdin `{session_id, transcript_path, cwd,
//!   hook_event_name, timestamp, prompt}`) runs once per prompt, before
//!   that turn's compression; `hookSpecificOutput.additionalContext` goes
//!   into the prompt as `<hook_context>…</hook_context>`, and so into the
//!   history and the session file: it outlives later requests.
//! - `PreCompress` runs before every request of a turn, compression or
//!   not, and only shows the user its `systemMessage`; `SessionStart` has
//!   no compression source. Neither is used.
//!
//! So compactd answers `BeforeAgent` with its record when Gemini compressed
//! since the record last went out (a compression in the middle of the
//! previous turn, or `/compress`), or when it is about to: the prompt its
//! latest response reported has reached its compression point, so the
//! compression at the start of this turn keeps the prompt, record and
//! all, after its summary. Otherwise it answers nothing.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::auto_compact::{point, threshold, token_limit};
use super::home::gemini_dir;
use crate::agents::hook::{HookCall, HookEvent};
use crate::agents::setup::{shell_word, Setup, SetupPlan};
use crate::agents::Homes;
use crate::engine::recap::CONTEXT_HEAD;

/// The call, when the prompt about to go out should carry compactd's
/// record.
pub(super) fn call(input: &Value, homes: &Homes) -> Option<HookCall> {
    let text = |key: &str| input.get(key).and_then(Value::as_str);
    if text("hook_event_name")? != "BeforeAgent" {
        return None;
    }
    let transcript = PathBuf::from(text("transcript_path")?);
    let workspace = PathBuf::from(text("cwd").unwrap_or(""));
    let text = read_text(&transcript)?;
    let state = State::of(&text.lines().collect::<Vec<_>>());
    let point = point(
        threshold(homes, &workspace),
        token_limit(state.model.as_deref()),
    );
    let imminent = point.at.is_some_and(|at| state.prompt >= at);
    if state.record_since_compression || !(state.compressed || imminent) {
        return None;
    }
    Some(HookCall {
        event: HookEvent::AfterCompactContext,
        transcript,
        workspace,
    })
}

/// compactd's record as the context of the prompt.
pub(super) fn answer(text: &str) -> String {
    json!({"hookSpecificOutput": {
        "hookEventName": "BeforeAgent",
        "additionalContext": text,
    }})
    .to_string()
}

/// What a hook reads a session file for; larger files are not read.
const MAX_TRANSCRIPT: u64 = 256 << 20;

fn read_text(transcript: &Path) -> Option<String> {
    let bytes = crate::regular_file::read_capped(transcript, MAX_TRANSCRIPT).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// What a session file says about compactd's record.
#[derive(Debug, Default, PartialEq)]
struct State {
    /// A compression came after compactd's latest record (or there was
    /// no record).
    compressed: bool,
    /// compactd's record came last: in a message after the latest
    /// compression, or in the list that compression kept.
    record_since_compression: bool,
    /// The prompt its latest response reported, which it compares with
    /// its point.
    prompt: u64,
    model: Option<String>,
}

impl State {
    /// From the end: the latest response's usage, and whether compactd's
    /// record or a compression came last (a file's first lines are
    /// seldom read).
    fn of<S: AsRef<str>>(lines: &[S]) -> State {
        let mut state = State::default();
        let (mut usage, mut latest) = (false, false);
        for line in lines.iter().rev().map(AsRef::as_ref) {
            if !latest {
                // The header holds nothing JSON escapes.
                let record = line.contains(CONTEXT_HEAD.trim_end());
                let compression =
                    line.starts_with("{\"$set\"") && line.contains("<state_snapshot>");
                state.compressed = compression;
                state.record_since_compression = record;
                latest = record || compression;
            }
            if !usage && line.contains("\"tokens\"") {
                usage = state.response(line);
            }
            if usage && latest {
                break;
            }
        }
        state
    }

    /// The usage and model of a response's line; whether it had usage.
    fn response(&mut self, line: &str) -> bool {
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            return false;
        };
        let n = |k: &str| {
            value
                .pointer(&format!("/tokens/{k}"))
                .and_then(Value::as_u64)
        };
        let Some(input) = n("input") else {
            return false;
        };
        self.prompt = input;
        self.model = value
            .get("model")
            .and_then(Value::as_str)
            .map(str::to_string);
        true
    }
}

/// The `BeforeAgent` hook and `compactd mcp` as the MCP server `compactd`,
/// in `~/.gemini/settings.json` (`$GEMINI_CLI_HOME/.gemini`) or the
/// project's `.gemini/settings.json`.
pub(super) fn setup(homes: &Homes, project: Option<&Path>, compactd: &Path) -> Vec<Setup> {
    let path = match project {
        Some(root) => root.join(".gemini").join("settings.json"),
        None => gemini_dir(homes).join("settings.json"),
    };
    let server = json!({"command": compactd.to_string_lossy(), "args": ["mcp"]});
    vec![Setup::Settings(SetupPlan {
        path,
        command: format!("{} hook {}", shell_word(compactd), super::NAME),
        hooks: vec![("BeforeAgent", None)],
        status_line: None,
        // Gemini CLI's hook timeouts are milliseconds.
        timeout: 30_000,
        entries: Vec::new(),
        servers: vec![("mcpServers", "compactd", server)],
        note: project.map(|_| {
            "Gemini CLI reads a workspace's .gemini/settings.json only in a folder you trust".into()
        }),
        private: false,
    })]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(value: Value) -> String {
        value.to_string()
    }

    #[test]
    fn the_record_goes_once_after_each_compression_or_just_before_it() {
        let response = |input: u64| {
            line(
                json!({"id": format!("g{input}"), "type": "gemini", "content": "ok",
                "tokens": {"input": input, "output": 10}, "model": "gemini-2.5-pro"}),
            )
        };
        let compression = line(json!({"$set": {"messages": [
            {"id": "s", "type": "user", "content": [{"text": "<state_snapshot>S</state_snapshot>"}]}]}}));
        let handed = line(json!({"id": "u", "type": "user", "content": [
            {"text": "go on"}, {"text": format!("<hook_context>{CONTEXT_HEAD}## Task</hook_context>")}]}));
        let mut lines = vec![response(1000)];
        let state = State::of(&lines);
        assert_eq!((state.compressed, state.prompt), (false, 1000));
        assert_eq!(state.model.as_deref(), Some("gemini-2.5-pro"));
        lines.push(compression.clone());
        assert!(State::of(&lines).compressed && !State::of(&lines).record_since_compression);
        lines.push(handed);
        assert!(State::of(&lines).record_since_compression, "handed once");
        lines.push(compression);
        assert!(
            !State::of(&lines).record_since_compression,
            "a new compression"
        );
    }

    #[test]
    fn before_agent_carries_it_when_compressed_or_about_to() {
        let dir = tempfile::tempdir().unwrap();
        let homes = Homes::under(dir.path());
        let transcript = dir.path().join("session.jsonl");
        let input = json!({"session_id": "s", "transcript_path": transcript, "cwd": dir.path(),
            "hook_event_name": "BeforeAgent", "timestamp": "t", "prompt": "go"});
        let response = json!({"id": "g", "type": "gemini", "content": "ok",
            "tokens": {"input": 600_000, "output": 10}, "model": "gemini-2.5-pro"});
        std::fs::write(&transcript, format!("{response}\n")).unwrap();
        // 600,000 ≥ 0.5 × 1,048,576: Gemini compresses at the start of this turn.
        let call = call(&input, &homes).expect("about to compress");
        assert_eq!(call.event, HookEvent::AfterCompactContext);
        assert_eq!(call.transcript, transcript);
        let small = json!({"id": "g", "type": "gemini", "content": "ok", "tokens": {"input": 900, "output": 10}});
        std::fs::write(&transcript, format!("{small}\n")).unwrap();
        assert_eq!(super::call(&input, &homes), None, "far from its point");
        let mut pre = input.clone();
        pre["hook_event_name"] = json!("PreCompress");
        assert_eq!(super::call(&pre, &homes), None);
        let answer: Value = serde_json::from_str(&answer("R")).unwrap();
        assert_eq!(answer["hookSpecificOutput"]["additionalContext"], "R");
    }

    #[test]
    fn setup_writes_the_hook_and_the_server_in_one_settings_file() {
        let homes = Homes::under(Path::new("/h"));
        let user = setup(&homes, None, Path::new("/bin/compactd"));
        let Setup::Settings(plan) = &user[0] else {
            panic!("{user:?}")
        };
        assert_eq!(plan.path, Path::new("/h/.gemini/settings.json"));
        assert_eq!(plan.hooks, [("BeforeAgent", None)]);
        assert_eq!(plan.command, "/bin/compactd hook gemini");
        assert_eq!(plan.servers[0].2["args"], json!(["mcp"]));
        let project = setup(&homes, Some(Path::new("/w")), Path::new("compactd"));
        assert!(
            matches!(&project[0], Setup::Settings(p) if p.path == Path::new("/w/.gemini/settings.json"))
        );
    }
}
