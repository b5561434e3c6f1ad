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
//! - **Transcript**: `transcript.rs` (its reader; `meta.rs` tells prompts
//!   from slash commands and harness text); `status.rs` is what the status
//!   line keeps of one between renders, `status_line.rs` the line itself.
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

mod meta;
pub mod status;
mod status_line;
pub mod transcript;

use std::io;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use super::discover::{jsonl_files, under, Cwds};
use super::limits::{off, AutoCompactPoint, Basis};
use super::{read_json, AgentKind, Homes, LimitsInput, StatusLineEnv};
use crate::transcript::{Imported, Line, Reader};

/// The agent.
pub struct ClaudeCode;

/// Its name on the wire, and its transcript format's.
pub const NAME: &str = "claude-code";

const CONFIG_DIR: &str = "CLAUDE_CONFIG_DIR";

fn config_dir(homes: &Homes) -> PathBuf {
    homes
        .var(CONFIG_DIR)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| homes.home().join(".claude"))
}

/// Its global state file (`autoCompactEnabled` lives there).
fn state_file(homes: &Homes) -> PathBuf {
    match homes.var(CONFIG_DIR) {
        Some(dir) => dir.join(".claude.json"),
        None => homes.home().join(".claude.json"),
    }
}

fn projects(homes: &Homes) -> PathBuf {
    config_dir(homes).join("projects")
}

impl AgentKind for ClaudeCode {
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
        &[CONFIG_DIR]
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
        let window = input
            .stated_window
            .or(input.table_window)
            .unwrap_or(input.default_window);
        (window, point(input.homes, window, input.max_output))
    }

    fn status_line(&self, input: &str, env: &StatusLineEnv) -> Option<Result<String, String>> {
        Some(status_line::render(input, env))
    }
}

/// Its directory name for a cwd.
pub fn dir_name(cwd: &str) -> String {
    let name: String = cwd
        .encode_utf16()
        .map(|unit| match char::from_u32(unit as u32) {
            Some(c) if c.is_ascii_alphanumeric() => c,
            _ => '-',
        })
        .collect();
    if name.len() <= 200 {
        return name;
    }
    let hash = cwd
        .encode_utf16()
        .fold(0i32, |h, unit| h.wrapping_mul(31).wrapping_add(unit as i32));
    format!("{}-{}", &name[..200], base36((hash as i64).unsigned_abs()))
}

fn base36(mut n: u64) -> String {
    const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).expect("ASCII digits")
}

/// Its point for a window and the most output a request asks for (`None`:
/// not stated in the transcript; 20,000 or more for every current model,
/// so the cap applies).
pub fn point(homes: &Homes, window: u64, max_output: Option<u64>) -> AutoCompactPoint {
    if let Some(why) = switched_off(homes) {
        return off(format!("Claude Code: auto-compaction is off ({why})"));
    }
    let reserve = max_output.unwrap_or(20_000).min(20_000);
    let at = window.saturating_sub(reserve + 3_000);
    let exact = window == 1_000_000 && reserve == 20_000;
    AutoCompactPoint {
        at: Some(at),
        basis: if exact { Basis::Exact } else { Basis::Estimate },
        rule: format!(
            "Claude Code: window {window} − min(max output {}, 20000) − 3000 = {at}{}",
            max_output.map_or("unknown".to_string(), |m| m.to_string()),
            if exact {
                " (measured with Claude Code 2.1.330)"
            } else {
                " (where Claude Code 2.1.330 compacted with a 1M window; with other windows it may not compact before the prompt is refused)"
            }
        ),
    }
}

fn switched_off(homes: &Homes) -> Option<String> {
    /// Only the switch: the file keeps every project's history and runs to
    /// megabytes, and the status line reads it on every render.
    #[derive(Deserialize)]
    struct State {
        #[serde(rename = "autoCompactEnabled")]
        auto_compact_enabled: Option<bool>,
    }
    let state_file = state_file(homes);
    let bytes = std::fs::read(&state_file).unwrap_or_default();
    let named = bytes.windows(18).any(|w| w == b"autoCompactEnabled");
    let state = named
        .then(|| serde_json::from_slice::<State>(&bytes).ok())
        .flatten();
    if state.and_then(|s| s.auto_compact_enabled) == Some(false) {
        return Some(format!(
            "autoCompactEnabled is false in {}",
            state_file.display()
        ));
    }
    let settings_file = config_dir(homes).join("settings.json");
    let settings = read_json(&settings_file)?;
    ["DISABLE_AUTO_COMPACT", "DISABLE_COMPACT"]
        .into_iter()
        .find(|name| {
            settings
                .pointer(&format!("/env/{name}"))
                .is_some_and(|v| !matches!(v.as_str(), Some("" | "0" | "false")) && !v.is_null())
        })
        .map(|name| format!("{name} in {}", settings_file.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cases measured against Claude Code 2.1.330.
    #[test]
    fn directory_names_match_the_agent() {
        let cases = [
            ("/tmp/cc1/ws", "-tmp-cc1-ws"),
            ("/tmp/cc2/my.proj_v1 x/ünï-ç", "-tmp-cc2-my-proj-v1-x--n---"),
            ("/tmp/cc2/emoji😀d", "-tmp-cc2-emoji--d"),
            ("/tmp/cc2/e\u{301}", "-tmp-cc2-e-"),
            ("/tmp/cc2/Caps-Dir~1", "-tmp-cc2-Caps-Dir-1"),
        ];
        for (cwd, name) in cases {
            assert_eq!(dir_name(cwd), name, "{cwd}");
        }
        let long = format!("/tmp/cc2/{}/{}", "a".repeat(120), "b.c".repeat(40));
        let name = dir_name(&long);
        assert_eq!(&name[200..], "-370vl7", "{name}");
    }

    /// The point measured with the real program, and its switches.
    #[test]
    fn the_measured_point_and_its_switches() {
        let dir = tempfile::tempdir().unwrap();
        let homes = Homes::under(dir.path());
        let measured = point(&homes, 1_000_000, Some(128_000));
        assert_eq!((measured.at, measured.basis), (Some(977_000), Basis::Exact));
        assert_eq!(point(&homes, 200_000, None).basis, Basis::Estimate);
        std::fs::write(
            dir.path().join(".claude.json"),
            r#"{"autoCompactEnabled": false}"#,
        )
        .unwrap();
        assert_eq!(point(&homes, 200_000, None).basis, Basis::Off);
        // With CLAUDE_CONFIG_DIR the state file is inside it.
        let moved = homes.with_var(CONFIG_DIR, dir.path().join("cfg"));
        assert_eq!(point(&moved, 200_000, None).basis, Basis::Estimate);
    }
}
