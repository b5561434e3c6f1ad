use super::*;

async fn read_all(input: &[u8]) -> Vec<Incoming> {
    let mut reader = Reader::new(input);
    let mut out = Vec::new();
    while let Some(incoming) = reader.next().await.unwrap() {
        out.push(incoming);
    }
    out
}

fn frame(body: &str) -> String {
    format!("Content-Length: {}\r\n\r\n{body}", body.len())
}

#[tokio::test]
async fn reads_messages_answers_bad_ones_and_keeps_going() {
    let input = [
        frame(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#),
        "garbage line\r\n".to_string(),
        frame("not json!"),
        frame(r#"{"jsonrpc":"2.0","id":2.5,"method":"conversation/append"}"#),
        frame(r#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#),
        frame(r#"{"jsonrpc":"2.0","id":"a","result":null}"#),
    ]
    .concat();
    let got = read_all(input.as_bytes()).await;
    assert_eq!(got.len(), 6, "{got:#?}");
    assert!(matches!(&got[0], Incoming::Message(Message::Request(r)) if r.method == "initialize"));
    assert!(matches!(&got[1], Incoming::Skipped(why) if why.starts_with("malformed header line")));
    assert!(
        matches!(&got[2], Incoming::Refused { response, .. } if response["error"]["code"] == -32700 && response["id"].is_null())
    );
    assert!(
        matches!(&got[3], Incoming::Refused { response, .. } if response["error"]["code"] == -32600 && response["id"] == 2.5)
    );
    assert!(
        matches!(&got[4], Incoming::Message(Message::Notification(n)) if n.method == "initialized")
    );
    assert!(
        matches!(&got[5], Incoming::Message(Message::Response(r)) if r.id == "a".to_string().into())
    );
}

#[tokio::test]
async fn the_cap_applies_to_the_next_frame() {
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":"{}"}}"#,
        "x".repeat(8000)
    );
    let input = [frame(&big), frame(&big)].concat();
    let mut reader = Reader::new(input.as_bytes());
    assert!(matches!(
        reader.next().await.unwrap(),
        Some(Incoming::Message(_))
    ));
    reader.set_max_frame_bytes(4096);
    let refused = reader.next().await.unwrap();
    assert!(
        matches!(&refused, Some(Incoming::Refused { response, .. }) if response["id"] == 1 && response["error"]["code"] == -32600),
        "{refused:?}"
    );
    assert!(reader.next().await.unwrap().is_none());
}

#[tokio::test]
async fn encoded_messages_read_back() {
    let message: Message =
        lsp_server::Notification::new("x/y".into(), serde_json::json!({"a": 1})).into();
    let error = decode::error_response(&serde_json::Value::Null, -32700, "bad");
    let bytes = [encode(&message), encode_json(&error)].concat();
    let got = read_all(&bytes).await;
    assert!(matches!(&got[0], Incoming::Message(Message::Notification(n)) if n.method == "x/y"));
    // An error answer with a null id (the client could not parse something
    // we sent) answers nothing of ours: logged.
    assert!(matches!(&got[1], Incoming::Skipped(_)), "{got:?}");
}
