//! Following agent transcripts through the binary: transcripts written
//! line by line into the server's home, as the agents write them (a torn
//! last line, a response split over lines and reads, truncation,
//! replacement, the agent's own compaction), the meter following the
//! provider's usage exactly, the file ledger, auto-follow switching to a
//! session that starts, and what a read-only session refuses.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::support::{file_uri, Server};

/// Claude Code's folder for a workspace (the rule is tested in the
/// crate; these temporary paths are ASCII).
fn claude_dir(home: &Path, workspace: &Path) -> PathBuf {
    let real = workspace.canonicalize().unwrap();
    let name: String = real
        .to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    home.join(".claude/projects").join(name)
}

/// Appends `text` with one write, as an agent's `appendFileSync` does.
fn write(path: &Path, text: &str) {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    file.write_all(text.as_bytes()).unwrap();
}

fn line(value: Value) -> String {
    format!("{value}\n")
}

fn prompt(uuid: &str, text: &str) -> String {
    line(
        json!({"type": "user", "uuid": uuid, "sessionId": "s1", "isSidechain": false,
        "message": {"role": "user", "content": text}}),
    )
}

/// One line of a response: `block` is its content block.
fn response_line(uuid: &str, message_id: &str, block: Value, usage: [u64; 4]) -> String {
    let [input, cache_write, cache_read, output] = usage;
    line(
        json!({"type": "assistant", "uuid": uuid, "sessionId": "s1", "isSidechain": false,
        "message": {"id": message_id, "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [block], "stop_reason": "tool_use",
            "usage": {"input_tokens": input, "cache_creation_input_tokens": cache_write,
                "cache_read_input_tokens": cache_read, "output_tokens": output}}}),
    )
}

fn tool_use(id: &str, name: &str, input: Value) -> Value {
    json!({"type": "tool_use", "id": id, "name": name, "input": input})
}

fn tool_result(uuid: &str, call: &str, content: &str) -> String {
    line(json!({"type": "user", "uuid": uuid, "sessionId": "s1",
        "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call, "content": content}]}}))
}

/// The next meter of `session`.
fn next_meter(server: &mut Server, session: &str) -> Value {
    server
        .next_where(|m| m["method"] == "conversation/tokens" && m["params"]["sessionId"] == session)
        ["params"]
        .clone()
}

fn total(usage: [u64; 4]) -> u64 {
    usage.iter().sum()
}

struct Workspace {
    _dir: tempfile::TempDir,
    root: PathBuf,
    data: PathBuf,
}

fn workspace() -> Workspace {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("a.txt"), "alpha\n").unwrap();
    Workspace {
        data: dir.path().join("data"),
        root: root.canonicalize().unwrap(),
        _dir: dir,
    }
}

fn start(ws: &Workspace, options: Value) -> Server {
    Server::start_in_workspace(&ws.data, &ws.root, options)
}

/// Usage figures of the scripted responses: input, cache write, cache
/// read, output.
const FIRST: [u64; 4] = [3, 1500, 12_000, 96];
const SECOND: [u64; 4] = [5, 400, 13_500, 80];
const THIRD: [u64; 4] = [5, 300, 13_900, 70];

#[test]
fn a_claude_code_transcript_written_line_by_line_meters_its_usage_exactly() {
    let ws = workspace();
    let mut server = start(&ws, json!({}));
    let dir = claude_dir(server.home(), &ws.root);
    std::fs::create_dir_all(&dir).unwrap();
    let transcript = dir.join("5217d838-5181-433d-a8b8-c96b9ad7bfb3.jsonl");
    write(&transcript, &prompt("u1", "edit a.txt and write c.md"));
    let followed = server
        .request("conversation/follow", json!({"agent": "claude-code"}))
        .unwrap();
    let id = followed["sessionId"].as_str().unwrap().to_string();
    assert_eq!(followed["agent"], "claude-code");
    assert_eq!(followed["path"], transcript.display().to_string());
    assert_eq!(followed["meter"]["source"], "estimate");

    // The first line of a response: its usage is the meter.
    let a = ws.root.join("a.txt").display().to_string();
    write(
        &transcript,
        &response_line(
            "a1",
            "msg_1",
            json!({"type": "text", "text": "Reading."}),
            FIRST,
        ),
    );
    let meter = next_meter(&mut server, &id);
    assert_eq!(
        (meter["contextTokens"].as_u64(), meter["source"].as_str()),
        (Some(total(FIRST)), Some("usage"))
    );
    // Its second line (same message.id, a later read) and a torn half of
    // the tool result, in one write: the call joins the response, the
    // half line waits.
    let result = tool_result("u2", "t1", "alpha");
    let (half, rest) = result.split_at(result.len() / 2);
    let call = tool_use("t1", "Read", json!({"file_path": a}));
    let bash = tool_use("t2", "Bash", json!({"command": "ls"}));
    write(
        &transcript,
        &(response_line("a2", "msg_1", call, FIRST)
            + &response_line("a3", "msg_1", bash, FIRST)
            + half),
    );
    write(
        &transcript,
        &(rest.to_string() + &tool_result("u3", "t2", "a.txt")),
    );
    let after_results = next_meter(&mut server, &id);
    assert!(
        after_results["contextTokens"].as_u64().unwrap() > total(FIRST),
        "{after_results}"
    );
    assert_eq!(after_results["source"], "usage");
    // The next response's usage is the meter again, exactly.
    let edit = tool_use(
        "t3",
        "Edit",
        json!({"file_path": a, "old_string": "alpha", "new_string": "ALPHA"}),
    );
    write(&transcript, &response_line("a4", "msg_2", edit, SECOND));
    assert_eq!(next_meter(&mut server, &id)["contextTokens"], total(SECOND));
    write(&transcript, &tool_result("u4", "t3", "edited"));
    next_meter(&mut server, &id);
    let c = ws.root.join("c.md").display().to_string();
    let write_c = tool_use("t4", "Write", json!({"file_path": c, "content": "# c\n"}));
    write(&transcript, &response_line("a5", "msg_3", write_c, THIRD));
    assert_eq!(next_meter(&mut server, &id)["contextTokens"], total(THIRD));
    write(&transcript, &tool_result("u5", "t4", "written"));
    next_meter(&mut server, &id);

    let history = server
        .request("conversation/history", json!({"sessionId": id}))
        .unwrap();
    let assistants: Vec<&Value> = history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .collect();
    assert_eq!(
        assistants.len(),
        3,
        "three responses, the first from three lines"
    );
    assert_eq!(assistants[0]["toolCalls"].as_array().unwrap().len(), 2);
    assert_eq!(assistants[0]["content"], "Reading.");
    let results = history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool");
    let answered: Vec<&str> = results.map(|m| m["toolCallId"].as_str().unwrap()).collect();
    assert_eq!(
        answered,
        ["t1", "t2", "t3", "t4"],
        "the torn result was read whole"
    );
    let files = server
        .request("files/list", json!({"sessionId": id}))
        .unwrap();
    assert_eq!(files["readFiles"], json!([]));
    assert_eq!(files["modifiedFiles"], json!(["c.md", "a.txt"]));
    let a_record = files["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["displayPath"] == "a.txt")
        .unwrap();
    assert_eq!(
        (
            a_record["reads"].as_u64(),
            a_record["modifications"].as_u64()
        ),
        (Some(1), Some(1))
    );
    assert_eq!(
        files["files"].as_array().unwrap().len(),
        2,
        "Bash touched no file: {files}"
    );

    // The agent compacts: the meter drops to the compacted view, and the
    // next usage is the meter again.
    let before = total(THIRD);
    write(
        &transcript,
        &(line(
            json!({"type": "system", "subtype": "compact_boundary", "uuid": "b1", "parentUuid": null, "sessionId": "s1",
            "content": "Conversation compacted", "compactMetadata": {"trigger": "auto", "preTokens": before, "postTokens": 900}}),
        ) + &line(
            json!({"type": "user", "uuid": "cs", "parentUuid": "b1", "sessionId": "s1", "isCompactSummary": true,
                "message": {"role": "user", "content": "This session is being continued. Summary: a.txt edited, c.md written."}}),
        )),
    );
    let compacted =
        server.next_where(|m| m["method"] == "conversation/didCompact")["params"].clone();
    assert_eq!(
        (
            compacted["sessionId"].as_str(),
            compacted["trigger"].as_str()
        ),
        (Some(id.as_str()), Some("threshold"))
    );
    assert_eq!(compacted["tokensBefore"], before);
    let dropped = next_meter(&mut server, &id);
    assert!(
        dropped["contextTokens"].as_u64().unwrap() < 500,
        "{dropped}"
    );
    assert_eq!(dropped["source"], "estimate");
    write(&transcript, &prompt("u6", "go on"));
    next_meter(&mut server, &id);
    write(
        &transcript,
        &response_line(
            "a6",
            "msg_4",
            json!({"type": "text", "text": "ok"}),
            [5, 10, 900, 4],
        ),
    );
    assert_eq!(next_meter(&mut server, &id)["contextTokens"], 919);

    // Truncated: read again from the start, the meter as the first
    // response left it.
    let text = std::fs::read_to_string(&transcript).unwrap();
    let first_two: String = text.split_inclusive('\n').take(2).collect();
    std::fs::write(&transcript, &first_two).unwrap();
    assert_eq!(next_meter(&mut server, &id)["contextTokens"], total(FIRST));
    // Replaced by another file at the same path: read again too.
    let other = dir.join("other.tmp");
    std::fs::write(
        &other,
        prompt("v1", "fresh")
            + &response_line("v2", "msg_9", json!({"type": "text", "text": "hi"}), SECOND),
    )
    .unwrap();
    std::fs::rename(&other, &transcript).unwrap();
    assert_eq!(next_meter(&mut server, &id)["contextTokens"], total(SECOND));
    assert!(!transcript.with_extension("jsonl.bak").exists());
    server.shutdown_and_exit();
}
