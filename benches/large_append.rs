//! What one large append costs in memory, through the real binary: a
//! message of about 200 MB (`COMPACTD_BENCH_APPEND_MB` changes it; 4 MB
//! under `cargo test`) appended to a fresh session, with auto-compaction
//! off (the append alone: frame, parse, count, log write) and on (the same
//! append then compacts the session), and the server's peak RSS over what
//! it held before, as a multiple of the frame.
//!
//! `cargo bench --bench large_append`; `COMPACTD_BENCH_BIN=/path/to/compactd`
//! measures another build (for before/after figures).

// Not every bench uses every helper.
#[allow(dead_code)]
mod support;

use std::io::BufReader;

use serde_json::{json, Value};
use support::client::Client;
use support::{mb, status};

fn main() {
    let (_, size) = support::benching_and_size_default("COMPACTD_BENCH_APPEND_MB", 200, 4);
    let bin = support::binary();
    println!(
        "large append: {} ({:.0} MB message)",
        bin.display(),
        mb(size)
    );
    for auto_compact in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let mut child = support::spawn(&bin);
        let mut client = Client {
            stdin: child.stdin.take().unwrap(),
            stdout: BufReader::new(child.stdout.take().unwrap()),
        };
        let mut request = |id: i64, method: &str, params: Value| client.request(id, method, params);
        let options = json!({"dataDir": dir.path(), "autoCompact": auto_compact});
        request(
            1,
            "initialize",
            json!({"capabilities": {}, "initializationOptions": options}),
        );
        request(2, "conversation/open", json!({"sessionId": "large"}));
        // The vocabulary is loaded by a first, small append.
        request(
            3,
            "conversation/append",
            json!({"sessionId": "large", "messages": [{"role": "user", "content": "hi"}]}),
        );
        let before = status(&child, "VmHWM");
        let text = "let total = items.iter().map(|x| x.cost).sum(); ".repeat(size as usize / 50);
        let frame = text.len() as u64;
        let answer = request(
            4,
            "conversation/append",
            json!({"sessionId": "large", "messages": [{"role": "user", "content": text}]}),
        );
        drop(text);
        assert!(answer.get("result").is_some(), "{answer}");
        let peak = status(&child, "VmHWM");
        println!(
            "  autoCompact {auto_compact:>5}: peak {:.0} MB, {:.0} MB over the {:.0} MB before = {:.2}x the message",
            mb(peak),
            mb(peak.saturating_sub(before)),
            mb(before),
            peak.saturating_sub(before) as f64 / frame as f64
        );
        request(5, "shutdown", Value::Null);
        client.send(json!({"jsonrpc": "2.0", "method": "exit"}));
        drop(client);
        support::finish(child);
    }
}
