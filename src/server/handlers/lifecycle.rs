use std::path::PathBuf;

use crate::agents::Agent;
use crate::files::path_from_uri;
use crate::protocol::{methods, AgentInfo, CompactdCapabilities, Config, InitializeParams};
use crate::server::clients::Phase;
use crate::server::context::Context;
use crate::server::options::ConfigDirs;
use crate::server::rpc::{RpcError, RpcResult};

pub fn initialize(context: &mut Context, params: InitializeParams) -> RpcResult<serde_json::Value> {
    if context.caller.is_shared() {
        // The shared sidecar's configuration is its own, fixed at start.
        if params.initialization_options.is_some() {
            tracing::info!("initializationOptions ignored: a shared compactd keeps the configuration it started with");
        }
    } else {
        configure(context, &params)?;
    }
    let creates_tokens = params
        .capabilities
        .pointer("/window/workDoneProgress")
        .and_then(|v| v.as_bool())
        .unwrap_or(false);
    context.caller.set_creates_tokens(creates_tokens);
    context.caller.set_phase(Phase::Running);
    let capabilities = CompactdCapabilities {
        version: env!("CARGO_PKG_VERSION").to_string(),
        methods: methods::advertised_requests(),
        notifications: methods::advertised_notifications(),
        agents: Agent::all()
            .iter()
            .map(|agent| AgentInfo {
                name: *agent,
                display_name: agent.display_name().to_string(),
                supports: agent.supports(),
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
fn configure(context: &mut Context, params: &InitializeParams) -> RpcResult<()> {
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
    let user_dir = context.state.options.user_dir();
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
    context.state.configure(config, roots, dirs);
    Ok(())
}

/// Answered with `null`.
pub fn shutdown(context: &mut Context, _params: serde_json::Value) -> RpcResult<()> {
    context.caller.set_phase(Phase::ShuttingDown);
    Ok(())
}
