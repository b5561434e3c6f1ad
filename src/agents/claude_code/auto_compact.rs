//! Where Claude Code compacts by itself, and whether it will.

use serde::Deserialize;

use super::home::{config_dir, state_file};
use crate::agents::limits::{off, AutoCompactPoint, Basis};
use crate::agents::{read_json, Homes};

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
}
