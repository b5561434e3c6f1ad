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
