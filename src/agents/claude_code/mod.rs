//! Claude Code (`@anthropic-ai/claude-code`), as measured with 2.1.330:
//!
//! - **Folders**: `$CLAUDE_CONFIG_DIR`, else `~/.claude` (`projects/` and
//!   `settings.json` are there); its global `.claude.json` is inside
//!   `$CLAUDE_CONFIG_DIR` when that is set, else in the home.
//! - **Sessions**: `<config>/projects/<cwd>/<session>.jsonl`, the cwd's real
//!   path with every UTF-16 unit outside `[A-Za-z0-9]` as `-`; a name over
//!   200 characters keeps 200 and gets `-` and the base-36 absolute value of
//!   Java's `String.hashCode` of the path. Subagent transcripts in
//!   `<session>/subagents/` are not sessions of their own.
//! - **Hooks**: `hooks.rs` (PreCompact, SessionStart after a compaction,
//!   PostCompact; what `compactd setup claude-code` writes).
//! - **Transcript**: `transcript.rs` (its reader; `meta.rs` tells prompts
//!   from slash commands and harness text); `status.rs` is what the status
//!   line keeps of one between renders, `status_line.rs` the line itself;
//!   `idle_clearing.rs` the trim it makes of old tool results after the
//!   person was away, which no line records; `reattached.rs` what it
//!   attaches again after compacting (the files touched last), when its
//!   version writes no line of it; `attachments.rs` what it adds to a
//!   request in no message, as its lines say or by its rule.
//! - **Auto-compaction**: at `window − min(max output, 20,000) − 3,000`
//!   tokens (the last request's input, cache and output). Measured with the
//!   default model (1,000,000-token window, 128,000 max output): 976,910 did
//!   not compact, 977,000 did. Its code also names a lower threshold
//!   (13,000 below the effective window) that did not fire, and with a
//!   200,000-token model (Sonnet 4.5) nothing compacted even at 230,000, so
//!   for other windows the figure is an estimate: the point past which
//!   Claude Code either compacts or refuses the prompt. Off when
//!   `autoCompactEnabled` is false in its `.claude.json`, or its
//!   `settings.json` sets `DISABLE_AUTO_COMPACT`/`DISABLE_COMPACT` in `env`.
//!   The window is the one its transcript states (a 2.1.x `cost-state`
//!   line), else compactd's table.

mod attachments;
mod auto_compact;
mod edited_files;
mod home;
mod hooks;
mod idle_clearing;
mod meta;
mod reattached;
mod resume;
pub mod status;
mod status_line;
pub mod transcript;

use std::io;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::folders::{jsonl_files, under, Cwds};
use super::hook::HookCall;
use super::setup::Setup;
use super::{Agent, AgentKind, AutoCompactPoint, Homes, LimitsInput, StatusLineEnv};
use crate::transcript::{Imported, Line, Reader};
use auto_compact::{point, DEFAULT_WINDOW};
pub use home::{dir_name, NAME};
use home::{projects, CONFIG_DIR};

/// The agent.
pub struct ClaudeCode;

impl AgentKind for ClaudeCode {
    fn supports(&self) -> super::Supports {
        super::Supports {
            setup: true,
            hooks: true,
            status_line: true,
        }
    }

    fn name(&self) -> &'static str {
        NAME
    }

    fn display_name(&self) -> &'static str {
        "Claude Code"
    }

    fn format_description(&self) -> &'static str {
        "Claude Code JSONL"
    }

    fn env_vars(&self) -> &'static [&'static str] {
        &[CONFIG_DIR, auto_compact::WINDOW_VAR, auto_compact::PCT_VAR]
    }

    fn sessions(&self, homes: &Homes, _: &Cwds, workspace: &Path, _: usize) -> Vec<PathBuf> {
        jsonl_files(&self.session_dir(homes, workspace))
    }

    fn session_dir(&self, homes: &Homes, workspace: &Path) -> PathBuf {
        projects(homes).join(dir_name(&workspace.to_string_lossy()))
    }

    fn owns(&self, homes: &Homes, path: &Path) -> bool {
        under(path, &projects(homes))
    }

    fn classify(&self, line: &Value) -> bool {
        transcript::classify(line)
    }

    fn reader(&self, _: Option<&Path>) -> io::Result<Box<dyn Reader + Send>> {
        Ok(Box::new(transcript::Reader::default()))
    }

    fn companions(&self, path: &Path) -> Vec<PathBuf> {
        transcript::subagent_files(path)
    }

    fn import(&self, lines: &[Line]) -> Imported {
        transcript::import(lines)
    }

    fn limits(&self, input: &LimitsInput) -> (u64, AutoCompactPoint) {
        // A model compactd's table does not know, or none yet (a new,
        // empty transcript), runs in Claude Code's default window, as the
        // status line says too, not in compactd's configured default.
        let window = input
            .stated_window
            .or(input.table_window)
            .unwrap_or(DEFAULT_WINDOW);
        (window, point(input.homes, window, input.max_output))
    }

    fn status_line(&self, input: &str, env: &StatusLineEnv) -> Option<Result<String, String>> {
        Some(status_line::render(input, env, Agent(&ClaudeCode)))
    }

    fn hook_call(&self, input: &Value) -> Option<HookCall> {
        hooks::call(input)
    }

    fn hook_answer(&self, call: &HookCall, text: &str) -> String {
        hooks::answer(call, text)
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
