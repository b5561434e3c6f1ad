//! `conversation/follow`: an agent's transcript (a path, or the agent's
//! newest session of the workspace) becomes a read-only session that
//! follows it as it grows; following it again answers the same session.
//! A transcript not followed yet is read whole off the state owner (a
//! 256 MB one takes seconds), which answers once it is read.

use crate::protocol::methods::Follow;
use crate::protocol::{FollowParams, FollowResult};
use crate::server::context::Context;
use crate::server::following::Asker;
use crate::server::jobs::Pending;
use crate::server::rpc::Reply;

pub fn start(
    context: &mut Context,
    pending: Pending<Follow>,
    params: FollowParams,
) -> Reply<FollowResult> {
    let state = &mut *context.state;
    let workspace = state.agent_workspace(params.workspace.as_deref());
    let target = state
        .following
        .target(params.path.as_deref(), params.agent, &workspace);
    let (agent, path) = match target {
        Ok(target) => target,
        Err(e) => return Reply::Now(Err(e)),
    };
    let asker = Asker::Client(pending);
    state.follow(agent, &path, &workspace, asker, &mut context.effects);
    Reply::Later
}
