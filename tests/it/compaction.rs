use serde_json::{json, Value};

use crate::support::Server;

fn call(id: &str, name: &str, args: Value) -> Value {
    json!({"id": id, "name": name, "arguments": args})
}

/// A session with reads, edits, a failed edit and an interrupted call.
fn turns(prefix: &str) -> Vec<Value> {
    vec![
        json!({"role": "user", "content": format!("{prefix}: fix the bug in the parser")}),
        json!({"role": "assistant", "content": "Reading first.", "toolCalls": [
            call(&format!("{prefix}-c1"), "read", json!({"path": format!("src/{prefix}_parse.rs")})),
            call(&format!("{prefix}-c2"), "Edit", json!({"file_path": format!("src/{prefix}_lex.rs")})),
            call(&format!("{prefix}-c3"), "write_file", json!({"path": format!("src/{prefix}_denied.rs")}))
        ]}),
        json!({"role": "tool", "toolCallId": format!("{prefix}-c1"), "content": "fn parse() { todo!() }\n".repeat(100)}),
        json!({"role": "tool", "toolCallId": format!("{prefix}-c2"), "content": "ok"}),
        json!({"role": "tool", "toolCallId": format!("{prefix}-c3"), "content": "permission denied", "isError": true}),
        json!({"role": "assistant", "content": "", "toolCalls": [call(&format!("{prefix}-c4"), "bash", json!({"command": "cargo test"}))]}),
        json!({"role": "user", "content": format!("{prefix}: stop, that takes too long")}),
        json!({"role": "assistant", "content": "Stopped."}),
    ]
}

#[test]
fn summaries_carry_cumulative_file_sections_and_close_interrupted_calls() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), json!({"keepRecentTokens": 5}));
    let id = server.open(json!({}));
    server
        .request(
            "conversation/append",
            json!({"sessionId": id, "messages": turns("one")}),
        )
        .unwrap();
    let first = server
        .request("conversation/compact", json!({"sessionId": id}))
        .unwrap();
    assert_eq!(first["compacted"], true);
    assert_eq!(first["readFiles"], json!(["src/one_parse.rs"]));
    assert_eq!(
        first["modifiedFiles"],
        json!(["src/one_lex.rs"]),
        "a failed write is not a modification"
    );
    let summary = first["summary"].as_str().unwrap();
    assert!(summary.contains("`cargo test`: no result"), "{summary}");

    server
        .request(
            "conversation/append",
            json!({"sessionId": id, "messages": turns("two")}),
        )
        .unwrap();
    let second = server
        .request("conversation/compact", json!({"sessionId": id}))
        .unwrap();
    assert_eq!(second["compacted"], true);
    assert_eq!(
        second["modifiedFiles"],
        json!(["src/two_lex.rs", "src/one_lex.rs"]),
        "newest first, cumulative"
    );
    assert_eq!(
        second["readFiles"],
        json!(["src/two_parse.rs", "src/one_parse.rs"])
    );
    let summary = second["summary"].as_str().unwrap();
    assert!(
        summary.contains("one: fix the bug") && summary.contains("two: fix the bug"),
        "previous summary updated: {summary}"
    );

    // The model never sees a dangling call: the kept tail is valid and the
    // summary message comes right after the system prompt (none here).
    let history = server
        .request("conversation/history", json!({"sessionId": id}))
        .unwrap();
    let messages = history["messages"].as_array().unwrap();
    assert_eq!(messages[0]["role"], "user");
    assert!(messages[0]["content"]
        .as_str()
        .unwrap()
        .contains("<modified-files>\nsrc/two_lex.rs\nsrc/one_lex.rs\n</modified-files>"));
    let log = std::fs::read_to_string(dir.path().join(format!("{id}.jsonl"))).unwrap();
    assert_eq!(
        log.matches("\"type\":\"compaction\"").count(),
        2,
        "compactions are appended"
    );
    assert_eq!(
        log.matches("\"type\":\"message\"").count(),
        16,
        "no message is rewritten or dropped"
    );
}

#[test]
fn interrupted_calls_in_the_kept_history_get_a_synthetic_result() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), json!({}));
    let id = server.open(json!({}));
    server
        .request(
            "conversation/append",
            json!({"sessionId": id, "messages": turns("x")}),
        )
        .unwrap();
    let history = server
        .request("conversation/history", json!({"sessionId": id}))
        .unwrap();
    let messages = history["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "tool",
            "tool",
            "tool",
            "assistant",
            "tool",
            "user",
            "assistant"
        ]
    );
    assert_eq!(messages[6]["toolCallId"], "x-c4");
    assert_eq!(messages[6]["isError"], true);
}
