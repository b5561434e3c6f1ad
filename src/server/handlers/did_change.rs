//! `textDocument/didChange`: the user is editing a file. The first change
//! after anything else is recorded as a modification; later ones only
//! update the buffer's hash, which tells the editor's own save apart from
//! someone else's change on disk.

use crate::files::{disk, FileEvent};
use crate::protocol::{DidChangeTextDocumentParams, FileOp, Origin};
use crate::server::context::Context;
use crate::server::file_tracking::FileTracking;
use crate::server::rpc::RpcResult;

pub fn handle(context: &mut Context, params: DidChangeTextDocumentParams) -> RpcResult<()> {
    let Some(path) = context.state.files.resolve_uri(&params.text_document.uri) else {
        return Ok(());
    };
    // compactd asks for full sync: a change without a range is the text.
    let hash = match params.content_changes.last() {
        Some(change) if change.range.is_none() => Some(disk::text_hash(&change.text)),
        _ => None,
    };
    context
        .state
        .files
        .documents
        .insert(path.clone(), hash.clone());
    let mut event = FileEvent::new(path, FileOp::Modify, Origin::Lsp);
    event.content_hash = hash;
    FileTracking::record_external(&mut context.state.sessions, None, event, |files, event| {
        !files.continues_edit(event)
    })
}
