use crate::protocol::{PinParams, PinResult};
use crate::server::{RpcError, RpcResult, Server};
use crate::store::LogEntry;

/// Pins text the user wants kept verbatim through every compaction.
pub fn handle(server: &mut Server, params: PinParams) -> RpcResult<PinResult> {
    if params.text.trim().is_empty() {
        return Err(RpcError::invalid_params(
            "invalid params at `text`: nothing to pin",
        ));
    }
    let open = server.session_mut(&params.session_id)?;
    if !open.session.pins().contains(&params.text) {
        open.log
            .append(
                &[LogEntry::Pin {
                    text: params.text.clone(),
                }],
                false,
            )
            .map_err(|e| RpcError::internal(e.to_string()))?;
        open.session.add_pin(params.text);
    }
    Ok(PinResult {
        pins: open.session.pins().to_vec(),
    })
}
