//! The parts of LSP's lifecycle params compactd reads. LSP defines these
//! types, so they have no schema of their own under `schemas/`.

use serde::Deserialize;

/// `initialize`'s params.
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

/// `$/cancelRequest`'s params.
#[derive(Debug, Deserialize)]
pub struct CancelParams {
    pub id: lsp_server::RequestId,
}

/// `workspace/didChangeConfiguration`'s params: `settings` has the shape
/// of `initializationOptions`, optionally under a `compactd` key.
#[derive(Debug, Default, Deserialize)]
pub struct DidChangeConfigurationParams {
    #[serde(default)]
    pub settings: serde_json::Value,
}
