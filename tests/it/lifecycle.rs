use serde_json::{json, Value};

use crate::support::Server;

#[test]
fn initialize_advertises_compactd_capabilities() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::spawn(dir.path());
    let result = server.initialize(json!({}));
    let caps = &result["capabilities"]["experimental"]["compactd"];
    assert_eq!(caps["version"], env!("CARGO_PKG_VERSION"));
    let methods: Vec<&str> = caps["methods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    for method in [
        "conversation/open",
        "conversation/append",
        "conversation/history",
        "conversation/compact",
        "files/list",
        "files/unchangedSinceRead",
    ] {
        assert!(methods.contains(&method), "{method} not advertised");
    }
    let notifications = caps["notifications"].as_array().unwrap();
    assert!(notifications.contains(&json!("files/didChange")));
    // The agents it follows, for the editors' lists and completions, with
    // what compactd does for each (the editors offer setup for `hooks`).
    let supports = |setup, hooks, status_line| json!({"setup": setup, "hooks": hooks, "statusLine": status_line});
    assert_eq!(
        caps["agents"],
        json!([
            {"name": "claude-code", "displayName": "Claude Code", "supports": supports(true, true, true)},
            {"name": "codex", "displayName": "Codex", "supports": supports(true, true, false)},
            {"name": "pi", "displayName": "pi", "supports": supports(true, false, false)},
            {"name": "gemini", "displayName": "Gemini CLI", "supports": supports(true, true, false)},
            {"name": "opencode", "displayName": "opencode", "supports": supports(true, true, false)},
        ])
    );
    let unique: std::collections::HashSet<_> = notifications.iter().collect();
    assert_eq!(unique.len(), notifications.len(), "{notifications:?}");
    assert_eq!(server.shutdown_and_exit(), 0);
}

#[test]
fn requests_before_initialize_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::spawn(dir.path());
    let err = server.request("conversation/open", json!({})).unwrap_err();
    assert_eq!(err.code, -32002, "{err:?}");
    // Still usable afterwards.
    server.initialize(json!({}));
    assert!(server.request("conversation/open", json!({})).is_ok());
}

#[test]
fn unknown_methods_and_invalid_params_get_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), json!({}));
    let err = server
        .request("conversation/frobnicate", json!({}))
        .unwrap_err();
    assert_eq!(err.code, -32601);
    assert!(err.message.contains("conversation/frobnicate"), "{err:?}");

    let err = server
        .request("conversation/history", json!({}))
        .unwrap_err();
    assert_eq!(err.code, -32602);
    assert!(err.message.contains("sessionId"), "{err:?}");

    let id = server.open(json!({}));
    let err = server
        .request(
            "conversation/append",
            json!({"sessionId": id, "messages": [{"role": "user", "content": "ok"}, {"role": "robot", "content": "?"}]}),
        )
        .unwrap_err();
    assert_eq!(err.code, -32602);
    assert!(err.message.contains("messages[1]"), "{err:?}");

    let err = server
        .request(
            "conversation/open",
            json!({"sessionId": "../../etc/passwd"}),
        )
        .unwrap_err();
    assert_eq!(err.code, -32602);
    assert!(err.message.contains("sessionId"), "{err:?}");

    // An unknown notification is ignored and the server keeps serving.
    server.notify("conversation/somethingNew", json!({}));
    let history = server
        .request("conversation/history", json!({"sessionId": id}))
        .unwrap();
    assert_eq!(
        history["messages"].as_array().unwrap().len(),
        0,
        "the bad append applied nothing"
    );
}

#[test]
fn survives_garbage_frames() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), json!({}));
    server.send_raw(b"Content-Length: 9\r\n\r\nnot json!");
    server.send_raw(b"this is not a header\r\n");
    server.send_raw(b"Content-Length: 13\r\n\r\n{\"foo\": true}");
    let id = server.open(json!({}));
    assert!(!id.is_empty());
    let stderr = server.stderr_after_containing(0, "refused bad input: parse error");
    // The line of garbage is skipped while resynchronising after the first
    // frame; tests/it/robustness.rs covers every kind of bad frame.
    assert!(
        stderr.contains("refused bad input: parse error"),
        "{stderr}"
    );
    assert!(
        stderr.contains("refused bad input: invalid request"),
        "{stderr}"
    );
}

#[test]
fn shutdown_refuses_requests_and_exit_codes_follow_lsp() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), json!({}));
    server.request("shutdown", json!(null)).unwrap();
    let err = server.request("conversation/open", json!({})).unwrap_err();
    assert_eq!(err.code, -32600);
    server.notify("exit", json!(null));
    assert_eq!(server.wait(), 0);

    let mut server = Server::start(dir.path(), json!({}));
    server.notify("exit", json!(null));
    assert_eq!(server.wait(), 1, "exit without shutdown");

    // The end of input stands for `exit`, as docs/protocol.md says.
    let mut server = Server::start(dir.path(), json!({}));
    server.request("shutdown", json!(null)).unwrap();
    assert_eq!(server.wait(), 0, "shutdown, then the input ends");
    let mut server = Server::start(dir.path(), json!({}));
    assert_eq!(server.wait(), 1, "the input ends without shutdown");
}

/// A client that closes its input but stops reading the output cannot keep
/// the server alive: once the output takes nothing for a while, the rest
/// is dropped and the process exits.
#[test]
fn a_client_that_stops_reading_does_not_keep_the_server_alive() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_compactd"))
        .arg("--no-user-config")
        .env("HOME", dir.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let frame = |body: Value| {
        let body = body.to_string();
        format!("Content-Length: {}\r\n\r\n{body}", body.len())
    };
    let mut input = String::new();
    input += &frame(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"capabilities": {}, "initializationOptions": {"dataDir": dir.path()}}}));
    input += &frame(
        json!({"jsonrpc": "2.0", "id": 2, "method": "conversation/open", "params": {"sessionId": "s"}}),
    );
    let big = "x".repeat(300_000);
    input += &frame(
        json!({"jsonrpc": "2.0", "id": 3, "method": "conversation/append",
        "params": {"sessionId": "s", "messages": [{"role": "user", "content": big}]}}),
    );
    for id in 4..10 {
        // Each answer is 300 KB: far more than a pipe holds.
        input += &frame(
            json!({"jsonrpc": "2.0", "id": id, "method": "conversation/history", "params": {"sessionId": "s"}}),
        );
    }
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).unwrap();
    drop(stdin);
    let _unread = child.stdout.take();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait().unwrap().code()));
    let code = rx
        .recv_timeout(crate::support::PATIENCE)
        .expect("the server waited forever for a reader that stopped reading");
    assert_eq!(code, Some(1), "input ended without shutdown");
}

#[test]
fn logs_never_go_to_stdout() {
    // Every frame parsed by the client is valid JSON-RPC; debug logging is
    // on in tests, so a stray log line on stdout would break the framing.
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), json!({}));
    let id = server.open(json!({}));
    server
        .request(
            "conversation/append",
            json!({"sessionId": id, "messages": [{"role": "user", "content": "x"}]}),
        )
        .unwrap();
    assert!(
        server
            .stderr_after_containing(0, "sessions in")
            .contains("sessions in"),
        "logs reach stderr"
    );
    assert!(server.received.iter().all(|m| m["jsonrpc"] == "2.0"));
}

#[test]
fn live_configuration_changes_apply_and_bad_ones_are_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), json!({}));
    let id = server.open(json!({}));
    server.notify(
        "workspace/didChangeConfiguration",
        json!({"settings": {"compactd": {"autoCompactTokenLimit": 1234}}}),
    );
    let meter = server.next_where(|m| m["method"] == "conversation/tokens")["params"].clone();
    assert_eq!(meter["sessionId"], id);
    assert_eq!(meter["autoCompactAt"], 1234);

    server.notify(
        "workspace/didChangeConfiguration",
        json!({"settings": {"autoCompactTokenLimit": "lots"}}),
    );
    let check = server
        .request("conversation/check", json!({"sessionId": id}))
        .unwrap();
    assert_eq!(
        check["meter"]["autoCompactAt"], 1234,
        "invalid settings keep the old ones"
    );
    let stderr = server.stderr_after_containing(0, "autoCompactTokenLimit");
    assert!(stderr.contains("autoCompactTokenLimit"), "{stderr}");
}

#[test]
fn a_frame_split_around_a_finishing_job_is_read_whole() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(
        dir.path(),
        json!({"keepRecentTokens": 1, "summarizer": {"provider": "test", "delayMs": 200}}),
    );
    let id = server.open(json!({}));
    // Long enough that the summary is smaller, so the compaction applies.
    let long = "a long answer with details to summarize ".repeat(200);
    server
        .request(
            "conversation/append",
            json!({"sessionId": id, "messages": [
                {"role": "user", "content": "first request"},
                {"role": "assistant", "content": long},
                {"role": "user", "content": "second request"}
            ]}),
        )
        .unwrap();
    let compact = server.send_request("conversation/compact", json!({"sessionId": id}));
    // A large frame whose second half arrives only after the compaction
    // finished: the job's completion must not cost the bytes already read.
    let body = serde_json::to_string(&json!({
        "jsonrpc": "2.0", "id": 1000, "method": "conversation/append",
        "params": {"sessionId": id, "messages": [{"role": "user", "content": "x".repeat(100_000)}]}
    }))
    .unwrap();
    let frame = format!("Content-Length: {}\r\n\r\n{body}", body.len());
    let (head, tail) = frame.split_at(frame.len() / 2);
    server.send_raw(head.as_bytes());
    let compacted = server.response(compact).unwrap();
    assert_eq!(compacted["compacted"], true, "{compacted}");
    server.send_raw(tail.as_bytes());
    let appended = server.response(1000).unwrap();
    assert_eq!(appended["ids"].as_array().unwrap().len(), 1);
}

#[test]
fn a_second_initialize_is_refused_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), json!({"autoCompactTokenLimit": 1234}));
    let err = server
        .request(
            "initialize",
            json!({"processId": null, "capabilities": {},
                   "initializationOptions": {"dataDir": elsewhere.path(), "autoCompactTokenLimit": 99}}),
        )
        .unwrap_err();
    assert_eq!(err.code, -32600, "{err:?}");
    assert!(err.message.contains("already initialized"), "{err:?}");
    let opened = server
        .request("conversation/open", json!({"sessionId": "s"}))
        .unwrap();
    assert_eq!(opened["meter"]["autoCompactAt"], 1234, "configuration kept");
    assert!(dir.path().join("s.jsonl").is_file(), "dataDir kept");
    assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
    let stderr = server.exit_and_stderr();
    assert_eq!(
        stderr.matches("sessions in").count(),
        1,
        "configured (and the watcher started) once: {stderr}"
    );
}

#[test]
fn configuration_changes_without_settings_keep_the_initialization_options() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(
        dir.path(),
        json!({"autoCompactTokenLimit": 1234, "keepRecentTokens": 77}),
    );
    let id = server.open(json!({}));
    for settings in [
        json!(null),
        json!({}),
        json!({"compactd": null}),
        json!({"compactd": {}}),
    ] {
        server.notify(
            "workspace/didChangeConfiguration",
            json!({"settings": settings}),
        );
        let check = server
            .request("conversation/check", json!({"sessionId": id}))
            .unwrap();
        assert_eq!(check["meter"]["autoCompactAt"], 1234, "{settings}");
    }
    server.notify("workspace/didChangeConfiguration", json!({}));
    // A real change still applies, replacing initializationOptions whole.
    server.notify(
        "workspace/didChangeConfiguration",
        json!({"settings": {"compactd": {"autoCompactTokenLimit": 4321}}}),
    );
    let check = server
        .request("conversation/check", json!({"sessionId": id}))
        .unwrap();
    assert_eq!(check["meter"]["autoCompactAt"], 4321);
}
