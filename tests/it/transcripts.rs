use std::collections::HashSet;

use serde_json::json;

use crate::support::{pi_edited_paths, read_pi_session, summary_section, transcripts_dir, Server};

fn section(summary: &str, tag: &str) -> HashSet<String> {
    summary_section(summary, tag).into_iter().collect()
}

#[test]
fn compacting_a_real_pi_session_keeps_history_valid_and_lists_edits() {
    let Some(dir) = transcripts_dir() else { return };
    let path = dir.join("pi-session-jsonl/large-session.jsonl");
    let raw = std::fs::read_to_string(&path).unwrap();
    let messages = read_pi_session(&path);
    assert_eq!(messages.len(), 914);

    let data = tempfile::tempdir().unwrap();
    let mut server = Server::start(data.path(), json!({}));
    let id = server.open(json!({"model": "claude-sonnet-4-5"}));
    for batch in messages.chunks(100) {
        server.append(&id, batch);
    }
    let result = server
        .request("conversation/compact", json!({"sessionId": id}))
        .unwrap();
    assert_eq!(result["compacted"], true, "{result}");
    let before = result["tokensBefore"].as_u64().unwrap();
    let after = result["tokensAfter"].as_u64().unwrap();
    assert!(after < before, "tokens {before} → {after}");

    let history = server
        .request("conversation/history", json!({"sessionId": id}))
        .unwrap();
    let kept = history["messages"].as_array().unwrap();
    // Every tool result in the kept history follows the call it answers.
    let mut calls_seen: HashSet<&str> = HashSet::new();
    for m in kept {
        if let Some(calls) = m["toolCalls"].as_array() {
            calls_seen.extend(calls.iter().map(|c| c["id"].as_str().unwrap()));
        }
        if m["role"] == "tool" {
            let call = m["toolCallId"].as_str().unwrap();
            assert!(
                calls_seen.contains(call),
                "tool result {} lacks its call",
                m["id"]
            );
        }
    }
    let summary = result["summary"].as_str().unwrap();
    let modified = section(summary, "modified-files");
    let read = section(summary, "read-files");
    let edited = pi_edited_paths(&raw);
    assert!(!edited.is_empty());
    let missing: Vec<_> = edited.difference(&modified).collect();
    assert!(
        missing.is_empty(),
        "edited but not in <modified-files>: {missing:?}"
    );
    assert!(
        read.is_disjoint(&modified),
        "a modified file is not also listed as read"
    );
}
