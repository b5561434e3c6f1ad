//! Following a growing Claude Code transcript, and `compactd statusline`.
//!
//! `cargo bench --bench follow` prints:
//! - the initial load of a followed transcript of 1, 10 and 50 MB;
//! - what one more response costs as the transcript grows (the median of
//!   30 appends at each size: the lines written, then the mirror's poll);
//! - `compactd statusline` on a 20 MB transcript as whole-process runs:
//!   the first (no cache), then the median of 30 unchanged renders and of
//!   30 renders each after one more response (the release binary);
//! - `compactd hook claude-code` on the same 20 MB transcript, for each
//!   event it answers (PreCompact, SessionStart after a compaction,
//!   PostCompact), as whole-process runs (median of 5);
//! - a hook's fixed cost: `compactd hook claude-code` (PreCompact) on a
//!   transcript of one turn against the floor of starting the process
//!   (`compactd --version`), medians of 30 runs alternating, and the ratio
//!   (#36: ~52 ms before, the vocabulary's load; the goal ≤ 10 ms);
//! - `compactd hook codex` (SessionStart after a compaction) on Codex
//!   rollouts of about 20 MB holding 20 and 200 compactions (each keeping
//!   the user's messages, as Codex does), and the ratio of the two: the
//!   hook's cost must follow the file, not the number of compactions.
//!
//! Under `cargo test` (no `--bench`) it runs a 1 MB smoke check instead.
//! The transcripts are synthetic but shaped like Claude Code 2.1.330's: a
//! prompt, responses written as two lines sharing `message.id` with usage,
//! tool results of a few kilobytes, attachment and snapshot lines.

#[allow(dead_code)]
mod support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use compactd::agents::{Agent, Homes};
use compactd::config::Config;
use compactd::engine::follow::{self, FollowEnv};
use compactd::engine::SessionEnv;
use compactd::files::{disk, FileTools};
use compactd::store::{Durability, SessionStore};
use serde_json::json;
use support::claude::{transcript, turn};

fn append(path: &Path, text: &str) {
    let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    file.write_all(text.as_bytes()).unwrap();
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

/// Initial load and per-append cost of following a transcript of `mb`.
fn follow_at(dir: &Path, mb: u64, appends: usize) -> (Duration, Duration, usize) {
    let path = dir.join(format!("follow-{mb}mb.jsonl"));
    let turns = transcript(&path, mb << 20);
    let config = Config::default();
    let tools = FileTools::default();
    // The agents' settings of a home of its own, not this machine's.
    let homes = Homes::under(dir);
    let session_env = SessionEnv::new(&config, disk::workspace(vec![dir.to_path_buf()]));
    let env = FollowEnv {
        config: &config,
        tools: &tools,
        homes: &homes,
        session_env: &session_env,
    };
    let store = SessionStore::new(dir.join("data"), Durability::Flush);
    let started = Instant::now();
    let (mut open, mut mirror) = follow::follow(
        &store,
        Agent::from_name("claude-code").expect("an agent"),
        &path,
        dir,
        &env,
    )
    .unwrap();
    let load = started.elapsed();
    let mut samples = Vec::with_capacity(appends);
    for i in 0..appends {
        append(&path, &turn(turns + i));
        let started = Instant::now();
        let polled = mirror.poll(&mut open, &env).unwrap();
        samples.push(started.elapsed());
        assert!(polled.changed);
    }
    (load, median(samples), open.session.message_count())
}

/// `bin` with `args` run as a whole process in `home`, `input` on its
/// stdin: how long it took and what it printed (it must succeed).
fn run(bin: &Path, args: &[&str], home: &Path, input: &str) -> (Duration, String) {
    let started = Instant::now();
    let mut child = Command::new(bin)
        .args(args)
        .env("HOME", home)
        .env("XDG_DATA_HOME", home.join("data"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    let elapsed = started.elapsed();
    assert!(output.status.success(), "{output:?}");
    (
        elapsed,
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

fn statusline(bin: &Path, home: &Path, input: &str) -> Duration {
    let (elapsed, printed) = run(bin, &["--no-user-config", "statusline"], home, input);
    assert!(printed.starts_with("⛁ "), "{printed}");
    elapsed
}

/// One whole-process run of `compactd hook claude-code` for `event` on
/// `transcript`: its time and what it printed.
fn hook(bin: &Path, home: &Path, transcript: &Path, event: &str) -> (Duration, String) {
    let input = json!({"session_id": "s", "transcript_path": transcript, "cwd": home,
        "hook_event_name": event, "source": "compact", "trigger": "auto",
        "compact_summary": "The user asked for work on the repository."})
    .to_string();
    run(
        bin,
        &["--no-user-config", "hook", "claude-code"],
        home,
        &input,
    )
}

/// A hook on a transcript of one turn and a process that only starts
/// (`--version`), medians of `runs` alternating.
fn fixed_cost(dir: &Path, runs: usize) -> (Duration, Duration) {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_compactd"));
    let path = dir.join("one-turn.jsonl");
    std::fs::write(&path, turn(0)).unwrap();
    let (mut hooks, mut starts) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let (took, printed) = hook(&bin, dir, &path, "PreCompact");
        assert!(!printed.is_empty(), "the hook answered");
        hooks.push(took);
        starts.push(run(&bin, &["--version"], dir, "").0);
    }
    (median(hooks), median(starts))
}

/// A Codex rollout with `compactions` compactions, each keeping the
/// user's messages (`pad` bytes of them, as Codex keeps up to 20,000
/// tokens), built from the real 0.169 rollout in tests/fixtures.
fn codex_rollout(dir: &Path, compactions: usize, pad: usize) -> PathBuf {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "tests/fixtures/codex/rollout-2026-11-22T19-16-20-01a204b0-1cc7-7c11-86cd-3cc548cf46a8.jsonl",
    );
    let text = std::fs::read_to_string(fixture).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // The session's head, one turn ending in a `compacted` item, the rest.
    let (head, turn, tail) = (&lines[..4], &lines[4..19], &lines[19..]);
    let mut out: Vec<String> = head.iter().map(|l| l.to_string()).collect();
    for k in 0..compactions {
        out.extend(turn[..turn.len() - 1].iter().map(|l| l.to_string()));
        let mut compacted: serde_json::Value = serde_json::from_str(turn[turn.len() - 1]).unwrap();
        let kept = json!({"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": format!("request {k}: {}", "word ".repeat(pad / 5))}]});
        let history = compacted["payload"]["replacement_history"]
            .as_array_mut()
            .unwrap();
        history.insert(0, kept);
        out.push(compacted.to_string());
    }
    out.extend(tail.iter().map(|l| l.to_string()));
    let path = dir.join(format!("rollout-{compactions}.jsonl"));
    std::fs::write(&path, out.join("\n") + "\n").unwrap();
    path
}

/// `compactd hook codex` for SessionStart after a compaction on a rollout
/// with `compactions` compactions (median of `runs`), and the file's size.
fn codex_hook_at(dir: &Path, compactions: usize, pad: usize, runs: usize) -> (Duration, u64) {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_compactd"));
    let path = codex_rollout(dir, compactions, pad);
    let input = json!({"session_id": "s", "transcript_path": path, "cwd": dir,
        "hook_event_name": "SessionStart", "source": "compact"})
    .to_string();
    // Each run as the first after a compaction: what an earlier run
    // handed over would make the next one answer nothing.
    let handed = dir.join("data/compactd/sessions/handed");
    let times = (0..runs)
        .map(|_| {
            let _ = std::fs::remove_dir_all(&handed);
            let (took, printed) = run(&bin, &["--no-user-config", "hook", "codex"], dir, &input);
            assert!(!printed.is_empty(), "the hook answered");
            took
        })
        .collect();
    (median(times), std::fs::metadata(&path).unwrap().len())
}

/// Each hook event on the transcript of `mb` (median of `runs`), with the
/// characters it printed: SessionStart and PostCompact without a hook
/// before them (they read the transcript), PreCompact, then both after it
/// (they answer from what it kept).
fn hooks_at(dir: &Path, mb: u64, runs: usize) -> Vec<(&'static str, Duration, usize)> {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_compactd"));
    let path = dir.join(format!("statusline-{mb}mb.jsonl"));
    let kept = dir.join("data/compactd/sessions/hooks");
    [
        ("SessionStart", "SessionStart alone"),
        ("PostCompact", "PostCompact alone"),
        ("PreCompact", "PreCompact"),
        ("SessionStart", "SessionStart after"),
        ("PostCompact", "PostCompact after"),
    ]
    .into_iter()
    .map(|(event, label)| {
        let runs: Vec<(Duration, String)> = (0..runs)
            .map(|_| {
                if label.ends_with("alone") {
                    let _ = std::fs::remove_dir_all(&kept);
                }
                hook(&bin, dir, &path, event)
            })
            .collect();
        let printed = runs[0].1.chars().count();
        assert!(
            printed > 0 && printed <= 10_100,
            "{event}: {printed} characters"
        );
        (
            label,
            median(runs.into_iter().map(|(d, _)| d).collect()),
            printed,
        )
    })
    .collect()
}

/// The status line on a transcript of `mb`: first run, unchanged runs,
/// runs after one more response each.
fn statusline_at(dir: &Path, mb: u64, runs: usize) -> (Duration, Duration, Duration) {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_compactd"));
    let path = dir.join(format!("statusline-{mb}mb.jsonl"));
    let turns = transcript(&path, mb << 20);
    let input = json!({"session_id": "s", "transcript_path": path, "cwd": dir,
        "model": {"id": "claude-opus-5-5", "display_name": "Opus 5.5"},
        "workspace": {"current_dir": dir, "project_dir": dir},
        "context_window": {"context_window_size": 1_000_000, "current_usage": null}})
    .to_string();
    let first = statusline(&bin, dir, &input);
    let unchanged = median((0..runs).map(|_| statusline(&bin, dir, &input)).collect());
    let grown = median(
        (0..runs)
            .map(|i| {
                append(&path, &turn(turns + i));
                statusline(&bin, dir, &input)
            })
            .collect(),
    );
    (first, unchanged, grown)
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let dir = tempfile::tempdir().unwrap();
    if !full {
        let (load, append, messages) = follow_at(dir.path(), 1, 3);
        let (first, unchanged, grown) = statusline_at(dir.path(), 1, 3);
        println!(
            "follow smoke (1 MB, {messages} messages): load {}, append {}; statusline first {}, unchanged {}, grown {}",
            ms(load),
            ms(append),
            ms(first),
            ms(unchanged),
            ms(grown)
        );
        for (event, took, printed) in hooks_at(dir.path(), 1, 1) {
            println!("hook {event} (1 MB): {}, {printed} characters", ms(took));
        }
        let (hook, start) = fixed_cost(dir.path(), 3);
        println!("hook fixed cost: {}, process start {}", ms(hook), ms(start));
        let (few, _) = codex_hook_at(dir.path(), 2, 4_000, 1);
        let (many, _) = codex_hook_at(dir.path(), 20, 400, 1);
        println!(
            "hook codex: 2 compactions {}, 20 compactions {}",
            ms(few),
            ms(many)
        );
        return;
    }
    println!("following a Claude Code transcript (median of 30 appends of one response, ~9 KB):");
    println!(
        "{:>8} {:>10} {:>14} {:>16}",
        "size", "messages", "initial load", "per append"
    );
    for mb in [1, 10, 50] {
        let (load, append, messages) = follow_at(dir.path(), mb, 30);
        println!(
            "{:>6}MB {messages:>10} {:>14} {:>16}",
            mb,
            ms(load),
            ms(append)
        );
    }
    let (first, unchanged, grown) = statusline_at(dir.path(), 20, 30);
    println!("compactd statusline on a 20 MB transcript (whole process, median of 30 runs):");
    println!("  first run (no cache): {}", ms(first));
    println!("  unchanged transcript: {}", ms(unchanged));
    println!("  one more response:    {}", ms(grown));
    println!("compactd hook claude-code on that transcript (whole process, median of 5 runs):");
    for (event, took, printed) in hooks_at(dir.path(), 20, 5) {
        println!("  {event:<19} {} ({printed} characters printed)", ms(took));
    }
    let (hook, start) = fixed_cost(dir.path(), 30);
    println!(
        "a hook's fixed cost (PreCompact on one turn, median of 30): {}; process start (--version): {}; {:.2}x",
        ms(hook),
        ms(start),
        hook.as_secs_f64() / start.as_secs_f64()
    );
    println!(
        "compactd hook codex, SessionStart after a compaction (whole process, median of 5 runs):"
    );
    let (few, few_size) = codex_hook_at(dir.path(), 20, 700_000, 5);
    let (many, many_size) = codex_hook_at(dir.path(), 200, 80_000, 5);
    println!(
        "  20 compactions, {:.1} MB:  {}",
        few_size as f64 / 1e6,
        ms(few)
    );
    println!(
        "  200 compactions, {:.1} MB: {}",
        many_size as f64 / 1e6,
        ms(many)
    );
    println!(
        "  ratio 200/20: {:.2} (the files' sizes: {:.2})",
        many.as_secs_f64() / few.as_secs_f64(),
        many_size as f64 / few_size as f64
    );
}
