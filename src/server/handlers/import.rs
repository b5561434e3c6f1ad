//! `conversation/import`: a transcript in another tool's format becomes a
//! new session, written to its own log before it is opened. The work runs
//! off the state owner (`server::importer`), which answers when it is done.

use lsp_server::RequestId;

use crate::protocol::ImportParams;
use crate::server::context::Context;
use crate::server::importer;
use crate::server::rpc::Reply;

pub fn start(context: &mut Context, id: RequestId, params: ImportParams) -> Reply {
    importer::start(context.state, context.results, id, params)
}
