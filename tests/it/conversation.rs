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
    server.assert_not_compacted(&id);
}

#[test]
fn a_late_tool_result_is_logged_but_stays_out_of_the_history() {
    use compactd::conversation::{validate_history, Message};
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), json!({}));
    let id = server.open(json!({"sessionId": "late"}));
    let call = |id: &str| json!({"id": id, "name": "bash", "arguments": {"command": "cargo test"}});
    let before = server.append(
        &id,
        json!([
            {"id": "u1", "role": "user", "content": "run the tests"},
            {"id": "a1", "role": "assistant", "content": "", "toolCalls": [call("c1"), call("c2")]},
            {"id": "t2", "role": "tool", "toolCallId": "c2", "content": "ok"},
            {"id": "u2", "role": "user", "content": "never mind, look at the docs"}
        ]),
    );
    // c1's result arrives after the conversation moved on, then a second
    // result for c2 and one for a call nobody made.
    let appended = server.append(
        &id,
        json!([
            {"id": "t1", "role": "tool", "toolCallId": "c1", "content": "test result: ok. 40 passed"},
            {"id": "t2b", "role": "tool", "toolCallId": "c2", "content": "ok again"},
            {"id": "t9", "role": "tool", "toolCallId": "c9", "content": "?"}
        ]),
    );
    let warnings: Vec<&str> = appended["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert_eq!(warnings.len(), 3, "{warnings:?}");
    assert!(
        warnings[0].starts_with(
            "messages[0]: the result for tool call `c1` arrived after the conversation moved on"
        ),
        "{warnings:?}"
    );
    assert!(
        warnings[1].contains("`c2` already has a result"),
        "{warnings:?}"
    );
    assert!(
        warnings[2].contains("no earlier message calls `c9`"),
        "{warnings:?}"
    );
    assert_eq!(appended["ids"], json!(["t1", "t2b", "t9"]), "all logged");

    let history = server
        .request("conversation/history", json!({"sessionId": id}))
        .unwrap();
    let messages: Vec<Message> = serde_json::from_value(history["messages"].clone()).unwrap();
    let ids: Vec<&str> = messages.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["u1", "a1", "t2", "synthetic-result-c1", "u2"]);
    assert_eq!(validate_history(&messages, false), Ok(()));
    // The meter counts what is sent: the late results add nothing.
    assert_eq!(appended["meter"], before["meter"]);
    assert_eq!(history["meter"], before["meter"]);
    let log = std::fs::read_to_string(dir.path().join("late.jsonl")).unwrap();
    assert!(log.contains("40 passed"), "the late result is in the log");

    // Resumed from the log, the view is the same.
    server.shutdown_and_exit();
    let mut server = Server::start(dir.path(), json!({}));
    server.open(json!({"sessionId": "late"}));
    let resumed = server
        .request("conversation/history", json!({"sessionId": "late"}))
        .unwrap();
    assert_eq!(resumed["messages"], history["messages"]);
    assert_eq!(resumed["meter"], history["meter"]);
}
