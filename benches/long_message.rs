//! What one long single-line message costs in memory, through the real
//! binary (issue #39: a 100 MB line peaked at 2.18 GB in compaction or
//! recap, ~20x its size). A message of about 100 MB of prose on one line
//! (`COMPACTD_BENCH_LONG_MB` changes it; 2 MB under `cargo test`) is
//! appended to a fresh session, then ten short turns; one server compacts
//! the session (offline summarizer, the long message before the cut) and
//! another recaps it. Each prints the server's peak RSS over what it held
//! once the session was appended, as a multiple of the message.
//!
//! `cargo bench --bench long_message`; `COMPACTD_BENCH_BIN=/path/to/compactd`
//! measures another build (for before/after figures).

// Not every bench uses every helper.
#[allow(dead_code)]
mod support;

use std::io::BufReader;

use serde_json::{json, Value};
use support::client::Client;
use support::{mb, status};

fn main() {
    let (_, size) = support::benching_and_size_default("COMPACTD_BENCH_LONG_MB", 100, 2);
    let bin = support::binary();
    println!(
        "one long message: {} ({:.0} MB on one line)",
        bin.display(),
        mb(size)
    );
    for (method, params) in [
        ("conversation/compact", json!({"keepRecentTokens": 200})),
        ("conversation/recap", json!({})),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut child = support::spawn(&bin);
        let mut client = Client {
            stdin: child.stdin.take().unwrap(),
            stdout: BufReader::new(child.stdout.take().unwrap()),
        };
        let mut request = |id: i64, method: &str, params: Value| client.request(id, method, params);
        let options = json!({"dataDir": dir.path(), "autoCompact": false});
        request(
            1,
            "initialize",
            json!({"capabilities": {}, "initializationOptions": options}),
        );
        request(2, "conversation/open", json!({"sessionId": "long"}));
        let sentence = "The parser reads each token and checks its unit before it adds the value to the total. ";
        let text = format!(
            "Fix the duration parser. {}",
            sentence.repeat(size as usize / sentence.len())
        );
        let length = text.len() as u64;
        let mut messages = vec![
            json!({"role": "user", "content": text}),
            json!({"role": "assistant", "content": "I fixed the parser."}),
        ];
        for i in 0..10 {
            messages.push(json!({"role": "user", "content": format!("Step {i}: check module {i} for the same bug.")}));
            messages.push(json!({"role": "assistant", "content": format!("Module {i} is fine.")}));
        }
        let answer = request(
            3,
            "conversation/append",
            json!({"sessionId": "long", "messages": messages}),
        );
        drop(messages);
        assert!(answer.get("result").is_some(), "{answer}");
        // The append's own peak is large_append's; from here on, the
        // peak is the request's (writing 5 to clear_refs resets VmHWM).
        std::fs::write(format!("/proc/{}/clear_refs", child.id()), "5").unwrap();
        let before = status(&child, "VmRSS");
        let mut params = params;
        params["sessionId"] = json!("long");
        let started = std::time::Instant::now();
        let answer = request(4, method, params);
        let took = started.elapsed();
        assert!(answer.get("result").is_some(), "{answer}");
        let peak = status(&child, "VmHWM");
        println!(
            "  {method}: {:.1} s, peak {:.0} MB, {:.0} MB over the {:.0} MB held = {:.2}x the message",
            took.as_secs_f64(),
            mb(peak),
            mb(peak.saturating_sub(before)),
            mb(before),
            peak.saturating_sub(before) as f64 / length as f64
        );
        request(5, "shutdown", Value::Null);
        client.send(json!({"jsonrpc": "2.0", "method": "exit"}));
        drop(client);
        support::finish(child);
    }
}
