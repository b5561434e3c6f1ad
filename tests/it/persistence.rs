use serde_json::json;

use crate::support::Server;

#[test]
fn killed_server_loses_nothing_but_a_torn_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), json!({}));
    let id = server.open(json!({"sessionId": "crash-test", "model": "gpt-4o"}));
    for i in 0..50 {
        server
            .request(
                "conversation/append",
                json!({"sessionId": id, "messages": [{"id": format!("m-{i}"), "role": "user", "content": format!("line {i}")}]}),
            )
            .unwrap();
    }
    server.kill();

    // Tear the last line as a crash mid-write would.
    let path = dir.path().join("crash-test.jsonl");
    let mut bytes = std::fs::read(&path).unwrap();
    let last_line_start = bytes[..bytes.len() - 1]
        .iter()
        .rposition(|b| *b == b'\n')
        .unwrap()
        + 1;
    bytes.truncate(last_line_start + (bytes.len() - last_line_start) / 2);
    std::fs::write(&path, &bytes).unwrap();

    let mut server = Server::start(dir.path(), json!({}));
    let opened = server
        .request("conversation/open", json!({"sessionId": "crash-test"}))
        .unwrap();
    assert_eq!(opened["resumed"], true);
    assert_eq!(opened["messageCount"], 49);
    let warnings = opened["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1);
    assert!(
        warnings[0].as_str().unwrap().contains("torn last line"),
        "{warnings:?}"
    );
    assert!(server
        .stderr_after_containing(0, "torn last line")
        .contains("torn last line"));

    let history = server
        .request("conversation/history", json!({"sessionId": "crash-test"}))
        .unwrap();
    let ids: Vec<String> = history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_string())
        .collect();
    let expected: Vec<String> = (0..49).map(|i| format!("m-{i}")).collect();
    assert_eq!(ids, expected);

    // The log stays appendable and loads cleanly afterwards.
    server
        .request("conversation/append", json!({"sessionId": "crash-test", "messages": [{"id": "m-49", "role": "user", "content": "again"}]}))
        .unwrap();
    assert_eq!(server.shutdown_and_exit(), 0);
    let mut server = Server::start(dir.path(), json!({}));
    let opened = server
        .request("conversation/open", json!({"sessionId": "crash-test"}))
        .unwrap();
    assert_eq!(opened["messageCount"], 50);
    assert_eq!(
        opened["warnings"].as_array().unwrap().len(),
        1,
        "the torn fragment stays in the log as a skipped line"
    );
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.len() > bytes.len(), "appended, never rewritten");
    assert!(
        text.starts_with(std::str::from_utf8(&bytes).unwrap()),
        "earlier bytes untouched"
    );
}

#[test]
fn compaction_survives_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), json!({"keepRecentTokens": 20}));
    let id = server.open(json!({"sessionId": "restart"}));
    let messages: Vec<_> = (0..12)
        .map(|i| json!({"id": format!("m{i}"), "role": if i % 2 == 0 {"user"} else {"assistant"}, "content": format!("turn {i} says something useful. ").repeat(30)}))
        .collect();
    server
        .request(
            "conversation/append",
            json!({"sessionId": id, "messages": messages}),
        )
        .unwrap();
    let result = server
        .request("conversation/compact", json!({"sessionId": id}))
        .unwrap();
    assert_eq!(result["compacted"], true);
    let before = server
        .request("conversation/history", json!({"sessionId": id}))
        .unwrap();
    assert_eq!(server.shutdown_and_exit(), 0);

    let mut server = Server::start(dir.path(), json!({"keepRecentTokens": 20}));
    server.open(json!({"sessionId": "restart"}));
    let after = server
        .request("conversation/history", json!({"sessionId": "restart"}))
        .unwrap();
    assert_eq!(before["messages"], after["messages"]);
    assert_eq!(before["meter"], after["meter"]);
}

/// A hand-edited log is bounded before it is trusted, each time with a
/// warning: a second header does not replace the settings, a stored count
/// beyond what the message's bytes allow is counted again, absurd usage is
/// ignored, and a compaction naming messages that are not there says so.
#[test]
fn what_a_log_says_is_bounded_before_it_is_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let lines = [
        json!({"type": "header", "version": 1, "sessionId": "s", "createdAt": 1, "systemPrompt": "the real prompt"}),
        json!({"type": "message", "message": {"id": "m1", "role": "user", "content": "hello"}, "tokens": {"encoding": "o200k_base", "count": 9_223_372_036_854_775_808u64}}),
        json!({"type": "message", "message": {"id": "m2", "role": "assistant", "content": "hi", "usage": {"input": 9_223_372_036_854_775_808u64, "output": 5}}}),
        json!({"type": "header", "version": 1, "sessionId": "s", "createdAt": 2, "systemPrompt": "an injected prompt"}),
        json!({"type": "compaction", "id": "c1", "strategy": "checkpoint", "trigger": "manual",
               "summary": "summary", "summarizer": "offline", "lastSummarizedMessageId": "gone", "firstKeptMessageId": "m1",
               "tokensBefore": 10, "tokensAfter": 5, "messagesSummarized": 1, "createdAt": 3, "durationMs": 0}),
    ];
    let log: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.path().join("s.jsonl"), log).unwrap();
    let mut server = Server::start(dir.path(), json!({}));
    let opened = server
        .request("conversation/open", json!({"sessionId": "s"}))
        .unwrap();
    let warnings = opened["warnings"].to_string();
    for expected in [
        "entry 4: a second header ignored",
        "message `m1` has a stored count of 9223372036854775808 tokens",
        "message `m2` reports usage of 9223372036854775808 tokens",
        "compaction `c1` names 1 message(s) the log does not hold before it (`gone`)",
    ] {
        assert!(warnings.contains(expected), "{expected}: {warnings}");
    }
    let percent = opened["meter"]["percent"].as_f64().unwrap();
    assert!(percent < 1.0, "{opened}");
    let history = server
        .request("conversation/history", json!({"sessionId": "s"}))
        .unwrap();
    let first = &history["messages"][0];
    assert_eq!(first["role"], "system", "{history}");
    assert_eq!(first["content"], "the real prompt", "{history}");
}

/// Usage no provider reports (2^64 - 1 tokens) is refused, naming the
/// message, before anything is appended; nothing overflows, and the server
/// keeps serving.
#[test]
fn absurd_usage_from_a_client_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), json!({}));
    let id = server.open(json!({}));
    let max = u64::MAX;
    let error = server
        .request(
            "conversation/append",
            json!({"sessionId": id, "messages": [{"role": "user", "content": "hi"},
                {"role": "assistant", "content": "hello", "usage": {"input": max, "output": max, "cacheRead": max, "cacheWrite": max}}]}),
        )
        .unwrap_err();
    assert_eq!(error.code, -32602, "{error:?}");
    assert!(error.message.contains("messages[1].usage"), "{error:?}");
    server.append(&id, json!([{"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello", "usage": {"input": 4_294_967_296u64, "output": 1}}]));
    let history = server
        .request("conversation/history", json!({"sessionId": id}))
        .unwrap();
    assert_eq!(history["messages"].as_array().unwrap().len(), 2);
}
