//! The prompt overhead the client never sends: every request carries the
//! agent's system prompt and tool definitions, and the provider counts
//! with its own tokenizer. compactd calibrates both from usage (or counts
//! what the client declares) and carries them into `tokensAfter`, the
//! meter after a compaction, previews and a resumed session.

use std::path::Path;

use serde_json::{json, Value};
use tiktoken_rs::CoreBPE;

use crate::support::{transcripts_dir, Server};

/// A stand-in provider whose tokenizer is not compactd's: GPT-2's
/// `r50k_base`, which counts prose 30–40% above o200k (as Claude's does on
/// the shared Claude Code sessions) and indented source code more, with a
/// system prompt and tool definitions no client tells compactd about.
pub struct Provider {
    bpe: CoreBPE,
    system_prompt: String,
    tools: Vec<Value>,
}

impl Provider {
    /// The hidden part: this repository's architecture notes as the system
    /// prompt, and a tool for each request type in `schemas/`.
    pub fn claude_like() -> Provider {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let system_prompt = std::fs::read_to_string(root.join("docs/ARCHITECTURE.md")).unwrap();
        let mut names: Vec<_> = std::fs::read_dir(root.join("schemas"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with("Params.json"))
            .collect();
        names.sort();
        let tools = names
            .iter()
            .map(|name| {
                let schema: Value = serde_json::from_slice(
                    &std::fs::read(root.join("schemas").join(name)).unwrap(),
                )
                .unwrap();
                json!({"name": name.trim_end_matches(".json"),
                    "description": schema["description"], "input_schema": schema})
            })
            .collect();
        Provider {
            bpe: tiktoken_rs::r50k_base().unwrap(),
            system_prompt,
            tools,
        }
    }

    fn count(&self, text: &str) -> u64 {
        self.bpe.encode_ordinary(text).len() as u64
    }

    /// The system prompt and tool definitions, in every request.
    pub fn hidden_tokens(&self) -> u64 {
        self.count(&self.system_prompt)
            + self
                .tools
                .iter()
                .map(|t| self.count(&t.to_string()))
                .sum::<u64>()
    }

    /// One message in wire form: its text, thinking and calls, and framing.
    pub fn message(&self, message: &Value) -> u64 {
        let text = |field: &str| message[field].as_str().map_or(0, |t| self.count(t));
        let calls: u64 = message["toolCalls"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                8 + self.count(c["name"].as_str().unwrap())
                    + self.count(&c["arguments"].to_string())
            })
            .sum();
        4 + text("content") + text("thinking") + calls
    }

    /// The prompt of a request holding `messages`.
    pub fn request(&self, messages: &[Value]) -> u64 {
        self.hidden_tokens() + messages.iter().map(|m| self.message(m)).sum::<u64>()
    }
}

/// The two compactions a real pi session recorded: compactd's `tokensAfter`
/// for each (the agent's summary and kept messages, with the overhead and
/// tokenizer difference calibrated from the usage before it) is within 5%
/// of the prompt the provider reported for the next request.
#[test]
fn a_real_sessions_compactions_end_where_the_provider_counted_next() {
    let Some(dir) = transcripts_dir() else { return };
    let path = dir.join("pi-session-jsonl/before-compaction.jsonl");
    let mut next_prompts = Vec::new();
    let mut waiting = false;
    for line in std::fs::read_to_string(&path).unwrap().lines() {
        let entry: Value = serde_json::from_str(line).unwrap();
        let usage = &entry["message"]["usage"];
        let prompt = ["input", "cacheRead", "cacheWrite"]
            .iter()
            .map(|k| usage[*k].as_u64().unwrap_or(0))
            .sum::<u64>();
        if entry["type"] == "compaction" {
            waiting = true;
        } else if waiting && prompt > 0 {
            next_prompts.push(prompt);
            waiting = false;
        }
    }
    assert_eq!(next_prompts.len(), 2);
    let data = tempfile::tempdir().unwrap();
    let mut server = Server::start(data.path(), json!({}));
    let imported = server
        .request("conversation/import", json!({"path": path}))
        .unwrap();
    let compactions = server
        .request(
            "conversation/compactions",
            json!({"sessionId": imported["sessionId"]}),
        )
        .unwrap();
    server.shutdown_and_exit();
    let records = compactions["compactions"].as_array().unwrap();
    assert_eq!(records.len(), 2);
    for (record, next) in records.iter().zip(next_prompts) {
        let after = record["tokensAfter"].as_u64().unwrap();
        let off = (after as f64 - next as f64) / next as f64;
        println!(
            "tokensAfter {after}, provider's next prompt {next}: {:+.1}%",
            off * 100.0
        );
        assert!(off.abs() < 0.05, "tokensAfter {after}, next prompt {next}");
    }
}

/// What a client declares is counted before any usage arrives, and a
/// resumed session (its log replayed) has the same meter, calibration
/// included.
#[test]
fn declared_overhead_is_counted_and_every_overhead_survives_a_restart() {
    let provider = Provider::claude_like();
    let data = tempfile::tempdir().unwrap();
    let mut server = Server::start(data.path(), json!({}));
    let opened = server
        .request(
            "conversation/open",
            json!({"sessionId": "declared", "model": "claude-sonnet-4-5",
                "systemPrompt": provider.system_prompt, "toolDefinitions": provider.tools}),
        )
        .unwrap();
    let declared = opened["meter"]["overheadTokens"].as_u64().unwrap();
    // Counted in o200k: below the provider's count, but the same order.
    let hidden = provider.hidden_tokens();
    assert!(
        declared > hidden / 2 && declared < hidden,
        "{declared} of {hidden}"
    );
    assert_eq!(opened["meter"]["contextTokens"], declared);
    // Usage arrives: the meter is the report, and the overhead now says
    // what the provider counts for the declared part.
    let mut messages = vec![json!({"role": "user", "content": "What does the engine do?"})];
    let reply = json!({"role": "assistant", "content": "It holds every policy once.",
        "usage": {"input": provider.request(&messages), "output": 9}});
    messages.push(reply);
    let appended = server.append("declared", &messages);
    let meter = appended["meter"].clone();
    assert_eq!(meter["source"], "usage");
    assert_eq!(meter["contextTokens"], provider.request(&messages[..1]) + 9);
    assert!(meter["overheadTokens"].as_u64().unwrap() >= declared);
    server.shutdown_and_exit();

    let mut server = Server::start(data.path(), json!({}));
    let reopened = server
        .request("conversation/open", json!({"sessionId": "declared"}))
        .unwrap();
    assert_eq!(reopened["resumed"], true);
    assert_eq!(reopened["meter"], meter);
    server.shutdown_and_exit();
}

/// After a compaction the meter has no current usage: it shows compactd's
/// count with the calibrated overhead, as `tokensAfter` and the preview
/// did, and the preview reports the overhead it cannot remove.
#[test]
fn preview_tokens_after_and_the_meter_agree_after_a_compaction() {
    let provider = Provider::claude_like();
    let data = tempfile::tempdir().unwrap();
    let mut server = Server::start(data.path(), json!({"keepRecentTokens": 200}));
    let id = server.open(json!({"model": "claude-sonnet-4-5"}));
    let mut messages: Vec<Value> = Vec::new();
    for n in 0..6 {
        messages.push(json!({"role": "user", "content": format!("step {n}: {}", "explain the cut ".repeat(80))}));
        let mut reply = json!({"role": "assistant", "content": "the cut falls before a user message ".repeat(20)});
        reply["usage"] =
            json!({"input": provider.request(&messages), "output": provider.message(&reply)});
        messages.push(reply);
    }
    server.append(&id, &messages);
    let preview = server
        .request("conversation/preview", json!({"sessionId": id}))
        .unwrap();
    let overhead = preview["overheadTokens"].as_u64().unwrap();
    assert!(
        overhead.abs_diff(provider.hidden_tokens()) * 10 < provider.hidden_tokens(),
        "{preview}"
    );
    assert!(
        preview["estimatedTokensAfter"].as_u64().unwrap() > overhead,
        "{preview}"
    );
    let result = server
        .request("conversation/compact", json!({"sessionId": id}))
        .unwrap();
    assert_eq!(result["compacted"], true, "{result}");
    let after = result["tokensAfter"].as_u64().unwrap();
    assert!(after > overhead, "{result}");
    let history = server
        .request("conversation/history", json!({"sessionId": id}))
        .unwrap();
    assert_eq!(history["meter"]["source"], "estimate");
    assert_eq!(history["meter"]["contextTokens"], after);
    assert_eq!(history["meter"]["overheadTokens"], overhead);
    let next = provider.request(history["messages"].as_array().unwrap());
    assert!(
        after.abs_diff(next) * 20 < next,
        "tokensAfter {after}, next request {next}"
    );
    server.shutdown_and_exit();
}
