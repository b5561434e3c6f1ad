//! `textDocument/didOpen`: the editor opened a file, so the user read it.

use crate::files::{disk, FileEvent};
use crate::protocol::{DidOpenTextDocumentParams, FileOp, Origin};
use crate::server::{RpcResult, Server};

pub fn handle(server: &mut Server, params: DidOpenTextDocumentParams) -> RpcResult<()> {
    let document = params.text_document;
    let Some(path) = server.file_tracking.resolve_uri(&document.uri) else {
        tracing::debug!("didOpen of a non-file document `{}` ignored", document.uri);
        return Ok(());
    };
    let hash = disk::text_hash(&document.text);
    server
        .file_tracking
        .documents
        .insert(path.clone(), Some(hash.clone()));
    let mut event = FileEvent::new(path, FileOp::Read, Origin::Lsp);
    event.content_hash = Some(hash);
    server.record_external(None, event, |_, _| true)
}
