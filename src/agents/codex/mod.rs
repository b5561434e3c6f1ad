//! OpenAI's Codex CLI (`@openai/codex`), as measured with 0.169:
//!
//! - **Folders**: `$CODEX_HOME`, else `~/.codex` (`sessions/` and
//!   `config.toml` are there).
//! - **Sessions**: `sessions/YYYY/MM/DD/rollout-*.jsonl`, whose first line
//!   (`session_meta`) names the workspace as `cwd`.
//! - **Hooks**: `hooks.rs` (SessionStart after a compaction; what
//!   `compactd setup codex` writes).
//! - **Transcript**: `transcript.rs` (its reader; `compacted.rs` renders
//!   what one of its compactions replaced the history with).
//! - **Auto-compaction**: at `min(model_auto_compact_token_limit, 90% of
//!   the configured window)` (last `total_tokens`), from `config.toml` (the
//!   active `profile`'s keys over the top level). Measured: window 16,000 →
//!   14,400; limit 5,000 → 5,000; limit 20,000 → 14,400. The window a
//!   rollout states is 95% of the configured one (16,000 → 15,200), so
//!   without `model_context_window` in the config it is the stated window ×
//!   100/95.

mod auto_compact;
mod compacted;
mod home;
mod hooks;
pub mod transcript;

use std::io;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::folders::{jsonl_files, under, Cwds};
use super::hook::HookCall;
use super::setup::Setup;
use super::{AgentKind, AutoCompactPoint, Homes, LimitsInput};
use crate::conversation::Message;
use crate::transcript::{Imported, Line, Reader};
use auto_compact::{config, point};
pub use home::NAME;
use home::{day_dirs, sessions_root, HOME};

/// The agent.
pub struct Codex;

/// Rollouts looked at, newest first, before giving up on finding more of a
/// workspace's sessions.
const FILES_EXAMINED: usize = 400;

impl AgentKind for Codex {
    fn supports(&self) -> super::Supports {
        super::Supports {
            setup: true,
            hooks: true,
            status_line: false,
        }
    }

    fn name(&self) -> &'static str {
        NAME
    }

    fn display_name(&self) -> &'static str {
        "Codex"
    }

    fn format_description(&self) -> &'static str {
        "Codex rollout JSONL"
    }

    fn env_vars(&self) -> &'static [&'static str] {
        &[HOME]
    }

    /// Rollouts whose `session_meta` names `workspace`, newest first.
    fn sessions(&self, homes: &Homes, cwds: &Cwds, workspace: &Path, limit: usize) -> Vec<PathBuf> {
        let cwd = workspace.to_string_lossy();
        let mut found = Vec::new();
        let mut examined = 0;
        for day in day_dirs(&sessions_root(homes)) {
            let mut files = jsonl_files(&day);
            files.sort_by(|a, b| b.cmp(a));
            for path in files {
                examined += 1;
                if cwds.of(&path, "/payload/cwd").as_deref() == Some(&*cwd) {
                    found.push(path);
                }
                if found.len() >= limit || examined >= FILES_EXAMINED {
                    return found;
                }
            }
        }
        found
    }

    /// Today's folder, where a new rollout appears (it may not exist yet).
    fn session_dir(&self, homes: &Homes, _: &Path) -> PathBuf {
        let root = sessions_root(homes);
        day_dirs(&root).into_iter().next().unwrap_or(root)
    }

    /// Every day's folder under it.
    fn searched_dir(&self, homes: &Homes, _: &Path) -> PathBuf {
        sessions_root(homes)
    }

    fn owns(&self, homes: &Homes, path: &Path) -> bool {
        under(path, &sessions_root(homes))
    }

    fn classify(&self, line: &Value) -> bool {
        transcript::classify(line)
    }

    fn reader(&self, _: Option<&Path>) -> io::Result<Box<dyn Reader + Send>> {
        Ok(Box::new(transcript::Reader::default()))
    }

    /// Codex puts its own context (`AGENTS.md`, the environment) in user
    /// messages: not requests.
    fn is_request(&self, message: &Message) -> bool {
        compacted::is_users_own(message.text())
    }

    fn import(&self, lines: &[Line]) -> Imported {
        transcript::import(lines)
    }

    fn limits(&self, input: &LimitsInput) -> (u64, AutoCompactPoint) {
        let config = config(input.homes);
        let window = input
            .stated_window
            .or(config.context_window)
            .or(input.table_window)
            .unwrap_or(input.default_window);
        (
            window,
            point(&config, input.stated_window, input.table_window),
        )
    }

    fn hook_call(&self, input: &Value) -> Option<HookCall> {
        hooks::call(input)
    }

    fn hook_answer(&self, call: &HookCall, text: &str) -> String {
        hooks::answer(call, text)
    }

    fn context_still_pending(&self, transcript: &Path, handed_at: u64) -> bool {
        hooks::context_still_pending(transcript, handed_at)
    }

    fn setup(
        &self,
        homes: &Homes,
        project: Option<&Path>,
        compactd: &Path,
    ) -> Result<Vec<Setup>, String> {
        Ok(hooks::setup(homes, project, compactd))
    }
}
