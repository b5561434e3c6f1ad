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
    /// A background job owns the answer.
    Later,
}

impl<T: serde::Serialize> Reply<T> {
    pub(crate) fn json(self) -> Reply {
        match self {
            Reply::Now(result) => Reply::Now(result.map(to_json)),
            Reply::Later => Reply::Later,
        }
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
