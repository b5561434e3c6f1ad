//! One frame's body (or one WebSocket message) into JSON, with the two
//! rules that make odd but legitimate input work:
//!
//! - **Lone surrogates.** `"\ud83d"` without its pair is JSON by the
//!   grammar, and Python's `json.dumps` and JavaScript's `JSON.stringify`
//!   write it (a truncated emoji, a file name decoded with
//!   `surrogateescape`), but it is no Unicode text. Each lone surrogate
//!   escape is read as U+FFFD, the replacement character, as most decoders
//!   do; a proper pair stays the character it encodes.
//! - **Depth.** Arrays and objects nest at most [`MAX_DEPTH`] levels
//!   (serde_json's recursion limit, which keeps the parser off the end of
//!   the stack). Deeper input is refused -32600, naming the limit.
//!
//! A body that still cannot be read is answered with its own id whenever
//! the id can be read (`leading_id`), so no request goes unanswered.

use serde_json::Value;

use super::leading_id::leading_id;

/// How deep arrays and objects may nest in one message, the message
/// object itself counting as the first level: serde_json's recursion limit
/// (128) allows 127.
pub const MAX_DEPTH: usize = 127;

/// A body that was not read, and the id to answer it with.
#[derive(Debug, Clone, PartialEq)]
pub struct Unread {
    pub why: String,
    pub id: Option<Value>,
    /// Nested deeper than [`MAX_DEPTH`]: valid JSON compactd refuses
    /// (-32600), rather than invalid JSON (-32700).
    pub too_deep: bool,
}

/// Parses one JSON document, lone surrogates read as U+FFFD.
pub fn parse(body: &[u8]) -> Result<Value, Unread> {
    let error = match serde_json::from_slice(body) {
        Ok(value) => return Ok(value),
        Err(e) => e,
    };
    // The rare path: only a body that failed is looked at again.
    let error = match replace_lone_surrogates(body) {
        Some(repaired) => match serde_json::from_slice(&repaired) {
            Ok(value) => return Ok(value),
            Err(e) => e,
        },
        None => error,
    };
    let too_deep = is_too_deep(&error);
    let why = if too_deep {
        format!("arrays and objects nest deeper than {MAX_DEPTH} levels, compactd's limit")
    } else {
        error.to_string()
    };
    Err(Unread {
        why,
        id: leading_id(body),
        too_deep,
    })
}

/// serde_json names its recursion limit in the message only; a test pins
/// the wording.
fn is_too_deep(error: &serde_json::Error) -> bool {
    error.to_string().starts_with("recursion limit exceeded")
}

/// A copy of `body` with every lone surrogate escape (`\ud800`–`\udfff`
/// without its pair) replaced by `\ufffd`, the same number of bytes; `None`
/// when there is none.
pub fn replace_lone_surrogates(body: &[u8]) -> Option<Vec<u8>> {
    let mut out: Option<Vec<u8>> = None;
    let mut at = 0;
    while let Some(found) = body.get(at..).and_then(|rest| memchr::memchr(b'\\', rest)) {
        at += found;
        let Some(unit) = escape_unit(body, at) else {
            // `\"`, `\\`, `\n`…: two bytes, the second never starts one.
            at += 2;
            continue;
        };
        let lone = match unit {
            0xD800..=0xDBFF => match escape_unit(body, at + 6) {
                Some(0xDC00..=0xDFFF) => {
                    at += 12;
                    continue;
                }
                _ => true,
            },
            0xDC00..=0xDFFF => true,
            _ => false,
        };
        if lone {
            out.get_or_insert_with(|| body.to_vec())[at..at + 6].copy_from_slice(b"\\ufffd");
        }
        at += 6;
    }
    out
}

/// The code unit of a `\uXXXX` escape starting at `at`.
fn escape_unit(body: &[u8], at: usize) -> Option<u16> {
    let escape = body.get(at..at + 6)?;
    if escape[0] != b'\\' || escape[1] != b'u' {
        return None;
    }
    let hex = std::str::from_utf8(&escape[2..]).ok()?;
    u16::from_str_radix(hex, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lone_surrogates_read_as_the_replacement_character() {
        let cases = [
            (r#""abc\ud83d""#, "abc\u{fffd}"),
            (r#""\udc00x""#, "\u{fffd}x"),
            (r#""\ud83d\ud83d\ude00""#, "\u{fffd}😀"),
            (r#""\ud83d\u0041""#, "\u{fffd}A"),
            (r#""😀 \ud83d\ude00""#, "😀 😀"),
            (r#""\\ud83d""#, "\\ud83d"),
            (r#""\\\ud83d""#, "\\\u{fffd}"),
            (r#""\ud83d"#, ""),
        ];
        for (body, expected) in cases {
            match parse(body.as_bytes()) {
                Ok(value) => assert_eq!(value, json!(expected), "{body}"),
                Err(unread) => assert_eq!(expected, "", "{body}: {unread:?}"),
            }
        }
        assert_eq!(replace_lone_surrogates(br#""fine \u00e9""#), None);
    }

    #[test]
    fn depth_is_bounded_and_the_refusal_keeps_the_id() {
        let nest = |levels: usize| {
            format!(
                r#"{{"jsonrpc":"2.0","method":"m","params":{}1{},"id":7}}"#,
                "[".repeat(levels),
                "]".repeat(levels)
            )
        };
        // The message object and `params` count: MAX_DEPTH levels in all.
        assert!(parse(nest(MAX_DEPTH - 1).as_bytes()).is_ok());
        let unread = parse(nest(MAX_DEPTH).as_bytes()).unwrap_err();
        assert!(unread.too_deep, "{unread:?}");
        assert_eq!(unread.id, Some(json!(7)));
        let unread = parse(nest(100_000).as_bytes()).unwrap_err();
        assert!(unread.too_deep && unread.id == Some(json!(7)), "{unread:?}");
        let broken = parse(br#"{"jsonrpc":"2.0","params":{"x":tru},"id":"a-1"}"#).unwrap_err();
        assert!(!broken.too_deep);
        assert_eq!(broken.id, Some(json!("a-1")));
    }
}
