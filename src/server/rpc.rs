//! What a request is answered with: a result or an `RpcError` (engine and
//! store errors get their codes here, in one place), now or later
//! (`Reply`), and params decoded with errors that name the field.

use lsp_server::ErrorCode;
use serde::de::DeserializeOwned;

use crate::engine::EngineError;
use crate::protocol::error_codes;
use crate::store::StoreError;

/// An error answered to a request.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i32,
    pub message: String,
}

impl RpcError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> RpcError {
        RpcError {
            code: code as i32,
            message: message.into(),
        }
    }
    pub fn invalid_params(message: impl Into<String>) -> RpcError {
        RpcError::new(ErrorCode::InvalidParams, message)
    }
    pub fn internal(message: impl Into<String>) -> RpcError {
        RpcError::new(ErrorCode::InternalError, message)
    }
}

/// The one place engine (and store) errors get their codes.
impl From<EngineError> for RpcError {
    fn from(e: EngineError) -> RpcError {
        match e {
            EngineError::Invalid(message) => RpcError::invalid_params(message),
            EngineError::Failed(message) => RpcError::internal(message),
            EngineError::Refused(
                e @ (StoreError::InvalidId { .. } | StoreError::Exists { .. }),
            ) => RpcError::invalid_params(format!("sessionId: {e}")),
            EngineError::Refused(e @ StoreError::Locked { .. }) => RpcError {
                code: error_codes::SESSION_LOCKED,
                message: e.to_string(),
            },
            EngineError::Refused(e @ StoreError::ReadOnly { .. }) => RpcError {
                code: error_codes::SESSION_READ_ONLY,
                message: e.to_string(),
            },
            e @ EngineError::Follows { .. } => RpcError {
                code: error_codes::SESSION_READ_ONLY,
                message: e.to_string(),
            },
            EngineError::Refused(e @ StoreError::Io { .. }) => RpcError::internal(e.to_string()),
        }
    }
}

pub type RpcResult<T> = Result<T, RpcError>;

/// How a request is answered: with a `T` now, or later by a background
/// job (which holds the request's `jobs::Pending`). The routes turn a
/// handler's typed reply into JSON (`Reply::json`).
pub(crate) enum Reply<T = serde_json::Value> {
    Now(RpcResult<T>),
    /// The result, already written as its answer's frame (an answer too
    /// large to be held twice: `ResultFrame`).
    Framed(ResultFrame),
    /// A background job owns the answer.
    Later,
}

impl<T: serde::Serialize> Reply<T> {
    pub(crate) fn json(self) -> Reply {
        match self {
            Reply::Now(result) => Reply::Now(result.map(to_json)),
            Reply::Framed(frame) => Reply::Framed(frame),
            Reply::Later => Reply::Later,
        }
    }
}

/// A result written straight into the JSON text of its answer, with no
/// `serde_json::Value` in between and its id still to come: the id is the
/// client's once `clients` translates the dispatcher's, and goes last
/// (`close`), so the text is never copied whole to add it. An answer of
/// 78 MB of images is then held once on its way out, not three times
/// (the result, its `Value`, the frame).
#[derive(Debug)]
pub(crate) struct ResultFrame<T = ()> {
    text: Vec<u8>,
    of: std::marker::PhantomData<fn() -> T>,
}

impl<T> ResultFrame<T> {
    /// The frame of an answer whose result is `result`, which writes the
    /// JSON a `T` writes (a view that reads large data as it is written;
    /// its tests hold it to `T`).
    pub(crate) fn written_as(result: &impl serde::Serialize) -> ResultFrame<T> {
        let mut text = br#"{"jsonrpc":"2.0","result":"#.to_vec();
        serde_json::to_writer(&mut text, result).expect("results serialize");
        ResultFrame {
            text,
            of: std::marker::PhantomData,
        }
    }

    /// The same frame, its result's type forgotten (the routes check it).
    pub(crate) fn erase(self) -> ResultFrame {
        ResultFrame {
            text: self.text,
            of: std::marker::PhantomData,
        }
    }
}

impl ResultFrame {
    /// The whole answer, under the id the client gave its request.
    pub(crate) fn close(mut self, id: &lsp_server::RequestId) -> String {
        self.text.extend_from_slice(br#","id":"#);
        serde_json::to_writer(&mut self.text, id).expect("ids serialize");
        self.text.push(b'}');
        // serde_json writes UTF-8; the check reads it once, copies nothing.
        String::from_utf8(self.text).expect("serde_json writes UTF-8")
    }
}

/// A result as JSON.
pub(crate) fn to_json(result: impl serde::Serialize) -> serde_json::Value {
    serde_json::to_value(result).expect("results serialize")
}

pub(crate) fn no_session(id: &str) -> RpcError {
    RpcError::invalid_params(format!(
        "sessionId: no open session `{}` (call conversation/open first)",
        crate::store::shown_id(id)
    ))
}

/// Decodes params into `P`. Absent or null params are an empty object, and
/// a one-element array holding an object (or null) is unwrapped, since some
/// clients wrap params that way. Errors name the offending field.
pub(crate) fn parse_params<P: DeserializeOwned>(params: serde_json::Value) -> RpcResult<P> {
    let params = match params {
        serde_json::Value::Null => serde_json::json!({}),
        serde_json::Value::Array(mut items)
            if items.len() == 1 && (items[0].is_object() || items[0].is_null()) =>
        {
            match items.remove(0) {
                serde_json::Value::Null => serde_json::json!({}),
                item => item,
            }
        }
        serde_json::Value::Object(map) => serde_json::Value::Object(map),
        other => {
            return Err(RpcError::invalid_params(format!(
                "params must be an object, got {}",
                json_kind(&other)
            )))
        }
    };
    serde_path_to_error::deserialize(params).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        if path == "." {
            RpcError::invalid_params(format!("invalid params: {inner}"))
        } else {
            RpcError::invalid_params(format!("invalid params at `{path}`: {inner}"))
        }
    })
}

fn json_kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::SessionParams;
    use serde_json::json;

    /// A framed answer is the answer `lsp-server` writes for the same
    /// result, whatever the id.
    #[test]
    fn a_framed_answer_reads_as_the_answer_of_its_result() {
        let result =
            json!({"sessionId": "s", "messages": [{"role": "user", "content": "é \"x\""}]});
        for id in [
            lsp_server::RequestId::from(7),
            lsp_server::RequestId::from("a\"b".to_string()),
        ] {
            let text = ResultFrame::<()>::written_as(&result).erase().close(&id);
            let framed: serde_json::Value = serde_json::from_str(&text).unwrap();
            let response = lsp_server::Response::new_ok(id, result.clone());
            let mut expected = serde_json::to_value(&response).unwrap();
            expected["jsonrpc"] = json!("2.0");
            assert_eq!(framed, expected);
        }
    }

    #[test]
    fn params_errors_name_the_field() {
        let err = parse_params::<SessionParams>(json!({})).unwrap_err();
        assert_eq!(err.code, -32602);
        assert!(err.message.contains("sessionId"), "{}", err.message);
        let err = parse_params::<crate::protocol::AppendParams>(
            json!({"sessionId": "s", "messages": [{"role": "user", "content": "x"}, {"role": "robot"}]}),
        )
        .unwrap_err();
        assert!(err.message.contains("messages[1]"), "{}", err.message);
        let err = parse_params::<SessionParams>(json!("s")).unwrap_err();
        assert!(err.message.contains("must be an object"), "{}", err.message);
    }

    #[test]
    fn null_and_wrapped_params_are_accepted() {
        let p: crate::protocol::OpenParams = parse_params(json!(null)).unwrap();
        assert!(p.session_id.is_none());
        let p: crate::protocol::OpenParams = parse_params(json!([null])).unwrap();
        assert!(p.session_id.is_none());
        let p: SessionParams = parse_params(json!([{"sessionId": "x"}])).unwrap();
        assert_eq!(p.session_id, "x");
    }
}
