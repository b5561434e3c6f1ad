use serde_json::{json, Value};

use crate::support::Server;

use crate::support::tool_call as call;

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

/// Six turns of a request, a call with a long result and an answer.
fn long_session() -> Vec<Value> {
    (0..6)
        .flat_map(|n| {
            [
                json!({"id": format!("u{n}"), "role": "user", "content": format!("step {n}: read file {n}")}),
                json!({"id": format!("a{n}"), "role": "assistant", "content": "Reading.", "toolCalls": [call(&format!("c{n}"), "read", json!({"path": format!("f{n}.rs")}))]}),
                json!({"id": format!("t{n}"), "role": "tool", "toolCallId": format!("c{n}"), "content": format!("fn f{n}() {{}}\n").repeat(300)}),
                json!({"id": format!("r{n}"), "role": "assistant", "content": format!("File {n} read.")}),
            ]
        })
        .collect()
}

/// The messages of the history that are the session's, as sent.
fn kept_verbatim(server: &mut Server, id: &str, sent: &[Value]) -> Vec<String> {
    let history = server
        .request("conversation/history", json!({"sessionId": id}))
        .unwrap();
    history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| sent.contains(m))
        .map(|m| m["id"].as_str().unwrap().to_string())
        .collect()
}

/// One request answered by a long run of calls and results: what
/// `incremental` replaces whole when nothing keeps its end.
fn one_long_run() -> Vec<Value> {
    let mut sent = vec![json!({"id": "u0", "role": "user", "content": "read every file"})];
    for n in 0..6 {
        sent.push(json!({"id": format!("a{n}"), "role": "assistant", "content": "Reading.", "toolCalls": [call(&format!("c{n}"), "read", json!({"path": format!("f{n}.rs")}))]}));
        sent.push(json!({"id": format!("t{n}"), "role": "tool", "toolCallId": format!("c{n}"), "content": format!("fn f{n}() {{}}\n").repeat(300)}));
    }
    sent
}

fn newest(sent: &[Value], n: usize) -> Vec<String> {
    sent[sent.len() - n..]
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn keep_recent_messages_keeps_at_least_that_many_in_every_strategy() {
    for strategy in ["checkpoint", "incremental", "prune"] {
        let sent = match strategy {
            "incremental" => one_long_run(),
            _ => long_session(),
        };
        let newest = |n: usize| newest(&sent, n);
        let dir = tempfile::tempdir().unwrap();
        let options = json!({"keepRecentMessages": 6, "retentionWindow": 0,
            "pruneProtectTokens": 0, "pruneMinimumTokens": 1, "autoCompact": false});
        let mut server = Server::start(dir.path(), options);
        let id = server.open(json!({}));
        server.append(&id, &sent);
        let compacted = server
            .request(
                "conversation/compact",
                json!({"sessionId": id, "strategy": strategy, "keepRecentTokens": 1}),
            )
            .unwrap();
        assert_eq!(compacted["compacted"], true, "{strategy}: {compacted}");
        let kept = kept_verbatim(&mut server, &id, &sent);
        assert!(kept.ends_with(&newest(6)), "{strategy}: {kept:?}");
        // Without it, the same compaction leaves fewer of them as sent.
        let dir = tempfile::tempdir().unwrap();
        let options = json!({"retentionWindow": 0, "pruneProtectTokens": 0, "pruneMinimumTokens": 1, "autoCompact": false});
        let mut server = Server::start(dir.path(), options);
        let id = server.open(json!({}));
        server.append(&id, &sent);
        server
            .request(
                "conversation/compact",
                json!({"sessionId": id, "strategy": strategy, "keepRecentTokens": 1}),
            )
            .unwrap();
        let kept = kept_verbatim(&mut server, &id, &sent);
        assert!(
            !kept.ends_with(&newest(6)),
            "{strategy} without it: {kept:?}"
        );
    }
    // A request's own count, and the preview's.
    let sent = long_session();
    let newest = |n: usize| newest(&sent, n);
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), json!({"autoCompact": false}));
    let id = server.open(json!({}));
    server.append(&id, &sent);
    let preview = server
        .request(
            "conversation/preview",
            json!({"sessionId": id, "keepRecentTokens": 1, "keepRecentMessages": 9}),
        )
        .unwrap();
    let kept: Vec<String> = serde_json::from_value(preview["keepMessageIds"].clone()).unwrap();
    assert!(kept.ends_with(&newest(9)) || kept.len() > 9, "{preview}");
    server
        .request(
            "conversation/compact",
            json!({"sessionId": id, "keepRecentTokens": 1, "keepRecentMessages": 9}),
        )
        .unwrap();
    assert!(kept_verbatim(&mut server, &id, &sent).ends_with(&newest(9)));
}
