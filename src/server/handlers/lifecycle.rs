use std::path::PathBuf;

use crate::agents::Agent;
use crate::files::path_from_uri;
use crate::protocol::{methods, AgentInfo, CompactdCapabilities, Config, InitializeParams};
use crate::server::{ConfigDirs, RpcError, RpcResult, Server};

pub fn initialize(server: &mut Server, params: InitializeParams) -> RpcResult<serde_json::Value> {
    if server.clients.is_shared() {
        // The shared sidecar's configuration is its own, fixed at start.
        if params.initialization_options.is_some() {
            tracing::info!("initializationOptions ignored: a shared compactd keeps the configuration it started with");
        }
    } else {
        configure(server, &params)?;
    }
    let creates_tokens = params
        .capabilities
        .pointer("/window/workDoneProgress")
        .and_then(|v| v.as_bool())
        .unwrap_or(false);
    if let Some(client) = server.clients.current_mut() {
        client.progress.client_creates = creates_tokens;
    }
    server.set_running();
    let capabilities = CompactdCapabilities {
        version: env!("CARGO_PKG_VERSION").to_string(),
        methods: methods::advertised_requests(),
        notifications: methods::advertised_notifications(),
        agents: Agent::all()
            .iter()
            .map(|agent| AgentInfo {
                name: *agent,
                display_name: agent.display_name().to_string(),
            })
            .collect(),
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

/// On stdio the client configures the server: its workspace and
/// `initializationOptions` over the config files.
fn configure(server: &mut Server, params: &InitializeParams) -> RpcResult<()> {
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
    let user_dir = server.options().user_dir();
    let config = Config::resolve(
        params.initialization_options.as_ref(),
        root.as_deref(),
        user_dir.as_deref(),
    )
    .map_err(|e| RpcError::invalid_params(format!("initializationOptions: {e}")))?;
    let dirs = ConfigDirs {
        workspace_root: root,
        user_dir,
    };
    server.configure(config, roots, dirs);
    Ok(())
}

pub fn shutdown(server: &mut Server, _params: serde_json::Value) -> RpcResult<serde_json::Value> {
    server.set_shutting_down();
    Ok(serde_json::Value::Null)
}
