use serde_json::json;

use super::*;

/// One line per outcome: what was decoded, or the error code and the id
/// the refusal carries.
fn summary(incoming: &Incoming) -> String {
    match incoming {
        Incoming::Message(Message::Request(r)) => format!("request {} {}", r.id, r.method),
        Incoming::Message(Message::Notification(n)) => format!("notification {}", n.method),
        Incoming::Message(Message::Response(r)) => format!("response {}", r.id),
        Incoming::Refused { response, .. } => match response {
            Value::Array(items) => items
                .iter()
                .map(|r| format!("{} id={}", r["error"]["code"], r["id"]))
                .collect::<Vec<_>>()
                .join(", "),
            r => format!("{} id={}", r["error"]["code"], r["id"]),
        },
        Incoming::Skipped(_) => "skipped".into(),
    }
}

fn check(cases: &[(Value, &str)]) {
    for (input, expected) in cases {
        let got = summary(&decode(input.clone()));
        assert_eq!(&got, expected, "{input}");
    }
}

#[test]
fn requests_notifications_and_responses() {
    check(&[
        (
            json!({"jsonrpc": "2.0", "id": 1, "method": "m", "params": {}}),
            "request 1 m",
        ),
        (
            json!({"jsonrpc": "2.0", "id": "a", "method": "m"}),
            "request \"a\" m",
        ),
        (
            json!({"jsonrpc": "2.0", "id": -2147483648i64, "method": "m"}),
            "request -2147483648 m",
        ),
        (
            json!({"jsonrpc": "2.0", "id": 2147483647, "method": "m"}),
            "request 2147483647 m",
        ),
        (json!({"jsonrpc": "2.0", "method": "n"}), "notification n"),
        (
            json!({"jsonrpc": "2.0", "method": "n", "params": null}),
            "notification n",
        ),
        (
            json!({"jsonrpc": "2.0", "id": 1, "result": null}),
            "response 1",
        ),
        (
            json!({"jsonrpc": "2.0", "id": "x", "error": {"code": 1, "message": "no"}}),
            "response \"x\"",
        ),
    ]);
}

#[test]
fn bad_ids_are_refused_never_run_as_notifications() {
    check(&[
        (
            json!({"jsonrpc": "2.0", "id": 1.5, "method": "m"}),
            "-32600 id=1.5",
        ),
        (
            json!({"jsonrpc": "2.0", "id": 1.0, "method": "m"}),
            "-32600 id=1.0",
        ),
        (
            json!({"jsonrpc": "2.0", "id": 2147483648i64, "method": "m"}),
            "-32600 id=2147483648",
        ),
        (
            json!({"jsonrpc": "2.0", "id": -2147483649i64, "method": "m"}),
            "-32600 id=-2147483649",
        ),
        (
            json!({"jsonrpc": "2.0", "id": u64::MAX, "method": "m"}),
            "-32600 id=18446744073709551615",
        ),
        (
            json!({"jsonrpc": "2.0", "id": true, "method": "m"}),
            "-32600 id=null",
        ),
        (
            json!({"jsonrpc": "2.0", "id": null, "method": "m"}),
            "-32600 id=null",
        ),
        (
            json!({"jsonrpc": "2.0", "id": {"a": 1}, "method": "m"}),
            "-32600 id=null",
        ),
        (
            json!({"jsonrpc": "2.0", "id": [1], "method": "m"}),
            "-32600 id=null",
        ),
        // A response with an id we never sent cannot be answered.
        (json!({"jsonrpc": "2.0", "id": 1.5, "result": 1}), "skipped"),
    ]);
    let Incoming::Refused { why, .. } =
        decode(json!({"jsonrpc": "2.0", "id": 1.5, "method": "conversation/append"}))
    else {
        panic!()
    };
    assert!(
        why.contains("not an integer") && why.contains("conversation/append` was not run"),
        "{why}"
    );
    let long = "m".repeat(100_000);
    let Incoming::Refused { why, response } =
        decode(json!({"jsonrpc": "2.0", "id": true, "method": long}))
    else {
        panic!()
    };
    assert!(
        why.len() < 300 && response.to_string().len() < 400,
        "a long method is not echoed: {why}"
    );
}

#[test]
fn values_that_are_not_requests_get_minus_32600() {
    check(&[
        (json!({"id": 3, "method": "m"}), "-32600 id=3"),
        (
            json!({"jsonrpc": "1.0", "id": 3, "method": "m"}),
            "-32600 id=3",
        ),
        (
            json!({"jsonrpc": 2, "id": "s", "method": "m"}),
            "-32600 id=\"s\"",
        ),
        (
            json!({"jsonrpc": "2.0", "id": 3, "method": 5}),
            "-32600 id=3",
        ),
        (json!({"jsonrpc": "2.0", "method": null}), "-32600 id=null"),
        (json!({"jsonrpc": "2.0", "id": 3}), "-32600 id=3"),
        (json!({}), "-32600 id=null"),
        (json!([]), "-32600 id=null"),
        (
            json!([{"jsonrpc": "2.0", "id": 1, "method": "m"}, {"jsonrpc": "2.0", "method": "n"}, 4]),
            "-32600 id=1, -32600 id=null, -32600 id=null",
        ),
        (json!(5), "-32600 id=null"),
        (json!("x"), "-32600 id=null"),
        (json!(null), "-32600 id=null"),
    ]);
}

#[test]
fn framing_events_map_to_error_codes() {
    let parse = classify(FrameEvent::InvalidJson {
        why: "cut".into(),
        id: None,
        too_deep: false,
    });
    assert_eq!(summary(&parse), "-32700 id=null");
    let big = classify(FrameEvent::TooLarge {
        declared: 9,
        limit: 4,
        id: Some(json!(12)),
    });
    assert_eq!(summary(&big), "-32600 id=12");
    let Incoming::Refused { response, .. } = big else {
        panic!()
    };
    assert_eq!(response["jsonrpc"], "2.0");
    assert!(response["error"]["message"]
        .as_str()
        .unwrap()
        .contains("maxFrameBytes"));
    assert_eq!(
        summary(&classify(FrameEvent::Skipped("x".into()))),
        "skipped"
    );
}

#[test]
fn leading_id_reads_cut_objects() {
    let cases: &[(&str, Option<Value>)] = &[
        (
            r#"{"jsonrpc":"2.0","id":5,"method":"m","params":{"a":"xxxx"#,
            Some(json!(5)),
        ),
        (
            r#"{"jsonrpc":"2.0","id":"s-1","params":[1,2"#,
            Some(json!("s-1")),
        ),
        (r#"{"params":{"id":9,"t":"cut"#, None),
        (
            r#"{"method":"m","params":{"a":[{"id":9}]},"id":6,"#,
            Some(json!(6)),
        ),
        // A number right at the cut may be cut itself (6 of 60).
        (r#"{"method":"m","id":6"#, None),
        (r#"{"method":"m","id":"s-6""#, Some(json!("s-6"))),
        // Garbage inside the number: not an id at all.
        ("{\"id\":100\r\n0,\"method\":\"m\"}", None),
        (r#"{"i\u0064":8,"#, Some(json!(8))),
        (r#"{"id":true,"#, None),
        (r#"{"jsonrpc":"2.0","#, None),
        (r#"[{"id":1}"#, None),
        ("", None),
        ("garbage", None),
    ];
    for (prefix, expected) in cases {
        assert_eq!(&leading_id(prefix.as_bytes()), expected, "{prefix}");
    }
}

/// A string id keeps every character as sent, whatever it holds (the
/// fuzzer's: an escaped `\r`, a byte-order mark), and goes back the same.
#[test]
fn a_string_id_goes_back_as_it_came() {
    let id = json!("comp\\recursion limit e\u{feff}xceeded");
    let request = json!({"jsonrpc": "2.0", "id": id, "method": "x", "result": null});
    let Incoming::Message(Message::Request(decoded)) = decode(request) else {
        panic!("a request");
    };
    assert_eq!(serde_json::to_value(&decoded.id).unwrap(), id);
}
