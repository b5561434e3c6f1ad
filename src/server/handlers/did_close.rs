//! `textDocument/didClose`: the editor closed a buffer. Nothing happened to
//! the file; its buffer no longer explains changes on disk.

use crate::protocol::DidCloseTextDocumentParams;
use crate::server::{RpcResult, Server};

pub fn handle(server: &mut Server, params: DidCloseTextDocumentParams) -> RpcResult<()> {
    if let Some(path) = server.file_tracking.resolve_uri(&params.text_document.uri) {
        server.file_tracking.documents.remove(&path);
    }
    Ok(())
}
