//! OpenAI's Codex CLI (`@openai/codex`), as measured with 0.169:
//!
//! - **Folders**: `$CODEX_HOME`, else `~/.codex` (`sessions/` and
//!   `config.toml` are there).
//! - **Sessions**: `sessions/YYYY/MM/DD/rollout-*.jsonl`, whose first line
//!   (`session_meta`) names the workspace as `cwd`.
//! - **Transcript**: `transcript.rs` (its reader; `compacted.rs` renders
//!   what one of its compactions replaced the history with).
//! - **Auto-compaction**: at `min(model_auto_compact_token_limit, 90% of
//!   the configured window)` (last `total_tokens`), from `config.toml` (the
//!   active `profile`'s keys over the top level). Measured: window 16,000 →
//!   14,400; limit 5,000 → 5,000; limit 20,000 → 14,400. The window a
//!   rollout states is 95% of the configured one (16,000 → 15,200), so
//!   without `model_context_window` in the config it is the stated window ×
//!   100/95.

mod compacted;
pub mod transcript;

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::discover::{jsonl_files, under, Cwds};
use super::limits::{AutoCompactPoint, Basis};
use super::{AgentKind, Homes, LimitsInput};
use crate::conversation::Message;
use crate::transcript::{Imported, Line, Reader};

/// The agent.
pub struct Codex;

/// Its name on the wire, and its transcript format's.
pub const NAME: &str = "codex";

const HOME: &str = "CODEX_HOME";

/// Rollouts looked at, newest first, before giving up on finding more of a
/// workspace's sessions.
const FILES_EXAMINED: usize = 400;

fn home(homes: &Homes) -> PathBuf {
    homes
        .var(HOME)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| homes.home().join(".codex"))
}

fn sessions_root(homes: &Homes) -> PathBuf {
    home(homes).join("sessions")
}

impl AgentKind for Codex {
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
}

/// `sessions/YYYY/MM/DD` folders, newest first.
fn day_dirs(root: &Path) -> Vec<PathBuf> {
    let children = |dir: &Path| -> Vec<PathBuf> {
        let mut names: Vec<PathBuf> = fs::read_dir(dir)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        names.sort_by(|a, b| b.cmp(a));
        names
    };
    children(root)
        .iter()
        .flat_map(|year| children(year))
        .flat_map(|month| children(&month))
        .collect()
}

/// Its settings that matter here, from `config.toml`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    pub context_window: Option<u64>,
    pub auto_compact_token_limit: Option<u64>,
}

pub fn config(homes: &Homes) -> Config {
    let text = fs::read_to_string(home(homes).join("config.toml")).unwrap_or_default();
    let Ok(table) = toml::from_str::<toml::Table>(&text) else {
        return Config::default();
    };
    let profile = table
        .get("profile")
        .and_then(|p| p.as_str())
        .and_then(|name| table.get("profiles")?.get(name));
    let key = |name: &str| {
        profile
            .and_then(|p| p.get(name))
            .or_else(|| table.get(name))
            .and_then(|v| v.as_integer())
            .and_then(|v| u64::try_from(v).ok())
    };
    Config {
        context_window: key("model_context_window"),
        auto_compact_token_limit: key("model_auto_compact_token_limit"),
    }
}

/// Its point: `stated` is the window its rollout states, `table` the one
/// compactd's table gives the model.
pub fn point(config: &Config, stated: Option<u64>, table: Option<u64>) -> AutoCompactPoint {
    let window = config
        .context_window
        .map(|w| (w, "model_context_window in config.toml".to_string()))
        .or_else(|| stated.map(|s| (s * 100 / 95, format!("the rollout's window {s} × 100/95"))))
        .or_else(|| table.map(|t| (t, "compactd's table".to_string())));
    let Some((window, source)) = window else {
        return AutoCompactPoint {
            at: None,
            basis: Basis::Estimate,
            rule: "Codex: the model's window is unknown".into(),
        };
    };
    let ninety = window * 9 / 10;
    let at = config
        .auto_compact_token_limit
        .map_or(ninety, |limit| limit.min(ninety));
    let limit = config
        .auto_compact_token_limit
        .map_or("not set".to_string(), |l| l.to_string());
    AutoCompactPoint {
        at: Some(at),
        basis: if config.context_window.is_some() || stated.is_some() {
            Basis::Exact
        } else {
            Basis::Estimate
        },
        rule: format!(
            "Codex: min(model_auto_compact_token_limit {limit}, 90% of window {window} from {source}) = {at}"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The points measured with the real program.
    #[test]
    fn the_measured_points_and_its_config() {
        let at = |window, limit| {
            let config = Config {
                context_window: Some(window),
                auto_compact_token_limit: limit,
            };
            point(&config, Some(window * 95 / 100), None).at
        };
        assert_eq!(at(16_000, None), Some(14_400));
        assert_eq!(at(16_000, Some(5_000)), Some(5_000));
        assert_eq!(at(16_000, Some(20_000)), Some(14_400));
        assert_eq!(
            point(&Config::default(), Some(15_200), None).at,
            Some(14_400)
        );
        let dir = tempfile::tempdir().unwrap();
        let homes = Homes::under(dir.path());
        std::fs::create_dir_all(home(&homes)).unwrap();
        std::fs::write(
            home(&homes).join("config.toml"),
            "model_auto_compact_token_limit = 9000\nprofile = \"big\"\n[profiles.big]\nmodel_context_window = 50000\n",
        )
        .unwrap();
        assert_eq!(
            config(&homes),
            Config {
                context_window: Some(50_000),
                auto_compact_token_limit: Some(9_000)
            }
        );
    }
}
