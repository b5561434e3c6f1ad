//! `textDocument/didSave`: the editor wrote a file.

use crate::files::{disk, FileEvent};
use crate::protocol::{DidSaveTextDocumentParams, FileOp, Origin};
use crate::server::{RpcResult, Server};

pub fn handle(server: &mut Server, params: DidSaveTextDocumentParams) -> RpcResult<()> {
    let Some(path) = server.file_tracking.resolve_uri(&params.text_document.uri) else {
        return Ok(());
    };
    let hash = params
        .text
        .as_deref()
        .map(disk::text_hash)
        .or_else(|| server.file_tracking.documents.get(&path).cloned().flatten())
        .or_else(|| disk::content_hash(&path));
    if let Some(buffer) = server.file_tracking.documents.get_mut(&path) {
        *buffer = hash.clone();
    }
    let mut event = FileEvent::new(path, FileOp::Modify, Origin::Lsp);
    event.content_hash = hash;
    server.record_external(None, event, |_, _| true)
}
