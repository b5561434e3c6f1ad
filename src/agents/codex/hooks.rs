//! Codex's hooks (measured with 0.169 against a scripted model;
//! `../shared/NOTES.md`): `$CODEX_HOME/hooks.json` or the project's
//! `.codex/hooks.json`, in Claude Code's shape. `SessionStart` with
//! `source: "compact"` takes `hookSpecificOutput.additionalContext` into
//! the model's next request; `PreCompact` and `PostCompact` only observe
//! (PostCompact carries no summary: the rollout's `compacted` item has it,
//! and a follow records it with what it dropped). Codex runs a hook only
//! once it is trusted: it asks the next time it starts (`codex exec`
//! without a terminal needs `--dangerously-bypass-hook-trust`).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::home::home;
use crate::agents::hook::{self, HookCall, HookEvent};
use crate::agents::setup::{shell_word, Setup, SetupPlan, TomlTable};
use crate::agents::Homes;
use crate::engine::recap::CONTEXT_HEAD;

/// The call, when it is the session going on after a compaction.
pub(super) fn call(input: &Value) -> Option<HookCall> {
    let text = |key: &str| input.get(key).and_then(Value::as_str);
    if (text("hook_event_name")?, text("source")) != ("SessionStart", Some("compact")) {
        return None;
    }
    Some(HookCall {
        event: HookEvent::AfterCompactContext,
        transcript: PathBuf::from(text("transcript_path")?),
        workspace: PathBuf::from(text("cwd").unwrap_or("")),
    })
}

pub(super) fn answer(call: &HookCall, text: &str) -> String {
    hook::answer_in_claude_codes_shape(call, text)
}

/// What of a rollout's tail is read to see whether anything happened
/// since: a turn writes its first items within a few kilobytes,
/// compactions about ten.
const PENDING_TAIL_MAX: u64 = 4 << 20;

/// Whether the context handed when the rollout was `handed_at` bytes long
/// is still the last thing the model is given, with nothing new since.
/// Codex runs the SessionStart hooks of compactions when the next turn
/// starts (measured with 0.169: two `/compact`s in the TUI and then an
/// automatic compaction ran three hooks in a row and gave the model three
/// copies of the record), so a second record would only repeat the first.
/// Any item in the model's history but a compaction's own output and
/// compactd's record means something happened since.
pub(super) fn context_still_pending(rollout: &Path, handed_at: u64) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut file) = crate::regular_file::open_read(rollout) else {
        return false;
    };
    let length = file.metadata().map(|m| m.len()).unwrap_or(0);
    if length < handed_at || length - handed_at > PENDING_TAIL_MAX {
        return false;
    }
    let mut tail = Vec::new();
    if file.seek(SeekFrom::Start(handed_at)).is_err() || file.read_to_end(&mut tail).is_err() {
        return false;
    }
    !String::from_utf8_lossy(&tail).lines().any(news)
}

/// Whether a rollout line is an item of the model's history other than a
/// compaction's summary or compactd's record.
fn news(line: &str) -> bool {
    let Ok(line) = serde_json::from_str::<Value>(line) else {
        return false;
    };
    let item = &line["payload"];
    let record = item["role"] == "developer"
        && item["content"][0]["text"]
            .as_str()
            .is_some_and(|text| text.starts_with(CONTEXT_HEAD));
    line["type"] == "response_item" && line["metadata"]["compaction_output"] != true && !record
}

/// The SessionStart hook in `$CODEX_HOME/hooks.json` (or the project's
/// `.codex/hooks.json`), and `compactd mcp` as the MCP server `compactd`
/// in `$CODEX_HOME/config.toml`. Codex 0.169 reads MCP servers from there
/// only (a project's `.codex/config.toml` is not read: measured with
/// `codex mcp list`), so a project setup registers the hook alone.
pub(super) fn setup(homes: &Homes, project: Option<&Path>, compactd: &Path) -> Vec<Setup> {
    let Some(root) = project else {
        let dir = home(homes);
        let command = serde_json::to_string(&compactd.to_string_lossy()).unwrap_or_default();
        return vec![
            Setup::Settings(hooks(&dir, compactd)),
            Setup::Table(TomlTable {
                path: dir.join("config.toml"),
                agent: super::NAME,
                header: "[mcp_servers.compactd]".into(),
                body: format!("command = {command}\nargs = [\"mcp\"]\n"),
            }),
        ];
    };
    let mut plan = hooks(&root.join(".codex"), compactd);
    plan.note = Some(
        "Codex asks to trust a new hook the next time it starts (`codex exec` never asks, and skips an untrusted hook without saying so: trust it once in the interactive `codex`, or pass --dangerously-bypass-hook-trust); Codex reads MCP servers only from $CODEX_HOME/config.toml: `compactd setup codex` (without --project) registers compactd mcp there".into(),
    );
    vec![Setup::Settings(plan)]
}

fn hooks(dir: &Path, compactd: &Path) -> SetupPlan {
    let compactd = shell_word(compactd);
    let path = dir.join("hooks.json");
    SetupPlan {
        path,
        command: format!("{compactd} hook {}", super::NAME),
        hooks: vec![("SessionStart", Some("compact"))],
        status_line: None,
        timeout: 30,
        entries: Vec::new(),
        servers: Vec::new(),
        note: Some("Codex asks to trust a new hook the next time it starts; `codex exec` never asks and skips an untrusted hook without saying so: trust it once in the interactive `codex`, or run `codex exec --dangerously-bypass-hook-trust`".into()),
        private: false,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_second_record_only_follows_news() {
        let dir = tempfile::tempdir().unwrap();
        let rollout = dir.path().join("rollout.jsonl");
        let line = |v: serde_json::Value| format!("{v}\n");
        let mut text = line(serde_json::json!({"type": "compacted", "payload": {"message": "S"}}));
        let handed_at = text.len() as u64;
        std::fs::write(&rollout, &text).unwrap();
        let pending = || super::context_still_pending(&rollout, handed_at);
        assert!(pending(), "nothing happened since");
        // The record itself, `/compact` again (events, the compaction's
        // own output, a compacted item) and a torn line: no news.
        let record = format!("{}## Task", super::CONTEXT_HEAD);
        text += &line(
            serde_json::json!({"type": "response_item", "payload": {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": record}]}}),
        );
        text +=
            &line(serde_json::json!({"type": "event_msg", "payload": {"type": "task_started"}}));
        text += &line(
            serde_json::json!({"type": "response_item", "payload": {"type": "message", "role": "assistant"}, "metadata": {"compaction_output": true}}),
        );
        text += &line(serde_json::json!({"type": "compacted", "payload": {"message": "S2"}}));
        text += "{torn\n";
        std::fs::write(&rollout, &text).unwrap();
        assert!(pending(), "compactions are no news");
        text += &line(
            serde_json::json!({"type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "next"}]}}),
        );
        std::fs::write(&rollout, &text).unwrap();
        assert!(!pending(), "a request is news");
        assert!(
            !super::context_still_pending(&rollout, text.len() as u64 + 1),
            "a shorter rollout is another one"
        );
        assert!(!super::context_still_pending(&dir.path().join("gone"), 0));
    }

    use super::*;
    use serde_json::json;

    #[test]
    fn only_the_session_after_a_compaction() {
        // As Codex 0.169 sent them.
        let start = json!({"session_id": "s", "transcript_path": "/r.jsonl", "cwd": "/w",
            "hook_event_name": "SessionStart", "model": "m", "permission_mode": "bypassPermissions", "source": "compact"});
        assert_eq!(call(&start).unwrap().event, HookEvent::AfterCompactContext);
        let pre = json!({"session_id": "s", "turn_id": "t", "transcript_path": "/r.jsonl", "cwd": "/w",
            "hook_event_name": "PreCompact", "model": "m", "trigger": "auto"});
        assert!(call(&pre).is_none());
        let mut startup = start.clone();
        startup["source"] = json!("startup");
        assert!(call(&startup).is_none());
    }

    #[test]
    fn the_mcp_server_goes_to_codex_home_only() {
        let homes = Homes::under(Path::new("/h"));
        let user = setup(&homes, None, Path::new("/bin/compactd"));
        assert!(
            matches!(&user[1], Setup::Table(t) if t.path == Path::new("/h/.codex/config.toml"))
        );
        let project = setup(&homes, Some(Path::new("/w")), Path::new("/bin/compactd"));
        assert_eq!(project.len(), 1, "a project's config.toml is not read");
        assert!(
            matches!(&project[0], Setup::Settings(p) if p.path == Path::new("/w/.codex/hooks.json"))
        );
    }
}
