//! `conversation/follow`: an agent's transcript (a path, or the agent's
//! newest session of the workspace) becomes a read-only session that
//! follows it as it grows; following it again answers the same session.

use crate::protocol::{FollowParams, FollowResult};
use crate::server::context::Context;
use crate::server::rpc::RpcResult;

pub fn handle(context: &mut Context, params: FollowParams) -> RpcResult<FollowResult> {
    let state = &mut *context.state;
    let workspace = state.agent_workspace(params.workspace.as_deref());
    let (agent, path) = state
        .following
        .target(params.path.as_deref(), params.agent, &workspace)?;
    state.follow(agent, &path, &workspace, true, &mut context.effects)
}
