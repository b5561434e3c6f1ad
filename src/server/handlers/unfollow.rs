//! `conversation/unfollow`: stops following a transcript and closes its
//! session (compactd's own log of it stays).

use crate::protocol::{SessionParams, UnfollowResult};
use crate::server::context::Context;
use crate::server::rpc::RpcResult;

pub fn handle(context: &mut Context, params: SessionParams) -> RpcResult<UnfollowResult> {
    Ok(UnfollowResult {
        unfollowed: context.state.unfollow(&params.session_id),
        session_id: params.session_id,
    })
}
