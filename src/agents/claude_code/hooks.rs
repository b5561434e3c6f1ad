//! Claude Code's hooks, as compactd takes part in its compactions
//! (measured with 2.1.33x against a scripted model; `../shared/NOTES.md`):
//!
//! - `PreCompact` (stdin `{session_id, transcript_path, cwd, hook_event_name,
//!   trigger, custom_instructions}`): plain stdout with exit 0 is added to
//!   the summarization prompt, after the user's own `/compact` text.
//! - `SessionStart` with `source: "compact"`: `hookSpecificOutput.
//!   additionalContext` reaches the model's next request.
//! - `PostCompact` (stdin adds `compact_summary`): it only observes; stdout
//!   goes to the user.
//!
//! Output is capped at 10,000 characters. The order seen: PreCompact →
//! SessionStart(compact) → PostCompact. `compactd setup claude-code`
//! registers all three (and the status line) in its `settings.json`.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::home::{config_dir, state_file};
use crate::agents::hook::{HookCall, HookEvent};
use crate::agents::setup::{shell_word, Setup, SetupPlan};
use crate::agents::Homes;

/// The call, when it is one of the three events.
pub(super) fn call(input: &Value) -> Option<HookCall> {
    let text = |key: &str| input.get(key).and_then(Value::as_str);
    let event = match (text("hook_event_name")?, text("source")) {
        ("PreCompact", _) => HookEvent::BeforeCompact,
        ("SessionStart", Some("compact")) => HookEvent::AfterCompactContext,
        ("PostCompact", _) => HookEvent::AfterCompact {
            summary: text("compact_summary")
                .filter(|s| !s.trim().is_empty())
                .map(str::to_string),
        },
        _ => return None,
    };
    Some(HookCall {
        event,
        transcript: PathBuf::from(text("transcript_path")?),
        workspace: PathBuf::from(text("cwd").unwrap_or("")),
    })
}

/// SessionStart's context goes in its JSON; the others print text.
pub(super) fn answer(call: &HookCall, text: &str) -> String {
    crate::agents::hook::answer_in_claude_codes_shape(call, text)
}

/// The hooks and the status line, in `~/.claude/settings.json` (or
/// `$CLAUDE_CONFIG_DIR/settings.json`), or the project's
/// `.claude/settings.json`; and `compactd mcp` as the MCP server
/// `compactd`, in its `.claude.json` (user scope) or the project's
/// `.mcp.json`.
pub(super) fn setup(homes: &Homes, project: Option<&Path>, compactd: &Path) -> Vec<Setup> {
    let server = json!({"type": "stdio", "command": compactd.to_string_lossy(), "args": ["mcp"]});
    // The project's `.mcp.json` is shared in the repository; the user's
    // `.claude.json` is Claude Code's private state (0600).
    let mcp = match project {
        Some(root) => SetupPlan::servers(root.join(".mcp.json"), "mcpServers", server),
        None => SetupPlan::servers(state_file(homes), "mcpServers", server).private(),
    };
    vec![
        Setup::Settings(settings(homes, project, compactd)),
        Setup::Settings(mcp),
    ]
}

fn settings(homes: &Homes, project: Option<&Path>, compactd: &Path) -> SetupPlan {
    let compactd = shell_word(compactd);
    let path = match project {
        Some(root) => root.join(".claude").join("settings.json"),
        None => config_dir(homes).join("settings.json"),
    };
    SetupPlan {
        path,
        command: format!("{compactd} hook {}", super::NAME),
        hooks: vec![
            ("PreCompact", None),
            ("SessionStart", Some("compact")),
            ("PostCompact", None),
        ],
        status_line: Some(format!("{compactd} statusline")),
        timeout: 30,
        entries: Vec::new(),
        servers: Vec::new(),
        note: None,
        private: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_three_events_and_nothing_else() {
        let base = json!({"session_id": "s", "transcript_path": "/t.jsonl", "cwd": "/w"});
        let with = |extra: Value| {
            let mut input = base.clone();
            input
                .as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            call(&input)
        };
        assert_eq!(
            with(json!({"hook_event_name": "PreCompact", "trigger": "auto"}))
                .unwrap()
                .event,
            HookEvent::BeforeCompact
        );
        let start = with(json!({"hook_event_name": "SessionStart", "source": "compact"})).unwrap();
        assert_eq!(start.event, HookEvent::AfterCompactContext);
        let answer: Value = serde_json::from_str(&answer(&start, "ctx")).unwrap();
        assert_eq!(answer["hookSpecificOutput"]["additionalContext"], "ctx");
        assert!(with(json!({"hook_event_name": "SessionStart", "source": "startup"})).is_none());
        assert_eq!(
            with(json!({"hook_event_name": "PostCompact", "compact_summary": "S"}))
                .unwrap()
                .event,
            HookEvent::AfterCompact {
                summary: Some("S".into())
            }
        );
        assert_eq!(
            with(json!({"hook_event_name": "PostCompact"}))
                .unwrap()
                .event,
            HookEvent::AfterCompact { summary: None },
            "no summary sent is not an empty summary"
        );
        assert!(with(json!({"hook_event_name": "Stop"})).is_none());
    }
}
