//! Which checked messages reach `rmcp`, and which `compactd mcp` answers
//! itself, so that every request is answered exactly once (pure: the stdio
//! pump in `stdio.rs` feeds it both directions).
//!
//! - A request whose id is still in flight (sent on, not yet answered) is
//!   refused -32600 naming the id, and not run: `rmcp` keeps one request per
//!   id and would drop one of the two answers. The id is free again once
//!   its answer went out (or its request was cancelled, since `rmcp` then
//!   sends no answer).
//! - Before `initialize`, only `ping` and requests carrying MCP 2026-07-28's
//!   inline metadata (`_meta` with the protocol version and client
//!   capabilities, which `rmcp` serves without a handshake) go on; any other
//!   request is refused -32600 saying to send `initialize` first, an
//!   `initialize` whose params `rmcp` cannot read -32602, and notifications
//!   and responses are dropped (logged): `rmcp` stops the whole server at
//!   the first of them.

use std::collections::HashSet;

use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, GetMeta, InitializeRequestParams, ProtocolVersion,
};
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::Value;

use super::framing::{kind, short, Kind, INVALID_REQUEST};

const INVALID_PARAMS: i32 = -32602;
/// Where MCP 2026-07-28 puts a request's protocol version (a JSON pointer).
const PROTOCOL_VERSION: &str = "/params/_meta/io.modelcontextprotocol~1protocolVersion";
use crate::transport::decode::error_response;

/// What to do with one message from the client.
#[derive(Debug, Clone, PartialEq)]
pub enum Admit {
    /// Pass it to `rmcp`.
    Forward,
    /// Answer it with `response`, not run; `why` is for the log.
    Refuse { response: Value, why: String },
    /// Neither (a notification or a response `rmcp` must not see); logged.
    Drop(String),
}

#[derive(Debug, Default)]
pub struct Gate {
    /// `initialize` (or a request with inline metadata) went on.
    started: bool,
    /// The ids of the requests sent on and not answered yet, as JSON text
    /// (`1` and `"1"` are different ids).
    in_flight: HashSet<String>,
}

impl Gate {
    /// Decides on `message`, one that `framing::decode_line` accepted.
    pub fn admit(&mut self, message: &Value) -> Admit {
        match kind(message) {
            Some(Kind::Request { id, method }) => self.admit_request(message, id, method),
            Some(Kind::Notification { method }) if !self.started => Admit::Drop(format!(
                "the notification `{}` came before `initialize`",
                short(method)
            )),
            Some(Kind::Notification { method }) => {
                if method == "notifications/cancelled" {
                    if let Some(id) = message.pointer("/params/requestId") {
                        self.in_flight.remove(&id.to_string());
                    }
                }
                Admit::Forward
            }
            Some(Kind::Response { .. }) if !self.started => {
                Admit::Drop("a response came before `initialize`".into())
            }
            Some(Kind::Response { .. }) => Admit::Forward,
            None => Admit::Drop("not a JSON-RPC 2.0 message".into()),
        }
    }

    fn admit_request(&mut self, message: &Value, id: &Value, method: &str) -> Admit {
        let key = id.to_string();
        let method = short(method);
        if self.in_flight.contains(&key) {
            return refuse(id, INVALID_REQUEST, format!(
                "invalid request: id {key} is already in use by a request still in flight; `{method}` was not run (use a new id for each request)"
            ));
        }
        if !self.started {
            match method.as_str() {
                "initialize" => match initialize_problem(message) {
                    None => self.started = true,
                    // `rmcp` would take it for another request, and stop
                    // at the `initialized` notification after it.
                    Some(why) => return refuse(id, INVALID_PARAMS, why),
                },
                "ping" | "server/discover" => {}
                _ if has_inline_metadata(message) => self.started = true,
                // Meant for the handshake-free lifecycle: `rmcp` names what
                // its `_meta` lacks, and waits on.
                _ if message.pointer(PROTOCOL_VERSION).is_some() => {}
                _ => {
                    return refuse(id, INVALID_REQUEST, format!(
                        "invalid request: the server is not initialized: send `initialize` first (the MCP lifecycle); `{method}` was not run"
                    ))
                }
            }
        }
        self.in_flight.insert(key);
        Admit::Forward
    }

    /// One line `rmcp` wrote: an answer frees its request's id.
    pub fn sent(&mut self, line: &[u8]) {
        #[derive(Deserialize)]
        struct Peek {
            #[serde(default)]
            id: Option<Value>,
            #[serde(default)]
            method: Option<IgnoredAny>,
        }
        if let Ok(Peek {
            id: Some(id),
            method: None,
        }) = serde_json::from_slice(line)
        {
            self.in_flight.remove(&id.to_string());
        }
    }

    /// How many requests are in flight.
    #[cfg(test)]
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }
}

/// Why `rmcp` would not read `message` as `initialize`, if it would not.
fn initialize_problem(message: &Value) -> Option<String> {
    match ClientJsonRpcMessage::deserialize(message) {
        Ok(ClientJsonRpcMessage::Request(request))
            if matches!(request.request, ClientRequest::InitializeRequest(_)) =>
        {
            None
        }
        _ => {
            let params = message.get("params").unwrap_or(&Value::Null);
            let why = match InitializeRequestParams::deserialize(params) {
                Err(e) => e.to_string(),
                Ok(_) => "not an initialize request".into(),
            };
            Some(format!("invalid params: `initialize` takes protocolVersion, capabilities and clientInfo ({why}); the server is still not initialized"))
        }
    }
}

/// A request that names its protocol version and capabilities itself
/// (MCP 2026-07-28), which `rmcp` serves without `initialize`: read as
/// `rmcp` reads it.
fn has_inline_metadata(message: &Value) -> bool {
    let Ok(ClientJsonRpcMessage::Request(request)) = ClientJsonRpcMessage::deserialize(message)
    else {
        return false;
    };
    let meta = request.request.get_meta();
    meta.protocol_version().is_some()
        && meta
            .missing_required_keys(&ProtocolVersion::V_2026_07_28)
            .is_empty()
}

fn refuse(id: &Value, code: i32, why: String) -> Admit {
    Admit::Refuse {
        response: error_response(id, code, &why),
        why,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(id: Value, method: &str) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {}})
    }

    fn refusal(admit: Admit) -> (Value, String) {
        match admit {
            Admit::Refuse { response, why } => (response, why),
            other => panic!("not refused: {other:?}"),
        }
    }

    #[test]
    fn before_initialize_only_ping_and_inline_metadata_go_on() {
        let mut gate = Gate::default();
        let (response, why) = refusal(gate.admit(&request(json!(1), "tools/list")));
        assert_eq!(response["id"], 1);
        assert_eq!(response["error"]["code"], INVALID_REQUEST);
        assert!(why.contains("send `initialize` first"), "{why}");
        assert_eq!(gate.admit(&request(json!(2), "ping")), Admit::Forward);
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert!(matches!(gate.admit(&initialized), Admit::Drop(_)));
        let answer = json!({"jsonrpc": "2.0", "id": 9, "result": {}});
        assert!(matches!(gate.admit(&answer), Admit::Drop(_)));
        // An `initialize` rmcp cannot read does not start anything.
        let (response, why) = refusal(gate.admit(&request(json!(3), "initialize")));
        assert_eq!(response["error"]["code"], INVALID_PARAMS);
        assert!(why.contains("protocolVersion"), "{why}");
        assert!(matches!(gate.admit(&initialized), Admit::Drop(_)));
        assert_eq!(gate.admit(&initialize(json!(3))), Admit::Forward);
        assert_eq!(gate.admit(&initialized), Admit::Forward);
        assert_eq!(gate.admit(&request(json!(4), "tools/list")), Admit::Forward);

        let mut stateless = Gate::default();
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}}});
        let partial = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28"}}});
        assert_eq!(stateless.admit(&partial), Admit::Forward);
        assert!(matches!(stateless.admit(&initialized), Admit::Drop(_)));
        assert_eq!(stateless.admit(&call), Admit::Forward);
        assert_eq!(stateless.admit(&initialized), Admit::Forward);
    }

    fn initialize(id: Value) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}})
    }

    #[test]
    fn an_id_in_flight_is_refused_until_its_answer_went_out() {
        let mut gate = Gate::default();
        assert_eq!(gate.admit(&initialize(json!(0))), Admit::Forward);
        gate.sent(br#"{"jsonrpc":"2.0","id":0,"result":{}}"#);
        assert_eq!(gate.admit(&request(json!(7), "tools/list")), Admit::Forward);
        // `"7"` is another id.
        assert_eq!(
            gate.admit(&request(json!("7"), "tools/list")),
            Admit::Forward
        );
        let (response, why) = refusal(gate.admit(&request(json!(7), "tools/call")));
        assert_eq!(response["id"], 7);
        assert!(
            why.contains("id 7 is already in use") && why.contains("`tools/call`"),
            "{why}"
        );
        // A request of the server's with that id frees nothing.
        gate.sent(br#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#);
        assert_eq!(gate.in_flight(), 2);
        gate.sent(br#"{"jsonrpc":"2.0","id":7,"error":{"code":-1,"message":"x"}}"#);
        assert_eq!(gate.admit(&request(json!(7), "tools/call")), Admit::Forward);
        // A cancelled request gets no answer: its id is free at once.
        let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}});
        assert_eq!(gate.admit(&cancel), Admit::Forward);
        assert_eq!(gate.admit(&request(json!(7), "ping")), Admit::Forward);
    }
}
