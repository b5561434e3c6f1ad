use crate::engine::blobs::Restoring;
use crate::protocol::{HistoryResult, MeterInfo, SessionParams};
use crate::server::context::Context;
use crate::server::rpc::{ResultFrame, RpcResult};

/// The history is written straight into the answer's frame, each image
/// read back from the blob store as it is written (`Restoring`): the
/// largest answer compactd gives is held once on its way out.
pub fn handle(
    context: &mut Context,
    params: SessionParams,
) -> RpcResult<ResultFrame<HistoryResult>> {
    let state = &*context.state;
    let (open, mirror) = state.sessions.get_followed(&params.session_id)?;
    let messages = open.session.history();
    Ok(ResultFrame::written_as(&HistoryAnswer {
        session_id: &params.session_id,
        messages: Restoring::history(open, &messages),
        meter: state.meter(open, mirror),
    }))
}

/// `HistoryResult` as it is written: the same fields, in the same order,
/// the messages' data read back as they are written.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct HistoryAnswer<'a, M: serde::Serialize = Restoring<'a>> {
    session_id: &'a str,
    messages: M,
    meter: MeterInfo,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::Message;

    /// The written answer is `HistoryResult`'s JSON, field for field: the
    /// view cannot drift from the wire type the schema is made from.
    #[test]
    fn the_written_history_is_the_history_result() {
        let messages: Vec<Message> = serde_json::from_value(serde_json::json!([
            {"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}]},
            {"role": "assistant", "content": "seen"}
        ]))
        .unwrap();
        let meter = MeterInfo {
            context_tokens: 10,
            context_window: 100,
            percent: 10.0,
            auto_compact_at: 80,
            source: crate::protocol::MeterSource::Estimate,
            overhead_tokens: 3,
            agent_auto_compact: None,
        };
        let result = HistoryResult {
            session_id: "s".into(),
            messages: messages.clone(),
            meter: meter.clone(),
        };
        let answer = HistoryAnswer {
            session_id: "s",
            messages: &messages,
            meter,
        };
        assert_eq!(
            serde_json::to_string(&answer).unwrap(),
            serde_json::to_string(&result).unwrap()
        );
    }
}
