//! `compactd mcp`'s input, one line at a time, before `rmcp` sees it: pure
//! functions (no I/O), so the fuzz target `mcp_framing` drives them as the
//! server does. `rmcp`'s stdio reader drops what it cannot parse without
//! an answer; this layer answers it instead, by the rules the LSP side
//! follows (`transport::body`, docs/protocol.md, "Errors"):
//!
//! - A line is at most [`MAX_LINE_BYTES`]; a longer one is answered -32600
//!   as soon as it passes the cap (with the id found in its first 64 KiB,
//!   else `null`) and skipped up to its newline without being kept.
//! - A line that is not JSON (cut short, invalid UTF-8, garbage): -32700,
//!   with the request's id when it can still be read (`leading_id`), else
//!   `null`. A lone surrogate escape (`"\ud800"`) is no error: it reads as
//!   U+FFFD. Arrays and objects nested deeper than 127 levels: -32600.
//! - JSON that is no JSON-RPC 2.0 message, or a request `rmcp` cannot read
//!   (an id that is neither a string nor a 64-bit integer, a batch):
//!   -32600 with the id when it is a string or a number, else `null`.
//!
//! What passes is one JSON-RPC message as a `Value`, handed to `rmcp`
//! re-serialized: exactly what was checked here.

use rmcp::model::ClientJsonRpcMessage;
use serde::Deserialize;
use serde_json::Value;

use crate::transport::body;
use crate::transport::decode::error_response;
use crate::transport::framing::ID_PREFIX_BYTES;
use crate::transport::leading_id::leading_id;

/// The longest line read (without its newline): `rmcp`'s own stdio cap.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;
pub const PARSE_ERROR: i32 = -32700;
pub const INVALID_REQUEST: i32 = -32600;
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// A line refused: what to write back (an error response, an array of
/// them for a batch, or nothing for a notification or a client's response
/// `rmcp` could not read), and why, for the log.
#[derive(Debug, Clone, PartialEq)]
pub struct FramingError {
    pub response: Option<Value>,
    pub why: String,
}

impl FramingError {
    fn answer(id: Value, code: i32, why: String) -> FramingError {
        FramingError {
            response: Some(error_response(&id, code, &why)),
            why,
        }
    }

    /// A line over `limit` bytes, of which `head` is the start.
    pub fn too_long(head: &[u8], limit: usize) -> FramingError {
        let head = &head[..head.len().min(ID_PREFIX_BYTES)];
        FramingError::answer(
            leading_id(head).unwrap_or(Value::Null),
            INVALID_REQUEST,
            format!("invalid request: the line is too long (over {limit} bytes, compactd mcp's limit); it was skipped unread"),
        )
    }
}

/// What a checked message is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind<'a> {
    Request {
        id: &'a Value,
        method: &'a str,
    },
    Notification {
        method: &'a str,
    },
    /// The client's answer to a request of the server's.
    Response {
        id: &'a Value,
    },
}

/// One line (without its newline; a trailing `\r` and a leading byte
/// order mark are dropped) as one JSON-RPC 2.0 message, or the answer that
/// refuses it.
pub fn decode_line(line: &[u8]) -> Result<Value, FramingError> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(UTF8_BOM).unwrap_or(line);
    let value = body::parse(line).map_err(|unread| {
        let id = unread.id.unwrap_or(Value::Null);
        match unread.too_deep {
            true => FramingError::answer(
                id,
                INVALID_REQUEST,
                format!("invalid request: {}", unread.why),
            ),
            false => FramingError::answer(
                id,
                PARSE_ERROR,
                format!("parse error: the line is not valid JSON ({})", unread.why),
            ),
        }
    })?;
    check_message(&value)?;
    Ok(value)
}

/// What `message` is, when it is a JSON-RPC 2.0 message (as every value
/// `decode_line` returns is).
pub fn kind(message: &Value) -> Option<Kind<'_>> {
    let object = message.as_object()?;
    if object.get("jsonrpc")?.as_str() != Some("2.0") {
        return None;
    }
    match (object.get("method"), object.get("id")) {
        (Some(Value::String(method)), Some(id)) if is_id(id) => Some(Kind::Request { id, method }),
        (Some(Value::String(method)), None) => Some(Kind::Notification { method }),
        (None, Some(id)) if object.contains_key("result") || object.contains_key("error") => {
            Some(Kind::Response { id })
        }
        _ => None,
    }
}

/// A request id as MCP has them: a string or an integer.
fn is_id(id: &Value) -> bool {
    id.is_string() || id.is_i64() || id.is_u64()
}

/// `value` is a message `rmcp` reads, or the answer refusing it.
fn check_message(value: &Value) -> Result<(), FramingError> {
    let echo = match value.get("id") {
        Some(id @ (Value::Number(_) | Value::String(_))) => id.clone(),
        _ => Value::Null,
    };
    let invalid = |why: String| {
        Err(FramingError::answer(
            echo.clone(),
            INVALID_REQUEST,
            format!("invalid request: {why}"),
        ))
    };
    let kind = match value {
        Value::Array(items) => return Err(batch(items)),
        Value::Object(_) => match kind(value) {
            Some(kind) => kind,
            None => return invalid(shape_problem(value)),
        },
        _ => return invalid("a JSON-RPC message is an object".into()),
    };
    match (ClientJsonRpcMessage::deserialize(value), kind) {
        (Ok(_), _) => Ok(()),
        (Err(e), Kind::Request { method, .. }) => {
            invalid(format!("{e}; `{}` was not run", short(method)))
        }
        (Err(e), _) => Err(FramingError {
            response: None,
            why: format!("a message the MCP server cannot read, dropped: {e}"),
        }),
    }
}

/// Why an object is no JSON-RPC 2.0 message.
fn shape_problem(value: &Value) -> String {
    match (value.get("jsonrpc"), value.get("method"), value.get("id")) {
        (Some(v), _, _) if v.as_str() != Some("2.0") => "`jsonrpc` must be \"2.0\"".into(),
        (None, _, _) => "`jsonrpc: \"2.0\"` is missing".into(),
        (_, Some(Value::String(method)), Some(_)) => format!(
            "the id must be a string or an integer; `{}` was not run",
            short(method)
        ),
        (_, Some(_), _) => "`method` must be a string".into(),
        _ => "no `method`, and not a response (no `result` or `error`)".into(),
    }
}

/// A batch: one refusal for each element, none of which is run.
fn batch(items: &[Value]) -> FramingError {
    const WHY: &str = "invalid request: batches are not supported (MCP sends one message per line); nothing in the batch was run";
    let answers: Vec<Value> = items
        .iter()
        .map(|item| {
            let id = match item.get("id") {
                Some(id @ (Value::Number(_) | Value::String(_))) => id.clone(),
                _ => Value::Null,
            };
            error_response(&id, INVALID_REQUEST, WHY)
        })
        .collect();
    FramingError {
        response: Some(match answers.is_empty() {
            true => error_response(
                &Value::Null,
                INVALID_REQUEST,
                "invalid request: an empty batch",
            ),
            false => Value::Array(answers),
        }),
        why: format!("a batch of {} messages", items.len()),
    }
}

/// A method name as errors show it: at most 80 characters.
pub(super) fn short(method: &str) -> String {
    match method.char_indices().nth(80) {
        Some((cut, _)) => format!("{}…", &method[..cut]),
        None => method.to_string(),
    }
}

/// What [`LineSplitter`] found.
#[derive(Debug, Clone, PartialEq)]
pub enum LineEvent {
    /// A whole line, without its newline.
    Line(Vec<u8>),
    /// A line that passed the cap: its first bytes (64 KiB, or the cap and
    /// one byte when less), for its id. The rest of it, up to its newline,
    /// is skipped.
    TooLong { head: Vec<u8> },
}

/// Cuts a byte stream into lines of at most `cap` bytes, holding at most
/// one line (never more than `cap` bytes) at a time.
#[derive(Debug)]
pub struct LineSplitter {
    cap: usize,
    line: Vec<u8>,
    /// Inside a line over the cap, already reported.
    skipping: bool,
}

impl LineSplitter {
    pub fn new(cap: usize) -> LineSplitter {
        LineSplitter {
            cap,
            line: Vec::new(),
            skipping: false,
        }
    }

    /// Reads `bytes`: each line they end, and each line that passes the
    /// cap in them, goes to `out`.
    pub fn feed(&mut self, mut bytes: &[u8], out: &mut Vec<LineEvent>) {
        while !bytes.is_empty() {
            let newline = memchr::memchr(b'\n', bytes);
            let piece = &bytes[..newline.unwrap_or(bytes.len())];
            if !self.skipping {
                if self.line.len() + piece.len() > self.cap {
                    // The same bytes however the input was cut.
                    let keep = ID_PREFIX_BYTES.min(self.cap + 1);
                    let mut head = std::mem::take(&mut self.line);
                    head.truncate(keep);
                    let more = keep.saturating_sub(head.len()).min(piece.len());
                    head.extend_from_slice(&piece[..more]);
                    head.shrink_to_fit();
                    out.push(LineEvent::TooLong { head });
                    self.skipping = true;
                } else {
                    self.line.extend_from_slice(piece);
                }
            }
            let Some(at) = newline else { break };
            if !self.skipping {
                out.push(LineEvent::Line(std::mem::take(&mut self.line)));
            }
            self.skipping = false;
            bytes = &bytes[at + 1..];
        }
    }

    /// The end of input: a last line without its newline is a line too.
    pub fn finish(&mut self, out: &mut Vec<LineEvent>) {
        if !self.skipping && !self.line.is_empty() {
            out.push(LineEvent::Line(std::mem::take(&mut self.line)));
        }
        self.skipping = false;
    }
}

/// Whether a line holds nothing but white space (skipped, not answered).
pub fn is_blank(line: &[u8]) -> bool {
    line.iter().all(u8::is_ascii_whitespace)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The code and id of the answer refusing `line`.
    fn refusal(line: &[u8]) -> (i64, Value) {
        let refused = decode_line(line).expect_err("refused");
        let response = refused.response.expect("answered");
        (
            response["error"]["code"].as_i64().unwrap(),
            response["id"].clone(),
        )
    }

    #[test]
    fn bad_lines_are_refused_with_the_id_when_it_can_be_read() {
        let deep = "[".repeat(100_000);
        let cases: [(&[u8], i64, Value); 8] = [
            (
                br#"{"jsonrpc":"2.0","method":"tools/call","params":{"na"#,
                -32700,
                Value::Null,
            ),
            (
                br#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"na"#,
                -32700,
                json!(4),
            ),
            (
                b"{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"x\":\"\xff\xfe\"}",
                -32700,
                Value::Null,
            ),
            (
                b"{\"jsonrpc\":\"2.0\",\"id\":\"q\",\"method\":\"x\xc3\x28\"}",
                -32700,
                json!("q"),
            ),
            (deep.as_bytes(), -32600, Value::Null),
            (
                br#"{"jsonrpc":"1.0","id":5,"method":"ping"}"#,
                -32600,
                json!(5),
            ),
            (
                br#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
                -32600,
                Value::Null,
            ),
            (
                br#"{"jsonrpc":"2.0","id":7,"method":"ping","params":"x"}"#,
                -32600,
                json!(7),
            ),
        ];
        for (line, code, id) in cases {
            let shown = String::from_utf8_lossy(&line[..line.len().min(60)]).into_owned();
            assert_eq!(refusal(line), (code, id), "{shown}");
        }
        let batch = decode_line(br#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{}]"#).unwrap_err();
        let answers = batch.response.unwrap();
        assert_eq!(answers[0]["id"], 1);
        assert_eq!(answers[1]["id"], Value::Null);
        let head = br#"{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"x":"aaaa"#;
        let long = FramingError::too_long(head, MAX_LINE_BYTES)
            .response
            .unwrap();
        assert_eq!(long["id"], "big");
        assert!(long["error"]["message"]
            .as_str()
            .unwrap()
            .contains("too long"));
    }

    #[test]
    fn good_lines_pass_a_lone_surrogate_read_as_the_replacement_character() {
        let line = b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"search_history\",\"arguments\":{\"query\":\"a\\ud800\"}}}\r";
        let message = decode_line(line).unwrap();
        assert_eq!(message["params"]["arguments"]["query"], "a\u{fffd}");
        assert_eq!(
            kind(&message),
            Some(Kind::Request {
                id: &json!(1),
                method: "tools/call"
            })
        );
        let note = decode_line(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        assert!(matches!(
            kind(&note.unwrap()),
            Some(Kind::Notification { .. })
        ));
        let answer = decode_line(br#"{"jsonrpc":"2.0","id":"s1","result":{}}"#).unwrap();
        assert!(matches!(kind(&answer), Some(Kind::Response { .. })));
    }

    fn split(input: &[u8], chunk: usize, cap: usize) -> Vec<LineEvent> {
        let mut splitter = LineSplitter::new(cap);
        let mut out = Vec::new();
        for piece in input.chunks(chunk) {
            splitter.feed(piece, &mut out);
        }
        splitter.finish(&mut out);
        out
    }

    #[test]
    fn lines_over_the_cap_are_reported_once_and_skipped_however_the_input_is_cut() {
        let input = b"ab\n0123456789xyz\n\nlast";
        let expected = vec![
            LineEvent::Line(b"ab".to_vec()),
            LineEvent::TooLong {
                head: b"0123456789x".to_vec(),
            },
            LineEvent::Line(Vec::new()),
            LineEvent::Line(b"last".to_vec()),
        ];
        for chunk in 1..=input.len() {
            assert_eq!(split(input, chunk, 10), expected, "chunks of {chunk}");
        }
        // A line of exactly the cap is a line.
        assert_eq!(
            split(b"0123456789\n", 3, 10),
            vec![LineEvent::Line(b"0123456789".to_vec())]
        );
        // The head kept for the id is bounded, not the line.
        let big = vec![b'x'; 3 * ID_PREFIX_BYTES];
        let events = split(&big, 1000, ID_PREFIX_BYTES);
        assert!(
            matches!(&events[..], [LineEvent::TooLong { head }] if head.len() == ID_PREFIX_BYTES)
        );
    }
}
