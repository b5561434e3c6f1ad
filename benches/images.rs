//! What images cost, through the real binary.
//!
//! 1. The append of a message holding a 5 MB PNG as an image part
//!    (`COMPACTD_BENCH_IMAGE_MB` changes the size; 1 MB under `cargo test`)
//!    against a text message of the same size: time (median of 5 appends,
//!    each of other bytes), the server's peak RSS over what it held before
//!    as a multiple of the frame, the tokens the meter moved by, and what
//!    the data dir grew by (the image is stored once, as a blob, not in
//!    the log line).
//! 2. Resuming a session that holds 200 screenshots
//!    (`COMPACTD_BENCH_SCREENSHOTS`; 10 under `cargo test`), each a
//!    1280×800 PNG of 300 KB with a line of text, and an answer: the
//!    session is written by the binary itself, then reopened by a fresh
//!    server (median of 3), then its whole history read back with every
//!    image's data (`conversation/history`).
//!
//! `cargo bench --bench images`; `COMPACTD_BENCH_BIN=/path/to/compactd`
//! measures another build.

// Not every bench uses every helper.
#[allow(dead_code)]
#[path = "support/png.rs"]
mod png;
#[allow(dead_code)]
mod support;

use std::io::BufReader;
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{mb, ms, read_message, status, write_message};

const APPENDS: usize = 5;
const RESUMES: usize = 3;
const SCREENSHOT_BYTES: usize = 300 << 10;

fn main() {
    let (benching, size) = support::benching_and_size_default("COMPACTD_BENCH_IMAGE_MB", 5, 1);
    let screenshots: usize = std::env::var("COMPACTD_BENCH_SCREENSHOTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if benching { 200 } else { 10 });
    let bin = support::binary();
    println!("images: {}", bin.display());
    append(&bin, size as usize);
    resume(&bin, screenshots);
}

/// The server on its pipes, asked one request at a time.
struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
}

impl Server {
    fn start(bin: &Path, data_dir: &Path) -> Server {
        let mut child = support::spawn(bin);
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut server = Server {
            child,
            stdin,
            stdout,
            next: 0,
        };
        let options = json!({"dataDir": data_dir, "autoCompact": false});
        server.request(
            "initialize",
            json!({"capabilities": {}, "initializationOptions": options}),
        );
        server
    }

    /// The result of `method`; panics on an error.
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        write_message(
            &mut self.stdin,
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        );
        loop {
            let message = read_message(&mut self.stdout).expect("compactd answered");
            if message["id"] == id && message.get("method").is_none() {
                let result = message.get("result").cloned();
                return result.unwrap_or_else(|| panic!("{method}: {message}"));
            }
        }
    }

    fn timed(&mut self, method: &str, params: Value) -> (Value, Duration) {
        let start = Instant::now();
        let result = self.request(method, params);
        (result, start.elapsed())
    }

    fn peak(&self) -> u64 {
        status(&self.child, "VmHWM")
    }

    fn stop(mut self) {
        self.request("shutdown", Value::Null);
        write_message(
            &mut self.stdin,
            &json!({"jsonrpc": "2.0", "method": "exit"}),
        );
        drop(self.stdin);
        support::finish(self.child);
    }
}

fn tokens(result: &Value) -> u64 {
    result["meter"]["contextTokens"].as_u64().unwrap()
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// The bytes of a file, or of every file under a folder.
fn disk(path: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(path) else {
        return std::fs::metadata(path).map_or(0, |m| m.len());
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => disk(&e.path()),
            _ => e.metadata().map(|m| m.len()).unwrap_or(0),
        })
        .sum()
}

fn append(bin: &Path, size: usize) {
    println!(
        "append of a {:.0} MB message ({APPENDS} appends, each of other bytes):",
        mb(size as u64)
    );
    for kind in ["text", "image"] {
        let dir = tempfile::tempdir().unwrap();
        let mut server = Server::start(bin, dir.path());
        server.request("conversation/open", json!({"sessionId": "s"}));
        // The vocabulary is loaded by a first, small append.
        let first = server.request(
            "conversation/append",
            json!({"sessionId": "s", "messages": [{"role": "user", "content": "hi"}]}),
        );
        let before = server.peak();
        let disk_before = disk(dir.path());
        let (mut times, mut frame, mut counted) = (Vec::new(), 0, tokens(&first));
        let mut moved = 0;
        for round in 0..APPENDS {
            let content = match kind {
                "text" => {
                    let line =
                        format!("{round}: let total = items.iter().map(|x| x.cost).sum();\n");
                    json!(line.repeat(size / line.len()))
                }
                _ => json!([
                    {"type": "text", "text": "what is wrong on this screen?"},
                    {"type": "image", "mediaType": "image/png",
                     "data": png::png(1920, 1080, size, round as u32)},
                ]),
            };
            let message = json!({"role": "user", "content": content});
            frame = serde_json::to_string(&message).unwrap().len() as u64;
            let (result, took) = server.timed(
                "conversation/append",
                json!({"sessionId": "s", "messages": [message]}),
            );
            moved = tokens(&result) - counted;
            counted = tokens(&result);
            times.push(took);
        }
        let peak = server.peak();
        server.stop();
        let grew = disk(dir.path()) - disk_before;
        println!(
            "  {kind:>5}: {:.1} MB frame, median {:.0} ms; peak RSS {:.0} MB over the {:.0} MB before = {:.2}x the frame; \
             the meter moved {moved} tokens per message; the data dir grew {:.1} MB per message",
            mb(frame),
            ms(median(times)),
            mb(peak.saturating_sub(before)),
            mb(before),
            peak.saturating_sub(before) as f64 / frame as f64,
            mb(grew / APPENDS as u64),
        );
    }
}

fn resume(bin: &Path, screenshots: usize) {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(bin, dir.path());
    server.request("conversation/open", json!({"sessionId": "shots"}));
    for i in 0..screenshots {
        let user = json!({"role": "user", "content": [
            {"type": "text", "text": format!("step {i}: the page after the last change")},
            {"type": "image", "mediaType": "image/png",
             "data": png::png(1280, 800, SCREENSHOT_BYTES, 1000 + i as u32)},
        ]});
        let answer = json!({"role": "assistant", "content": format!(
            "Step {i}: the sidebar overlaps the table by a few pixels; the next change moves it."
        )});
        server.request(
            "conversation/append",
            json!({"sessionId": "shots", "messages": [user, answer]}),
        );
    }
    server.stop();
    let log = disk(&dir.path().join("shots.jsonl"));
    let blobs = disk(&dir.path().join("blobs"));
    println!(
        "resume of a session holding {screenshots} screenshots (1280×800, {} KB each): a {:.2} MB log, {:.1} MB of blobs",
        SCREENSHOT_BYTES >> 10,
        mb(log),
        mb(blobs)
    );
    let (mut opens, mut histories) = (Vec::new(), Vec::new());
    let (mut after_open, mut peak, mut counted, mut frame) = (0, 0, 0, 0);
    for _ in 0..RESUMES {
        let mut server = Server::start(bin, dir.path());
        let (open, took) = server.timed("conversation/open", json!({"sessionId": "shots"}));
        assert_eq!(open["messageCount"], 2 * screenshots, "{open}");
        assert_eq!(open["warnings"], json!([]), "{open}");
        opens.push(took);
        after_open = status(&server.child, "VmRSS");
        counted = tokens(&open);
        let (history, took) = server.timed("conversation/history", json!({"sessionId": "shots"}));
        let images = history["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| {
                m["content"][1]["data"]
                    .as_str()
                    .is_some_and(|d| d.len() > 1000)
            })
            .count();
        assert_eq!(images, screenshots, "every image comes back with its data");
        frame = serde_json::to_string(&history).unwrap().len() as u64;
        histories.push(took);
        peak = server.peak();
        server.stop();
    }
    println!(
        "  open: median {:.0} ms, RSS {:.0} MB after it, the meter at {counted} tokens",
        ms(median(opens)),
        mb(after_open)
    );
    println!(
        "  the whole history with every image ({:.0} MB frame): median {:.0} ms, peak RSS {:.0} MB = {:.2}x the frame over the {:.0} MB after the open (goal: at most 2x)",
        mb(frame),
        ms(median(histories)),
        mb(peak),
        peak.saturating_sub(after_open) as f64 / frame as f64,
        mb(after_open)
    );
}
