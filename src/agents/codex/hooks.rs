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
