//! Recall through the binary: what a compaction dropped is found by
//! `conversation/search` and given back verbatim by
//! `conversation/messages`; bad queries and unknown sessions get clear
//! errors; followed sessions are searchable.

use serde_json::{json, Value};

use crate::support::Server;

/// A marker planted early, then enough talk that a compaction summarizes it.
pub fn planted_session(server: &mut Server) -> String {
    let id = server.open(json!({"sessionId": "recall"}));
    let mut messages = vec![
        json!({"id": "m1", "role": "user", "content": "Fix the parser."}),
        json!({"id": "m2", "role": "assistant", "content": "Noted.", "toolCalls": [{"id": "c1", "name": "read", "arguments": {"path": "src/frobnicate_widget.rs"}}]}),
        json!({"id": "m3", "role": "tool", "toolCallId": "c1", "content": [{"type": "text", "text": "const STAGING_HINT: &str = \"ZQX-MARKER-7741\";\nfn frobnicate_widget_v2() -> Result<(), E0425> {}"}, {"type": "image", "mediaType": "image/png", "data": "iVBORw0KGgo="}]}),
    ];
    for i in 4..40 {
        messages.push(json!({"id": format!("m{i}"), "role": if i % 2 == 0 { "user" } else { "assistant" }, "content": format!("step {i}: more work on the parser, nothing special")}));
    }
    server
        .request(
            "conversation/append",
            json!({"sessionId": id, "messages": messages}),
        )
        .unwrap();
    let compacted = server
        .request(
            "conversation/compact",
            json!({"sessionId": id, "keepRecentTokens": 40}),
        )
        .unwrap();
    assert_eq!(compacted["compacted"], true, "{compacted}");
    id
}

/// One `check()` for search: the hits' message ids for `query`.
fn check(server: &mut Server, params: Value) -> Vec<String> {
    let result = server.request("conversation/search", params).unwrap();
    result["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["messageId"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_marker_compacted_away_is_found_and_read_back_verbatim() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), json!({}));
    let id = planted_session(&mut server);
    let history = server
        .request("conversation/history", json!({"sessionId": id}))
        .unwrap();
    assert!(
        !history.to_string().contains("ZQX-MARKER-7741"),
        "the marker is compacted away"
    );

    let result = server
        .request(
            "conversation/search",
            json!({"sessionId": id, "query": "zqx-marker-7741"}),
        )
        .unwrap();
    let hit = &result["hits"][0];
    assert_eq!(hit["messageId"], "m3");
    assert_eq!(hit["role"], "tool");
    assert!(
        hit["snippet"].as_str().unwrap().contains("ZQX-MARKER-7741"),
        "{hit}"
    );
    let compaction = hit["compactionId"]
        .as_str()
        .expect("summarized by a compaction");
    let compactions = server
        .request("conversation/compactions", json!({"sessionId": id}))
        .unwrap();
    assert!(compactions.to_string().contains(compaction));
    assert_eq!(result["searched"], 39);

    // Identifiers, file names, error codes; roles and compactedOnly filter.
    assert_eq!(
        check(
            &mut server,
            json!({"sessionId": id, "query": "frobnicate_widget_v2 E0425"})
        ),
        ["m3"]
    );
    assert_eq!(
        check(
            &mut server,
            json!({"sessionId": id, "query": "src/frobnicate_widget.rs"})
        ),
        ["m2"]
    );
    assert!(check(
        &mut server,
        json!({"sessionId": id, "query": "frobnicate", "roles": ["user"]})
    )
    .is_empty());
    let recent = check(&mut server, json!({"sessionId": id, "query": "step 39"}));
    assert_eq!(recent, ["m39"]);
    assert!(check(
        &mut server,
        json!({"sessionId": id, "query": "step 39", "compactedOnly": true})
    )
    .is_empty());
    // Every optional field takes null as "not given".
    let nulls = json!({"sessionId": id, "query": "step 39", "limit": null, "roles": null, "compactedOnly": null});
    assert_eq!(check(&mut server, nulls), ["m39"]);
    // Without a session: every open one.
    assert_eq!(
        check(&mut server, json!({"query": "ZQX-MARKER-7741"})),
        ["m3"]
    );

    // Verbatim: every part, the image included, and its compaction.
    let read = server
        .request(
            "conversation/messages",
            json!({"sessionId": id, "ids": ["m3", "m1"]}),
        )
        .unwrap();
    assert_eq!(read["truncated"], false);
    let messages = read["messages"].as_array().unwrap();
    assert_eq!(messages[0]["message"]["id"], "m1", "session order");
    assert_eq!(messages[1]["message"]["content"][1]["data"], "iVBORw0KGgo=");
    assert_eq!(messages[1]["compactionId"], compaction);
    let range = server
        .request(
            "conversation/messages",
            json!({"sessionId": id, "range": {"first": "m2", "last": "m5"}}),
        )
        .unwrap();
    let ids: Vec<&str> = range["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["message"]["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["m2", "m3", "m4", "m5"]);

    // Data of 8 KiB or more is stored apart; it comes back all the same.
    let large = "QUFB".repeat(3 << 10);
    let image = json!({"type": "image", "mediaType": "image/png", "data": large});
    server
        .request("conversation/append", json!({"sessionId": id, "messages": [{"id": "m39b", "role": "user", "content": [{"type": "text", "text": "see"}, image]}]}))
        .unwrap();
    let read = server
        .request(
            "conversation/messages",
            json!({"sessionId": id, "ids": ["m39b"]}),
        )
        .unwrap();
    assert_eq!(read["messages"][0]["message"]["content"][1], image);
    // A summary cites an agent's UUID by its first 8 characters: that
    // citation reads the message back.
    let uuid = "5217d838-5181-433d-a8b8-c96b9ad7bfb3";
    server
        .request("conversation/append", json!({"sessionId": id, "messages": [{"id": uuid, "role": "user", "content": "cited"}]}))
        .unwrap();
    let read = server
        .request(
            "conversation/messages",
            json!({"sessionId": id, "ids": ["5217d838"]}),
        )
        .unwrap();
    assert_eq!(read["messages"][0]["message"]["id"], uuid);

    // What comes later is searchable at once.
    server
        .request("conversation/append", json!({"sessionId": id, "messages": [{"id": "m40", "role": "user", "content": "new marker QQ-991"}]}))
        .unwrap();
    assert_eq!(
        check(&mut server, json!({"sessionId": id, "query": "qq-991"})),
        ["m40"]
    );
    server.shutdown_and_exit();
}

#[test]
fn bad_queries_and_unknown_sessions_get_clear_errors_and_block_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), json!({}));
    let id = planted_session(&mut server);
    let error = |server: &mut Server, method: &str, params: Value| {
        let e = server.request(method, params).unwrap_err();
        assert_eq!(e.code, -32602, "{}", e.message);
        e.message
    };
    assert!(error(
        &mut server,
        "conversation/search",
        json!({"sessionId": id, "query": "  "})
    )
    .contains("query is empty"));
    let long = "x".repeat(1 << 20);
    assert!(error(
        &mut server,
        "conversation/search",
        json!({"sessionId": id, "query": long})
    )
    .contains("at most 1000"));
    assert!(error(
        &mut server,
        "conversation/search",
        json!({"sessionId": "nope", "query": "x"})
    )
    .contains("nope"));
    assert!(error(
        &mut server,
        "conversation/messages",
        json!({"sessionId": id, "ids": ["m1", "m999"]})
    )
    .contains("ids[1]: no message `m999`"));
    assert!(error(
        &mut server,
        "conversation/messages",
        json!({"sessionId": id, "range": {"first": "m5", "last": "m2"}})
    )
    .contains("comes after"));
    assert!(error(
        &mut server,
        "conversation/messages",
        json!({"sessionId": id})
    )
    .contains("exactly one"));
    // Regex metacharacters are text, and the server still answers appends.
    assert!(check(
        &mut server,
        json!({"sessionId": id, "query": "foo(.*)[ \\d+"})
    )
    .is_empty());
    server
        .request(
            "conversation/append",
            json!({"sessionId": id, "messages": [{"role": "user", "content": "still here"}]}),
        )
        .unwrap();
    server.shutdown_and_exit();
}

/// `conversation/recap` tells the model about compactd's MCP tools only
/// when the client says the agent has them (the opencode plugin does not
/// register them, so its record must not send the model looking).
#[test]
fn the_recap_mentions_the_recall_tools_only_where_the_agent_has_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), json!({}));
    let id = planted_session(&mut server);
    let context = |server: &mut Server, params: Value| {
        server.request("conversation/recap", params).unwrap()["context"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let plain = context(&mut server, json!({"sessionId": id}));
    assert!(plain.starts_with("compactd's record"), "{plain}");
    assert!(!plain.contains("search_history"), "{plain}");
    let told = context(&mut server, json!({"sessionId": id, "recallTools": true}));
    assert!(
        told.contains("compactd's MCP tools (search_history, read_messages)"),
        "{told}"
    );
    server.shutdown_and_exit();
}
