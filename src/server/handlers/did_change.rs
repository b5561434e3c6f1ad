//! `textDocument/didChange`: the user is editing a file. The first change
//! after anything else is recorded as a modification; later ones only
//! update the buffer's hash, which tells the editor's own save apart from
//! someone else's change on disk.

use crate::files::{disk, FileEvent};
use crate::protocol::{DidChangeTextDocumentParams, FileOp, Origin};
use crate::server::{RpcResult, Server};

pub fn handle(server: &mut Server, params: DidChangeTextDocumentParams) -> RpcResult<()> {
    let Some(path) = server.file_tracking.resolve_uri(&params.text_document.uri) else {
        return Ok(());
    };
    // compactd asks for full sync: a change without a range is the text.
    let hash = match params.content_changes.last() {
        Some(change) if change.range.is_none() => Some(disk::text_hash(&change.text)),
        _ => None,
    };
    server
        .file_tracking
        .documents
        .insert(path.clone(), hash.clone());
    let mut event = FileEvent::new(path, FileOp::Modify, Origin::Lsp);
    event.content_hash = hash;
    server.record_external(None, event, |files, event| !files.continues_edit(event))
}
