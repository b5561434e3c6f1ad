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

use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::client::Client;
use support::log::generate;
use support::{mb, ms, status};

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
