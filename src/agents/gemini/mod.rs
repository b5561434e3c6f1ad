//! Google's Gemini CLI (`@google/gemini-cli`), as measured with 0.61.0:
//!
//! - **Folders**: `~/.gemini`, or `$GEMINI_CLI_HOME/.gemini` (its
//!   `settings.json`, `projects.json` and `tmp/`).
//! - **Sessions**: `tmp/<project id>/chats/session-<YYYY-MM-DDTHH-MM>-<first
//!   8 characters of the session id>.jsonl`, the project id the workspace's
//!   path has in `projects.json` (first given: the folder's name as a slug,
//!   `-1`, `-2`… when taken; `tmp/<id>/.project_root` holds the path).
//!   Subagents write theirs one folder further down (not listed). Each
//!   file's first line records `projectHash`, the SHA-256 of the path.
//! - **Transcript**: `transcript.rs`: JSONL appended to as it goes (the
//!   whole file is rewritten only when a resumed one cannot be read back).
//! - **Compression**: `auto_compact.rs` (`model.compressionThreshold` ×
//!   the model's token limit, default 0.5 × 1,048,576).
//! - **Hooks**: `hooks.rs` (`BeforeAgent` hands compactd's record with the
//!   prompt after a compression, or just before one; what `compactd setup
//!   gemini` writes, `compactd mcp` included).

mod auto_compact;
mod home;
mod hooks;
pub mod transcript;

use std::io;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::folders::{under, Cwds};
use super::hook::HookCall;
use super::setup::Setup;
use super::{AgentKind, AutoCompactPoint, Homes, LimitsInput};
use crate::conversation::Message;
use crate::transcript::{Imported, Line, Reader};
pub use home::NAME;
use home::{chats_dir, legacy_chats_dir, project_hash, tmp_dir, CLI_HOME};

/// The agent.
pub struct Gemini;

impl AgentKind for Gemini {
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
        "Gemini CLI"
    }

    fn format_description(&self) -> &'static str {
        "Gemini CLI session JSONL"
    }

    fn env_vars(&self) -> &'static [&'static str] {
        &[CLI_HOME]
    }

    /// Its session files in the workspace's folder (and the folder an
    /// older Gemini CLI used) whose first line records the workspace's hash.
    fn sessions(&self, homes: &Homes, cwds: &Cwds, workspace: &Path, _: usize) -> Vec<PathBuf> {
        let hash = project_hash(workspace);
        [
            chats_dir(homes, workspace),
            legacy_chats_dir(homes, workspace),
        ]
        .iter()
        .flat_map(|dir| session_files(dir))
        .filter(|path| cwds.of(path, "/projectHash").as_deref() == Some(hash.as_str()))
        .collect()
    }

    fn session_dir(&self, homes: &Homes, workspace: &Path) -> PathBuf {
        chats_dir(homes, workspace)
    }

    fn owns(&self, homes: &Homes, path: &Path) -> bool {
        under(path, &tmp_dir(homes))
    }

    fn classify(&self, line: &Value) -> bool {
        transcript::classify(line)
    }

    fn reader(&self, _: Option<&Path>) -> io::Result<Box<dyn Reader + Send>> {
        Ok(Box::new(transcript::Reader::default()))
    }

    /// Gemini CLI puts its `<session_context>` first, as a user message.
    fn is_request(&self, message: &Message) -> bool {
        transcript::is_request(message.text())
    }

    /// The title Gemini CLI gave the session (`$set.summary`).
    fn session_name(&self, lines: &[Line]) -> Option<String> {
        lines
            .iter()
            .filter_map(|l| l.value.as_ref().ok())
            .filter_map(|v| v.pointer("/$set/summary")?.as_str())
            .next_back()
            .map(str::to_string)
    }

    fn import(&self, lines: &[Line]) -> Imported {
        transcript::import(lines)
    }

    fn hook_call(&self, input: &Value) -> Option<HookCall> {
        hooks::call(input, &Homes::from_env())
    }

    fn hook_answer(&self, _: &HookCall, text: &str) -> String {
        hooks::answer(text)
    }

    fn setup(
        &self,
        homes: &Homes,
        project: Option<&Path>,
        compactd: &Path,
    ) -> Result<Vec<Setup>, String> {
        Ok(hooks::setup(homes, project, compactd))
    }

    fn limits(&self, input: &LimitsInput) -> (u64, AutoCompactPoint) {
        let window = input
            .stated_window
            .unwrap_or_else(|| auto_compact::token_limit(input.model));
        let threshold = auto_compact::threshold(input.homes, input.workspace);
        (window, auto_compact::point(threshold, window))
    }
}

/// The `session-*.jsonl` files directly in `dir`.
fn session_files(dir: &Path) -> Vec<PathBuf> {
    super::folders::jsonl_files(dir)
        .into_iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("session-"))
        })
        .collect()
}
