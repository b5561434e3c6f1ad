//! Where each agent compacts by itself, from its own configuration and
//! rules, so a status bar can say "Claude Code will auto-compact at 977k".
//! Each rule was checked against the real program (the versions in
//! `follow`'s docs); what could not be checked is marked `estimate`.
//!
//! - Claude Code 2.1.330: at `window − min(max output, 20,000) − 3,000`
//!   tokens (the last request's input, cache and output). Measured with the
//!   default model (1,000,000-token window, 128,000 max output): 976,910 did
//!   not compact, 977,000 did. Its code also names a lower threshold
//!   (13,000 below the effective window) that did not fire, and with a
//!   200,000-token model (Sonnet 4.5) nothing compacted even at 230,000, so
//!   for other windows the figure is an estimate: the point past which
//!   Claude Code either compacts or refuses the prompt. Off when
//!   `autoCompactEnabled` is false in its `.claude.json`, or its
//!   `settings.json` sets `DISABLE_AUTO_COMPACT`/`DISABLE_COMPACT` in `env`.
//! - Codex 0.169: at `min(model_auto_compact_token_limit, 90% of the
//!   configured window)` (last `total_tokens`), from `$CODEX_HOME/config.toml`
//!   (the active `profile`'s keys over the top level). Measured: window
//!   16,000 → 14,400; limit 5,000 → 5,000; limit 20,000 → 14,400. The
//!   window a rollout states is 95% of the configured one (16,000 → 15,200),
//!   so without `model_context_window` in the config it is the stated
//!   window × 100/95.
//! - pi 0.73.1: more than `contextWindow − compaction.reserveTokens`
//!   (default 16,384; `compaction.enabled` false turns it off), from
//!   `<agentDir>/settings.json` with the workspace's `.pi/settings.json`
//!   over it (`shouldCompact` in its code). The window is the model's in
//!   `<agentDir>/models.json`, else compactd's table (then an estimate).

use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::AgentHomes;

/// How far an agent's auto-compaction point can be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Basis {
    /// The agent's own setting or rule, checked against the real program.
    Exact,
    /// The agent's rule applied where it was not checked (another window,
    /// a window from compactd's table).
    Estimate,
    /// The agent will not compact by itself.
    Off,
}

/// An agent's auto-compaction point.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutoCompactPoint {
    /// The context size at which the agent compacts; `null` when it will not.
    pub at: Option<u64>,
    pub basis: Basis,
    /// The rule and where its figures came from, for people.
    pub rule: String,
}

/// Claude Code's point for a window and the most output a request asks
/// for (`None`: not stated in the transcript; 20,000 or more for every
/// current model, so the cap applies).
pub fn claude_code(homes: &AgentHomes, window: u64, max_output: Option<u64>) -> AutoCompactPoint {
    if let Some(why) = claude_code_off(homes) {
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

fn claude_code_off(homes: &AgentHomes) -> Option<String> {
    /// Only the switch: the file keeps every project's history and runs to
    /// megabytes, and the status line reads it on every render.
    #[derive(Deserialize)]
    struct State {
        #[serde(rename = "autoCompactEnabled")]
        auto_compact_enabled: Option<bool>,
    }
    let bytes = std::fs::read(homes.claude_state_file()).unwrap_or_default();
    let named = bytes.windows(18).any(|w| w == b"autoCompactEnabled");
    let state = named
        .then(|| serde_json::from_slice::<State>(&bytes).ok())
        .flatten();
    if state.and_then(|s| s.auto_compact_enabled) == Some(false) {
        return Some(format!(
            "autoCompactEnabled is false in {}",
            homes.claude_state_file().display()
        ));
    }
    let settings_file = homes.claude_code.join("settings.json");
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

/// Codex's settings that matter here, from `config.toml`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CodexConfig {
    pub context_window: Option<u64>,
    pub auto_compact_token_limit: Option<u64>,
}

pub fn codex_config(homes: &AgentHomes) -> CodexConfig {
    let text = std::fs::read_to_string(homes.codex.join("config.toml")).unwrap_or_default();
    let Ok(table) = toml::from_str::<toml::Table>(&text) else {
        return CodexConfig::default();
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
    CodexConfig {
        context_window: key("model_context_window"),
        auto_compact_token_limit: key("model_auto_compact_token_limit"),
    }
}

/// Codex's point: `stated` is the window its rollout states.
pub fn codex(config: &CodexConfig, stated: Option<u64>, table: Option<u64>) -> AutoCompactPoint {
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

/// pi's compaction settings and the window of `model` in its models file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PiConfig {
    pub enabled: bool,
    pub reserve_tokens: u64,
    /// Where the reserve came from (`None`: pi's default).
    pub reserve_source: Option<String>,
    pub model_window: Option<u64>,
}

pub fn pi_config(homes: &AgentHomes, workspace: &Path, model: Option<&str>) -> PiConfig {
    let global = homes.pi.join("settings.json");
    let project = workspace.join(".pi").join("settings.json");
    let mut config = PiConfig {
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
        let models = read_json(&homes.pi.join("models.json"))?;
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

/// pi's point in `window` (`from_models`: the window is pi's own, from
/// its models file).
pub fn pi(config: &PiConfig, window: u64, from_models: bool) -> AutoCompactPoint {
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

fn off(rule: String) -> AutoCompactPoint {
    AutoCompactPoint {
        at: None,
        basis: Basis::Off,
        rule,
    }
}

fn read_json(path: &Path) -> Option<Value> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn homes(dir: &Path) -> AgentHomes {
        AgentHomes::under(dir)
    }

    /// The points measured with the real programs (see the module docs).
    #[test]
    fn the_measured_points() {
        let dir = tempfile::tempdir().unwrap();
        let homes = homes(dir.path());
        let claude = claude_code(&homes, 1_000_000, Some(128_000));
        assert_eq!((claude.at, claude.basis), (Some(977_000), Basis::Exact));
        assert_eq!(claude_code(&homes, 200_000, None).basis, Basis::Estimate);
        let codex_at = |window, limit| {
            let config = CodexConfig {
                context_window: Some(window),
                auto_compact_token_limit: limit,
            };
            codex(&config, Some(window * 95 / 100), None).at
        };
        assert_eq!(codex_at(16_000, None), Some(14_400));
        assert_eq!(codex_at(16_000, Some(5_000)), Some(5_000));
        assert_eq!(codex_at(16_000, Some(20_000)), Some(14_400));
        let stated_only = codex(&CodexConfig::default(), Some(15_200), None);
        assert_eq!(stated_only.at, Some(14_400));
        let pi_config = PiConfig {
            enabled: true,
            reserve_tokens: 14_700,
            reserve_source: None,
            model_window: Some(16_000),
        };
        assert_eq!(pi(&pi_config, 16_000, true).at, Some(1_300));
    }

    #[test]
    fn switched_off_in_the_agents_own_files() {
        let dir = tempfile::tempdir().unwrap();
        let homes = homes(dir.path());
        std::fs::write(
            dir.path().join(".claude.json"),
            r#"{"autoCompactEnabled": false}"#,
        )
        .unwrap();
        assert_eq!(claude_code(&homes, 200_000, None).basis, Basis::Off);
        std::fs::create_dir_all(&homes.pi).unwrap();
        std::fs::write(
            homes.pi.join("settings.json"),
            r#"{"compaction": {"reserveTokens": 1000}}"#,
        )
        .unwrap();
        std::fs::create_dir_all(dir.path().join("ws/.pi")).unwrap();
        std::fs::write(
            dir.path().join("ws/.pi/settings.json"),
            r#"{"compaction": {"enabled": false}}"#,
        )
        .unwrap();
        let config = pi_config(&homes, &dir.path().join("ws"), None);
        assert_eq!((config.enabled, config.reserve_tokens), (false, 1000));
        std::fs::create_dir_all(&homes.codex).unwrap();
        std::fs::write(
            homes.codex.join("config.toml"),
            "model_auto_compact_token_limit = 9000\nprofile = \"big\"\n[profiles.big]\nmodel_context_window = 50000\n",
        )
        .unwrap();
        assert_eq!(
            codex_config(&homes),
            CodexConfig {
                context_window: Some(50_000),
                auto_compact_token_limit: Some(9_000)
            }
        );
    }
}
