//! Sessions can be closed, and a server that opens many more sessions than
//! it has file descriptors for keeps serving: `conversation/close`, the
//! least recently used idle session evicted under pressure and reopened
//! when named again, and the soft descriptor limit raised at start.

use serde_json::{json, Value};

use crate::support::Server;

fn user(id: &str) -> Value {
    json!([{"id": id, "role": "user", "content": format!("message {id}")}])
}

/// Open descriptors of a process.
fn open_descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count()
}

#[cfg(target_os = "linux")]
#[test]
fn two_thousand_sessions_under_ulimit_1024_keep_serving() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::spawn_limited(dir.path(), &[], &[], Some(1024));
    server.initialize(json!({"durability": "flush"}));
    const SESSIONS: usize = 2_000;
    for n in 0..SESSIONS {
        let id = format!("s{n}");
        server.open(json!({"sessionId": id}));
        server.append(&id, user(&format!("{id}-a")));
    }
    let fds = open_descriptors(server.pid());
    assert!(fds < 1024, "{fds} descriptors open");
    // Every session still answers: the early ones were evicted and come
    // back from their logs, with what they held and what comes next.
    for n in [0, 1, 999, SESSIONS - 1] {
        let id = format!("s{n}");
        server.append(&id, user(&format!("{id}-b")));
        assert_eq!(
            server.history_ids(&id),
            [format!("{id}-a"), format!("{id}-b")]
        );
    }
    // As a notification too.
    server.notify(
        "conversation/append",
        json!({"sessionId": "s2", "messages": user("s2-b")}),
    );
    assert_eq!(server.history_ids("s2"), ["s2-a", "s2-b"]);
    assert!(open_descriptors(server.pid()) < 1024);
    assert_eq!(server.shutdown_and_exit(), 0);
}

#[test]
fn close_releases_the_session_and_its_lock() {
    let dir = tempfile::tempdir().unwrap();
    let mut first = Server::start(dir.path(), json!({}));
    first.open(json!({"sessionId": "s"}));
    first.append("s", user("m1"));
    let closed = first
        .request("conversation/close", json!({"sessionId": "s"}))
        .unwrap();
    assert_eq!(closed, json!({"sessionId": "s", "closed": true}));
    let error = first
        .request("conversation/history", json!({"sessionId": "s"}))
        .unwrap_err();
    assert!(error.message.contains("no open session"), "{error:?}");
    let again = first
        .request("conversation/close", json!({"sessionId": "s"}))
        .unwrap();
    assert_eq!(again["closed"], false, "closing twice is no error");

    // The lock went with it: another process writes the session now.
    let mut second = Server::start(dir.path(), json!({}));
    second.open(json!({"sessionId": "s"}));
    second.append("s", user("m2"));
    assert_eq!(second.history_ids("s"), ["m1", "m2"]);
    let refused = first.request("conversation/open", json!({"sessionId": "s"}));
    assert_eq!(refused.map_err(|e| e.code), Err(-32010));
}

#[test]
fn closing_cancels_the_running_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(
        dir.path(),
        json!({"autoCompact": false, "keepRecentTokens": 10,
               "summarizer": {"provider": "test", "delayMs": 30000}}),
    );
    server.open(json!({"sessionId": "s"}));
    let chat: Vec<Value> = (0..6)
        .flat_map(|i| {
            [
                json!({"role": "user", "content": format!("request {i}: {}", "word ".repeat(60))}),
                json!({"role": "assistant", "content": format!("answer {i}: {}", "word ".repeat(60))}),
            ]
        })
        .collect();
    server.append("s", chat);
    let compact = server.send_request("conversation/compact", json!({"sessionId": "s"}));
    let closed = server
        .request("conversation/close", json!({"sessionId": "s"}))
        .unwrap();
    assert_eq!(closed["closed"], true);
    assert_eq!(server.response(compact).map_err(|e| e.code), Err(-32800));
    server.open(json!({"sessionId": "s"}));
    server.assert_not_compacted("s");
}
