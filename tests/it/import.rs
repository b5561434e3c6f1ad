//! Importers against real transcripts: every shared file of the four
//! formats goes through the real binary (`compactd stats --json`, and
//! `conversation/import` over JSON-RPC), and the counts it reports are
//! checked against counts this file computes from the raw lines itself.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::support::{cli, mkfifo, transcripts_dir, Server};

/// What a transcript holds, counted straight from its raw JSON.
#[derive(Debug, Default, PartialEq)]
struct Expected {
    messages: usize,
    tool_calls: usize,
    tool_results: usize,
    /// Results whose call id was not seen earlier in the file.
    orphan_results: usize,
    /// Lines the importer must skip (neither a message nor a setting).
    skipped: usize,
}

fn orphan(seen: &HashSet<String>, id: &str) -> usize {
    usize::from(!seen.contains(id))
}

fn json_lines(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    let trimmed = text.trim_start();
    // A pretty-printed single entry (the catalog's `.json` twins).
    if let Ok(value @ Value::Object(_)) = serde_json::from_str::<Value>(trimmed) {
        return vec![value];
    }
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn expected_pi(path: &Path) -> Expected {
    let mut e = Expected::default();
    let mut seen = HashSet::new();
    for entry in json_lines(path) {
        assert!(
            entry.get("parentId").is_none(),
            "tree layout not expected here"
        );
        match entry["type"].as_str().unwrap() {
            "message" => {
                let m = &entry["message"];
                e.messages += 1;
                match m["role"].as_str().unwrap() {
                    "assistant" => {
                        for part in m["content"].as_array().unwrap() {
                            if part["type"] == "toolCall" {
                                e.tool_calls += 1;
                                seen.insert(part["id"].as_str().unwrap().to_string());
                            }
                        }
                    }
                    "toolResult" => {
                        e.tool_results += 1;
                        e.orphan_results += orphan(&seen, m["toolCallId"].as_str().unwrap());
                    }
                    _ => {}
                }
            }
            "session" | "model_change" | "compaction" => {}
            _ => e.skipped += 1,
        }
    }
    e
}

/// What the importer makes of a Claude Code user line's text: a request,
/// part of the slash command before it, or nothing (skipped).
#[derive(PartialEq)]
enum ClaudeText {
    Request,
    Command,
    PartOfCommand,
    Skipped,
}

fn claude_text(v: &Value) -> String {
    match &v["message"]["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b["type"] != "tool_result")
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Slash commands, their output, caveats and reminders are not requests:
/// a command Claude Code ran itself (its output follows) is skipped, one
/// that expands into a prompt (`/init`) is a request with its expansion.
fn claude_text_use(
    text: &str,
    is_meta: bool,
    next_user: Option<&str>,
    after: &ClaudeText,
) -> ClaudeText {
    let is_output = |t: &str| t.starts_with("<local-command-std");
    let harness_only =
        text.starts_with("<system-reminder>") && text.trim_end().ends_with("</system-reminder>");
    if text.starts_with("Caveat:")
        || text.starts_with("<local-command-caveat>")
        || is_output(text)
        || harness_only
    {
        return ClaudeText::Skipped;
    }
    if text.contains("<command-name>") {
        return if next_user.is_some_and(is_output) {
            ClaudeText::Skipped
        } else {
            ClaudeText::Command
        };
    }
    match (is_meta, after) {
        (true, ClaudeText::Command | ClaudeText::PartOfCommand) => ClaudeText::PartOfCommand,
        (true, _) => ClaudeText::Skipped,
        _ => ClaudeText::Request,
    }
}

fn expected_claude(path: &Path) -> Expected {
    let lines = json_lines(path);
    let conversational = |v: &Value| v["type"] == "user" || v["type"] == "assistant";
    let main = lines
        .iter()
        .any(|v| conversational(v) && v["isSidechain"] != true);
    let mut e = Expected::default();
    let mut responses: HashSet<String> = HashSet::new();
    let mut seen: HashSet<String> = HashSet::new();
    let mut last_text = ClaudeText::Request;
    for (i, v) in lines.iter().enumerate() {
        // A boundary and its summary message are a compaction.
        let compaction = v["subtype"] == "compact_boundary" || v["isCompactSummary"] == true;
        let used = conversational(v) && !(main && v["isSidechain"] == true);
        if compaction {
            continue;
        }
        if !used {
            e.skipped += 1;
            continue;
        }
        let content = &v["message"]["content"];
        if v["type"] == "assistant" {
            last_text = ClaudeText::Request;
            if responses.insert(v["message"]["id"].as_str().unwrap().to_string()) {
                e.messages += 1;
            }
            for block in content.as_array().unwrap() {
                if block["type"] == "tool_use" && seen.insert(block["id"].as_str().unwrap().into())
                {
                    e.tool_calls += 1;
                }
            }
            continue;
        }
        let results: Vec<&Value> = content
            .as_array()
            .into_iter()
            .flatten()
            .filter(|b| b["type"] == "tool_result")
            .collect();
        e.messages += results.len();
        e.tool_results += results.len();
        for r in &results {
            e.orphan_results += orphan(&seen, r["tool_use_id"].as_str().unwrap());
        }
        let has_text = content.is_string() || content.as_array().unwrap().len() > results.len();
        if !has_text {
            continue;
        }
        let next_user = lines[i + 1..]
            .iter()
            .find(|n| n["type"] == "user")
            .map(claude_text);
        let text = claude_text(v);
        last_text = claude_text_use(&text, v["isMeta"] == true, next_user.as_deref(), &last_text);
        match last_text {
            ClaudeText::Request | ClaudeText::Command => e.messages += 1,
            ClaudeText::PartOfCommand => {}
            ClaudeText::Skipped if results.is_empty() => e.skipped += 1,
            ClaudeText::Skipped => {}
        }
    }
    e
}

fn expected_openai(path: &Path) -> Expected {
    let document: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let items = document["history"].as_array().unwrap();
    let mut e = Expected::default();
    let mut seen = HashSet::new();
    for (i, m) in items.iter().enumerate() {
        match m["role"].as_str().unwrap() {
            "system" if i == 0 => {} // the system prompt
            "tool" => {
                let ids = m["tool_call_ids"].as_array().unwrap();
                e.messages += ids.len();
                e.tool_results += ids.len();
                for id in ids {
                    e.orphan_results += orphan(&seen, id.as_str().unwrap());
                }
            }
            _ => {
                e.messages += 1;
                for call in m["tool_calls"].as_array().into_iter().flatten() {
                    e.tool_calls += 1;
                    seen.insert(call["id"].as_str().unwrap().to_string());
                }
            }
        }
    }
    e
}

/// Codex: the items of one model response (up to its `token_count`, or
/// the next input item) are one assistant message.
fn expected_codex(path: &Path) -> Expected {
    let mut e = Expected::default();
    let mut seen = HashSet::new();
    let mut in_response = false;
    for v in json_lines(path) {
        let p = &v["payload"];
        match (
            v["type"].as_str().unwrap(),
            p["type"].as_str().unwrap_or(""),
        ) {
            ("response_item", "message") if p["role"] == "assistant" => {
                e.messages += usize::from(!in_response);
                in_response = true;
            }
            ("response_item", "message") => {
                e.messages += 1;
                in_response = false;
            }
            ("response_item", "reasoning") => {
                e.messages += usize::from(!in_response);
                in_response = true;
            }
            ("response_item", "function_call" | "custom_tool_call") => {
                e.messages += usize::from(!in_response);
                in_response = true;
                e.tool_calls += 1;
                seen.insert(p["call_id"].as_str().unwrap().to_string());
            }
            ("response_item", "function_call_output" | "custom_tool_call_output") => {
                e.messages += 1;
                e.tool_results += 1;
                e.orphan_results += orphan(&seen, p["call_id"].as_str().unwrap());
                in_response = false;
            }
            ("event_msg", "token_count") => {
                // The first report after a response is its usage.
                e.skipped += usize::from(!in_response);
                in_response = false;
            }
            ("event_msg", _) => e.skipped += 1,
            _ => {}
        }
    }
    e
}

/// A transcript command's `--json` output; it must succeed.
fn cli_json(args: &[&str], files: &[PathBuf]) -> Value {
    let out = cli().args(args).arg("--json").args(files).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `compactd stats --json` on files, keyed by path.
fn stats(files: &[PathBuf]) -> HashMap<String, Value> {
    let reports: Vec<Value> = serde_json::from_value(cli_json(&["stats"], files)).unwrap();
    assert_eq!(reports.len(), files.len());
    reports
        .into_iter()
        .map(|r| (r["file"].as_str().unwrap().to_string(), r))
        .collect()
}

fn files_under(dir: &Path, extensions: &[&str]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files_under(&path, extensions));
        } else if path
            .extension()
            .is_some_and(|e| extensions.iter().any(|x| e == *x))
        {
            out.push(path);
        }
    }
    out.sort();
    out
}

fn check(file: &Path, report: &Value, expected: &Expected, format: &str) {
    let got = Expected {
        messages: report["messages"].as_u64().unwrap() as usize,
        tool_calls: report["toolCalls"].as_u64().unwrap() as usize,
        tool_results: report["toolResults"].as_u64().unwrap() as usize,
        orphan_results: report["orphanResults"].as_u64().unwrap() as usize,
        skipped: report["skipped"].as_u64().unwrap() as usize,
    };
    assert_eq!(&got, expected, "{}", file.display());
    assert_eq!(report["format"], format, "{}", file.display());
    // Every result is either paired with its call or reported as an orphan.
    assert_eq!(
        report["pairedResults"].as_u64().unwrap() + report["orphanResults"].as_u64().unwrap(),
        report["toolResults"].as_u64().unwrap(),
        "{}",
        file.display()
    );
}

#[test]
fn every_shared_transcript_imports_with_the_counts_of_its_raw_lines() {
    let Some(dir) = transcripts_dir() else { return };
    type Counter = fn(&Path) -> Expected;
    let groups: [(&str, &[&str], Counter, &str); 4] = [
        ("pi-session-jsonl", &["jsonl"], expected_pi, "pi"),
        (
            "claude-code-jsonl",
            &["jsonl"],
            expected_claude,
            "claude-code",
        ),
        (
            "claude-code-message-catalog",
            &["jsonl", "json"],
            expected_claude,
            "claude-code",
        ),
        ("swe-agent-traj", &["traj"], expected_openai, "openai"),
    ];
    let mut checked = 0;
    for (sub, extensions, count, format) in groups {
        let files = files_under(&dir.join(sub), extensions);
        assert!(!files.is_empty(), "{sub}");
        let reports = stats(&files);
        for file in &files {
            let report = &reports[&file.display().to_string()];
            check(file, report, &count(file), format);
            checked += 1;
        }
    }
    assert!(checked > 100, "{checked} files");
}

#[test]
fn the_shared_sessions_have_the_documented_shape() {
    // SOURCES.md: 914 messages, 391 calls / 373 results for large-session;
    // 990 messages, 454 / 448 and two compactions for before-compaction.
    let Some(dir) = transcripts_dir() else { return };
    let files = [
        dir.join("pi-session-jsonl/large-session.jsonl"),
        dir.join("pi-session-jsonl/before-compaction.jsonl"),
    ];
    let reports = stats(&files);
    let large = &reports[&files[0].display().to_string()];
    assert_eq!(
        (
            large["messages"].as_u64(),
            large["toolCalls"].as_u64(),
            large["toolResults"].as_u64()
        ),
        (Some(914), Some(391), Some(373))
    );
    assert_eq!(large["callsWithoutResult"], 18);
    let before = &reports[&files[1].display().to_string()];
    assert_eq!(
        (
            before["messages"].as_u64(),
            before["toolCalls"].as_u64(),
            before["toolResults"].as_u64()
        ),
        (Some(990), Some(454), Some(448))
    );
    assert_eq!(before["sourceCompactions"], 2);
}

#[test]
fn codex_rollout_fixture_imports_responses_and_their_usage() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/codex/rollout-2025-10-30T10-15-02-019a3520-6f3c-7d51-9a0e-51b2c3a4d5e6.jsonl");
    let reports = stats(std::slice::from_ref(&file));
    let report = &reports[&file.display().to_string()];
    check(&file, report, &expected_codex(&file), "codex");
    assert_eq!(report["model"], "gpt-5-codex");
    assert_eq!(
        report["filesModified"],
        json!(["tests/time.rs", "src/time.rs"])
    );

    // Over JSON-RPC: each response's token_count became its usage.
    let data = tempfile::tempdir().unwrap();
    let mut server = Server::start(data.path(), json!({}));
    let result = server
        .request("conversation/import", json!({"path": file}))
        .unwrap();
    assert_eq!(result["format"], "codex");
    let history = server
        .request(
            "conversation/history",
            json!({"sessionId": result["sessionId"]}),
        )
        .unwrap();
    let assistants: Vec<&Value> = history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .collect();
    let reported: Vec<u64> = json_lines(&file)
        .iter()
        .filter(|v| v["payload"]["type"] == "token_count")
        .filter_map(|v| v["payload"]["info"]["last_token_usage"]["input_tokens"].as_u64())
        .collect();
    // The last token_count repeats the one before it.
    assert_eq!(reported.len(), assistants.len() + 1);
    for (message, input) in assistants.iter().zip(&reported) {
        let u = &message["usage"];
        assert_eq!(
            u["input"].as_u64().unwrap() + u["cacheRead"].as_u64().unwrap(),
            *input,
            "{message}"
        );
    }
    assert_eq!(result["meter"]["source"], "usage");
}

#[test]
fn claude_code_subagents_are_found_beside_the_session() {
    let Some(dir) = transcripts_dir() else { return };
    let catalog = dir.join("claude-code-message-catalog");
    let project = tempfile::tempdir().unwrap();
    let session = project.path().join("0b5c.jsonl");
    let mut main = String::new();
    for f in [
        "user/user.jsonl",
        "tools/Task-tool_use.jsonl",
        "tools/Task-tool_result.jsonl",
    ] {
        main.push_str(&std::fs::read_to_string(catalog.join(f)).unwrap());
    }
    std::fs::write(&session, main).unwrap();
    let subagents = project.path().join("0b5c/subagents");
    std::fs::create_dir_all(&subagents).unwrap();
    let mut side = String::new();
    for f in [
        "user/user_sidechain.jsonl",
        "assistant/assistant_sidechain.jsonl",
    ] {
        side.push_str(&std::fs::read_to_string(catalog.join(f)).unwrap());
    }
    let agent = subagents.join("agent-b1f5d80e.jsonl");
    std::fs::write(&agent, side).unwrap();

    let reports = stats(&[session.clone(), agent.clone()]);
    let main_report = &reports[&session.display().to_string()];
    assert_eq!(
        main_report["subagents"],
        json!([agent.display().to_string()])
    );
    assert_eq!(main_report["messages"], 3);
    // The subagent's own file is all sidechain lines, and they are its conversation.
    let agent_report = &reports[&agent.display().to_string()];
    assert_eq!(agent_report["messages"], 2);
    assert_eq!(agent_report["skipped"], 0);
}

#[test]
fn import_over_rpc_creates_a_session_that_meters_compacts_and_resumes() {
    let Some(dir) = transcripts_dir() else { return };
    let data = tempfile::tempdir().unwrap();
    let mut server = Server::start(data.path(), json!({}));
    let large = dir.join("pi-session-jsonl/large-session.jsonl");
    let result = server
        .request(
            "conversation/import",
            json!({"path": large, "sessionId": "pi-large"}),
        )
        .unwrap();
    assert_eq!(result["sessionId"], "pi-large");
    assert_eq!(result["format"], "pi");
    assert_eq!(result["messages"], 914);
    assert_eq!(result["skipped"], 103, "thinking_level_change entries");
    assert_eq!(
        result["skippedReasons"],
        json!([
            "thinking_level_change entries (not part of the conversation): 103 (first at line 216)"
        ])
    );
    // The meter starts from the provider's last reported usage.
    assert_eq!(result["meter"]["source"], "usage");
    assert!(result["meter"]["contextTokens"].as_u64().unwrap() > 170_000);

    let again = server
        .request(
            "conversation/import",
            json!({"path": large, "sessionId": "pi-large"}),
        )
        .unwrap_err();
    assert_eq!(again.code, -32602);
    assert!(
        again.message.contains("already exists"),
        "{}",
        again.message
    );

    let compacted = server
        .request("conversation/compact", json!({"sessionId": "pi-large"}))
        .unwrap();
    assert_eq!(compacted["compacted"], true);

    // pi's own compactions arrive as ours: the view starts with pi's summary.
    let before = dir.join("pi-session-jsonl/before-compaction.jsonl");
    let result = server
        .request(
            "conversation/import",
            json!({"path": before, "format": "pi"}),
        )
        .unwrap();
    assert_eq!(result["compactions"], 2);
    let history = server
        .request(
            "conversation/history",
            json!({"sessionId": result["sessionId"]}),
        )
        .unwrap();
    let first = &history["messages"][0];
    assert!(
        first["content"]
            .as_str()
            .unwrap()
            .contains("# Context Checkpoint: Coding Agent Refactoring"),
        "{first}"
    );
    let kept_first = &history["messages"][1];
    assert_eq!(
        kept_first["content"], "can leave it",
        "pi's firstKeptEntryIndex 551"
    );
    server.shutdown_and_exit();

    // The imported session is an ordinary log: it resumes.
    let mut server = Server::start(data.path(), json!({}));
    let reopened = server
        .request("conversation/open", json!({"sessionId": "pi-large"}))
        .unwrap();
    assert_eq!(reopened["resumed"], true);
    assert_eq!(reopened["messageCount"], 914);
}

#[test]
fn import_over_rpc_reports_bad_input_and_skips_bad_lines() {
    let data = tempfile::tempdir().unwrap();
    let mut server = Server::start(data.path(), json!({}));
    let content = [
        r#"{"type":"user","uuid":"u1","sessionId":"s","message":{"role":"user","content":"hi"}}"#,
        r#"{"type":"assistant","uuid":"a1","sessionId":"s","message":{"id":"msg_1","role":"assistant","content":[{"type":"text","text":"hello"}]}}"#,
        r#"{"type":"user","uuid":"u2","sessio"#,
    ]
    .join("\n");
    let result = server
        .request("conversation/import", json!({"content": content}))
        .unwrap();
    assert_eq!(result["format"], "claude-code");
    assert_eq!(result["messages"], 2);
    assert_eq!(result["skipped"], 1);
    assert!(
        result["skippedReasons"][0]
            .as_str()
            .unwrap()
            .contains("torn last line"),
        "{result}"
    );

    let cases = [
        (json!({}), "give either `path` or `content`"),
        (
            json!({"path": "/x", "content": "y"}),
            "give either `path` or `content`",
        ),
        (
            json!({"content": "{\"type\":\"wat\"}\n{\"type\":\"wat\"}\n"}),
            "tried: compactd session JSONL",
        ),
        (
            json!({"content": "[1, 2]", "format": "codex"}),
            "not a Codex rollout JSONL",
        ),
        (
            json!({"content": "x", "format": "aider"}),
            "unknown format `aider`, expected one of compactd, claude-code, codex, pi, gemini, opencode, openai",
        ),
        (
            json!({"path": data.path().join("missing.jsonl")}),
            "missing.jsonl",
        ),
    ];
    for (params, needle) in cases {
        let err = server
            .request("conversation/import", params.clone())
            .unwrap_err();
        assert_eq!(err.code, -32602, "{params}");
        assert!(err.message.contains(needle), "{params}: {}", err.message);
        assert_eq!(err.message.lines().count(), 1, "{}", err.message);
    }
}

#[test]
fn only_regular_files_under_the_cap_are_imported_while_other_sessions_keep_answering() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let mut server = Server::start(data.path(), json!({"maxImportBytes": 1000}));
    let other = server.open(json!({}));
    let fifo = work.path().join("pipe.jsonl");
    mkfifo(&fifo);
    let socket = work.path().join("socket.jsonl");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let chat = |text: &str| json!([{"role": "user", "content": text}]).to_string();
    let big = work.path().join("big.json");
    std::fs::write(&big, chat(&"x".repeat(1200))).unwrap();
    assert_eq!(std::fs::metadata(&big).unwrap().len(), 1230);
    let small = work.path().join("small.json");
    std::fs::write(&small, chat("fix the parser")).unwrap();
    // A FIFO first: reading one would block the server for good.
    let mut cases = vec![
        (fifo.clone(), "not a regular file (a FIFO or pipe)"),
        (
            work.path().to_path_buf(),
            "not a regular file (a directory)",
        ),
        (socket.clone(), "not a regular file (a socket)"),
        (
            PathBuf::from("/dev/zero"),
            "not a regular file (a character device)",
        ),
        (
            big.clone(),
            "the file is 1.2 KiB (1230 bytes), more than maxImportBytes (1000 bytes)",
        ),
    ];
    // The server's own stdin, which the import would have eaten.
    if Path::new("/proc/self/fd/0").exists() {
        cases.push((
            PathBuf::from("/proc/self/fd/0"),
            "not a regular file (a FIFO or pipe)",
        ));
    }
    for (n, (path, needle)) in cases.iter().enumerate() {
        let import = server.send_request("conversation/import", json!({"path": path}));
        let append = server.send_request(
            "conversation/append",
            json!({"sessionId": other, "messages": [{"role": "user", "content": format!("still here {n}")}]}),
        );
        let err = server.response(import).unwrap_err();
        assert_eq!(err.code, -32602, "{}", path.display());
        assert!(
            err.message.contains(needle) && err.message.contains(&path.display().to_string()),
            "{}: {}",
            path.display(),
            err.message
        );
        assert_eq!(err.message.lines().count(), 1, "{}", err.message);
        let appended = server.response(append).expect("the other session answers");
        assert_eq!(appended["ids"].as_array().unwrap().len(), 1);
    }
    let history = server
        .request("conversation/history", json!({"sessionId": other}))
        .unwrap();
    assert_eq!(history["messages"].as_array().unwrap().len(), cases.len());
    let imported = server
        .request("conversation/import", json!({"path": small}))
        .unwrap();
    assert_eq!(
        imported["messages"], 1,
        "a regular file under the cap imports"
    );
}

use crate::support::fixture;

/// Imports a file over JSON-RPC: the import result, the view
/// (`conversation/history`) and the compaction records.
fn import_over_rpc(server: &mut Server, file: &Path) -> (Value, Vec<Value>, Vec<Value>) {
    let result = server
        .request("conversation/import", json!({"path": file}))
        .unwrap();
    let id = json!({"sessionId": result["sessionId"]});
    let history = server.request("conversation/history", id.clone()).unwrap();
    let records = server.request("conversation/compactions", id).unwrap();
    let list = |v: &Value, key: &str| v[key].as_array().unwrap().clone();
    (
        result,
        list(&history, "messages"),
        list(&records, "compactions"),
    )
}

/// Provider usage as compactd counts a context: prompt plus output.
fn claude_context(usage: &Value) -> u64 {
    [
        "input_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
        "output_tokens",
    ]
    .iter()
    .map(|k| usage[k].as_u64().unwrap_or(0))
    .sum()
}

/// A real Claude Code 2.1.328 session with a `/compact` (see
/// tests/fixtures/README.md): the boundary and Claude Code's summary become
/// one compaction record, the view starts at the boundary, the meter at the
/// usage reported after it, and the command lines are not requests.
#[test]
fn a_claude_code_compact_imports_as_a_compaction_the_view_starts_at() {
    let file = fixture("claude-code/5b8c1f0e-3a7d-4c2e-9f10-2d6a4b8e7c31.jsonl");
    let lines = json_lines(&file);
    let at = |pred: &dyn Fn(&Value) -> bool| lines.iter().position(pred).unwrap();
    let boundary = &lines[at(&|v| v["subtype"] == "compact_boundary")];
    let summary = &lines[at(&|v| v["isCompactSummary"] == true)];
    let metadata = &boundary["compactMetadata"];
    let after: Vec<&Value> = lines[at(&|v| v["subtype"] == "compact_boundary")..]
        .iter()
        .filter(|v| v["type"] == "assistant")
        .collect();

    let data = tempfile::tempdir().unwrap();
    let mut server = Server::start(data.path(), json!({}));
    let (result, view, records) = import_over_rpc(&mut server, &file);
    assert_eq!(result["format"], "claude-code");
    assert_eq!(result["compactions"], 1);
    assert_eq!(records.len(), 1);
    let record = &records[0];
    assert_eq!(record["trigger"], metadata["trigger"]);
    assert_eq!(record["tokensBefore"], metadata["preTokens"]);
    assert_eq!(record["summary"], summary["message"]["content"]);

    // The view: the summary, the message Claude Code preserved, then what
    // followed, exactly as Claude Code's next request had them.
    assert!(
        view[0]["content"]
            .as_str()
            .unwrap()
            .contains("Summary:\n1. Primary Request and Intent"),
        "{}",
        view[0]
    );
    assert_eq!(view[1]["id"], metadata["preservedSegment"]["headUuid"]);
    let texts: Vec<&str> = view[1..]
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        texts,
        [
            "Understood. The next step is a test file for the parser covering empty input and trailing commas.",
            "Now write the test file plan.",
            "Understood. The next step is a test file for the parser covering empty input and trailing commas."
        ]
    );
    // The meter starts from the usage reported after the boundary.
    assert_eq!(result["meter"]["source"], "usage");
    let reported = claude_context(&after.last().unwrap()["message"]["usage"]);
    assert_eq!(result["meter"]["contextTokens"], reported);
    let reasons = result["skippedReasons"].to_string();
    for kind in [
        "local slash commands (run by Claude Code, not requests): 1 (first at line 36: /compact focus on tests)",
        "local command output: 1",
        "local-command caveats (isMeta): 1",
        "cost-state lines",
    ] {
        assert!(reasons.contains(kind), "{kind} in {reasons}");
    }

    // A later compaction builds on the imported one.
    let compacted = server
        .request(
            "conversation/compact",
            json!({"sessionId": result["sessionId"], "keepRecentTokens": 1}),
        )
        .unwrap();
    assert_eq!(compacted["compacted"], true, "{compacted}");
    assert_eq!(compacted["messagesSummarized"], 2);
    server.shutdown_and_exit();
}

/// A real Codex 0.169.0 rollout whose context was compacted mid-turn (see
/// tests/fixtures/README.md): the `compacted` item becomes a record whose
/// summary is the replacement history, and the view starts with it.
#[test]
fn a_codex_compacted_item_imports_as_a_compaction_the_view_starts_at() {
    let file =
        fixture("codex/rollout-2026-11-22T19-16-20-01a204b0-1cc7-7c11-86cd-3cc548cf46a8.jsonl");
    let lines = json_lines(&file);
    let position = lines.iter().position(|v| v["type"] == "compacted").unwrap();
    let compacted = &lines[position]["payload"];
    let history = compacted["replacement_history"].as_array().unwrap();
    let before: Vec<&Value> = lines[..position]
        .iter()
        .filter(|v| v["payload"]["type"] == "token_count")
        .collect();
    let after: Vec<&Value> = lines[position..]
        .iter()
        .filter(|v| v["payload"]["type"] == "token_count")
        .collect();

    let data = tempfile::tempdir().unwrap();
    let mut server = Server::start(data.path(), json!({}));
    let (result, view, records) = import_over_rpc(&mut server, &file);
    assert_eq!(result["format"], "codex");
    assert_eq!(records.len(), 1);
    let record = &records[0];
    let last = &before.last().unwrap()["payload"]["info"]["last_token_usage"];
    assert_eq!(
        record["tokensBefore"].as_u64().unwrap(),
        last["input_tokens"].as_u64().unwrap() + last["output_tokens"].as_u64().unwrap()
    );
    // Codex's summary, after the user message it kept, as in its history.
    let summary = record["summary"].as_str().unwrap();
    let message = compacted["message"].as_str().unwrap();
    assert!(summary.ends_with(message), "{summary}");
    assert!(summary.contains("<user_message>\nWhat does notes.txt say?\n</user_message>"));
    assert_eq!(
        history.last().unwrap()["content"][0]["text"].as_str(),
        Some(message),
        "the summary is the replacement history's last item"
    );
    // The view: the session's instructions, the summary, then what followed.
    let roles: Vec<&str> = view.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "user", "assistant"]);
    assert!(view[1]["content"].as_str().unwrap().contains(message));
    assert_eq!(
        view[2]["content"],
        "Continuing: notes.txt lists two parser bugs; tests come next."
    );
    assert_eq!(view[3]["content"], "Please add tests for the parser.");
    // The meter starts from the usage reported after the compaction, and
    // the window is the one Codex stated.
    let last = &after.last().unwrap()["payload"]["info"];
    let usage = &last["last_token_usage"];
    assert_eq!(result["meter"]["source"], "usage");
    assert_eq!(
        result["meter"]["contextTokens"].as_u64().unwrap(),
        usage["input_tokens"].as_u64().unwrap() + usage["output_tokens"].as_u64().unwrap()
    );
    assert_eq!(
        result["meter"]["contextWindow"],
        last["model_context_window"]
    );
    server.shutdown_and_exit();
}

/// `stats` and `compact` read the same files through the same importer.
#[test]
fn stats_and_compact_read_foreign_compactions() {
    let files = [
        fixture("claude-code/5b8c1f0e-3a7d-4c2e-9f10-2d6a4b8e7c31.jsonl"),
        fixture("codex/rollout-2026-11-22T19-16-20-01a204b0-1cc7-7c11-86cd-3cc548cf46a8.jsonl"),
    ];
    let reports = stats(&files);
    for file in &files {
        let report = &reports[&file.display().to_string()];
        assert_eq!(report["sourceCompactions"], 1, "{}", file.display());
        let args = ["compact", "--keep-recent-tokens", "1"];
        let result = cli_json(&args, std::slice::from_ref(file));
        assert_eq!(result["compacted"], true, "{result}");
        // Only what followed the imported compaction is left to summarize.
        assert_eq!(result["messagesSummarized"], 2, "{}", file.display());
    }
    let claude = &reports[&files[0].display().to_string()];
    check(
        &files[0],
        claude,
        &expected_claude(&files[0]),
        "claude-code",
    );
}

#[test]
fn a_large_import_runs_while_other_sessions_are_served() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    // About 24 MB of OpenAI chat messages: seconds of reading, parsing,
    // writing and counting, against well under a millisecond per request.
    let text = "Refactor the lexer so that every token carries its span. ".repeat(180);
    let messages: Vec<Value> = (0..2400)
        .map(|i| {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            json!({"role": role, "content": format!("{i}: {text}")})
        })
        .collect();
    let big = work.path().join("big.json");
    std::fs::write(&big, serde_json::to_string(&messages).unwrap()).unwrap();
    assert!(std::fs::metadata(&big).unwrap().len() > 20_000_000);

    let mut server = Server::start(data.path(), json!({}));
    let other = server.open(json!({}));
    let import = server.send_request(
        "conversation/import",
        json!({"path": big, "sessionId": "big"}),
    );
    let busy = server.send_request("conversation/history", json!({"sessionId": "big"}));
    let reopen = server.send_request("conversation/open", json!({"sessionId": "big"}));
    let append = server.send_request(
        "conversation/append",
        json!({"sessionId": other, "messages": [{"role": "user", "content": "still here"}]}),
    );
    // The other session is served while the import runs: its answer comes
    // first, and the session being imported is refused, saying why.
    assert_eq!(server.response(append).unwrap()["ids"], json!(["m1"]));
    for id in [busy, reopen] {
        let err = server.response(id).unwrap_err();
        assert_eq!(err.code, -32602);
        assert!(
            err.message.contains("`big` is being imported"),
            "{}",
            err.message
        );
    }
    assert!(
        !server.received.iter().any(|m| m["id"] == json!(import)),
        "the import answered before the requests sent after it"
    );
    let imported = server.response(import).unwrap();
    assert_eq!(imported["messages"], 2400);
    let history = server
        .request("conversation/history", json!({"sessionId": "big"}))
        .unwrap();
    assert_eq!(history["messages"].as_array().unwrap().len(), 2400);
    let again = server
        .request(
            "conversation/import",
            json!({"path": big, "sessionId": "big"}),
        )
        .unwrap_err();
    assert!(
        again.message.contains("already exists"),
        "{}",
        again.message
    );
    // Written off the state owner like every new log: under the session's
    // lock, each message with its token count (so a resume counts nothing).
    let log = std::fs::read_to_string(data.path().join("big.jsonl")).unwrap();
    let counted = log
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|entry| entry["type"] == "message" && entry["tokens"]["count"].as_u64() > Some(0))
        .count();
    assert_eq!(counted, 2400);
    let mut second = Server::start(data.path(), json!({}));
    let locked = second
        .request("conversation/open", json!({"sessionId": "big"}))
        .unwrap_err();
    assert_eq!(locked.code, -32010, "{locked:?}");
}
