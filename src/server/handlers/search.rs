//! `conversation/search`: runs off the state owner (`server::recall`),
//! which answers when it is done.

use lsp_server::RequestId;

use crate::protocol::SearchParams;
use crate::server::context::Context;
use crate::server::rpc::Reply;

pub fn start(context: &mut Context, id: RequestId, params: SearchParams) -> Reply {
    let state = &mut *context.state;
    state
        .recall
        .start(&state.sessions, context.results, id, params)
}
