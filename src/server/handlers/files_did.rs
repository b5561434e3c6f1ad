//! `files/didRead`, `files/didModify`, `files/didCreate`, `files/didDelete`:
//! an agent says what it did to a file, for one session or (without a
//! `sessionId`) for every open one.

use crate::files::{disk, FileEvent};
use crate::protocol::{FileNotificationParams, FileOp, Origin};
use crate::server::context::Context;
use crate::server::file_tracking::FileTracking;
use crate::server::rpc::{RpcError, RpcResult};

pub fn handle(context: &mut Context, params: FileNotificationParams, op: FileOp) -> RpcResult<()> {
    let path = context.state.files.resolve(&params.path).ok_or_else(|| {
        RpcError::invalid_params(format!(
            "path: `{}` is neither absolute nor a file URI, and there is no workspace root",
            params.path
        ))
    })?;
    let mut event = FileEvent::new(path, op, Origin::Explicit);
    event.range = params.range;
    if op != FileOp::Delete {
        event.content_hash = disk::content_hash(&event.path);
    }
    FileTracking::record_external(
        &mut context.state.sessions,
        params.session_id.as_deref(),
        event,
        |_, _| true,
    )
}
