//! Where pi compacts by itself: its rule over its settings and models.

use std::path::Path;

use serde_json::Value;

use super::home::agent_dir;
use crate::agents::limits::{off, AutoCompactPoint, Basis};
use crate::agents::{read_json, Homes};

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
