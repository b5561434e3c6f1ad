//! Does a large compaction stall the server? Generates a session log of
//! about 100 MB (`COMPACTD_BENCH_STALL_MB` changes the size) whose whole
//! history is in the view, resumes it in the real binary next to a small
//! session, then sends the append that makes it auto-compact, followed at
//! once by a request for the small session, and keeps asking for the small
//! session until the compaction ends. It prints how long the append and
//! the small session's requests waited (the state owner's stall), how long
//! the compaction took, and the server's memory from `/proc/<pid>/status`.
//!
//! `cargo bench --bench stall`; `COMPACTD_BENCH_BIN=/path/to/compactd`
//! measures another build (an older one, for before/after figures).
//! `cargo test --all-targets` runs it on a 1 MB log, to check it works.

mod support;

use std::io::{BufReader, BufWriter, Write};
use std::path::Path;
use std::process::{Child, ChildStdin};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{corpus, mb, ms, status};

fn main() {
    let (_, size) = support::benching_and_size("COMPACTD_BENCH_STALL_MB");
    let bin = support::binary();
    let dir = tempfile::tempdir().expect("temp dir");
    let (bytes, messages) = generate(&dir.path().join("big.jsonl"), size);
    println!(
        "stall: {} ({:.1} MB log, {messages} messages, all in the view)",
        bin.display(),
        mb(bytes)
    );
    let run = measure(&bin, dir.path());
    println!(
        "  the auto-compacting append answered in {:.0} ms; the other session's request sent right after it in {:.0} ms",
        ms(run.append),
        ms(run.first_other)
    );
    let mut others = run.others.clone();
    others.sort();
    let at = |q: f64| others[((others.len() - 1) as f64 * q) as usize];
    println!(
        "  while the compaction ran ({:.0} ms): {} requests for the other session, answered in {:.2} ms (median), {:.1} ms (99th percentile), {:.0} ms (slowest)",
        ms(run.compaction),
        others.len(),
        ms(at(0.5)),
        ms(at(0.99)),
        ms(at(1.0))
    );
    println!(
        "  RSS {:.0} MB with the session open, {:.0} MB after the compaction, peak {:.0} MB",
        mb(run.rss_before),
        mb(run.rss_after),
        mb(run.peak)
    );
}

/// Writes a compactd session log of at least `target` bytes, no
/// compaction in it: turns of a user request, an assistant tool call, its
/// result and an answer, without provider usage (so the meter counts the
/// whole view, far over the window). Returns its size and message count.
fn generate(path: &Path, target: u64) -> (u64, u64) {
    let corpus = corpus();
    let mut rng = fastrand::Rng::with_seed(11);
    let mut slice = |len: usize| -> String {
        let start = rng.usize(..corpus.len() - len);
        corpus[start..start + len].iter().collect()
    };
    let mut out = BufWriter::new(std::fs::File::create(path).unwrap());
    let mut line = |entry: Value| {
        let text = serde_json::to_string(&entry).unwrap();
        writeln!(out, "{text}").unwrap();
        text.len() as u64 + 1
    };
    let header = json!({"type": "header", "version": 1, "sessionId": "big", "createdAt": 0, "model": "claude-sonnet-4-5"});
    let mut bytes = line(header);
    let (mut turn, mut messages) = (0u64, 0u64);
    while bytes < target {
        turn += 1;
        let file = format!("/tmp/compactd-bench/src/file{}.rs", turn % 400);
        for message in [
            json!({"id": format!("u{turn}"), "role": "user", "content": slice(300)}),
            json!({"id": format!("a{turn}"), "role": "assistant", "content": slice(200),
                   "toolCalls": [{"id": format!("c{turn}"), "name": "read", "arguments": {"path": file}}]}),
            json!({"id": format!("t{turn}"), "role": "tool", "toolCallId": format!("c{turn}"),
                   "toolName": "read", "content": slice(4000 + (turn as usize % 7) * 1000)}),
            json!({"id": format!("b{turn}"), "role": "assistant", "content": slice(600)}),
        ] {
            bytes += line(json!({"type": "message", "message": message}));
            messages += 1;
        }
    }
    out.flush().unwrap();
    (bytes, messages)
}

struct Run {
    append: Duration,
    first_other: Duration,
    compaction: Duration,
    /// How long each request for the other session waited.
    others: Vec<Duration>,
    rss_before: u64,
    rss_after: u64,
    peak: u64,
}

/// One fresh server: open both sessions, then the auto-compacting append.
fn measure(bin: &Path, sessions: &Path) -> Run {
    let mut child = support::spawn(bin);
    let mut client = Client::new(&mut child);
    client.request(
        "initialize",
        json!({"capabilities": {"window": {"workDoneProgress": true}},
               "initializationOptions": {"dataDir": sessions}}),
    );
    client.notify("initialized", json!({}));
    client.request("conversation/open", json!({"sessionId": "other"}));
    let other = json!({"sessionId": "other"});
    client.request("conversation/history", other.clone());
    client.request("conversation/open", json!({"sessionId": "big"}));
    let rss_before = status(&child, "VmRSS");

    let started = Instant::now();
    let append = client.send_request(
        "conversation/append",
        json!({"sessionId": "big", "messages": [{"role": "user", "content": "go on"}]}),
    );
    let first = client.send_request("conversation/history", other.clone());
    let answered = client.wait_for(&[append, first]);
    let append_time = answered[0].0 - started;
    let first_other = answered[1].0 - started;
    let result = &answered[0].1["result"];
    assert_eq!(
        result["compacting"], true,
        "no compaction started: {result}"
    );
    let mut others = Vec::new();
    while client.ended.is_none() {
        let sent = Instant::now();
        let id = client.send_request("conversation/history", other.clone());
        let answered = client.wait_for(&[id]);
        others.push(answered[0].0 - sent);
    }
    let compaction = client.ended.unwrap() - started;
    let run = Run {
        append: append_time,
        first_other,
        compaction,
        others,
        rss_before,
        rss_after: status(&child, "VmRSS"),
        peak: status(&child, "VmHWM"),
    };
    client.request("shutdown", Value::Null);
    client.notify("exit", Value::Null);
    support::finish(child);
    run
}

/// The bench's side of the protocol: it answers the server's requests to
/// create progress tokens, and follows the compaction's progress.
struct Client {
    stdin: ChildStdin,
    incoming: Receiver<(Instant, Value)>,
    next_id: i64,
    /// When a compaction's progress ended.
    ended: Option<Instant>,
}

impl Client {
    fn new(child: &mut Child) -> Client {
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, incoming) = mpsc::channel();
        // Messages are stamped as they arrive, not when the bench looks.
        std::thread::spawn(move || {
            while let Some(message) = support::read_message(&mut stdout) {
                if tx.send((Instant::now(), message)).is_err() {
                    break;
                }
            }
        });
        Client {
            stdin: child.stdin.take().unwrap(),
            incoming,
            next_id: 0,
            ended: None,
        }
    }

    fn send(&mut self, message: Value) {
        support::write_message(&mut self.stdin, &message);
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    fn send_request(&mut self, method: &str, params: Value) -> i64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    fn request(&mut self, method: &str, params: Value) {
        let id = self.send_request(method, params);
        self.wait_for(&[id]);
    }

    /// Reads until every response in `ids` arrived; returns each with
    /// when it arrived.
    fn wait_for(&mut self, ids: &[i64]) -> Vec<(Instant, Value)> {
        let mut at: Vec<Option<(Instant, Value)>> = vec![None; ids.len()];
        while at.iter().any(Option::is_none) {
            let (when, message) = self
                .incoming
                .recv_timeout(Duration::from_secs(600))
                .expect("compactd answered within 10 minutes");
            if message["method"] == "window/workDoneProgress/create" {
                self.send(json!({"jsonrpc": "2.0", "id": message["id"], "result": null}));
            } else if message["method"] == "$/progress" {
                if message["params"]["value"]["kind"] == "end" {
                    self.ended = Some(when);
                }
            } else if let Some(i) = ids.iter().position(|id| message["id"] == json!(id)) {
                assert!(message.get("error").is_none(), "{message}");
                at[i] = Some((when, message));
            }
        }
        at.into_iter().map(Option::unwrap).collect()
    }
}
