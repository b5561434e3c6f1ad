use std::path::PathBuf;

use crate::files::path_from_uri;
use crate::protocol::{methods, CompactdCapabilities, Config, InitializeParams};
use crate::server::file_tracking::FileTracking;
use crate::server::{ConfigDirs, RpcError, RpcResult, Server};
use crate::store::SessionStore;

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
    server.file_tracking = FileTracking::start(&config, roots, &server.job_results_tx);
    server.config = config;
    server.config_dirs = ConfigDirs {
        workspace_root: root,
        user_dir,
    };
    server.client_work_done_progress = params
        .capabilities
        .pointer("/window/workDoneProgress")
        .and_then(|v| v.as_bool())
        .unwrap_or(false);
    server.set_running();
    let capabilities = CompactdCapabilities {
        version: env!("CARGO_PKG_VERSION").to_string(),
        methods: methods::advertised_requests(),
        notifications: methods::advertised_notifications(),
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
