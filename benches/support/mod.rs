//! What the benches that drive the real binary share (`resume`, `stall`):
//! which binary and how large a log, spawning the server, LSP framing on
//! its pipes, text to cut messages from, and the process's memory.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

// Not every bench that includes `support` uses these.
#[allow(dead_code)]
pub mod claude;
#[allow(dead_code)]
pub mod client;
#[allow(dead_code)]
pub mod log;

/// Whether this is `cargo bench` (else `cargo test --all-targets` runs the
/// bench in a debug build, on a small log, to check that it still works),
/// and the log size in bytes: `size_var` megabytes if set, else 100 MB
/// under `cargo bench` and 1 MB under `cargo test`.
pub fn benching_and_size(size_var: &str) -> (bool, u64) {
    benching_and_size_default(size_var, 100, 1)
}

/// `benching_and_size` with other defaults (megabytes under `cargo bench`
/// and under `cargo test`).
pub fn benching_and_size_default(size_var: &str, bench_mb: u64, test_mb: u64) -> (bool, u64) {
    let benching = std::env::args().any(|a| a == "--bench");
    let megabytes: u64 = std::env::var(size_var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if benching { bench_mb } else { test_mb });
    (benching, megabytes << 20)
}

/// The binary to measure: `COMPACTD_BENCH_BIN` (another build, for
/// before/after figures), else this one.
pub fn binary() -> PathBuf {
    std::env::var_os("COMPACTD_BENCH_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_compactd")))
}

/// The server on piped stdin/stdout, quiet on stderr.
pub fn spawn(bin: &Path) -> Child {
    Command::new(bin)
        .arg("--no-user-config")
        .env("COMPACTD_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn compactd")
}

/// Waits for the server, which must exit 0.
pub fn finish(mut child: Child) {
    let status = child.wait().unwrap();
    assert!(status.success(), "compactd exited with {status}");
}

pub fn write_message(stdin: &mut impl Write, message: &Value) {
    let body = serde_json::to_string(message).unwrap();
    write!(stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).unwrap();
    stdin.flush().unwrap();
}

/// The next message, or `None` once the server closed its output.
pub fn read_message(stdout: &mut impl BufRead) -> Option<Value> {
    let mut length = 0;
    loop {
        let mut line = String::new();
        if stdout.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(v) = line.strip_prefix("Content-Length: ") {
            length = v.parse().ok()?;
        }
    }
    let mut body = vec![0; length];
    stdout.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

/// Text to cut messages from: this repository's sources and docs (code and
/// prose, as a coding session holds), so the benches need nothing outside.
pub fn corpus() -> Vec<char> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut text = std::fs::read_to_string(root.join("README.md")).unwrap();
    for dir in [
        "src",
        "src/server/handlers",
        "src/engine",
        "src/session",
        "docs",
    ] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        paths.sort();
        for path in paths.iter().filter(|p| p.is_file()) {
            text.push_str(&std::fs::read_to_string(path).unwrap_or_default());
        }
    }
    text.chars().collect()
}

/// A field of `/proc/<pid>/status` (`VmRSS`, `VmHWM`), in bytes.
pub fn status(child: &Child, field: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with(field))
        .unwrap_or_else(|| panic!("no {field} in /proc/pid/status"));
    let kb: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap();
    kb * 1024
}

pub fn mb(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 20) as f64
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
