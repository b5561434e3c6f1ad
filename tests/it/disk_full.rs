//! A full disk loses nothing acknowledged: the data directory on a 1 MiB
//! tmpfs, filled until appends, a compaction and a new session's header
//! are refused (-32603), then freed; after a restart every acknowledged
//! message, and every acknowledged compaction, is in the log in order, and
//! nothing refused is. In both durability modes. Mounting needs root (CI
//! runs as root); elsewhere the test says why it skips.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::support::Server;

/// A small tmpfs mounted for the test, unmounted when dropped.
struct Tmpfs {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl Tmpfs {
    fn mount(size: &str) -> Result<Tmpfs, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mnt");
        std::fs::create_dir(&path).unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&path)
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "mount -t tmpfs failed (needs root): {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(Tmpfs { _dir: dir, path })
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.path).status();
    }
}

/// Writes `path` until the filesystem is full, then gives back `leave`
/// bytes (rounded to pages by tmpfs).
fn fill(path: &Path, leave: u64) {
    let mut file = File::create(path).unwrap();
    let chunk = vec![b'x'; 4096];
    let mut written = 0u64;
    while file.write_all(&chunk).is_ok() {
        written += chunk.len() as u64;
    }
    // A failed write may have left part of a chunk; the size is the truth.
    drop(file);
    let len = std::fs::metadata(path).unwrap().len().max(written);
    File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(len.saturating_sub(leave))
        .unwrap();
}

fn message(id: &str) -> Value {
    // About 7 KB, more than any page's slack, so a full disk refuses it.
    json!({"id": id, "role": if id.ends_with('a') { "assistant" } else { "user" },
           "content": format!("{id}: {}", "lorem ipsum dolor sit amet ".repeat(260))})
}

/// The message ids of the session's log, in order (every message ever
/// appended, including those a compaction summarized).
fn logged_ids(data_dir: &Path, session: &str) -> Vec<String> {
    let log = std::fs::read_to_string(data_dir.join(format!("{session}.jsonl"))).unwrap();
    log.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|entry| entry["type"] == "message")
        .map(|entry| entry["message"]["id"].as_str().unwrap().to_string())
        .collect()
}

fn check(durability: &str, mnt: &Path) {
    let data_dir = mnt.join(durability);
    let mut server = Server::start(
        &data_dir,
        json!({"durability": durability, "keepRecentTokens": 2000, "autoCompact": false}),
    );
    server.open(json!({"sessionId": "s"}));
    let filler = mnt.join(format!("{durability}.filler"));
    fill(&filler, 40 * 1024);

    let mut acked = Vec::new();
    let mut refused = Vec::new();
    for n in 0.. {
        let id = format!("m{n}{}", if n % 2 == 1 { "a" } else { "u" });
        let result = server.request(
            "conversation/append",
            json!({"sessionId": "s", "messages": [message(&id)]}),
        );
        match result {
            Ok(_) => acked.push(id),
            Err(e) => {
                assert_eq!(e.code, -32603, "{e:?}");
                assert!(e.message.contains("No space left"), "{}", e.message);
                refused.push(id);
                break;
            }
        }
        assert!(n < 100, "the disk never filled");
    }
    assert!(acked.len() >= 2, "some appends fit before the disk filled");
    // Now really full: the compaction and a new session's header fail too
    // (whatever fits in a page's slack is acknowledged and must survive).
    fill(&mnt.join(format!("{durability}.filler2")), 0);
    let retried = format!("m{}r", acked.len());
    match server.request(
        "conversation/append",
        json!({"sessionId": "s", "messages": [message(&retried)]}),
    ) {
        Ok(_) => panic!("an append on a full disk was acknowledged"),
        Err(e) => assert_eq!(e.code, -32603, "{e:?}"),
    }
    refused.push(retried);
    let compacted_while_full = server
        .request("conversation/compact", json!({"sessionId": "s"}))
        .map(|r| r["compacted"] == true);
    if let Err(e) = &compacted_while_full {
        assert_eq!(e.code, -32603, "{e:?}");
    }
    let header = server.request("conversation/open", json!({"sessionId": "t"}));
    assert_eq!(
        header.as_ref().map_err(|e| e.code),
        Err(-32603),
        "{header:?}"
    );

    std::fs::remove_file(&filler).unwrap();
    std::fs::remove_file(mnt.join(format!("{durability}.filler2"))).unwrap();
    for n in 0..3 {
        let id = format!("after{n}{}", if n % 2 == 1 { "a" } else { "u" });
        server.append("s", [message(&id)]);
        acked.push(id);
    }
    let compacted = server
        .request("conversation/compact", json!({"sessionId": "s"}))
        .unwrap();
    assert_eq!(compacted["compacted"], true, "{compacted}");
    server.open(json!({"sessionId": "t"}));
    let history_before = server.history_ids("s");
    assert_eq!(server.shutdown_and_exit(), 0);

    assert_eq!(logged_ids(&data_dir, "s"), acked, "{durability}: the log");
    let mut again = Server::start(&data_dir, json!({"durability": durability}));
    let opened = again
        .request("conversation/open", json!({"sessionId": "s"}))
        .unwrap();
    assert_eq!(
        opened["warnings"].as_array().map_or(0, Vec::len),
        0,
        "{durability}: no unreadable line: {opened}"
    );
    assert_eq!(again.history_ids("s"), history_before, "{durability}");
    let compactions = again
        .request("conversation/compactions", json!({"sessionId": "s"}))
        .unwrap();
    let expected = 1 + usize::from(compacted_while_full == Ok(true));
    assert_eq!(
        compactions["compactions"].as_array().unwrap().len(),
        expected,
        "{durability}: {compactions}"
    );
    for id in &refused {
        assert!(!logged_ids(&data_dir, "s").contains(id), "{id} was refused");
    }
    again.open(json!({"sessionId": "t"}));
}

#[test]
fn a_full_disk_loses_no_acknowledged_message_in_either_durability() {
    let tmpfs = match Tmpfs::mount("1m") {
        Ok(tmpfs) => tmpfs,
        Err(why) => {
            crate::support::skip(&why);
            return;
        }
    };
    for durability in ["flush", "fsync"] {
        check(durability, &tmpfs.path);
    }
}
