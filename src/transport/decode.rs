//! JSON-RPC 2.0 classification of what the framing layer produced: a pure
//! function from one [`FrameEvent`] to what the dispatcher does with it.
//!
//! - Invalid JSON: `-32700`, with the message's `id` when it can still be
//!   read (`leading_id`), else `null`. A lone surrogate escape is no
//!   error: it reads as U+FFFD (`body`).
//! - Valid JSON nested deeper than `body::MAX_DEPTH`: `-32600`, with the id
//!   found the same way.
//! - Valid JSON that is no request, notification or response (not an
//!   object, a batch array, `jsonrpc` not `"2.0"`, `method` not a string, no
//!   `method` and no `result`/`error`): `-32600`, with the message's `id`
//!   when it is a number or a string (so the client can match it), else
//!   `null`. A batch gets one array answering each element.
//! - Request ids are what LSP allows: strings, and integers in LSP's
//!   `integer` range (-2^31 to 2^31-1, which is also `lsp-server`'s id type).
//!   Any other `id` (a float, a larger integer, a boolean, `null`, an
//!   object) makes the message an invalid request: it is answered `-32600`
//!   and never run, and in particular never taken for a notification.
//! - A frame over `maxFrameBytes`: `-32600` with the id found at the start
//!   of its body, else `null`.
//!
//! Framing garbage that is no frame at all is logged and not answered: there
//! is nothing to answer it to.

use lsp_server::{ErrorCode, Message, Notification, Request, RequestId, Response};
use serde_json::{json, Map, Value};

use super::framing::FrameEvent;
#[cfg(test)]
use super::leading_id::leading_id;

/// What the dispatcher does with one piece of input.
#[derive(Debug, Clone)]
pub enum Incoming {
    /// A well-formed request, notification or response.
    Message(Message),
    /// Refused: send `response` as it is; `why` is for the log.
    Refused { response: Value, why: String },
    /// Dropped without an answer (no frame, or a malformed response to one
    /// of our own requests); `why` is for the log.
    Skipped(String),
}

const PARSE_ERROR: i32 = ErrorCode::ParseError as i32;
const INVALID_REQUEST: i32 = ErrorCode::InvalidRequest as i32;

/// Classifies one framing event.
pub fn classify(event: FrameEvent) -> Incoming {
    match event {
        FrameEvent::Json(value) => decode(value),
        FrameEvent::InvalidJson { why, id, too_deep } => {
            let id = id.unwrap_or(Value::Null);
            if too_deep {
                refuse(&id, INVALID_REQUEST, format!("invalid request: {why}"))
            } else {
                refuse(&id, PARSE_ERROR, format!("parse error: {why}"))
            }
        }
        FrameEvent::TooLarge {
            declared,
            limit,
            id,
        } => refuse(
            &id.unwrap_or(Value::Null),
            INVALID_REQUEST,
            format!("a frame of {declared} bytes is over maxFrameBytes ({limit}); it was skipped unread"),
        ),
        FrameEvent::Skipped(why) => Incoming::Skipped(why),
    }
}

/// Classifies one JSON document.
pub fn decode(value: Value) -> Incoming {
    match value {
        Value::Object(object) => decode_object(object),
        Value::Array(items) if items.is_empty() => refuse(
            &Value::Null,
            INVALID_REQUEST,
            "invalid request: an empty batch".to_string(),
        ),
        Value::Array(items) => {
            let answers: Vec<Value> = items
                .iter()
                .map(|item| error_response(&echo_id(item.get("id")), INVALID_REQUEST, BATCH))
                .collect();
            Incoming::Refused {
                why: format!("invalid request: a batch ({} messages)", answers.len()),
                response: Value::Array(answers),
            }
        }
        other => refuse(
            &Value::Null,
            INVALID_REQUEST,
            format!(
                "invalid request: a JSON-RPC message is an object, got {}",
                kind(&other)
            ),
        ),
    }
}

const BATCH: &str = "invalid request: batches are not supported (LSP sends one message per frame); nothing in the batch was run";

fn decode_object(mut object: Map<String, Value>) -> Incoming {
    let echo = echo_id(object.get("id"));
    let invalid = |why: String| refuse(&echo, INVALID_REQUEST, format!("invalid request: {why}"));
    match object.get("jsonrpc") {
        Some(Value::String(v)) if v == "2.0" => {}
        Some(other) => return invalid(format!("`jsonrpc` must be \"2.0\", got {}", kind(other))),
        None => return invalid("`jsonrpc: \"2.0\"` is missing".into()),
    }
    let params = object.remove("params").unwrap_or(Value::Null);
    match object.remove("method") {
        Some(Value::String(method)) => match object.get("id") {
            None => Incoming::Message(Message::Notification(Notification { method, params })),
            Some(id) => match request_id(id) {
                Ok(id) => Incoming::Message(Message::Request(Request { id, method, params })),
                Err(why) => invalid(format!("{why}; `{}` was not run", short(&method))),
            },
        },
        Some(other) => invalid(format!("`method` must be a string, got {}", kind(&other))),
        None if object.contains_key("result") || object.contains_key("error") => {
            match serde_json::from_value::<Response>(Value::Object(object)) {
                Ok(response) => Incoming::Message(Message::Response(response)),
                Err(e) => Incoming::Skipped(format!("malformed response from the client: {e}")),
            }
        }
        None => invalid("no `method`, and not a response (no `result` or `error`)".into()),
    }
}

/// A request id LSP allows: a string, or an integer in i32 range.
fn request_id(id: &Value) -> Result<RequestId, String> {
    const RULE: &str = "ids are strings or integers from -2147483648 to 2147483647";
    match id {
        Value::String(s) => Ok(RequestId::from(s.clone())),
        Value::Number(n) => match n.as_i64().map(i32::try_from) {
            Some(Ok(i)) => Ok(RequestId::from(i)),
            Some(Err(_)) => Err(format!("id {n} is out of range ({RULE})")),
            None if n.is_u64() => Err(format!("id {n} is out of range ({RULE})")),
            None => Err(format!("id {n} is not an integer ({RULE})")),
        },
        other => Err(format!("the id is {} ({RULE})", kind(other))),
    }
}

/// The id to answer an invalid message with: its own when the client can
/// match it (a number or a string), else `null`.
fn echo_id(id: Option<&Value>) -> Value {
    match id {
        Some(id @ (Value::Number(_) | Value::String(_))) => id.clone(),
        _ => Value::Null,
    }
}

fn refuse(id: &Value, code: i32, message: String) -> Incoming {
    Incoming::Refused {
        response: error_response(id, code, &message),
        why: message,
    }
}

/// The answers a refusal holds: one, or one per element of a batch.
pub fn answers(response: &Value) -> Vec<&Value> {
    match response {
        Value::Array(items) => items.iter().collect(),
        single => vec![single],
    }
}

/// A JSON-RPC error response; built as JSON because `lsp-server`'s ids
/// cannot hold `null` or the out-of-range ids echoed back here.
pub fn error_response(id: &Value, code: i32, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// A method name as it appears in errors and logs: at most 80 characters.
fn short(method: &str) -> String {
    match method.char_indices().nth(80) {
        Some((cut, _)) => format!("{}…", &method[..cut]),
        None => method.to_string(),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_f64() => "a float",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests;
