//! The JSON-RPC decoder over arbitrary bytes read as a body: every value is
//! a request with an id LSP allows, a notification, a response, or refused
//! with a well-formed error (never dropped); what does not parse carries
//! the id `leading_id` reads, and a body that parses as plain JSON parses
//! the same through `body::parse` (lone surrogates are its only repair);
//! `leading_id` never panics on any prefix.
#![no_main]

use compactd::transport::body;
use compactd::transport::decode::{answers, decode, Incoming};
use compactd::transport::leading_id::leading_id;
use libfuzzer_sys::fuzz_target;
use lsp_server::Message;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    for cut in [data.len(), data.len() / 2, data.len() / 3] {
        if let Some(Value::Number(_) | Value::String(_)) | None = leading_id(&data[..cut]) {
        } else {
            panic!("leading_id returned an id that is not a number or a string");
        }
    }
    let value = match body::parse(data) {
        Ok(value) => value,
        Err(unread) => {
            assert_eq!(unread.id, leading_id(data));
            assert!(serde_json::from_slice::<Value>(data).is_err());
            return;
        }
    };
    if let Ok(plain) = serde_json::from_slice::<Value>(data) {
        assert_eq!(plain, value, "a body serde_json reads is read the same");
    }
    let id = value.get("id").cloned();
    let has_method = value.get("method").is_some();
    match decode(value) {
        Incoming::Message(Message::Request(request)) => {
            let id = id.expect("a request has an id");
            assert!(id.is_string() || id.as_i64().is_some_and(|i| i32::try_from(i).is_ok()));
            // As it goes back on the wire (its `Display` is `Debug`'s for a
            // string: escapes, not the characters).
            assert_eq!(serde_json::to_value(&request.id).unwrap(), id);
        }
        Incoming::Message(Message::Notification(_)) => assert!(id.is_none()),
        Incoming::Message(Message::Response(_)) => assert!(!has_method),
        Incoming::Refused { response, .. } => {
            for answer in answers(&response) {
                assert_eq!(answer["jsonrpc"], "2.0");
                assert_eq!(answer["error"]["code"], -32600);
                assert!(matches!(
                    answer["id"],
                    Value::Null | Value::Number(_) | Value::String(_)
                ));
            }
        }
        Incoming::Skipped(_) => assert!(!has_method),
    }
});
