//! `compactd mcp`: the recall MCP server (`crate::mcp`) on stdio. A session
//! named by `--session` or `--transcript` that cannot be read is an error
//! on stderr before any MCP traffic (the agent shows the server as failed,
//! and carries on); without either, the session is found at the first call
//! (`mcp::Source::Pending`).

use super::args::McpArgs;
use super::error::CliError;
use crate::agents::Homes;
use crate::config::Config;
use crate::engine::follow::FollowSetup;
use crate::engine::SessionEnv;
use crate::files::disk;
use crate::mcp::{History, Source};
use crate::store::{Durability, SessionStore};

pub async fn run(args: &McpArgs, no_user_config: bool) -> Result<(), CliError> {
    let workspace = std::env::current_dir()
        .and_then(|d| d.canonicalize())
        .map_err(|e| CliError::Failure(format!("the current directory: {e}")))?;
    let user_dir = (!no_user_config).then(Config::user_config_dir).flatten();
    let config = Config::resolve(None, Some(&workspace), user_dir.as_deref())
        .map_err(|e| CliError::Usage(e.to_string()))?;
    let source = match &args.session {
        Some(id) => {
            let store = SessionStore::new(config.sessions_dir(), Durability::Flush);
            let env = SessionEnv::new(&config, disk::workspace(vec![workspace.clone()]));
            Source::own(store, id, env)
        }
        None => {
            let setup = FollowSetup::new(config, Homes::from_env(), &workspace);
            Source::follow(setup, &workspace, args.transcript.as_deref())
        }
    }
    .map_err(|e| CliError::Failure(e.to_string()))?;
    tracing::info!("compactd mcp serves the {}", source.describe());
    crate::mcp::serve_stdio(History::new(source))
        .await
        .map_err(CliError::Failure)
}
