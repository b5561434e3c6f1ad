//! Resuming a large session through the real binary: generates a session
//! log of about 100 MB (`COMPACTD_BENCH_RESUME_MB` changes the size) in a
//! temporary directory, then times `conversation/open` on it and reads the
//! server's memory from `/proc/<pid>/status`. Two logs: one whose message
//! entries carry their token counts (what compactd writes now) and one
//! without (what it wrote before, or what an import wrote), which has to be
//! counted on load.
//!
//! `cargo bench --bench resume`; `COMPACTD_BENCH_BIN=/path/to/compactd`
//! measures another build (an older one, for before/after figures).

mod support;

use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout};
use std::time::{Duration, Instant};

use compactd::conversation::Message;
use compactd::tokens::{self, Encoding};
use serde_json::{json, Value};
use support::{corpus, mb, ms, status};

const RUNS: usize = 3;

fn main() {
    let (benching, size) = support::benching_and_size("COMPACTD_BENCH_RESUME_MB");
    let runs = if benching { RUNS } else { 1 };
    let bin = support::binary();
    // `COMPACTD_BENCH_KEEP_DIR` keeps the generated logs there (to profile).
    let dir = tempfile::tempdir().expect("temp dir");
    let keep = std::env::var_os("COMPACTD_BENCH_KEEP_DIR").map(PathBuf::from);
    let sessions = keep.clone().unwrap_or_else(|| dir.path().join("sessions"));
    std::fs::create_dir_all(&sessions).unwrap();
    println!("resume: {} ({:.0} MB logs)", bin.display(), mb(size));
    for (name, counted) in [("counted", true), ("uncounted", false)] {
        let path = sessions.join(format!("{name}.jsonl"));
        let stats = generate(&path, size, counted);
        println!(
            "{name}: {:.1} MB log, {} messages, {:.1} MB of message text",
            mb(stats.bytes),
            stats.messages,
            mb(stats.text_bytes)
        );
        let mut runs: Vec<Run> = (0..runs).map(|_| resume(&bin, &sessions, name)).collect();
        runs.sort_by_key(|r| r.elapsed);
        let median = &runs[runs.len() / 2];
        let view = median.after.saturating_sub(median.before).max(1);
        println!(
            "  open: median {:.0} ms (min {:.0}, max {:.0}), {:.0} ms of CPU; \
             RSS {:.0} MB before, {:.0} MB after (the session: {:.0} MB), peak {:.0} MB = {:.2}x the session",
            ms(median.elapsed),
            ms(runs[0].elapsed),
            ms(runs[runs.len() - 1].elapsed),
            ms(median.cpu),
            mb(median.before),
            mb(median.after),
            mb(view),
            mb(median.peak),
            median.peak as f64 / view as f64,
        );
        if keep.is_none() {
            std::fs::remove_file(&path).unwrap();
        }
    }
}

struct LogStats {
    bytes: u64,
    messages: u64,
    text_bytes: u64,
}

/// Writes a session log of at least `target` bytes: turns of a user
/// request, an assistant tool call, its result (a slice of real text) and
/// an assistant answer with usage; each result's file event; a checkpoint
/// compaction every 5,000 messages. With `counted`, each message entry
/// carries its token count as the server writes it.
fn generate(path: &Path, target: u64, counted: bool) -> LogStats {
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

struct Run {
    elapsed: Duration,
    /// User and system CPU the server spent on the open (all threads).
    cpu: Duration,
    before: u64,
    after: u64,
    peak: u64,
}

/// One fresh server: initialize, then time `conversation/open` of the log.
fn resume(bin: &Path, sessions: &Path, id: &str) -> Run {
    let mut child = support::spawn(bin);
    let mut client = Client {
        stdin: child.stdin.take().unwrap(),
        stdout: BufReader::new(child.stdout.take().unwrap()),
    };
    client.request(
        1,
        "initialize",
        json!({"capabilities": {}, "initializationOptions": {"dataDir": sessions}}),
    );
    client.notify("initialized", json!({}));
    // An append to a scratch session loads the vocabulary first, so the
    // RSS the open adds is the session alone.
    client.request(2, "conversation/open", json!({"sessionId": "warm-up"}));
    client.request(
        3,
        "conversation/append",
        json!({"sessionId": "warm-up", "messages": [{"role": "user", "content": "hello"}]}),
    );
    let before = status(&child, "VmRSS");
    let cpu_before = cpu_time(&child);
    let started = Instant::now();
    let opened = client.request(4, "conversation/open", json!({"sessionId": id}));
    let elapsed = started.elapsed();
    assert_eq!(opened["result"]["resumed"], true, "{opened}");
    let run = Run {
        elapsed,
        cpu: cpu_time(&child) - cpu_before,
        before,
        after: status(&child, "VmRSS"),
        peak: status(&child, "VmHWM"),
    };
    client.request(5, "shutdown", Value::Null);
    client.notify("exit", Value::Null);
    support::finish(child);
    run
}

/// User plus system time of the process so far (`/proc/<pid>/stat`,
/// assuming the usual 100 ticks per second).
fn cpu_time(child: &Child) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", child.id())).unwrap();
    // Fields after the command name, which is in parentheses.
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    Duration::from_millis(ticks * 10)
}

struct Client {
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Client {
    fn send(&mut self, message: Value) {
        support::write_message(&mut self.stdin, &message);
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request and reads until its response.
    fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let message = self.read();
            if message["id"] == json!(id) && message.get("method").is_none() {
                assert!(message.get("error").is_none(), "{method}: {message}");
                return message;
            }
        }
    }

    fn read(&mut self) -> Value {
        support::read_message(&mut self.stdout).expect("compactd closed its output")
    }
}
