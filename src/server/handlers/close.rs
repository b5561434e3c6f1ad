//! `conversation/close`: the connection is done with a session. It stops
//! following it; once no other connection uses it (always, on stdio) the
//! session is closed: its running compaction cancelled, a followed one
//! unfollowed, its log and lock released. Closing what is not open
//! answers `closed: false`; nothing is an error but an id being imported.

use crate::protocol::{CloseResult, SessionParams};
use crate::server::{RpcResult, Server};

pub fn handle(server: &mut Server, params: SessionParams) -> RpcResult<CloseResult> {
    let id = params.session_id;
    server.unreserved(&id)?;
    let used_elsewhere = server.clients.is_subscribed_by_another(&id);
    server.clients.unsubscribe_current(&id);
    let closed = !used_elsewhere && server.close_session(&id);
    Ok(CloseResult {
        session_id: id,
        closed,
    })
}
