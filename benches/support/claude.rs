//! A synthetic Claude Code transcript shaped like 2.1.330's (`follow`,
//! `recall`): a prompt, responses written as two lines sharing
//! `message.id` with usage, tool results of a few kilobytes, attachment
//! and snapshot lines.

use std::io::Write;
use std::path::Path;

use serde_json::json;

/// Text a tool result carries: this repository's sources, a few KB each.
pub fn payload(n: usize) -> String {
    const SOURCES: [&str; 4] = [
        include_str!("../../src/session/mod.rs"),
        include_str!("../../src/engine/follow.rs"),
        include_str!("../../src/transcript/emit.rs"),
        include_str!("../../src/transcript/tail.rs"),
    ];
    let source = SOURCES[n % SOURCES.len()];
    let start = (n * 977) % (source.len() - 5000);
    let start = (start..).find(|i| source.is_char_boundary(*i)).unwrap();
    let end = (start + 4000..)
        .find(|i| source.is_char_boundary(*i))
        .unwrap();
    source[start..end].to_string()
}

/// One turn of tool use: a response in two lines, its tool result, and
/// Claude Code's bookkeeping around them.
pub fn turn(n: usize) -> String {
    let usage = json!({"input_tokens": 5, "cache_creation_input_tokens": 300,
        "cache_read_input_tokens": 10_000 + n as u64 * 40, "output_tokens": 80});
    let id = format!("msg_{n:08}");
    let lines = [
        json!({"type": "assistant", "uuid": format!("a{n}"), "sessionId": "s", "isSidechain": false,
            "message": {"id": id, "role": "assistant", "model": "claude-opus-5-5",
                "content": [{"type": "text", "text": format!("Reading part {n} of the code.")}], "usage": usage}}),
        json!({"type": "assistant", "uuid": format!("b{n}"), "sessionId": "s", "isSidechain": false,
            "message": {"id": id, "role": "assistant", "model": "claude-opus-5-5",
                "content": [{"type": "tool_use", "id": format!("t{n}"), "name": "Read",
                    "input": {"file_path": format!("/work/ws/src/f{}.rs", n % 50)}}], "usage": usage}}),
        json!({"type": "user", "uuid": format!("r{n}"), "sessionId": "s", "isSidechain": false,
            "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("t{n}"), "content": payload(n)}]}}),
        json!({"type": "attachment", "uuid": format!("x{n}"), "sessionId": "s",
            "attachment": {"type": "file", "content": payload(n + 1)}}),
        json!({"type": "file-history-snapshot", "messageId": format!("r{n}"), "snapshot": {}}),
    ];
    lines.iter().map(|l| format!("{l}\n")).collect()
}

/// A transcript of about `bytes`, in turns; returns the turns written.
pub fn transcript(path: &Path, bytes: u64) -> usize {
    let mut file = std::fs::File::create(path).unwrap();
    let prompt = json!({"type": "user", "uuid": "u0", "sessionId": "s", "isSidechain": false,
        "message": {"role": "user", "content": "Read every file and explain the code."}});
    writeln!(file, "{prompt}").unwrap();
    let mut written = 0;
    let mut n = 0;
    while written < bytes {
        let text = turn(n);
        file.write_all(text.as_bytes()).unwrap();
        written += text.len() as u64;
        n += 1;
    }
    n
}
