//! pi (`@mariozechner/pi-coding-agent`), as measured with 0.73.1:
//!
//! - **Folders**: `$PI_CODING_AGENT_DIR`, else `~/.pi/agent` (`sessions/`,
//!   `settings.json`, `models.json`); `$PI_CODING_AGENT_SESSION_DIR` puts
//!   every workspace's sessions in one folder instead.
//! - **Sessions**: `<agentDir>/sessions/--<cwd without its leading '/',
//!   with '/', '\' and ':' as '-'>--/*.jsonl` (other characters kept), or
//!   every file of `$PI_CODING_AGENT_SESSION_DIR` whose header names the
//!   workspace.
//! - **Transcript**: `transcript.rs`, linear or the tree layout (the reader
//!   of a followed file keeps to its active branch).
//! - **Auto-compaction**: above `contextWindow − compaction.reserveTokens`
//!   (default 16,384; `compaction.enabled` false turns it off), from
//!   `<agentDir>/settings.json` with the workspace's `.pi/settings.json`
//!   over it (`shouldCompact` in its code). The window is the model's in
//!   `<agentDir>/models.json`, else compactd's table (then an estimate).

pub mod transcript;

use std::io;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::discover::{jsonl_files, under, Cwds};
use super::limits::{off, AutoCompactPoint, Basis};
use super::{read_json, AgentKind, Homes, LimitsInput};
use crate::transcript::tail::Tail;
use crate::transcript::{Imported, Line, Reader};

/// The agent.
pub struct Pi;

/// Its name on the wire, and its transcript format's.
pub const NAME: &str = "pi";

const AGENT_DIR: &str = "PI_CODING_AGENT_DIR";
const SESSION_DIR: &str = "PI_CODING_AGENT_SESSION_DIR";

fn agent_dir(homes: &Homes) -> PathBuf {
    homes
        .var(AGENT_DIR)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| homes.home().join(".pi").join("agent"))
}

impl AgentKind for Pi {
    fn name(&self) -> &'static str {
        NAME
    }

    fn display_name(&self) -> &'static str {
        "pi"
    }

    fn format_description(&self) -> &'static str {
        "pi session JSONL"
    }

    fn env_vars(&self) -> &'static [&'static str] {
        &[AGENT_DIR, SESSION_DIR]
    }

    fn sessions(&self, homes: &Homes, cwds: &Cwds, workspace: &Path, _: usize) -> Vec<PathBuf> {
        let cwd = workspace.to_string_lossy();
        let files = jsonl_files(&self.session_dir(homes, workspace));
        match homes.var(SESSION_DIR) {
            // One folder for every workspace: the header names the cwd.
            Some(_) => files
                .into_iter()
                .filter(|path| cwds.of(path, "/cwd").as_deref() == Some(&*cwd))
                .collect(),
            None => files,
        }
    }

    fn session_dir(&self, homes: &Homes, workspace: &Path) -> PathBuf {
        match homes.var(SESSION_DIR) {
            Some(dir) => dir.to_path_buf(),
            None => agent_dir(homes)
                .join("sessions")
                .join(dir_name(&workspace.to_string_lossy())),
        }
    }

    fn owns(&self, homes: &Homes, path: &Path) -> bool {
        under(path, &agent_dir(homes).join("sessions"))
            || homes.var(SESSION_DIR).is_some_and(|dir| under(path, dir))
    }

    fn classify(&self, line: &Value) -> bool {
        transcript::classify(line)
    }

    /// For a followed file, the reader keeps to the branch the file's
    /// entries end on so far (`active_path`).
    fn reader(&self, path: Option<&Path>) -> io::Result<Box<dyn Reader + Send>> {
        let branch = match path {
            Some(path) => active_path_of(path)?,
            None => None,
        };
        Ok(Box::new(transcript::Reader::on_path(branch)))
    }

    /// The name given with `/name` (a `session_info` line).
    fn session_name(&self, lines: &[Line]) -> Option<String> {
        lines
            .iter()
            .filter_map(|l| l.value.as_ref().ok())
            .find_map(|v| {
                (v.get("type")?.as_str()? == "session_info").then(|| v.get("name")?.as_str())?
            })
            .map(str::to_string)
    }

    /// A whole file keeps to the branch its entries end on.
    fn import(&self, lines: &[Line]) -> Imported {
        transcript::import(lines)
    }

    fn limits(&self, input: &LimitsInput) -> (u64, AutoCompactPoint) {
        let config = config(input.homes, input.workspace, input.model);
        let window = input
            .stated_window
            .or(config.model_window)
            .or(input.table_window)
            .unwrap_or(input.default_window);
        (
            window,
            point(&config, window, config.model_window.is_some()),
        )
    }
}

/// Its directory name for a cwd.
pub fn dir_name(cwd: &str) -> String {
    let trimmed = cwd.strip_prefix(['/', '\\']).unwrap_or(cwd);
    format!("--{}--", trimmed.replace(['/', '\\', ':'], "-"))
}

/// The ids on the active branch of the file at `path` so far.
fn active_path_of(path: &Path) -> io::Result<Option<std::collections::HashSet<String>>> {
    let mut entries = Vec::new();
    Tail::new(path).step(|line| {
        if let Ok(value) = line.value {
            let keep = |k: &str| value.get(k).cloned();
            entries.push(serde_json::json!({
                "type": keep("type"), "id": keep("id"), "parentId": keep("parentId")
            }));
            // `null` parents must stay present: only a key tells the tree
            // layout from the linear one.
            if value.get("parentId").is_none() {
                if let Some(map) = entries.last_mut().and_then(|e| e.as_object_mut()) {
                    map.remove("parentId");
                }
            }
        }
    })?;
    Ok(transcript::active_path(entries.iter()))
}

/// Its compaction settings and the window of the model in its models file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub enabled: bool,
    pub reserve_tokens: u64,
    /// Where the reserve came from (`None`: pi's default).
    pub reserve_source: Option<String>,
    pub model_window: Option<u64>,
}

pub fn config(homes: &Homes, workspace: &Path, model: Option<&str>) -> Config {
    let global = agent_dir(homes).join("settings.json");
    let project = workspace.join(".pi").join("settings.json");
    let mut config = Config {
        enabled: true,
        reserve_tokens: 16_384,
        reserve_source: None,
        model_window: None,
    };
    // The project's settings are merged over the global ones.
    for file in [global, project] {
        let Some(compaction) = read_json(&file).and_then(|s| s.get("compaction").cloned()) else {
            continue;
        };
        if let Some(enabled) = compaction.get("enabled").and_then(Value::as_bool) {
            config.enabled = enabled;
        }
        if let Some(reserve) = compaction.get("reserveTokens").and_then(Value::as_u64) {
            config.reserve_tokens = reserve;
            config.reserve_source = Some(file.display().to_string());
        }
    }
    config.model_window = model.and_then(|model| {
        let models = read_json(&agent_dir(homes).join("models.json"))?;
        models
            .get("providers")?
            .as_object()?
            .values()
            .filter_map(|p| p.get("models")?.as_array())
            .flatten()
            .find(|m| m.get("id").and_then(Value::as_str) == Some(model))?
            .get("contextWindow")?
            .as_u64()
    });
    config
}

/// Its point in `window` (`from_models`: the window is its own, from its
/// models file).
pub fn point(config: &Config, window: u64, from_models: bool) -> AutoCompactPoint {
    if !config.enabled {
        return off("pi: compaction.enabled is false in its settings".into());
    }
    let at = window.saturating_sub(config.reserve_tokens);
    AutoCompactPoint {
        at: Some(at),
        basis: if from_models {
            Basis::Exact
        } else {
            Basis::Estimate
        },
        rule: format!(
            "pi: more than window {window}{} − reserveTokens {} ({}) = {at}",
            if from_models {
                ""
            } else {
                " (compactd's table)"
            },
            config.reserve_tokens,
            config.reserve_source.as_deref().unwrap_or("pi's default")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cases measured against pi 0.73.1.
    #[test]
    fn directory_names_match_the_agent() {
        assert_eq!(
            dir_name("/tmp/pi2/my.proj_v1 x:y/ünï"),
            "--tmp-pi2-my.proj_v1 x-y-ünï--"
        );
    }

    #[test]
    fn the_measured_point_and_its_settings() {
        let measured = Config {
            enabled: true,
            reserve_tokens: 14_700,
            reserve_source: None,
            model_window: Some(16_000),
        };
        assert_eq!(point(&measured, 16_000, true).at, Some(1_300));
        let dir = tempfile::tempdir().unwrap();
        let homes = Homes::under(dir.path());
        std::fs::create_dir_all(agent_dir(&homes)).unwrap();
        std::fs::write(
            agent_dir(&homes).join("settings.json"),
            r#"{"compaction": {"reserveTokens": 1000}}"#,
        )
        .unwrap();
        std::fs::create_dir_all(dir.path().join("ws/.pi")).unwrap();
        std::fs::write(
            dir.path().join("ws/.pi/settings.json"),
            r#"{"compaction": {"enabled": false}}"#,
        )
        .unwrap();
        let config = config(&homes, &dir.path().join("ws"), None);
        assert_eq!((config.enabled, config.reserve_tokens), (false, 1000));
        assert_eq!(point(&config, 16_000, false).basis, Basis::Off);
    }
}
