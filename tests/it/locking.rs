//! Two real server processes on one data directory: one writes a session,
//! the other is refused (naming the writer's pid) or reads it read-only;
//! the lock goes with the writer, however it ends. The CLI's `compact --out`
//! never replaces a log a server has open.

use std::path::Path;

use serde_json::{json, Value};

use crate::support::{cli, RpcError, Server};

const LOCKED: i64 = -32010;
const READ_ONLY: i64 = -32011;

fn user(id: &str, text: &str) -> Value {
    json!([{"id": id, "role": "user", "content": text}])
}

/// A server that opened `id` and appended the message `m1` to it.
fn writer_of(dir: &Path, id: &str) -> Server {
    let mut writer = Server::start(dir, json!({}));
    writer.open(json!({"sessionId": id}));
    writer.append(id, user("m1", "first"));
    writer
}

/// `server` may not open `id` for writing while `holder` has it.
fn assert_open_refused(server: &mut Server, id: &str, holder: &Server) {
    assert_locked_by(
        server.request("conversation/open", json!({"sessionId": id})),
        holder,
    );
}

fn assert_locked_by(result: Result<Value, RpcError>, holder: &Server) {
    let error = result.expect_err("the second process must be refused");
    assert_eq!(error.code, LOCKED, "{error:?}");
    assert!(
        error.message.contains(&format!("pid {}", holder.pid())),
        "names the holder: {}",
        error.message
    );
    assert!(error.message.contains("readOnly"), "{}", error.message);
}

#[test]
fn a_second_process_is_refused_or_reads_only() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = writer_of(dir.path(), "shared");
    let mut other = Server::start(dir.path(), json!({}));
    assert_open_refused(&mut other, "shared", &writer);
    assert_locked_by(
        other.request(
            "conversation/import",
            json!({"sessionId": "shared", "content": "[{\"role\": \"user\", \"content\": \"hi\"}]"}),
        ),
        &writer,
    );

    // Read-only: a snapshot of the log, and every change refused.
    let opened = other
        .request(
            "conversation/open",
            json!({"sessionId": "shared", "readOnly": true}),
        )
        .unwrap();
    assert_eq!(opened["readOnly"], true);
    assert_eq!(opened["messageCount"], 1);
    assert_eq!(other.history_ids("shared"), ["m1"]);
    let changes = [
        (
            "conversation/append",
            json!({"sessionId": "shared", "messages": user("x", "no")}),
        ),
        ("conversation/compact", json!({"sessionId": "shared"})),
        (
            "conversation/pin",
            json!({"sessionId": "shared", "text": "keep"}),
        ),
        (
            "conversation/setAutoCompact",
            json!({"sessionId": "shared", "enabled": false}),
        ),
    ];
    for (method, params) in changes {
        let error = other.request(method, params).unwrap_err();
        assert_eq!(error.code, READ_ONLY, "{method}: {error:?}");
        assert!(error.message.contains("read-only"), "{}", error.message);
    }

    // The writer is unaffected; reopening read-only reads the log anew.
    writer.append("shared", user("m2", "second"));
    let reopened = other
        .request(
            "conversation/open",
            json!({"sessionId": "shared", "readOnly": true}),
        )
        .unwrap();
    assert_eq!(reopened["messageCount"], 2);
    // Asking to write is refused and leaves the read-only snapshot open.
    assert_open_refused(&mut other, "shared", &writer);
    assert_eq!(other.history_ids("shared"), ["m1", "m2"]);
    // Branching reads the log only: allowed from a read-only session.
    let branch = other
        .request(
            "conversation/branch",
            json!({"sessionId": "shared", "beforeMessageId": "m2"}),
        )
        .unwrap();
    let branch_id = branch["sessionId"].as_str().unwrap().to_string();
    assert_eq!(branch["messageCount"], 1);
    other.append(&branch_id, user("b1", "on the branch"));

    // Once the writer is gone, the other process may write.
    assert_eq!(writer.shutdown_and_exit(), 0);
    let opened = other
        .request("conversation/open", json!({"sessionId": "shared"}))
        .unwrap();
    assert!(opened.get("readOnly").is_none(), "{opened}");
    assert_eq!(opened["messageCount"], 2);
    other.append("shared", user("m3", "third"));
    assert_eq!(other.history_ids("shared"), ["m1", "m2", "m3"]);
    let log = std::fs::read_to_string(dir.path().join("shared.jsonl")).unwrap();
    assert_eq!(log.matches("\"type\":\"message\"").count(), 3, "{log}");
}

#[test]
fn a_killed_writer_leaves_no_lock_behind() {
    let dir = tempfile::tempdir().unwrap();
    let writer = writer_of(dir.path(), "s");
    let mut other = Server::start(dir.path(), json!({}));
    assert_open_refused(&mut other, "s", &writer);
    writer.kill();
    let opened = other
        .request("conversation/open", json!({"sessionId": "s"}))
        .unwrap();
    assert_eq!(opened["messageCount"], 1);
    other.append("s", user("m2", "after"));
}

#[test]
fn reading_only_needs_a_log_and_takes_no_lock() {
    let dir = tempfile::tempdir().unwrap();
    let mut reader = Server::start(dir.path(), json!({}));
    let error = reader
        .request(
            "conversation/open",
            json!({"sessionId": "absent", "readOnly": true}),
        )
        .unwrap_err();
    assert_eq!(error.code, -32602, "{error:?}");
    assert!(error.message.contains("no session `absent`"), "{error:?}");
    assert!(!dir.path().join("absent.jsonl").exists());

    let writer = writer_of(dir.path(), "s");
    reader
        .request(
            "conversation/open",
            json!({"sessionId": "s", "readOnly": true}),
        )
        .unwrap();
    // The reader holds nothing: a third process is refused by the writer
    // alone, and may write once the writer is gone.
    let mut third = Server::start(dir.path(), json!({}));
    assert_open_refused(&mut third, "s", &writer);
    assert_eq!(writer.shutdown_and_exit(), 0);
    third.open(json!({"sessionId": "s"}));
    third.append("s", user("m2", "from the third"));
}

fn compact_to(out: &Path) -> std::process::Output {
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/conversation.json");
    cli()
        .args([
            "compact",
            "--quiet",
            "--keep-recent-tokens",
            "300",
            example,
            "--out",
        ])
        .arg(out)
        .output()
        .unwrap()
}

#[test]
fn compact_out_never_replaces_a_log_a_server_has_open() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = writer_of(dir.path(), "live");
    let live = dir.path().join("live.jsonl");
    let before = std::fs::read_to_string(&live).unwrap();

    let refused = compact_to(&live);
    assert_eq!(refused.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains(&format!("pid {}", server.pid())),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&live).unwrap(), before);

    // Reading a live log is fine, and writing elsewhere leaves no lock file
    // (with enough history that compacting it makes it smaller).
    for turn in 0..6 {
        let text = format!(
            "turn {turn}: {}",
            "a long question about the code ".repeat(60)
        );
        server.append("live", user(&format!("q{turn}"), &text));
    }
    let elsewhere = tempfile::tempdir().unwrap();
    let out = elsewhere.path().join("copy.jsonl");
    let copied = cli()
        .args(["compact", "--quiet", "--keep-recent-tokens", "0"])
        .arg(&live)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        copied.status.success(),
        "{}",
        String::from_utf8_lossy(&copied.stderr)
    );
    assert!(out.exists());
    assert!(!elsewhere.path().join("copy.lock").exists());

    // Once the server is gone, the log may be replaced.
    server.append("live", user("m2", "still in use"));
    assert_eq!(server.shutdown_and_exit(), 0);
    let written = compact_to(&live);
    assert!(
        written.status.success(),
        "{}",
        String::from_utf8_lossy(&written.stderr)
    );
    assert_ne!(std::fs::read_to_string(&live).unwrap(), before);
}

/// Deleting a session's lock file under a running writer admits no second
/// writer: the log itself is locked too.
#[cfg(unix)]
#[test]
fn a_deleted_lock_file_admits_no_second_writer() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = writer_of(dir.path(), "shared");
    std::fs::remove_file(dir.path().join("shared.lock")).unwrap();
    let mut other = Server::start(dir.path(), json!({}));
    let error = other
        .request("conversation/open", json!({"sessionId": "shared"}))
        .expect_err("a second writer was admitted");
    assert_eq!(error.code, LOCKED, "{error:?}");
    writer.append("shared", user("m2", "second"));
    assert_eq!(writer.history_ids("shared"), ["m1", "m2"]);
    // Reading still works, and the writer's end frees the log.
    other.open(json!({"sessionId": "shared", "readOnly": true}));
    assert_eq!(writer.shutdown_and_exit(), 0);
    let mut third = Server::start(dir.path(), json!({}));
    third.open(json!({"sessionId": "shared"}));
    assert_eq!(third.history_ids("shared"), ["m1", "m2"]);
}
