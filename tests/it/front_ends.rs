//! The server and the command line drive one engine: the same transcript
//! and configuration give the same compaction through `conversation/import`
//! then `conversation/compact` as through `compactd compact --json`.

use std::path::Path;

use serde_json::{json, Value};

use crate::support::{cli, transcripts_dir, Server};

/// The fields both front ends report that must agree (timings and the
/// provider's usage may differ).
const SAME: &[&str] = &[
    "compacted",
    "reason",
    "summary",
    "tokensBefore",
    "tokensAfter",
    "messagesSummarized",
    "firstKeptMessageId",
    "readFiles",
    "modifiedFiles",
    "strategy",
    "summarizer",
    "chunks",
    "recall",
    "prunedMessageIds",
];

/// Compacts `transcript` through both front ends, in one workspace whose
/// `compactd.toml` is `config`, and compares what they report.
fn check(transcript: &Path, config: &str) -> Value {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("compactd.toml"), config).unwrap();
    let data = tempfile::tempdir().unwrap();

    let out = cli()
        .args(["compact", "--json", "--quiet"])
        .arg(transcript)
        .current_dir(root.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let from_cli: Value = serde_json::from_slice(&out.stdout).unwrap();

    let mut server = Server::start_in_workspace(data.path(), root.path(), json!({}));
    let imported = server
        .request("conversation/import", json!({"path": transcript}))
        .unwrap();
    let from_server = server
        .request(
            "conversation/compact",
            json!({"sessionId": imported["sessionId"]}),
        )
        .unwrap();
    server.shutdown_and_exit();

    for field in SAME {
        assert_eq!(
            from_cli.get(*field),
            from_server.get(*field),
            "{}: `{field}` differs between `compactd compact` and the server ({config})",
            transcript.display()
        );
    }
    from_server
}

#[test]
fn the_shipped_example_compacts_alike_with_every_strategy() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/conversation.json");
    let checkpoint = check(&example, "keepRecentTokens = 300\n");
    assert_eq!(checkpoint["compacted"], true, "{checkpoint}");
    assert!(checkpoint["firstKeptMessageId"].is_string(), "{checkpoint}");
    let incremental = check(
        &example,
        "strategy = \"incremental\"\nretentionWindow = 2\n",
    );
    assert_eq!(incremental["compacted"], true, "{incremental}");
    let prune = check(
        &example,
        "strategy = \"prune\"\npruneProtectTokens = 20\npruneMinimumTokens = 1\n",
    );
    assert_eq!(prune["strategy"], "prune", "{prune}");
    // Nothing to cut is reported alike too.
    let nothing = check(&example, "keepRecentTokens = 1000000\n");
    assert_eq!(nothing["compacted"], false, "{nothing}");
    assert!(nothing["reason"]
        .as_str()
        .unwrap()
        .starts_with("nothing to compact"));
}

/// Real sessions whose provider usage makes the meter differ from
/// compactd's own count: `tokensBefore` is the meter in both.
#[test]
fn real_transcripts_compact_alike() {
    let Some(dir) = transcripts_dir() else { return };
    let pi = check(
        &dir.join("pi-session-jsonl/before-compaction.jsonl"),
        "keepRecentTokens = 20000\n",
    );
    assert_eq!(pi["compacted"], true, "{pi}");
    let traj = check(
        &dir.join("swe-agent-traj/marshmallow-code__marshmallow-1867.traj"),
        "keepRecentTokens = 2000\n",
    );
    assert_eq!(traj["compacted"], true, "{traj}");
}
