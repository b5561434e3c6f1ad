use crate::engine;
use crate::protocol::{PinParams, PinResult};
use crate::server::{RpcResult, Server};

/// Pins text the user wants kept verbatim through every compaction.
pub fn handle(server: &mut Server, params: PinParams) -> RpcResult<PinResult> {
    let open = server.session_mut(&params.session_id)?;
    engine::append::pin(open, params.text)?;
    Ok(PinResult {
        pins: open.session.pins().to_vec(),
    })
}
