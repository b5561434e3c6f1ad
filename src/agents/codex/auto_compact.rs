//! Where Codex compacts by itself: its rule over its configuration.

use super::home::home;
use crate::agents::limits::{AutoCompactPoint, Basis};
use crate::agents::Homes;

/// Its settings that matter here, from `config.toml`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    pub context_window: Option<u64>,
    pub auto_compact_token_limit: Option<u64>,
}

pub fn config(homes: &Homes) -> Config {
    let text = crate::regular_file::read_to_string_capped(
        &home(homes).join("config.toml"),
        crate::regular_file::SETTINGS_MAX_BYTES,
    )
    .unwrap_or_default();
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
