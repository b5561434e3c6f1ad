//! Reading an agent's transcript whole, against the floor of parsing its
//! JSON lines (#36).
//!
//! `cargo bench --bench transcript_read` writes a synthetic Claude Code
//! transcript (prompts, responses written as two lines sharing
//! `message.id` with usage, tool calls, tool results of a few kilobytes,
//! attachment and snapshot lines; see `support::claude`) of 10, 100 and
//! 400 MB into a temporary directory and, for each, prints in ms/MB:
//! - the floor: the file read, then `serde_json::from_str::<Value>` of
//!   each line (what any reader of JSON lines pays);
//! - compactd's whole read as a follow's first load, a cold hook, the
//!   status line and `compactd mcp --transcript` do it
//!   (`engine::follow::transcript_session`), and its ratio to the floor;
//! - the batch import `stats`, `compact` and `replay` use
//!   (`import::read_file`), and its ratio to the floor.
//!
//! Each figure is the best of `COMPACTD_BENCH_RUNS` runs (3; 1 at 400 MB),
//! floor and reads alternating in the same run (`COMPACTD_BENCH_ONLY`:
//! `floor`, `follow` or `import` alone, to profile). `COMPACTD_BENCH_SIZES`
//! (megabytes, comma-separated: `10,100`) chooses the sizes;
//! `COMPACTD_BENCH_FILE=<transcript>` measures that Claude Code transcript
//! instead (`COMPACTD_BENCH_WRITE=<path>` writes the generated one of the
//! first size there, to profile a read of it alone) (a real one holds compactions, responses written over many
//! lines and large tool inputs, which the generated one does not). Under
//! `cargo test` (no `--bench`) it runs once on 1 MB, as a smoke check.

#[allow(dead_code)]
mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use compactd::agents::{Agent, Homes};
use compactd::config::Config;
use compactd::engine::follow::{self, FollowSetup};
use serde_json::{json, Value};
use support::claude::{payload, turn};

/// A transcript of about `bytes`: turns of tool use, with a prompt and a
/// written answer of a few hundred words every eighth turn.
fn transcript(path: &Path, bytes: u64) -> usize {
    use std::io::Write;
    let file = std::fs::File::create(path).unwrap();
    let mut file = std::io::BufWriter::new(file);
    let mut written = 0u64;
    let mut n = 0;
    while written < bytes {
        let mut text = String::new();
        if n % 8 == 0 {
            let prompt = json!({"type": "user", "uuid": format!("p{n}"), "sessionId": "s",
                "isSidechain": false, "cwd": "/work/ws",
                "message": {"role": "user", "content": format!("Now look at part {n}: {}", prefix(&payload(n), 600))}});
            let answer = json!({"type": "assistant", "uuid": format!("w{n}"), "sessionId": "s",
                "isSidechain": false, "message": {"id": format!("msg_w{n:08}"), "role": "assistant",
                "model": "claude-opus-5-5", "content": [{"type": "text", "text": prefix(&payload(n + 2), 2000).to_string()}],
                "usage": {"input_tokens": 5, "cache_read_input_tokens": 10_000 + n as u64 * 40, "output_tokens": 500}}});
            text.push_str(&format!("{prompt}\n{answer}\n"));
        }
        text.push_str(&turn(n));
        file.write_all(text.as_bytes()).unwrap();
        written += text.len() as u64;
        n += 1;
    }
    file.flush().unwrap();
    n
}

/// At most the first `bytes` of `text`, cut at a character's start (the
/// payload is this repository's own text, which is not all ASCII).
fn prefix(text: &str, bytes: usize) -> &str {
    let mut end = bytes.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The floor: the bytes read, each line parsed as JSON. Returns the lines.
fn floor(path: &Path) -> usize {
    let bytes = std::fs::read(path).unwrap();
    let mut lines = 0;
    for line in bytes.split(|b| *b == b'\n') {
        if line.is_empty() {
            continue;
        }
        let text = std::str::from_utf8(line).unwrap();
        let value: Value = serde_json::from_str(text).unwrap();
        std::hint::black_box(&value);
        lines += 1;
    }
    lines
}

/// compactd's whole read of the transcript, as a follow, a hook, the
/// status line and `compactd mcp` read it. Returns the messages.
fn whole(path: &Path, dir: &Path) -> usize {
    let setup = FollowSetup::new(Config::default(), Homes::under(dir), dir);
    let agent = Agent::from_name("claude-code").unwrap();
    let session = follow::transcript_session(agent, path, dir, &setup.env()).unwrap();
    session.message_count()
}

/// The batch import (`stats`, `compact`, `replay`). Returns the entries.
fn import(path: &Path) -> usize {
    compactd::import::read_file(path, None, u64::MAX)
        .unwrap()
        .entries
        .len()
}

/// A transcript of `bytes` whose last `torn` bytes are one line still
/// being written (no newline yet): an agent's huge tool result caught
/// mid-write.
fn torn(path: &Path, bytes: u64, torn: u64) {
    use std::io::Write;
    transcript(path, bytes - torn);
    let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    file.write_all(b"{\"type\":\"user\",\"message\":{\"content\":\"")
        .unwrap();
    let filler = vec![b'x'; 1 << 20];
    for _ in 0..torn >> 20 {
        file.write_all(&filler).unwrap();
    }
}

fn timed(f: impl FnOnce() -> usize) -> (Duration, usize) {
    let started = Instant::now();
    let count = f();
    (started.elapsed(), count)
}

fn per_mb(took: Duration, bytes: u64) -> f64 {
    took.as_secs_f64() * 1000.0 / support::mb(bytes)
}

fn main() {
    let benching = std::env::args().any(|a| a == "--bench");
    let sizes: Vec<u64> = match std::env::var("COMPACTD_BENCH_SIZES") {
        Ok(list) => list
            .split(',')
            .filter_map(|s| s.trim().parse().ok())
            .collect(),
        Err(_) if benching => vec![10, 100, 400],
        Err(_) => vec![1],
    };
    let runs: usize = std::env::var("COMPACTD_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if benching { 3 } else { 1 });
    // `COMPACTD_BENCH_ONLY=floor|follow|import` times only that (to profile).
    let only = std::env::var("COMPACTD_BENCH_ONLY").ok();
    let only = only.as_deref();
    let dir = tempfile::tempdir().unwrap();
    println!("reading a Claude Code transcript whole (best of {runs}; ms/MB; ratio to the floor):");
    println!(
        "{:>7} {:>8} {:>9} {:>8} {:>8} {:>6} {:>8} {:>6}",
        "size", "lines", "messages", "floor", "follow", "ratio", "import", "ratio"
    );
    if let Ok(file) = std::env::var("COMPACTD_BENCH_WRITE") {
        // The generated transcript of the first size, kept to profile a
        // read of it alone (`COMPACTD_BENCH_FILE`).
        let messages = transcript(Path::new(&file), sizes.first().copied().unwrap_or(1) << 20);
        println!("wrote {file}: {messages} turns");
        return;
    }
    if let Ok(file) = std::env::var("COMPACTD_BENCH_FILE") {
        // A transcript of one's own (real ones hold what the generated one
        // does not: compactions, responses over many lines, large tool
        // inputs).
        let path = std::path::PathBuf::from(file);
        row("file", &path, runs, only, dir.path());
        return;
    }
    for mb in sizes {
        let path = dir.path().join(format!("t-{mb}mb.jsonl"));
        transcript(&path, mb << 20);
        let runs = if mb >= 400 { 1 } else { runs };
        row(&format!("{mb}MB"), &path, runs, only, dir.path());
    }
    if only.is_none() {
        torn_last_line(dir.path(), if benching { 256 } else { 2 });
    }
}

/// One line of the table: the floor and the reads of `path`, best of
/// `runs`, alternating so that the page cache and the machine are the same
/// for each.
fn row(label: &str, path: &Path, runs: usize, only: Option<&str>, dir: &Path) {
    let bytes = std::fs::metadata(path).unwrap().len();
    let (mut floor_t, mut whole_t, mut import_t) = (Duration::MAX, Duration::MAX, Duration::MAX);
    let (mut lines, mut messages) = (0, 0);
    for _ in 0..runs {
        if only.is_none_or(|o| o == "floor") {
            let (t, n) = timed(|| floor(path));
            (floor_t, lines) = (floor_t.min(t), n);
        }
        if only.is_none_or(|o| o == "follow") {
            let (t, n) = timed(|| whole(path, dir));
            (whole_t, messages) = (whole_t.min(t), n);
        }
        if only.is_none_or(|o| o == "import") {
            let (t, _) = timed(|| import(path));
            import_t = import_t.min(t);
        }
    }
    let (f, w, i) = (
        per_mb(floor_t, bytes),
        per_mb(whole_t, bytes),
        per_mb(import_t, bytes),
    );
    println!(
        "{label:>7} {lines:>8} {messages:>9} {f:>8.2} {w:>8.2} {:>5.2}x {i:>8.2} {:>5.2}x",
        w / f,
        i / f
    );
}

/// A transcript of `mb` whose last line (all but 8 MB of it) has no
/// newline yet: compactd's whole read against the floor of reading it
/// and parsing its complete lines (#39: this used to cost the line's
/// length squared).
fn torn_last_line(dir: &Path, mb: u64) {
    let path = dir.join(format!("torn-{mb}mb.jsonl"));
    let complete = (mb / 32).max(1);
    torn(&path, mb << 20, (mb - complete) << 20);
    let (floor_t, _) = timed(|| floor_complete(&path));
    let (whole_t, messages) = timed(|| whole(&path, dir));
    println!(
        "{mb}MB whose last {} MB are one line without a newline: floor {:.0} ms, follow {:.0} ms ({messages} messages): {:.2}x",
        mb - complete,
        floor_t.as_secs_f64() * 1000.0,
        whole_t.as_secs_f64() * 1000.0,
        whole_t.as_secs_f64() / floor_t.as_secs_f64()
    );
}

/// The floor of a file whose last line is incomplete: read whole, its
/// complete lines parsed.
fn floor_complete(path: &Path) -> usize {
    let bytes = std::fs::read(path).unwrap();
    let end = memchr::memrchr(b'\n', &bytes).map_or(0, |i| i + 1);
    let mut lines = 0;
    for line in bytes[..end].split(|b| *b == b'\n') {
        if line.is_empty() {
            continue;
        }
        let value: Value = serde_json::from_slice(line).unwrap();
        std::hint::black_box(&value);
        lines += 1;
    }
    lines
}
