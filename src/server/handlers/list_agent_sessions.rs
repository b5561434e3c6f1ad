//! `conversation/listAgentSessions`: the workspace's recent Claude Code,
//! Codex and pi sessions, for a client to pick one to follow.

use crate::protocol::{ListAgentSessionsParams, ListAgentSessionsResult};
use crate::server::{RpcResult, Server};

/// Sessions listed when the client does not say.
const DEFAULT_LIMIT: usize = 20;

pub fn handle(
    server: &mut Server,
    params: ListAgentSessionsParams,
) -> RpcResult<ListAgentSessionsResult> {
    let workspace = server.agent_workspace(params.workspace.as_deref());
    let limit = params.limit.unwrap_or(DEFAULT_LIMIT);
    Ok(server.list_agent_sessions(&workspace, limit))
}
