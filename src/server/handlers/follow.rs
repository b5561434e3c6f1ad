//! `conversation/follow`: an agent's transcript (a path, or the agent's
//! newest session of the workspace) becomes a read-only session that
//! follows it as it grows; following it again answers the same session.

use crate::protocol::{FollowParams, FollowResult};
use crate::server::{RpcResult, Server};

pub fn handle(server: &mut Server, params: FollowParams) -> RpcResult<FollowResult> {
    let workspace = server.agent_workspace(params.workspace.as_deref());
    let (agent, path) = server.follow_target(params.path.as_deref(), params.agent, &workspace)?;
    server.follow_transcript(agent, &path, &workspace, true)
}
