//! A large session log, written as the server writes one (`resume`,
//! `recall`).

use std::io::{BufWriter, Write};
use std::path::Path;

use compactd::conversation::Message;
use compactd::tokens::{self, Encoding};
use serde_json::{json, Value};

use super::corpus;

pub struct LogStats {
    pub bytes: u64,
    pub messages: u64,
    pub text_bytes: u64,
}

/// Writes a session log of at least `target` bytes: turns of a user
/// request, an assistant tool call, its result (a slice of real text) and
/// an assistant answer with usage; each result's file event; a checkpoint
/// compaction every 5,000 messages. With `counted`, each message entry
/// carries its token count as the server writes it.
pub fn generate(path: &Path, target: u64, counted: bool) -> LogStats {
    let corpus = corpus();
    let mut rng = fastrand::Rng::with_seed(11);
    let mut slice = |len: usize| -> String {
        let start = rng.usize(..corpus.len() - len);
        corpus[start..start + len].iter().collect()
    };
    let mut out = BufWriter::new(std::fs::File::create(path).unwrap());
    let mut stats = LogStats {
        bytes: 0,
        messages: 0,
        text_bytes: 0,
    };
    let line = |out: &mut BufWriter<std::fs::File>, entry: Value| {
        let text = serde_json::to_string(&entry).unwrap();
        writeln!(out, "{text}").unwrap();
        text.len() as u64 + 1
    };
    stats.bytes += line(
        &mut out,
        json!({"type": "header", "version": 1, "sessionId": "bench", "createdAt": 0, "model": "claude-sonnet-4-5"}),
    );
    let mut turn = 0u64;
    while stats.bytes < target {
        turn += 1;
        let file = format!("/tmp/compactd-bench/src/file{}.rs", turn % 400);
        let messages = [
            json!({"id": format!("u{turn}"), "role": "user", "content": slice(300)}),
            json!({"id": format!("a{turn}"), "role": "assistant", "content": slice(200),
                   "toolCalls": [{"id": format!("c{turn}"), "name": "read", "arguments": {"path": file}}]}),
            json!({"id": format!("t{turn}"), "role": "tool", "toolCallId": format!("c{turn}"),
                   "toolName": "read", "content": slice(4000 + (turn as usize % 7) * 1000)}),
            json!({"id": format!("b{turn}"), "role": "assistant", "content": slice(600),
                   "usage": {"input": 1000 + turn, "output": 200, "cacheRead": 0, "cacheWrite": 0}}),
        ];
        for (i, message) in messages.into_iter().enumerate() {
            let parsed: Message = serde_json::from_value(message.clone()).unwrap();
            stats.text_bytes += parsed.text().len() as u64;
            let mut entry = json!({"type": "message", "message": message});
            if counted {
                let count = tokens::count_message(Encoding::O200k, &parsed);
                entry["tokens"] = json!({"encoding": "o200k_base", "count": count});
            }
            stats.bytes += line(&mut out, entry);
            stats.messages += 1;
            if i == 2 {
                let event = json!({"type": "file", "path": file, "op": "read", "origin": "tool", "messageId": format!("a{turn}")});
                stats.bytes += line(&mut out, event);
            }
        }
        if turn.is_multiple_of(1250) {
            stats.bytes += line(&mut out, compaction(turn));
        }
    }
    out.flush().unwrap();
    stats
}

fn compaction(turn: u64) -> Value {
    json!({
        "type": "compaction", "id": format!("k{turn}"), "strategy": "checkpoint",
        "summary": format!("## Goal\nSummary of the first {turn} turns."),
        "firstKeptMessageId": format!("u{}", turn - 10),
        "lastSummarizedMessageId": format!("b{}", turn - 11),
        "messagesSummarized": 4 * turn, "tokensBefore": 150000, "tokensAfter": 30000,
        "readFiles": [], "modifiedFiles": [], "trigger": "threshold", "summarizer": "offline",
        "chunks": 1, "degraded": false, "recall": 1.0, "createdAt": 0, "durationMs": 5
    })
}
