//! Session ids that would not be portable file names are refused without
//! being echoed in full, and the `durability` setting, through the binary.

use serde_json::json;

use crate::support::Server;

/// Opening `id` is refused with -32602 and a message holding `fragment`,
/// and nothing is created in the data directory.
fn check(server: &mut Server, id: &str, fragment: &str) {
    let error = server
        .request("conversation/open", json!({"sessionId": id}))
        .unwrap_err();
    assert_eq!(error.code, -32602, "{id:?}: {error:?}");
    assert!(
        error.message.contains(fragment),
        "{id:?}: {}",
        error.message
    );
    assert!(
        error.message.len() < 600,
        "{id:?}: {} bytes",
        error.message.len()
    );
    let created: Vec<_> = std::fs::read_dir(&server.data_dir)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(created.is_empty(), "{id:?} created {created:?}");
}

#[test]
fn ids_that_are_not_portable_file_names_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(&dir.path().join("sessions"), json!({}));
    let huge = "a".repeat(100_000);
    let cases = [
        ("con", "device name"),
        ("NUL", "device name"),
        ("aux.jsonl", "device name"),
        ("Com1", "device name"),
        ("lpt9.txt", "device name"),
        ("prn", "device name"),
        ("session.", "end with '.'"),
        ("../escape", "start with a letter or digit"),
        ("a/b", "only letters"),
        (huge.as_str(), "(100000 bytes)"),
    ];
    for (id, fragment) in cases {
        check(&mut server, id, fragment);
    }
    // Nor is a huge id echoed by requests that look a session up.
    let error = server
        .request(
            "conversation/append",
            json!({"sessionId": huge, "messages": []}),
        )
        .unwrap_err();
    assert!(error.message.len() < 600, "{} bytes", error.message.len());
    assert!(
        error.message.contains("(100000 bytes)"),
        "{}",
        error.message
    );
    let error = server
        .request(
            "conversation/import",
            json!({"sessionId": huge, "content": "[{\"role\": \"user\", \"content\": \"hi\"}]"}),
        )
        .unwrap_err();
    assert!(error.message.len() < 600, "{} bytes", error.message.len());
    // Names close to the reserved ones are fine.
    for id in ["console", "com10", "nul-1", "my.session"] {
        server.open(json!({"sessionId": id}));
    }
}

#[test]
fn durability_is_a_setting_with_two_values() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::spawn(dir.path());
    let error = server
        .request(
            "initialize",
            json!({"capabilities": {}, "initializationOptions": {"dataDir": dir.path(), "durability": "sometimes"}}),
        )
        .unwrap_err();
    assert_eq!(error.code, -32602);
    assert!(error.message.contains("durability"), "{}", error.message);

    let mut server = Server::start(dir.path(), json!({"durability": "fsync"}));
    server.open(json!({"sessionId": "synced"}));
    server.append(
        "synced",
        json!([{"id": "m1", "role": "user", "content": "kept"}]),
    );
    server.notify(
        "workspace/didChangeConfiguration",
        json!({"settings": {"dataDir": dir.path(), "durability": "flush"}}),
    );
    server.append(
        "synced",
        json!([{"id": "m2", "role": "user", "content": "kept too"}]),
    );
    assert_eq!(server.shutdown_and_exit(), 0);
    let log = std::fs::read_to_string(dir.path().join("synced.jsonl")).unwrap();
    assert_eq!(log.lines().count(), 3, "{log}");
}

/// What stands at `<dataDir>/<id>.jsonl` or `<id>.lock` is not trusted:
/// a FIFO or a device is refused with an error naming it (never a hang),
/// and a 1 GiB sparse file of NULs opens without being held in memory.
#[cfg(unix)]
#[test]
fn session_logs_and_lock_files_that_are_not_regular_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let mkfifo = crate::support::mkfifo;
    mkfifo(&data.join("fifo.jsonl"));
    std::os::unix::fs::symlink("/dev/zero", data.join("zero.jsonl")).unwrap();
    mkfifo(&data.join("fifolock.lock"));
    std::os::unix::fs::symlink("/dev/zero", data.join("zerolock.lock")).unwrap();
    let sparse = std::fs::File::create(data.join("sparse.jsonl")).unwrap();
    sparse.set_len(1 << 30).unwrap();
    drop(sparse);

    let mut server = Server::start(data, json!({}));
    for (id, kind) in [
        ("fifo", "a FIFO"),
        ("zero", "a character device"),
        ("fifolock", "a FIFO"),
        ("zerolock", "a character device"),
    ] {
        for params in [
            json!({"sessionId": id}),
            json!({"sessionId": id, "readOnly": true}),
        ] {
            if id.ends_with("lock") && params.get("readOnly").is_some() {
                continue; // reading takes no lock; there is no log either
            }
            let error = server.request("conversation/open", params).unwrap_err();
            assert!(
                error.message.contains("not a regular file") && error.message.contains(kind),
                "{id}: {error:?}"
            );
        }
    }
    let opened = server
        .request("conversation/open", json!({"sessionId": "sparse"}))
        .unwrap();
    assert_eq!(opened["messageCount"], 0);
    let warnings = opened["warnings"].to_string();
    assert!(
        warnings.contains("starts with byte 0x00, 1073741824 bytes"),
        "{warnings}"
    );
    let peak = crate::support::peak_rss_kib(server.pid());
    assert!(peak < 400 * 1024, "the NULs were held: peak RSS {peak} KiB");
    // The server still serves, and the sparse session takes appends.
    server.append(
        "sparse",
        json!([{"id": "m1", "role": "user", "content": "hi"}]),
    );
    server.open(json!({"sessionId": "fine"}));
}
