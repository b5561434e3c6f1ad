//! Per-append metering cost on a 2,000-message conversation, and tokenizer
//! throughput on real text. Uses `../shared/transcripts` when present
//! (printing why not otherwise) and falls back to this repository's sources.

use std::path::{Path, PathBuf};

use compactd::conversation::{Message, ToolCall};
use compactd::session::Session;
use compactd::tokens::Encoding;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};

fn shared() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/transcripts");
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "note: {} absent; benchmarking on this repository's sources instead",
            dir.display()
        );
        None
    }
}

/// Real text: the shared transcripts, or the repository's own sources.
fn corpus() -> String {
    if let Some(dir) = shared() {
        let mut text = String::new();
        for f in [
            "pi-session-jsonl/large-session.jsonl",
            "swe-agent-traj/marshmallow-code__marshmallow-1867.traj",
        ] {
            text.push_str(&std::fs::read_to_string(dir.join(f)).unwrap_or_default());
        }
        if !text.is_empty() {
            return text;
        }
    }
    let mut text = String::new();
    for entry in walk(Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src"))) {
        text.push_str(&std::fs::read_to_string(entry).unwrap_or_default());
    }
    text
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// 2,000 messages cut from the corpus: user asks, assistant calls a tool,
/// the tool answers with a slice of real text.
fn conversation(corpus: &str) -> Vec<Message> {
    let chars: Vec<char> = corpus.chars().collect();
    let slice = |i: usize, len: usize| -> String {
        let start = (i * 7919) % chars.len().saturating_sub(len).max(1);
        chars[start..(start + len).min(chars.len())]
            .iter()
            .collect()
    };
    (0..2000)
        .map(|i| match i % 4 {
            0 => Message::user(format!("u{i}"), slice(i, 300)),
            1 => Message::assistant(
                format!("a{i}"),
                slice(i, 200),
                vec![ToolCall {
                    id: format!("c{i}"),
                    name: "read".into(),
                    arguments: serde_json::json!({"path": format!("src/file{i}.rs")}),
                }],
            ),
            2 => Message::tool_result(
                format!("t{i}"),
                format!("c{}", i - 1),
                slice(i, 2000),
                false,
            ),
            _ => Message::assistant(format!("a{i}"), slice(i, 400), vec![]),
        })
        .collect()
}

fn bench_append(c: &mut Criterion) {
    let corpus = corpus();
    let messages = conversation(&corpus);
    let mut session = Session::new(
        "bench".into(),
        Some("gpt-4o".into()),
        None,
        None,
        String::new(),
    );
    session.push(messages[..1999].to_vec());
    let last = messages[1999].clone();
    let mut group = c.benchmark_group("append");
    group.bench_function("append+meter at 2000 messages", |b| {
        // `_ref`: dropping the cloned session is not part of an append.
        b.iter_batched_ref(
            || session.clone(),
            |s| {
                s.push(vec![last.clone()]);
                s.meter(128_000, 115_200)
            },
            BatchSize::LargeInput,
        )
    });
    group.bench_function("recount all 2000 messages (what caching avoids)", |b| {
        b.iter(|| {
            messages
                .iter()
                .map(|m| compactd::tokens::count_message(Encoding::O200k, m))
                .sum::<u64>()
        })
    });
    group.finish();
}

fn bench_tokenizer(c: &mut Criterion) {
    let corpus = corpus();
    let text: String = corpus.chars().take(1_000_000).collect();
    let mut group = c.benchmark_group("tokenizer");
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.sample_size(10);
    group.bench_function("bpe-openai o200k", |b| {
        b.iter(|| Encoding::O200k.count(&text))
    });
    group.bench_function("bpe-openai cl100k", |b| {
        b.iter(|| Encoding::Cl100k.count(&text))
    });
    let tiktoken = tiktoken_rs::o200k_base().unwrap();
    group.bench_function("tiktoken-rs o200k (oracle)", |b| {
        b.iter(|| tiktoken.encode_with_special_tokens(&text).len())
    });
    group.finish();
}

criterion_group!(benches, bench_append, bench_tokenizer);
criterion_main!(benches);
