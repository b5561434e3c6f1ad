//! Recall through the real binary: `conversation/search` on a 100 MB
//! session (`COMPACTD_BENCH_RECALL_MB` changes the size) and on a followed
//! 50 MB Claude Code transcript (`COMPACTD_BENCH_RECALL_FOLLOW_MB`).
//!
//! `cargo bench --bench recall` prints, for the compactd session: the open
//! and the first search after it (which builds the index); the median and
//! p99 of 200 searches of five kinds (a rare identifier, a common word, a
//! two-word phrase, a file name, a planted marker), each a JSON-RPC round
//! trip, against the floor measured in the same run (the same messages'
//! lowercased searchable text held in this process, each query's messages
//! found by `memmem` per term: no ranking, no snippets, no round trip) and
//! the ratio, overall and per kind; the server's RSS before and after the
//! index; the median and p99 of 200 appends once the index exists (an
//! append never touches it) and the search that follows them (it indexes
//! them first). Then the same searches on the followed transcript. Under
//! `cargo test` it runs a 2 MB smoke check.

#[allow(dead_code)]
mod support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::time::{Duration, Instant};

use compactd::conversation::Message;
use compactd::recall::{searchable_text, Query};
use memchr::memmem;
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
const MARKER: &str = "remember ZQX-MARKER-0001";

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

    let log = sessions.join("bench.jsonl");
    let stats = generate(&log, size, true);
    let mut floor = Floor::load(&log);
    floor.push(&Message::user("marker", MARKER));
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
    let started = Instant::now();
    request(
        &mut client,
        "conversation/open",
        json!({"sessionId": "bench"}),
    );
    let opened = started.elapsed();
    // A marker in a message of its own.
    request(
        &mut client,
        "conversation/append",
        json!({"sessionId": "bench", "messages": [{"role": "user", "content": MARKER}]}),
    );
    println!(
        "compactd session: {:.1} MB log, {} messages, {:.1} MB of message text",
        mb(stats.bytes),
        stats.messages,
        mb(stats.text_bytes)
    );
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
    // compactd and the floor in turn, query by query, so both see the
    // machine as it is at that moment.
    let mut samples = Vec::new();
    let mut floors = Vec::new();
    let mut kinds: Vec<(Vec<Duration>, Vec<Duration>)> = vec![Default::default(); QUERIES.len()];
    for _ in 0..rounds {
        for (kind, query) in QUERIES.iter().enumerate() {
            let took = search(&mut client, &mut request, query, "bench");
            let started = Instant::now();
            std::hint::black_box(floor.scan(query));
            let scanned = started.elapsed();
            samples.push(took);
            floors.push(scanned);
            kinds[kind].0.push(took);
            kinds[kind].1.push(scanned);
        }
    }
    let appends_after = appends(&mut client, &mut request, 200);
    let caught_up = search(&mut client, &mut request, "ZQX-MARKER-0001", "bench");
    println!(
        "  open {:.0} ms; the first search after it (builds the index) {:.0} ms",
        ms(opened),
        ms(first)
    );
    for (p, name) in [(50, "median"), (99, "p99")] {
        let (ours, scan) = (percentile(&samples, p), percentile(&floors, p));
        println!(
            "  search {name} {:.2} ms over {} searches; in-memory scan {:.2} ms; ratio {:.2}x",
            ms(ours),
            samples.len(),
            ms(scan),
            ms(ours) / ms(scan)
        );
    }
    for (query, (ours, scan)) in QUERIES.iter().zip(&kinds) {
        println!(
            "    {query:<22} median {:.2} ms vs scan {:.2} ms ({:.2}x), p99 {:.2} ms vs {:.2} ms",
            ms(percentile(ours, 50)),
            ms(percentile(scan, 50)),
            ms(percentile(ours, 50)) / ms(percentile(scan, 50)),
            ms(percentile(ours, 99)),
            ms(percentile(scan, 99)),
        );
    }
    println!(
        "  RSS {:.0} MB before the index, {:.0} MB after (+{:.0} MB)",
        mb(before),
        mb(after),
        mb(after.saturating_sub(before))
    );
    println!(
        "  appends once indexed: median {:.2} ms, p99 {:.2} ms; the search after 200 appends {:.1} ms",
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

/// The floor a search is held to: the session's messages' searchable text,
/// lowercased as the index lowercases it, in one buffer in this process.
struct Floor {
    text: Vec<u8>,
    starts: Vec<usize>,
}

impl Floor {
    /// Every message of a session log.
    fn load(log: &Path) -> Floor {
        let mut floor = Floor {
            text: Vec::new(),
            starts: Vec::new(),
        };
        let file = BufReader::new(std::fs::File::open(log).unwrap());
        for line in file.lines() {
            let entry: Value = serde_json::from_str(&line.unwrap()).unwrap();
            if entry["type"] == "message" {
                let message: Message = serde_json::from_value(entry["message"].clone()).unwrap();
                floor.push(&message);
            }
        }
        floor
    }

    fn push(&mut self, message: &Message) {
        self.starts.push(self.text.len());
        let text = searchable_text(message);
        self.text
            .extend(text.bytes().map(|b| b.to_ascii_lowercase()));
        self.text.push(0);
    }

    /// How many messages hold every term of `query`: each term found by
    /// `memmem` over the whole buffer, its occurrences mapped to messages.
    fn scan(&self, query: &str) -> usize {
        let query = Query::parse(query).unwrap();
        let mut holding: Option<Vec<usize>> = None;
        for term in query.terms() {
            let mut docs: Vec<usize> = Vec::new();
            for at in memmem::find_iter(&self.text, term.as_bytes()) {
                let doc = self.starts.partition_point(|&s| s <= at) - 1;
                if docs.last() != Some(&doc) {
                    docs.push(doc);
                }
            }
            holding = Some(match holding {
                None => docs,
                Some(before) => before
                    .into_iter()
                    .filter(|d| docs.binary_search(d).is_ok())
                    .collect(),
            });
        }
        holding.map_or(0, |docs| docs.len())
    }
}
