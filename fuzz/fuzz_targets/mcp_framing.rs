//! `compactd mcp`'s stdio framing over arbitrary bytes cut into arbitrary
//! chunks: the line splitter never holds more than its cap, reports the
//! same lines however the input is cut, and every line it yields is either
//! one JSON-RPC message (which still reads as the same kind of message once
//! re-serialized, as it is handed to `rmcp`) or refused with a well-formed JSON-RPC error
//! (-32700 or -32600, the id a number, a string or `null`) or, for a
//! notification or response `rmcp` cannot read, nothing. The first byte
//! chooses the chunk size and the cap.
#![no_main]

use compactd::mcp::framing::{decode_line, kind, FramingError, LineEvent, LineSplitter};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fn split(input: &[u8], chunk: usize, cap: usize) -> Vec<LineEvent> {
    let mut splitter = LineSplitter::new(cap);
    let mut events = Vec::new();
    for piece in input.chunks(chunk) {
        splitter.feed(piece, &mut events);
    }
    splitter.finish(&mut events);
    events
}

fn check(result: Result<Value, FramingError>) {
    match result {
        Ok(message) => {
            assert!(
                kind(&message).is_some(),
                "not a JSON-RPC message: {message}"
            );
            // What `rmcp` gets: read the same kind of message (floats may
            // move by their last bit, serde_json's parse being fast).
            let again = serde_json::to_vec(&message).unwrap();
            let read = decode_line(&again).expect("re-serialized, it still reads");
            assert_eq!(kind(&read), kind(&message));
        }
        Err(FramingError { response: None, .. }) => {}
        Err(FramingError {
            response: Some(response),
            ..
        }) => {
            let answers = match &response {
                Value::Array(items) => items.iter().collect(),
                single => vec![single],
            };
            assert!(!answers.is_empty());
            for answer in answers {
                assert_eq!(answer["jsonrpc"], "2.0");
                let code = answer["error"]["code"].as_i64();
                assert!(matches!(code, Some(-32700 | -32600)), "{answer}");
                assert!(answer["error"]["message"].is_string());
                assert!(matches!(
                    answer["id"],
                    Value::Null | Value::Number(_) | Value::String(_)
                ));
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let (control, input) = data.split_at(data.len().min(1));
    let chunk = control.first().map_or(1, |&b| usize::from(b % 64) + 1);
    let cap = if control.first().is_some_and(|b| b & 0x80 != 0) {
        64
    } else {
        1024
    };
    let whole = split(input, input.len().max(1), cap);
    let cut = split(input, chunk, cap);
    assert_eq!(whole, cut, "the chunking changed the lines");
    assert!(whole.len() <= input.len() + 1, "more lines than bytes");
    for event in whole {
        match event {
            LineEvent::Line(line) => {
                assert!(line.len() <= cap && !line.contains(&b'\n'));
                check(decode_line(&line));
            }
            LineEvent::TooLong { head } => {
                assert!(head.len() <= cap + 1);
                check(Err(FramingError::too_long(&head, cap)));
            }
        }
    }
    check(decode_line(input));
});
