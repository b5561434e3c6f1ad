//! `textDocument/didSave`: the editor wrote a file.

use crate::files::{disk, FileEvent};
use crate::protocol::{DidSaveTextDocumentParams, FileOp, Origin};
use crate::server::context::Context;
use crate::server::file_tracking::FileTracking;
use crate::server::rpc::RpcResult;

pub fn handle(context: &mut Context, params: DidSaveTextDocumentParams) -> RpcResult<()> {
    let Some(path) = context.state.files.resolve_uri(&params.text_document.uri) else {
        return Ok(());
    };
    let hash = params
        .text
        .as_deref()
        .map(disk::text_hash)
        .or_else(|| context.state.files.documents.get(&path).cloned().flatten())
        .or_else(|| disk::content_hash(&path));
    if let Some(buffer) = context.state.files.documents.get_mut(&path) {
        *buffer = hash.clone();
    }
    let mut event = FileEvent::new(path, FileOp::Modify, Origin::Lsp);
    event.content_hash = hash;
    FileTracking::record_external(&mut context.state.sessions, None, event, |_, _| true)
}
