//! Where opencode compacts by itself: its rule over its configuration, as
//! the pinned 1.18.33 has it (its `usable` and `isOverflow`):
//!
//! - never when `compaction.auto` is `false` or the model's `limit.context`
//!   is 0;
//! - with a `limit.input`: at `limit.input − reserved`, `reserved` being
//!   `compaction.reserved`, else min(20,000, the model's max output);
//! - without one: at `limit.context − max output`;
//! - the max output is the model's `limit.output` (32,000 when it states
//!   none), at most 32,000 (`OUTPUT_TOKEN_MAX`);
//! - compared with the response's `tokens.total` (input, output and cache
//!   together): measured, 7,620 ≥ 8,000 − 1,000 compacted, 2,020 did not.

use std::path::Path;

use serde_json::Value;

use super::super::limits::{off, AutoCompactPoint, Basis};
use super::super::{read_json, Homes};

/// Where its configuration lives (`$XDG_CONFIG_HOME/opencode`).
pub(super) const CONFIG_HOME: &str = "XDG_CONFIG_HOME";
/// What opencode reserves at most below an input limit.
const RESERVED_MAX: u64 = 20_000;
/// Its cap on a request's output tokens (`OUTPUT_TOKEN_MAX`).
const OUTPUT_TOKEN_MAX: u64 = 32_000;

/// A model's limits and the compaction settings, as its configuration
/// states them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    pub context: Option<u64>,
    pub input: Option<u64>,
    pub output: Option<u64>,
    /// `compaction.reserved`.
    pub reserved: Option<u64>,
    /// `compaction.auto` is `false`.
    pub auto_off: bool,
    /// The file they came from, for people.
    pub source: Option<String>,
}

/// The settings for `model` (`provider/model`, as opencode names it) from
/// the workspace's `opencode.json`, else the user's
/// (`$XDG_CONFIG_HOME/opencode/opencode.json`), each key from the first
/// file that sets it.
pub fn settings(homes: &Homes, workspace: &Path, model: &str) -> Settings {
    let (provider, model) = model.split_once('/').unwrap_or(("", model));
    let user = homes
        .var(CONFIG_HOME)
        .filter(|p| p.is_absolute())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| homes.home().join(".config"))
        .join("opencode/opencode.json");
    let mut settings = Settings::default();
    for file in [workspace.join("opencode.json"), user] {
        let Some(config) = read_json(&file) else {
            continue;
        };
        let limit = config
            .get("provider")
            .and_then(|p| p.get(provider))
            .and_then(|p| p.pointer(&format!("/models/{}/limit", escape(model))));
        let number =
            |v: Option<&Value>, key: &str| v.and_then(|v| v.get(key)).and_then(Value::as_u64);
        let before = settings.clone();
        settings.context = settings.context.or(number(limit, "context"));
        settings.input = settings.input.or(number(limit, "input"));
        settings.output = settings.output.or(number(limit, "output"));
        settings.reserved = settings
            .reserved
            .or(number(config.get("compaction"), "reserved"));
        settings.auto_off |= config.pointer("/compaction/auto") == Some(&Value::Bool(false));
        if settings != before && settings.source.is_none() {
            settings.source = Some(file.display().to_string());
        }
    }
    settings
}

/// A key as a JSON pointer's segment.
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Its context window: the configured `limit.context`, else `fallback`
/// (compactd's table).
pub fn window(settings: &Settings, fallback: u64) -> u64 {
    settings.context.unwrap_or(fallback)
}

/// Its point in a window of `window` tokens under `settings`.
pub fn point(settings: &Settings, window: u64) -> AutoCompactPoint {
    if settings.auto_off {
        return off("opencode: compaction.auto is false".into());
    }
    if window == 0 {
        return off("opencode: a model whose limit.context is 0 never compacts".into());
    }
    let max_output = settings
        .output
        .filter(|o| *o > 0)
        .unwrap_or(OUTPUT_TOKEN_MAX)
        .min(OUTPUT_TOKEN_MAX);
    let (at, rule) = match settings.input {
        Some(input) => {
            let reserved = settings.reserved.unwrap_or(RESERVED_MAX.min(max_output));
            let at = input.saturating_sub(reserved);
            (
                at,
                format!("input limit {input} − reserved {reserved} = {at}"),
            )
        }
        None => {
            let at = window.saturating_sub(max_output);
            (
                at,
                format!("context limit {window} − max output {max_output} = {at}"),
            )
        }
    };
    let source = settings.source.as_deref().unwrap_or("compactd's table");
    AutoCompactPoint {
        at: Some(at),
        basis: if settings.context.is_some() {
            Basis::Exact
        } else {
            Basis::Estimate
        },
        rule: format!("opencode: total tokens ≥ {rule} ({source})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(settings: &Settings, window: u64) -> Option<u64> {
        point(settings, window).at
    }

    #[test]
    fn its_point_is_the_window_less_its_output_or_the_input_less_its_reserve() {
        // The pinned run: context 8,000, output 1,000; it compacted at 7,620.
        let measured = Settings {
            context: Some(8000),
            output: Some(1000),
            ..Settings::default()
        };
        assert_eq!(at(&measured, 8000), Some(7000));
        assert_eq!(point(&measured, 8000).basis, Basis::Exact);
        // No output limit: 32,000 is what a request may ask.
        assert_eq!(at(&Settings::default(), 200_000), Some(168_000));
        assert_eq!(point(&Settings::default(), 200_000).basis, Basis::Estimate);
        let input = Settings {
            context: Some(400_000),
            input: Some(272_000),
            output: Some(128_000),
            ..Settings::default()
        };
        assert_eq!(at(&input, 400_000), Some(252_000));
        let small_output = Settings {
            output: Some(8_000),
            ..input.clone()
        };
        assert_eq!(at(&small_output, 400_000), Some(264_000));
        let reserved = Settings {
            reserved: Some(50_000),
            ..input
        };
        assert_eq!(at(&reserved, 400_000), Some(222_000));
    }

    #[test]
    fn it_does_not_compact_when_told_not_to_or_without_a_window() {
        let off_setting = Settings {
            auto_off: true,
            ..Settings::default()
        };
        assert_eq!(point(&off_setting, 8000).basis, Basis::Off);
        assert_eq!(point(&Settings::default(), 0).at, None);
    }

    #[test]
    fn its_settings_come_from_the_workspace_then_the_user() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        let config = dir.path().join("config");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(config.join("opencode")).unwrap();
        let project = serde_json::json!({"provider": {"local": {"models": {"scripted": {"limit": {"context": 8000, "output": 1000}}}}}});
        std::fs::write(ws.join("opencode.json"), project.to_string()).unwrap();
        let user = serde_json::json!({"compaction": {"reserved": 500, "auto": false}});
        std::fs::write(config.join("opencode/opencode.json"), user.to_string()).unwrap();
        let homes = Homes::under(dir.path()).with_var(CONFIG_HOME, &config);
        let settings = settings(&homes, &ws, "local/scripted");
        assert_eq!(settings.context, Some(8000));
        assert_eq!(settings.output, Some(1000));
        assert_eq!(settings.reserved, Some(500));
        assert!(settings.auto_off);
        assert_eq!(
            settings.source,
            Some(ws.join("opencode.json").display().to_string())
        );
        assert_eq!(window(&settings, 128_000), 8000);
        let other = super::settings(&homes, &ws, "local/other");
        assert_eq!(other.context, None);
    }
}
