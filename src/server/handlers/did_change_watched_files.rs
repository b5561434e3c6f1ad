//! `workspace/didChangeWatchedFiles`: the editor's watcher saw files
//! created, changed or deleted. What a session already knows (its own
//! writes) is not recorded again.

use crate::files::{disk, FileEvent, SessionFileLedger};
use crate::protocol::{DidChangeWatchedFilesParams, FileOp, Origin};
use crate::server::context::Context;
use crate::server::file_tracking::FileTracking;
use crate::server::rpc::{RpcError, RpcResult};

pub fn handle(context: &mut Context, params: DidChangeWatchedFilesParams) -> RpcResult<()> {
    let mut result = Ok(());
    for (index, change) in params.changes.into_iter().enumerate() {
        let op = match change.kind {
            1 => FileOp::Create,
            2 => FileOp::Modify,
            3 => FileOp::Delete,
            other => {
                result = result.and(Err(RpcError::invalid_params(format!(
                    "changes[{index}].type: {other} is not 1 (created), 2 (changed) or 3 (deleted)"
                ))));
                continue;
            }
        };
        let Some(path) = context.state.files.resolve_uri(&change.uri) else {
            continue;
        };
        let mut event = FileEvent::new(path, op, Origin::Lsp);
        if op != FileOp::Delete {
            event.content_hash = disk::content_hash(&event.path);
        }
        result = result.and(FileTracking::record_external(
            &mut context.state.sessions,
            None,
            event,
            SessionFileLedger::is_news,
        ));
    }
    result
}
