//! How the server was started, and where its configuration was looked for.

use std::path::PathBuf;

use crate::config::Config;

/// How the server was started (CLI flags, not client configuration).
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    /// Overrides the user config directory (`None`: the platform default).
    pub user_config_dir: Option<PathBuf>,
    /// Skip the user config file entirely.
    pub no_user_config: bool,
}

impl ServeOptions {
    /// The user config directory to read `compactd.toml` from, if any.
    pub fn user_dir(&self) -> Option<PathBuf> {
        if self.no_user_config {
            return None;
        }
        self.user_config_dir
            .clone()
            .or_else(Config::user_config_dir)
    }
}

/// Where the config files were looked for at `initialize`, so that
/// `workspace/didChangeConfiguration` resolves the same layers.
#[derive(Debug, Clone, Default)]
pub(crate) struct ConfigDirs {
    /// The workspace root (`compactd.toml` there).
    pub workspace_root: Option<PathBuf>,
    /// The user config directory.
    pub user_dir: Option<PathBuf>,
}
