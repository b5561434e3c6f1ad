use std::path::PathBuf;

use serde::Deserialize;

use crate::config::Config;
use crate::protocol::CompactdCapabilities;
use crate::server::files::ServerFiles;
use crate::server::routes::{NOTIFICATIONS_SENT, REQUESTS};
use crate::server::{RpcError, RpcResult, Server};
use crate::store::SessionStore;

/// The parts of LSP's `InitializeParams` compactd reads.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    #[serde(default)]
    pub initialization_options: Option<serde_json::Value>,
    #[serde(default)]
    pub root_uri: Option<String>,
    #[serde(default)]
    pub root_path: Option<String>,
    #[serde(default)]
    pub workspace_folders: Option<Vec<WorkspaceFolder>>,
    #[serde(default)]
    pub capabilities: serde_json::Value,
}

#[derive(Debug, Deserialize)]
pub struct WorkspaceFolder {
    pub uri: String,
}

pub fn initialize(server: &mut Server, params: InitializeParams) -> RpcResult<serde_json::Value> {
    let folders: Vec<PathBuf> = params
        .workspace_folders
        .iter()
        .flatten()
        .filter_map(|f| path_from_uri(&f.uri))
        .collect();
    let root = folders
        .first()
        .cloned()
        .or_else(|| params.root_uri.as_deref().and_then(path_from_uri))
        .or(params.root_path.as_deref().map(PathBuf::from));
    let roots = if folders.is_empty() {
        root.iter().cloned().collect()
    } else {
        folders
    };
    let user_dir = if server.options().no_user_config {
        None
    } else {
        server
            .options()
            .user_config_dir
            .clone()
            .or_else(Config::user_config_dir)
    };
    let config = Config::resolve(
        params.initialization_options.as_ref(),
        root.as_deref(),
        user_dir.as_deref(),
    )
    .map_err(|e| RpcError::invalid_params(format!("initializationOptions: {e}")))?;
    server.store = SessionStore::new(config.sessions_dir(), config.durability);
    tracing::info!("sessions in {}", server.store.dir().display());
    server.files = ServerFiles::start(&config, roots, &server.jobs);
    server.config = config;
    server.config_dirs = (root, user_dir);
    server.client_work_done_progress = params
        .capabilities
        .pointer("/window/workDoneProgress")
        .and_then(|v| v.as_bool())
        .unwrap_or(false);
    server.set_running();
    let capabilities = CompactdCapabilities {
        version: env!("CARGO_PKG_VERSION").to_string(),
        methods: REQUESTS.iter().map(|s| s.to_string()).collect(),
        notifications: NOTIFICATIONS_SENT.iter().map(|s| s.to_string()).collect(),
    };
    Ok(serde_json::json!({
        "capabilities": {
            // Full-text sync lets editors feed the file ledger.
            "textDocumentSync": { "openClose": true, "change": 1, "save": true },
            "experimental": { "compactd": capabilities }
        },
        "serverInfo": { "name": "compactd", "version": env!("CARGO_PKG_VERSION") }
    }))
}

pub fn shutdown(server: &mut Server, _params: serde_json::Value) -> RpcResult<serde_json::Value> {
    server.set_shutting_down();
    Ok(serde_json::Value::Null)
}

/// `file:///a/b%20c` → `/a/b c`.
pub fn path_from_uri(uri: &str) -> Option<PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    let mut bytes = Vec::with_capacity(rest.len());
    let raw = rest.as_bytes();
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == b'%' && i + 2 < raw.len() {
            let hex = |b: u8| (b as char).to_digit(16);
            if let (Some(hi), Some(lo)) = (hex(raw[i + 1]), hex(raw[i + 2])) {
                bytes.push((hi * 16 + lo) as u8);
                i += 3;
                continue;
            }
        }
        bytes.push(raw[i]);
        i += 1;
    }
    Some(PathBuf::from(String::from_utf8_lossy(&bytes).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::path_from_uri;
    use std::path::PathBuf;

    #[test]
    fn file_uris_decode() {
        assert_eq!(
            path_from_uri("file:///a/b%20c"),
            Some(PathBuf::from("/a/b c"))
        );
        assert_eq!(path_from_uri("file:///x%"), Some(PathBuf::from("/x%")));
        assert_eq!(path_from_uri("http://x"), None);
    }
}
