//! `conversation/unfollow`: stops following a transcript and closes its
//! session (compactd's own log of it stays).

use crate::protocol::{SessionParams, UnfollowResult};
use crate::server::{RpcResult, Server};

pub fn handle(server: &mut Server, params: SessionParams) -> RpcResult<UnfollowResult> {
    Ok(UnfollowResult {
        unfollowed: server.unfollow(&params.session_id),
        session_id: params.session_id,
    })
}
