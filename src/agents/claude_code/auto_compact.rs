//! Where Claude Code compacts by itself, and whether it will.

use serde::Deserialize;

use super::home::{config_dir, state_file};
use crate::agents::limits::{off, AutoCompactPoint, Basis};
use crate::agents::{read_json, Homes};

/// The window of every model Claude Code runs (its 1M windows are stated
/// in the transcript or the status line's JSON when in use).
pub(super) const DEFAULT_WINDOW: u64 = 200_000;

/// Its point for a window and the most output a request asks for (`None`:
/// not stated in the transcript; 20,000 or more for every current model,
/// so the cap applies).
pub fn point(homes: &Homes, window: u64, max_output: Option<u64>) -> AutoCompactPoint {
    // Read once: the switches and the variables both live in its `env`,
    // and the status line asks on every render.
    let settings = Settings::read(homes);
    if let Some(why) = switched_off(homes, &settings) {
        return off(format!("Claude Code: auto-compaction is off ({why})"));
    }
    let reserve = max_output.unwrap_or(20_000).min(20_000);
    let moved = moved_point(homes, &settings, window, reserve);
    if let Some(point) = moved {
        return point;
    }
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

/// The two variables that move Claude Code's point (2.1.330, from its own
/// code): `CLAUDE_CODE_AUTO_COMPACT_WINDOW` caps the window it compacts
/// in, and `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE` (0–100) lowers the point to
/// that share of the window less the reserve. Each is read from the
/// environment (the status line and hooks run under Claude Code's) and
/// from the `env` of its `settings.json` (compactd following the session
/// from an editor has no other way to see them).
pub const WINDOW_VAR: &str = "CLAUDE_CODE_AUTO_COMPACT_WINDOW";
pub const PCT_VAR: &str = "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE";

/// The point when either variable moves it; an estimate, since the base
/// it lowers (measured at a 1M window) is one too.
fn moved_point(
    homes: &Homes,
    settings: &Settings,
    window: u64,
    reserve: u64,
) -> Option<AutoCompactPoint> {
    let capped = setting(homes, settings, WINDOW_VAR).and_then(|(v, from)| {
        v.trim()
            .parse::<u64>()
            .ok()
            .filter(|w| *w > 0)
            .map(|w| (w, from))
    });
    let pct = setting(homes, settings, PCT_VAR).and_then(|(v, from)| {
        let pct = v
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|p| *p > 0.0 && *p <= 100.0)?;
        Some((pct, from))
    });
    if capped.is_none() && pct.is_none() {
        return None;
    }
    let window = capped.as_ref().map_or(window, |(cap, _)| window.min(*cap));
    let effective = window.saturating_sub(reserve);
    let base = effective.saturating_sub(3_000);
    let at = match &pct {
        Some((pct, _)) => ((effective as f64 * pct / 100.0).floor() as u64).min(base),
        None => base,
    };
    let said: Vec<String> = [
        capped.map(|(cap, from)| format!("{WINDOW_VAR}={cap} ({from})")),
        pct.map(|(pct, from)| format!("{PCT_VAR}={pct} ({from})")),
    ]
    .into_iter()
    .flatten()
    .collect();
    Some(AutoCompactPoint {
        at: Some(at),
        basis: Basis::Estimate,
        rule: format!(
            "Claude Code: {}: window {window} − min(max output, 20000) = {effective}; the point is {at}",
            said.join(", ")
        ),
    })
}

/// A variable Claude Code reads, and where it was found: the environment,
/// else its `settings.json`'s `env`.
fn setting(homes: &Homes, settings: &Settings, name: &str) -> Option<(String, String)> {
    if let Some(value) = homes.var(name).and_then(|v| v.to_str()) {
        return Some((value.to_string(), "environment".into()));
    }
    let value = settings.env(name).and_then(|v| match v {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    })?;
    Some((value, settings.file.display().to_string()))
}

/// Its `settings.json`, read once per question.
struct Settings {
    file: std::path::PathBuf,
    json: Option<serde_json::Value>,
}

impl Settings {
    fn read(homes: &Homes) -> Settings {
        let file = config_dir(homes).join("settings.json");
        let json = read_json(&file);
        Settings { file, json }
    }

    /// A variable of its `env`.
    fn env(&self, name: &str) -> Option<&serde_json::Value> {
        self.json.as_ref()?.pointer(&format!("/env/{name}"))
    }
}

fn switched_off(homes: &Homes, settings: &Settings) -> Option<String> {
    /// Only the switch: the file keeps every project's history and runs to
    /// megabytes, and the status line reads it on every render.
    #[derive(Deserialize)]
    struct State {
        #[serde(rename = "autoCompactEnabled")]
        auto_compact_enabled: Option<bool>,
    }
    let state_file = state_file(homes);
    let bytes =
        crate::regular_file::read_capped(&state_file, crate::regular_file::SETTINGS_MAX_BYTES)
            .unwrap_or_default();
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
    ["DISABLE_AUTO_COMPACT", "DISABLE_COMPACT"]
        .into_iter()
        .find(|name| {
            settings
                .env(name)
                .is_some_and(|v| !matches!(v.as_str(), Some("" | "0" | "false")) && !v.is_null())
        })
        .map(|name| format!("{name} in {}", settings.file.display()))
}

#[cfg(test)]
mod tests {
    use super::super::home::CONFIG_DIR;
    use super::*;

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

    /// `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE` and `CLAUDE_CODE_AUTO_COMPACT_WINDOW`,
    /// from the environment or from settings.json's `env`, move the point
    /// (Claude Code compacted at ~40k with a 1M window where they were set).
    #[test]
    fn the_variables_that_move_the_point() {
        let dir = tempfile::tempdir().unwrap();
        let homes = Homes::under(dir.path());
        let pct = homes.clone().with_var(PCT_VAR, "5");
        let at = point(&pct, 1_000_000, Some(128_000));
        // (1,000,000 − 20,000) × 5% = 49,000.
        assert_eq!((at.at, at.basis), (Some(49_000), Basis::Estimate));
        assert!(
            at.rule.contains("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=5"),
            "{}",
            at.rule
        );
        let window = homes.clone().with_var(WINDOW_VAR, "60000");
        assert_eq!(point(&window, 1_000_000, Some(128_000)).at, Some(37_000));
        // A share above the default point changes nothing but the basis.
        let high = homes.clone().with_var(PCT_VAR, "100");
        assert_eq!(point(&high, 1_000_000, Some(128_000)).at, Some(977_000));
        // Nonsense is ignored.
        let bad = homes.clone().with_var(PCT_VAR, "abc");
        assert_eq!(point(&bad, 1_000_000, Some(128_000)).basis, Basis::Exact);
        // From settings.json's env, where Claude Code users set it.
        std::fs::create_dir_all(dir.path().join(".claude")).unwrap();
        std::fs::write(
            dir.path().join(".claude/settings.json"),
            r#"{"env": {"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "4"}}"#,
        )
        .unwrap();
        let from_settings = point(&homes, 1_000_000, Some(128_000));
        assert_eq!(from_settings.at, Some(39_200));
        assert!(
            from_settings.rule.contains("settings.json"),
            "{}",
            from_settings.rule
        );
    }
}
