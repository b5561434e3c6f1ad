//! `workspace/didChangeConfiguration`: live settings from an editor. The
//! `settings` object has the shape of `initializationOptions` (optionally
//! under a `compactd` key) and replaces it; the config files still fill what
//! it does not set. Invalid settings are logged and the old ones kept. The
//! data directory stays what it was at `initialize`: open session logs do
//! not move. A shared sidecar ignores it: its configuration is its own.

use crate::protocol::{Config, DidChangeConfigurationParams};
use crate::server::Server;

pub fn handle(server: &mut Server, params: DidChangeConfigurationParams) {
    if server.clients.is_shared() {
        // One client's settings would change every other client's sessions.
        tracing::info!("workspace/didChangeConfiguration ignored: a shared compactd keeps the configuration it started with");
        return;
    }
    let settings = match params.settings {
        serde_json::Value::Object(mut map) if map.contains_key("compactd") => {
            map.remove("compactd").unwrap_or_default()
        }
        other => other,
    };
    let dirs = &server.config_dirs;
    match Config::resolve(
        Some(&settings),
        dirs.workspace_root.as_deref(),
        dirs.user_dir.as_deref(),
    ) {
        Ok(mut config) => {
            if config.sessions_dir() != server.config.sessions_dir() {
                tracing::warn!(
                    "dataDir changes take effect at the next start; sessions stay in {}",
                    server.store.dir().display()
                );
            }
            config.data_dir = server.config.data_dir.clone();
            server.config = config;
            server.store.set_durability(server.config.durability);
            server.apply_file_config();
            tracing::info!("configuration updated");
            let ids: Vec<String> = server.sessions.keys().cloned().collect();
            for id in ids {
                server.send_meter(&server.sessions[&id].session);
            }
        }
        Err(e) => tracing::error!("workspace/didChangeConfiguration ignored: {e}"),
    }
}
