//! The server and the command line drive one engine: the same transcript
//! and configuration give the same compaction through `conversation/import`
//! then `conversation/compact` as through `compactd compact --json`, and
//! both count the prompt overhead the transcript never shows.

use std::path::Path;

use serde_json::{json, Value};

use crate::overhead::Provider;
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
    check_with_history(transcript, config).0
}

/// `check`, and the server's history after the compaction.
fn check_with_history(transcript: &Path, config: &str) -> (Value, Value) {
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
    let history = server
        .request(
            "conversation/history",
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
    (from_server, history)
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

/// A session with provider usage, written as a compactd log: an agent
/// reads source files, and every assistant turn carries the usage
/// `provider` reports for the request (its hidden system prompt and tools
/// included).
fn session_with_usage(provider: &Provider, path: &Path) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = [
        "src/session/mod.rs",
        "src/compaction/job.rs",
        "src/engine/compaction.rs",
        "src/store/mod.rs",
        "src/tokens/mod.rs",
        "src/conversation/mod.rs",
        "src/compaction/plan.rs",
        "src/compaction/trigger.rs",
        "src/files/ledger.rs",
        "src/summarize/driver.rs",
        "src/transcript/builder.rs",
        "src/cli/stats.rs",
    ];
    let mut messages: Vec<Value> = Vec::new();
    let answer = |messages: &mut Vec<Value>, mut reply: Value| {
        reply["usage"] = json!({
            "input": provider.request(messages),
            "output": provider.message(&reply),
        });
        messages.push(reply);
    };
    for (n, file) in files.iter().enumerate() {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        messages.push(json!({"id": format!("u{n}"), "role": "user",
            "content": format!("Read {file} and tell me what it is for.")}));
        let call = json!({"id": format!("c{n}"), "name": "read", "arguments": {"path": file}});
        answer(
            &mut messages,
            json!({"id": format!("a{n}"), "role": "assistant", "content": "", "toolCalls": [call]}),
        );
        let purpose = text
            .lines()
            .next()
            .unwrap_or_default()
            .trim_start_matches("//! ");
        messages.push(
            json!({"id": format!("t{n}"), "role": "tool", "toolCallId": format!("c{n}"),
            "toolName": "read", "content": text}),
        );
        answer(
            &mut messages,
            json!({"id": format!("b{n}"), "role": "assistant", "content": format!("It is {purpose}")}),
        );
    }
    // Not a Claude model's name: r50k counts this indented source above
    // what a Claude model's calibration allows (1.0–1.6 × o200k, Claude's
    // measured range: with it, tokensAfter came out 9% short); a model
    // compactd does not know may go further.
    let header = json!({"type": "header", "version": 1, "sessionId": "usage",
        "createdAt": 0, "model": "r50k-stand-in"});
    let lines: Vec<String> = std::iter::once(header)
        .chain(
            messages
                .into_iter()
                .map(|m| json!({"type": "message", "message": m})),
        )
        .map(|line| line.to_string())
        .collect();
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

/// The overhead the transcript never shows is calibrated from its usage:
/// `tokensAfter` is what the provider counts for the compacted history,
/// and both front ends say so to the token.
#[test]
fn a_session_with_usage_compacts_to_what_the_provider_counts_next() {
    let provider = Provider::claude_like();
    let dir = tempfile::tempdir().unwrap();
    let transcript = dir.path().join("usage.jsonl");
    session_with_usage(&provider, &transcript);
    let (result, history) = check_with_history(&transcript, "keepRecentTokens = 20000\n");
    assert_eq!(result["compacted"], true, "{result}");
    let next = provider.request(history["messages"].as_array().unwrap());
    let after = result["tokensAfter"].as_u64().unwrap();
    let off = (after as f64 - next as f64) / next as f64;
    println!(
        "tokens {} → {after}; the provider's next request {next} ({:+.1}%)",
        result["tokensBefore"],
        off * 100.0
    );
    assert!(
        off.abs() < 0.05,
        "tokensAfter {after}, the provider's next request {next}: {:+.1}%",
        off * 100.0
    );
    // What compactd learned is the hidden part, not the whole request.
    let overhead = history["meter"]["overheadTokens"].as_u64().unwrap();
    let hidden = provider.hidden_tokens();
    assert!(
        overhead.abs_diff(hidden) * 10 < hidden,
        "overhead {overhead}, hidden {hidden}"
    );
    // Right after the compaction the meter has no current usage and shows
    // the same figure.
    assert_eq!(history["meter"]["source"], "estimate");
    assert_eq!(history["meter"]["contextTokens"], after);
}

/// A real Claude Code session with usage and a `/compact`: the agent's
/// compaction is imported, compactd's own follows it, alike in both.
#[test]
fn a_claude_code_session_with_a_compact_compacts_alike() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/claude-code/5b8c1f0e-3a7d-4c2e-9f10-2d6a4b8e7c31.jsonl");
    let result = check(&fixture, "keepRecentTokens = 1\n");
    assert_eq!(result["compacted"], true, "{result}");
    // The request after the agent's own /compact held about 15,000 tokens
    // (12,000 of them system prompt and tools); compactd's figures count
    // them too.
    assert!(
        result["tokensBefore"].as_u64().unwrap() > 12_000,
        "{result}"
    );
    assert!(result["tokensAfter"].as_u64().unwrap() > 12_000, "{result}");
}
