use serde_json::{json, Value};

use crate::support::Server;

fn position(received: &[Value], pred: impl Fn(&Value) -> bool) -> usize {
    received.iter().position(pred).expect("message received")
}

#[test]
fn appends_as_notifications_apply_in_order_and_meter_follows() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), json!({}));
    let id = server.open(json!({"model": "gpt-4o", "systemPrompt": "You are terse."}));
    for i in 0..200 {
        let role = if i % 2 == 0 { "user" } else { "assistant" };
        server.notify(
            "conversation/append",
            json!({"sessionId": id, "messages": [{"id": format!("msg-{i}"), "role": role, "content": format!("message number {i}")}]}),
        );
    }
    let history = server
        .request("conversation/history", json!({"sessionId": id}))
        .unwrap();
    let messages = history["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 201, "system prompt + 200");
    assert_eq!(messages[0]["role"], "system");
    for (i, m) in messages[1..].iter().enumerate() {
        assert_eq!(m["id"], format!("msg-{i}"));
        assert_eq!(m["content"], format!("message number {i}"));
    }
    let meters = server.received_notifications("conversation/tokens");
    // One from open, one per append.
    assert_eq!(meters.len(), 201);
    let tokens: Vec<u64> = meters
        .iter()
        .map(|m| m["contextTokens"].as_u64().unwrap())
        .collect();
    assert!(
        tokens.windows(2).all(|w| w[0] < w[1]),
        "meter grows with every append"
    );
    let last = meters.last().unwrap();
    assert_eq!(last["sessionId"], id);
    assert_eq!(last["contextWindow"], 128_000);
    assert_eq!(last["source"], "estimate");
    assert_eq!(last["contextTokens"], history["meter"]["contextTokens"]);
}

#[test]
fn meter_uses_provider_usage_when_reported() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), json!({}));
    let id = server.open(json!({"model": "claude-sonnet-4-5"}));
    let result = server
        .request(
            "conversation/append",
            json!({"sessionId": id, "messages": [
                {"role": "user", "content": "hello"},
                {"role": "assistant", "content": "hi", "usage": {"input": 100000, "output": 50, "cacheRead": 20000}},
                {"role": "user", "content": "next question"}
            ]}),
        )
        .unwrap();
    let meter = &result["meter"];
    assert_eq!(meter["source"], "usage");
    assert_eq!(meter["contextWindow"], 200_000);
    let tokens = meter["contextTokens"].as_u64().unwrap();
    assert!(
        tokens > 120_050 && tokens < 120_070,
        "usage plus the estimate of the message after it: {tokens}"
    );
    assert_eq!(
        meter["percent"],
        (tokens as f64 / 2000.0 * 10.0).round() / 10.0
    );
    assert_eq!(result["shouldCompact"], false);
}

#[test]
fn compact_reports_progress_and_did_compact_before_its_response() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), json!({"keepRecentTokens": 50}));
    let id = server.open(json!({}));
    let mut messages = Vec::new();
    for i in 0..20 {
        messages.push(json!({"role": "user", "content": format!("Please do step {i} of the plan, carefully and completely.")}));
        messages.push(
            json!({"role": "assistant", "content": format!("Step {i} is done; the tests pass.")}),
        );
    }
    server
        .request(
            "conversation/append",
            json!({"sessionId": id, "messages": messages}),
        )
        .unwrap();
    let request = server.send_request(
        "conversation/compact",
        json!({"sessionId": id, "workDoneToken": "tok-1"}),
    );
    let result = server.response(request).unwrap();
    assert_eq!(result["compacted"], true);
    assert!(result["tokensAfter"].as_u64().unwrap() < result["tokensBefore"].as_u64().unwrap());
    assert!(result["summary"].as_str().unwrap().starts_with("## Task\n"));
    assert_eq!(result["summarizer"], "offline");

    let received = &server.received;
    let begin = position(received, |m| {
        m["method"] == "$/progress" && m["params"]["value"]["kind"] == "begin"
    });
    let end = position(received, |m| {
        m["method"] == "$/progress" && m["params"]["value"]["kind"] == "end"
    });
    let did = position(received, |m| m["method"] == "conversation/didCompact");
    let response = position(received, |m| {
        m["id"] == request && m.get("method").is_none()
    });
    assert!(
        begin < end && end < did && did < response,
        "begin {begin} end {end} didCompact {did} response {response}"
    );
    assert_eq!(received[begin]["params"]["token"], "tok-1");
    let notification = &received[did]["params"];
    assert_eq!(notification["trigger"], "manual");
    assert_eq!(notification["tokensAfter"], result["tokensAfter"]);

    let history = server
        .request("conversation/history", json!({"sessionId": id}))
        .unwrap();
    let messages = history["messages"].as_array().unwrap();
    assert!(messages[0]["content"]
        .as_str()
        .unwrap()
        .contains("<summary>"));
    assert_eq!(messages[1]["id"], result["firstKeptMessageId"]);
    assert_eq!(history["meter"]["contextTokens"], result["tokensAfter"]);

    // Nothing left to compact is a result, not an error.
    let again = server
        .request("conversation/compact", json!({"sessionId": id}))
        .unwrap();
    assert_eq!(again["compacted"], false);
    assert!(again["reason"]
        .as_str()
        .unwrap()
        .contains("nothing to compact"));
}

#[test]
fn server_created_progress_tokens_when_client_supports_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::spawn(dir.path());
    server
        .request(
            "initialize",
            json!({"capabilities": {"window": {"workDoneProgress": true}}, "initializationOptions": {"dataDir": dir.path(), "keepRecentTokens": 10}}),
        )
        .unwrap();
    let id = server.open(json!({}));
    server
        .request(
            "conversation/append",
            json!({"sessionId": id, "messages": [
                {"role": "user", "content": "first request with some words ".repeat(40)},
                {"role": "assistant", "content": "first answer with some words ".repeat(40)},
                {"role": "user", "content": "second request with some words ".repeat(40)},
                {"role": "assistant", "content": "second answer with some words ".repeat(40)}
            ]}),
        )
        .unwrap();
    let request = server.send_request("conversation/compact", json!({"sessionId": id}));
    let create = server.next_where(|m| m["method"] == "window/workDoneProgress/create");
    let token = create["params"]["token"].clone();
    server.send(json!({"jsonrpc": "2.0", "id": create["id"], "result": null}));
    let begin = server.next_where(|m| m["method"] == "$/progress");
    assert_eq!(begin["params"]["token"], token);
    assert_eq!(begin["params"]["value"]["kind"], "begin");
    assert_eq!(server.response(request).unwrap()["compacted"], true);
}

#[test]
fn cancel_answers_minus_32800_and_leaves_history_untouched() {
    let dir = tempfile::tempdir().unwrap();
    // The test summarizer paces itself (30 s per chunk), so the compaction
    // is still running when the cancel arrives.
    let mut server = Server::start(
        dir.path(),
        json!({"keepRecentTokens": 10, "summarizer": {"provider": "test", "delayMs": 30000}}),
    );
    let id = server.open(json!({}));
    let messages: Vec<Value> = (0..10)
        .map(|i| json!({"role": if i % 2 == 0 {"user"} else {"assistant"}, "content": format!("turn {i} with a few words")}))
        .collect();
    server
        .request(
            "conversation/append",
            json!({"sessionId": id, "messages": messages}),
        )
        .unwrap();
    let before = server
        .request("conversation/history", json!({"sessionId": id}))
        .unwrap();

    let request = server.send_request(
        "conversation/compact",
        json!({"sessionId": id, "workDoneToken": 7}),
    );
    // Synchronise on the job having started.
    let begin = server.next_where(|m| m["method"] == "$/progress");
    assert_eq!(begin["params"]["value"]["kind"], "begin");
    // A second compact request joins the running one.
    let joined = server.send_request("conversation/compact", json!({"sessionId": id}));
    server.notify("$/cancelRequest", json!({"id": request}));
    let err = server.response(request).unwrap_err();
    assert_eq!(err.code, -32800);
    assert_eq!(
        server.response(joined).unwrap_err().code,
        -32800,
        "joined requests are answered too"
    );

    let after = server
        .request("conversation/history", json!({"sessionId": id}))
        .unwrap();
    assert_eq!(
        serde_json::to_string(&before["messages"]).unwrap(),
        serde_json::to_string(&after["messages"]).unwrap()
    );
    assert!(server
        .received_notifications("conversation/didCompact")
        .is_empty());
    let log = std::fs::read_to_string(dir.path().join(format!("{id}.jsonl"))).unwrap();
    assert!(!log.contains("\"type\":\"compaction\""));
}
