//! `textDocument/didOpen`: the editor opened a file, so the user read it.

use crate::files::{disk, FileEvent};
use crate::protocol::{DidOpenTextDocumentParams, FileOp, Origin};
use crate::server::context::Context;
use crate::server::file_tracking::FileTracking;
use crate::server::rpc::RpcResult;

pub fn handle(context: &mut Context, params: DidOpenTextDocumentParams) -> RpcResult<()> {
    let document = params.text_document;
    let Some(path) = context.state.files.resolve_uri(&document.uri) else {
        tracing::debug!("didOpen of a non-file document `{}` ignored", document.uri);
        return Ok(());
    };
    let hash = disk::text_hash(&document.text);
    context
        .state
        .files
        .documents
        .insert(path.clone(), Some(hash.clone()));
    let mut event = FileEvent::new(path, FileOp::Read, Origin::Lsp);
    event.content_hash = Some(hash);
    FileTracking::record_external(&mut context.state.sessions, None, event, |_, _| true)
}
