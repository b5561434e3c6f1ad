//! `workspace/didChangeConfiguration`: live settings from an editor. The
//! `settings` object has the shape of `initializationOptions` (optionally
//! under a `compactd` key) and replaces it; the config files still fill what
//! it does not set. Settings that carry nothing (`null`, `{}`, a `compactd`
//! key holding `null` or `{}`) change nothing: some clients send exactly
//! that on connect, and it must not wipe `initializationOptions`. Invalid
//! settings are logged and the old ones kept. The data directory stays what
//! it was at `initialize`: open session logs do not move. A shared sidecar
//! ignores it: its configuration is its own.

use crate::protocol::{Config, DidChangeConfigurationParams};
use crate::server::context::Context;

pub fn handle(context: &mut Context, params: DidChangeConfigurationParams) {
    if context.caller.is_shared() {
        // One client's settings would change every other client's sessions.
        tracing::info!("workspace/didChangeConfiguration ignored: a shared compactd keeps the configuration it started with");
        return;
    }
    let Some(settings) = compactd_settings(params.settings) else {
        tracing::debug!("workspace/didChangeConfiguration without settings: nothing changes");
        return;
    };
    let state = &mut *context.state;
    let dirs = &state.config_dirs;
    match Config::resolve(
        Some(&settings),
        dirs.workspace_root.as_deref(),
        dirs.user_dir.as_deref(),
    ) {
        Ok(mut config) => {
            if config.sessions_dir() != state.config.sessions_dir() {
                tracing::warn!(
                    "dataDir changes take effect at the next start; sessions stay in {}",
                    state.sessions.store.dir().display()
                );
            }
            config.data_dir = state.config.data_dir.clone();
            state.config = config;
            state.sessions.store.set_durability(state.config.durability);
            state.apply_file_config();
            state.apply_follow_mode(&mut context.effects);
            tracing::info!("configuration updated");
            for id in state.sessions.ids() {
                let _ = state.send_meter(&id, &mut context.effects);
            }
        }
        Err(e) => tracing::error!("workspace/didChangeConfiguration ignored: {e}"),
    }
}

/// compactd's settings, or `None` when the notification carries none.
fn compactd_settings(settings: serde_json::Value) -> Option<serde_json::Value> {
    let settings = match settings {
        serde_json::Value::Object(mut map) if map.contains_key("compactd") => {
            map.remove("compactd").unwrap_or_default()
        }
        other => other,
    };
    match &settings {
        serde_json::Value::Null => None,
        serde_json::Value::Object(map) if map.is_empty() => None,
        _ => Some(settings),
    }
}

#[cfg(test)]
mod tests {
    use super::compactd_settings;
    use serde_json::json;

    #[test]
    fn empty_settings_carry_nothing() {
        for empty in [
            json!(null),
            json!({}),
            json!({"compactd": null}),
            json!({"compactd": {}}),
        ] {
            assert_eq!(compactd_settings(empty.clone()), None, "{empty}");
        }
        assert_eq!(
            compactd_settings(json!({"compactd": {"keepRecentTokens": 5}})),
            Some(json!({"keepRecentTokens": 5}))
        );
        assert_eq!(
            compactd_settings(json!({"keepRecentTokens": 5})),
            Some(json!({"keepRecentTokens": 5}))
        );
    }
}
