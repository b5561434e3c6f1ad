//! The id of a JSON-RPC message whose body cannot be parsed whole: cut
//! short (a frame over the size cap), malformed further on, or nested past
//! the depth limit. Answering with that id lets the client match the
//! refusal. Shared by the framing (which reports it) and the decoder.

use serde_json::Value;

/// The top-level `id` of a JSON object that may be cut, broken or nested
/// anywhere: found when it is a number or a string and its own bytes are
/// sound, in whatever place among the members it stands (clients put it
/// first, but not all do). The scan keeps no stack, so any nesting depth
/// costs nothing. `None` when there is none to be seen.
pub fn leading_id(bytes: &[u8]) -> Option<Value> {
    leading_id_at(bytes).map(|(id, _)| id)
}

/// `leading_id`, with the offset of the id's value in `bytes` (the framing
/// answers one stretch of bytes once, however often a rescan reads it).
pub fn leading_id_at(bytes: &[u8]) -> Option<(Value, usize)> {
    let mut at = skip_ws(bytes, 0);
    if bytes.get(at) != Some(&b'{') {
        return None;
    }
    at += 1;
    let mut depth = 1usize;
    // At depth 1, right after `{` or `,`: the next string is a key.
    let mut key_next = true;
    while let Some(&byte) = bytes.get(at) {
        match byte {
            b'"' => {
                let end = string_end(bytes, at)?;
                if depth == 1 && key_next {
                    let colon = skip_ws(bytes, end + 1);
                    if bytes.get(colon) == Some(&b':') && is_id_key(&bytes[at..=end]) {
                        let value_at = skip_ws(bytes, colon + 1);
                        return id_value(&bytes[value_at..]).map(|id| (id, value_at));
                    }
                    key_next = false;
                }
                at = end + 1;
            }
            b'{' | b'[' => {
                depth += 1;
                at += 1;
            }
            b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return None;
                }
                at += 1;
            }
            b',' => {
                key_next |= depth == 1;
                at += 1;
            }
            _ => at += 1,
        }
    }
    None
}

/// Whether a key's JSON string (quotes included) says `id`, however escaped.
fn is_id_key(quoted: &[u8]) -> bool {
    quoted == b"\"id\"" || serde_json::from_slice::<String>(quoted).is_ok_and(|key| key == "id")
}

/// The value at the start of `bytes`, when it is a number or a string and
/// the member ends right after it (`,` or `}`): garbage inside a number
/// (`100\r\n0`) or the end of the input right after one (`10` of `1000`)
/// would otherwise give another request's id.
fn id_value(bytes: &[u8]) -> Option<Value> {
    if !matches!(bytes.first(), Some(b'"' | b'-' | b'0'..=b'9')) {
        return None;
    }
    let mut values = serde_json::Deserializer::from_slice(bytes).into_iter::<Value>();
    let id = values.next()?.ok()?;
    let after = skip_ws(bytes, values.byte_offset());
    let ends = match bytes.get(after) {
        Some(b',' | b'}') => true,
        Some(_) => false,
        None => id.is_string(),
    };
    (ends && matches!(id, Value::Number(_) | Value::String(_))).then_some(id)
}

/// The index of the quote closing the string that opens at `start`;
/// `None` when the input ends first.
fn string_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut at = start + 1;
    loop {
        at += memchr::memchr2(b'"', b'\\', &bytes[at..])?;
        if bytes[at] == b'"' {
            return Some(at);
        }
        at += 2;
        if at > bytes.len() {
            return None;
        }
    }
}

fn skip_ws(bytes: &[u8], mut at: usize) -> usize {
    while bytes
        .get(at)
        .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
    {
        at += 1;
    }
    at
}
