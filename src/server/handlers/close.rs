//! `conversation/close`: the connection is done with a session. It is
//! unsubscribed; once no other connection uses it (always, on stdio) the
//! session is closed: its running compaction cancelled, a followed one
//! unfollowed, its log and lock released. Closing what is not open
//! answers `closed: false`; nothing is an error but an id being imported.

use crate::protocol::{CloseResult, SessionParams};
use crate::server::context::Context;
use crate::server::rpc::RpcResult;

pub fn handle(context: &mut Context, params: SessionParams) -> RpcResult<CloseResult> {
    let id = params.session_id;
    context.state.sessions.unreserved(&id)?;
    let used_elsewhere = context.caller.shares(&id);
    context.caller.unsubscribe(&id);
    let closed = !used_elsewhere && context.state.close_session(&id, &mut context.effects);
    Ok(CloseResult {
        session_id: id,
        closed,
    })
}
