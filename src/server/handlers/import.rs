//! `conversation/import`: a transcript in another tool's format becomes a
//! new session, written to its own log before it is opened. The work runs
//! off the state owner (`server::importer`), which answers when it is done.

use crate::protocol::methods::Import;
use crate::protocol::{ImportParams, ImportResult};
use crate::server::context::Context;
use crate::server::importer;
use crate::server::jobs::Pending;
use crate::server::rpc::Reply;

pub fn start(
    context: &mut Context,
    pending: Pending<Import>,
    params: ImportParams,
) -> Reply<ImportResult> {
    importer::start(context.state, context.results, pending, params)
}
