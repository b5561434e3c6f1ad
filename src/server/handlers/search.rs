//! `conversation/search`: runs off the state owner (`server::recall`),
//! which answers when it is done.

use crate::protocol::methods::Search;
use crate::protocol::{SearchParams, SearchResult};
use crate::server::context::Context;
use crate::server::jobs::Pending;
use crate::server::rpc::Reply;

pub fn start(
    context: &mut Context,
    pending: Pending<Search>,
    params: SearchParams,
) -> Reply<SearchResult> {
    let state = &mut *context.state;
    state
        .recall
        .start(&state.sessions, context.results, pending, params)
}
