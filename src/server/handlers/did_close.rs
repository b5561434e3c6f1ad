//! `textDocument/didClose`: the editor closed a buffer. Nothing happened to
//! the file; its buffer no longer explains changes on disk.

use crate::protocol::DidCloseTextDocumentParams;
use crate::server::context::Context;
use crate::server::rpc::RpcResult;

pub fn handle(context: &mut Context, params: DidCloseTextDocumentParams) -> RpcResult<()> {
    if let Some(path) = context.state.files.resolve_uri(&params.text_document.uri) {
        context.state.files.documents.remove(&path);
    }
    Ok(())
}
