//! `conversation/listAgentSessions`: the workspace's recent Claude Code,
//! Codex and pi sessions, for a client to pick one to follow.

use crate::protocol::{ListAgentSessionsParams, ListAgentSessionsResult};
use crate::server::context::Context;
use crate::server::rpc::RpcResult;

/// Sessions listed when the client does not say.
const DEFAULT_LIMIT: usize = 20;

pub fn handle(
    context: &mut Context,
    params: ListAgentSessionsParams,
) -> RpcResult<ListAgentSessionsResult> {
    let state = &*context.state;
    let workspace = state.agent_workspace(params.workspace.as_deref());
    let limit = params.limit.unwrap_or(DEFAULT_LIMIT);
    Ok(state
        .following
        .list(&state.sessions.store, &workspace, limit))
}
