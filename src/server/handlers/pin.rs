use crate::engine;
use crate::protocol::{PinParams, PinResult};
use crate::server::context::Context;
use crate::server::rpc::RpcResult;

/// Pins text the user wants kept verbatim through every compaction.
pub fn handle(context: &mut Context, params: PinParams) -> RpcResult<PinResult> {
    let open = context.state.sessions.get_mut(&params.session_id)?;
    engine::append::pin(open, params.text)?;
    Ok(PinResult {
        pins: open.session.pins().to_vec(),
    })
}
