//! Recall through the real binary: `conversation/search` on a 100 MB
//! session (`COMPACTD_BENCH_RECALL_MB` changes the size) and on a followed
//! 50 MB Claude Code transcript (`COMPACTD_BENCH_RECALL_FOLLOW_MB`).
//!
//! `cargo bench --bench recall` prints, for each: the first search (it
//! builds the index), then the median and p99 of 200 searches of five
//! kinds (a rare identifier, a common word, a two-word phrase, a file
//! name, a planted marker), each a JSON-RPC round trip; the server's RSS
//! before and after the index; and, for the compactd session, the median
//! and p99 of 200 appends before the index exists and 200 after (an append
//! never touches the index), and the search that follows those appends
//! (it indexes them first). Under `cargo test` it runs a 2 MB smoke check.

#[allow(dead_code)]
mod support;

use std::io::BufReader;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::claude::transcript;
use support::client::Client;
use support::log::generate;
use support::{mb, ms, status};

const QUERIES: [&str; 5] = [
    "record_own",
    "session",
    "\"the session\"",
    "src/engine/follow.rs",
    "ZQX-MARKER",
];

fn main() {
    let (benching, size) = support::benching_and_size_default("COMPACTD_BENCH_RECALL_MB", 100, 2);
    let (_, follow_size) =
        support::benching_and_size_default("COMPACTD_BENCH_RECALL_FOLLOW_MB", 50, 2);
    let rounds = if benching { 40 } else { 2 };
    let bin = support::binary();
    let dir = tempfile::tempdir().expect("temp dir");
    let sessions = dir.path().join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    println!("recall: {}", bin.display());

    let stats = generate(&sessions.join("bench.jsonl"), size, true);
    let mut child = support::spawn(&bin);
    let mut client = Client {
        stdin: child.stdin.take().unwrap(),
        stdout: BufReader::new(child.stdout.take().unwrap()),
    };
    let mut id = 0;
    let mut request = |client: &mut Client, method: &str, params: Value| {
        id += 1;
        client.request(id, method, params)
    };
    request(
        &mut client,
        "initialize",
        json!({"capabilities": {}, "initializationOptions": {"dataDir": sessions, "autoCompact": false}}),
    );
    client.notify("initialized", json!({}));
    request(
        &mut client,
        "conversation/open",
        json!({"sessionId": "bench"}),
    );
    // A marker in a message of its own.
    request(
        &mut client,
        "conversation/append",
        json!({"sessionId": "bench", "messages": [{"role": "user", "content": "remember ZQX-MARKER-0001"}]}),
    );
    println!(
        "compactd session: {:.1} MB log, {} messages, {:.1} MB of message text",
        mb(stats.bytes),
        stats.messages,
        mb(stats.text_bytes)
    );
    let appends_before = appends(&mut client, &mut request, 200);
    let before = status(&child, "VmRSS");
    let search = |client: &mut Client,
                  request: &mut dyn FnMut(&mut Client, &str, Value) -> Value,
                  query: &str,
                  session: &str| {
        let started = Instant::now();
        let answer = request(
            client,
            "conversation/search",
            json!({"sessionId": session, "query": query}),
        );
        assert!(answer["result"]["hits"].is_array(), "{answer}");
        started.elapsed()
    };
    let first = search(&mut client, &mut request, "ZQX-MARKER-0001", "bench");
    let after = status(&child, "VmRSS");
    let mut samples = Vec::new();
    for _ in 0..rounds {
        for query in QUERIES {
            samples.push(search(&mut client, &mut request, query, "bench"));
        }
    }
    let appends_after = appends(&mut client, &mut request, 200);
    let caught_up = search(&mut client, &mut request, "ZQX-MARKER-0001", "bench");
    println!(
        "  first search (builds the index) {:.0} ms; then median {:.1} ms, p99 {:.1} ms over {} searches",
        ms(first),
        ms(percentile(&samples, 50)),
        ms(percentile(&samples, 99)),
        samples.len()
    );
    println!(
        "  RSS {:.0} MB before the index, {:.0} MB after (+{:.0} MB)",
        mb(before),
        mb(after),
        mb(after.saturating_sub(before))
    );
    println!(
        "  appends: median {:.2} ms, p99 {:.2} ms before the index; median {:.2} ms, p99 {:.2} ms after; the search after 200 appends {:.1} ms",
        ms(percentile(&appends_before, 50)),
        ms(percentile(&appends_before, 99)),
        ms(percentile(&appends_after, 50)),
        ms(percentile(&appends_after, 99)),
        ms(caught_up)
    );

    // A followed Claude Code transcript.
    let path = dir.path().join("claude.jsonl");
    let turns = transcript(&path, follow_size);
    let followed = request(
        &mut client,
        "conversation/follow",
        json!({"path": path, "agent": "claude-code", "workspace": dir.path()}),
    );
    let session = followed["result"]["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let before = status(&child, "VmRSS");
    let first = search(&mut client, &mut request, "record_own", &session);
    let after = status(&child, "VmRSS");
    let mut samples = Vec::new();
    for _ in 0..rounds {
        for query in QUERIES {
            samples.push(search(&mut client, &mut request, query, &session));
        }
    }
    println!(
        "followed Claude Code transcript: {:.1} MB, {turns} turns",
        mb(follow_size)
    );
    println!(
        "  first search {:.0} ms; then median {:.1} ms, p99 {:.1} ms; RSS +{:.0} MB for the index",
        ms(first),
        ms(percentile(&samples, 50)),
        ms(percentile(&samples, 99)),
        mb(after.saturating_sub(before))
    );
    request(&mut client, "shutdown", Value::Null);
    client.notify("exit", Value::Null);
    support::finish(child);
}

/// Times `count` appends of a 1 KB message.
fn appends(
    client: &mut Client,
    request: &mut dyn FnMut(&mut Client, &str, Value) -> Value,
    count: usize,
) -> Vec<Duration> {
    let text = "appended text for the bench ".repeat(36);
    (0..count)
        .map(|_| {
            let started = Instant::now();
            request(
                client,
                "conversation/append",
                json!({"sessionId": "bench", "messages": [{"role": "user", "content": text}]}),
            );
            started.elapsed()
        })
        .collect()
}

fn percentile(samples: &[Duration], p: usize) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort();
    sorted[(sorted.len() * p / 100).min(sorted.len() - 1)]
}
