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
pub(crate) fn claude_dir(home: &Path, workspace: &Path) -> PathBuf {
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
pub(crate) fn next_meter(server: &mut Server, session: &str) -> Value {
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
    assert_eq!(
        (followed["agent"].as_str(), followed["agentName"].as_str()),
        (Some("claude-code"), Some("Claude Code"))
    );
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
    // The model is known now: its window, and Claude Code's point in it,
    // travel with the meter (a status bar's tooltip shows its rule). Before
    // it was, Claude Code's default window gave the same point.
    assert_eq!(followed["meter"]["agentAutoCompact"]["at"], 177_000);
    let point = &meter["agentAutoCompact"];
    assert_eq!(
        (point["at"].as_u64(), point["basis"].as_str()),
        (meter["autoCompactAt"].as_u64(), Some("estimate"))
    );
    assert_eq!(point["at"], 177_000);
    assert!(
        point["rule"].as_str().unwrap().contains("window 200000"),
        "{point}"
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
    // Until the agent's next usage, the estimate carries the prompt
    // overhead its usage showed (its system prompt and tools stay).
    let dropped = next_meter(&mut server, &id);
    let overhead = dropped["overheadTokens"].as_u64().unwrap();
    assert!(overhead > 0, "{dropped}");
    let estimate = dropped["contextTokens"].as_u64().unwrap();
    assert!(
        estimate > overhead && estimate - overhead < 500,
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

fn fixture(relative: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(relative);
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| format!("{l}\n"))
        .collect()
}

/// Writes `lines` one write each into `transcript`; after each, the
/// followed session (its answer to following the file again, which reads
/// what was written) must meter exactly what a batch import of the lines
/// so far meters. Returns the session id. The one exception is a prefix
/// ending in a Claude Code slash command: whether it was a request shows
/// only in the next line, so the follower waits for it while a batch
/// import, at the end of its file, counts it as one.
pub(crate) fn follow_line_by_line(
    server: &mut Server,
    transcript: &Path,
    lines: &[String],
) -> String {
    write(transcript, &lines[0]);
    let path = transcript.display().to_string();
    let id = server
        .request("conversation/follow", json!({"path": path}))
        .unwrap()["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    for n in 1..lines.len() {
        write(transcript, &lines[n]);
        let followed = server
            .request("conversation/follow", json!({"path": path}))
            .unwrap();
        assert_eq!(followed["sessionId"], id.as_str());
        if lines[n].contains("<command-name>") {
            continue;
        }
        let prefix: String = lines[..=n].concat();
        let imported = server
            .request("conversation/import", json!({"content": prefix}))
            .unwrap();
        for key in ["contextTokens", "source"] {
            assert_eq!(
                followed["meter"][key],
                imported["meter"][key],
                "after line {}: {key}",
                n + 1
            );
        }
    }
    id
}

/// The one compaction the agent made in `session`, as announced.
fn did_compact(server: &Server, session: &str) -> Value {
    let announced: Vec<Value> = server
        .received_notifications("conversation/didCompact")
        .into_iter()
        .filter(|n| n["sessionId"] == session)
        .collect();
    assert_eq!(announced.len(), 1, "{announced:?}");
    announced[0].clone()
}

/// What two sessions hold, compared: messages (without ids) and files.
fn assert_same_conversation(server: &mut Server, followed: &str, imported: &str) {
    let view = |server: &mut Server, id: &str| {
        let history = server
            .request("conversation/history", json!({"sessionId": id}))
            .unwrap();
        let files = server
            .request("files/list", json!({"sessionId": id}))
            .unwrap();
        let messages: Vec<Value> = history["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| json!([m["role"], m["content"], m["toolCalls"], m["usage"]]))
            .collect();
        (
            messages,
            files["readFiles"].clone(),
            files["modifiedFiles"].clone(),
        )
    };
    assert_eq!(view(server, followed), view(server, imported));
}

#[test]
fn codex_and_pi_sessions_written_line_by_line_meter_as_a_batch_import_and_compact_as_the_agents_did(
) {
    let ws = workspace();
    let mut server = start(&ws, json!({}));
    let home = server.home().to_path_buf();
    // The agents' own settings: where they compact.
    std::fs::create_dir_all(home.join(".codex")).unwrap();
    std::fs::write(
        home.join(".codex/config.toml"),
        "model_auto_compact_token_limit = 11500\n",
    )
    .unwrap();
    let pi_agent = home.join(".pi/agent");
    std::fs::create_dir_all(&pi_agent).unwrap();
    std::fs::write(
        pi_agent.join("settings.json"),
        r#"{"compaction": {"reserveTokens": 14700}}"#,
    )
    .unwrap();
    std::fs::write(
        pi_agent.join("models.json"),
        r#"{"providers": {"scripted": {"models": [{"id": "scripted-model", "contextWindow": 16000}]}}}"#,
    )
    .unwrap();

    let codex_dir = home.join(".codex/sessions/2026/11/22");
    std::fs::create_dir_all(&codex_dir).unwrap();
    let rollout =
        codex_dir.join("rollout-2026-11-22T19-16-20-01a204b0-1cc7-7c11-86cd-3cc548cf46a8.jsonl");
    let lines =
        fixture("codex/rollout-2026-11-22T19-16-20-01a204b0-1cc7-7c11-86cd-3cc548cf46a8.jsonl");
    let id = follow_line_by_line(&mut server, &rollout, &lines);
    let compacted = did_compact(&server, &id);
    assert!(
        compacted["summary"]
            .as_str()
            .unwrap()
            .contains("Another language model"),
        "{compacted}"
    );
    let followed = server
        .request("conversation/follow", json!({"path": rollout}))
        .unwrap();
    assert_eq!(followed["agent"], "codex");
    assert_eq!(followed["autoCompact"]["at"], 11500, "{followed}");
    assert_eq!(followed["meter"]["autoCompactAt"], 11500);
    assert_eq!(
        followed["meter"]["contextWindow"], 258400,
        "the window the rollout states"
    );
    let imported = server
        .request("conversation/import", json!({"path": rollout}))
        .unwrap();
    assert_same_conversation(&mut server, &id, imported["sessionId"].as_str().unwrap());

    let pi_dir = pi_agent.join("sessions/--tmp-pi1-ws--");
    std::fs::create_dir_all(&pi_dir).unwrap();
    let session =
        pi_dir.join("2026-11-22T19-56-20-700Z_01a204d4-bd5b-7308-aca7-58c972a8ae8c.jsonl");
    let lines = fixture("pi/2026-11-22T19-56-20-700Z_01a204d4-bd5b-7308-aca7-58c972a8ae8c.jsonl");
    let id = follow_line_by_line(&mut server, &session, &lines);
    let compacted = did_compact(&server, &id);
    assert_eq!(compacted["tokensBefore"], 1512);
    let followed = server
        .request("conversation/follow", json!({"path": session}))
        .unwrap();
    assert_eq!(
        (
            followed["agent"].as_str(),
            followed["autoCompact"]["at"].as_u64()
        ),
        (Some("pi"), Some(1300))
    );
    assert_eq!(followed["autoCompact"]["basis"], "exact");
    assert_eq!(followed["meter"]["contextWindow"], 16000);
    let imported = server
        .request("conversation/import", json!({"path": session}))
        .unwrap();
    assert_same_conversation(&mut server, &id, imported["sessionId"].as_str().unwrap());
    let files = server
        .request("files/list", json!({"sessionId": id}))
        .unwrap();
    assert_eq!(
        files["modifiedFiles"].as_array().map(Vec::len),
        Some(2),
        "{files}"
    );
    server.shutdown_and_exit();
}

#[test]
fn a_real_claude_code_session_written_line_by_line_meters_as_a_batch_import() {
    let ws = workspace();
    let mut server = start(&ws, json!({}));
    let dir = claude_dir(server.home(), &ws.root);
    std::fs::create_dir_all(&dir).unwrap();
    let transcript = dir.join("5b8c1f0e-3a7d-4c2e-9f10-2d6a4b8e7c31.jsonl");
    let lines = fixture("claude-code/5b8c1f0e-3a7d-4c2e-9f10-2d6a4b8e7c31.jsonl");
    let id = follow_line_by_line(&mut server, &transcript, &lines);
    let compacted = did_compact(&server, &id);
    assert_eq!(compacted["trigger"], "manual", "/compact");
    let imported = server
        .request("conversation/import", json!({"path": transcript}))
        .unwrap();
    assert_same_conversation(&mut server, &id, imported["sessionId"].as_str().unwrap());
    server.shutdown_and_exit();
}

fn set_modified(path: &Path, seconds_ago: u64) {
    let when = std::time::SystemTime::now() - std::time::Duration::from_secs(seconds_ago);
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(when)
        .unwrap();
}

fn pi_dir(home: &Path, workspace: &Path) -> PathBuf {
    let real = workspace.canonicalize().unwrap().display().to_string();
    let name = format!("--{}--", real.trim_start_matches('/').replace('/', "-"));
    home.join(".pi/agent/sessions").join(name)
}

fn pi_session(cwd: &Path, prompt: &str, name: Option<&str>) -> String {
    let mut text =
        line(json!({"type": "session", "version": 3, "id": "01a2", "timestamp": "t", "cwd": cwd}));
    if let Some(name) = name {
        text += &line(
            json!({"type": "session_info", "id": "e0", "parentId": null, "timestamp": "t", "name": name}),
        );
    }
    text += &line(
        json!({"type": "message", "id": "e1", "parentId": if name.is_some() { json!("e0") } else { json!(null) }, "timestamp": "t",
        "message": {"role": "user", "content": [{"type": "text", "text": prompt}]}}),
    );
    text + &line(
        json!({"type": "message", "id": "e2", "parentId": "e1", "timestamp": "t",
        "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}], "model": "scripted-model",
            "usage": {"input": 900, "output": 40, "cacheRead": 100, "cacheWrite": 0, "totalTokens": 1040}}}),
    )
}

fn codex_rollout(cwd: &Path, prompt: &str) -> String {
    let item = |payload: Value| {
        line(json!({"timestamp": "t", "type": "response_item", "payload": payload}))
    };
    line(
        json!({"timestamp": "t", "type": "session_meta", "payload": {"id": "01a2", "cwd": cwd, "cli_version": "0.169.0"}}),
    ) + &line(
        json!({"timestamp": "t", "type": "turn_context", "payload": {"cwd": cwd, "model": "gpt-5-codex"}}),
    ) + &item(
        json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context>\n  <cwd>x</cwd>\n</environment_context>"}]}),
    ) + &item(
        json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]}),
    )
}

fn codex_response(text: &str, input: u64, output: u64) -> String {
    line(
        json!({"timestamp": "t", "type": "response_item", "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}}),
    ) + &line(
        json!({"timestamp": "t", "type": "event_msg", "payload": {"type": "token_count", "info": {
            "last_token_usage": {"input_tokens": input, "cached_input_tokens": 0, "output_tokens": output, "total_tokens": input + output},
            "model_context_window": 258400}}}),
    )
}

fn did_follow(server: &mut Server) -> Value {
    server.next_where(|m| m["method"] == "conversation/didFollow")["params"].clone()
}

#[test]
fn auto_follow_follows_the_newest_session_and_switches_when_one_starts() {
    let ws = workspace();
    let elsewhere = ws.root.parent().unwrap().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let mut server = Server::spawn(&ws.data);
    let home = server.home().to_path_buf();
    let claude = claude_dir(&home, &ws.root);
    std::fs::create_dir_all(&claude).unwrap();
    let (older, newer) = (claude.join("older.jsonl"), claude.join("newer.jsonl"));
    write(&older, &prompt("o1", "older work"));
    write(&newer, &prompt("n1", "newer work"));
    set_modified(&older, 600);
    set_modified(&newer, 300);
    // Another workspace's session, the newest of all: not this one's.
    let other = claude_dir(&home, &elsewhere);
    std::fs::create_dir_all(&other).unwrap();
    write(&other.join("x.jsonl"), &prompt("x1", "not here"));

    server.initialize_params(
        json!({"follow": "auto"}),
        json!({"rootUri": file_uri(&ws.root)}),
    );
    let first = did_follow(&mut server);
    assert_eq!(
        (first["agent"].as_str(), first["path"].as_str()),
        (Some("claude-code"), Some(newer.to_str().unwrap()))
    );
    assert!(first.get("previousSessionId").is_none(), "{first}");
    assert_eq!(first["meter"]["source"], "estimate");

    // A Codex session of the workspace starts: auto-follow moves to it.
    let day = home.join(".codex/sessions/2026/11/22");
    std::fs::create_dir_all(&day).unwrap();
    let rollout =
        day.join("rollout-2026-11-22T21-00-00-01a204d6-4a38-7603-8d4d-34f09abdd863.jsonl");
    write(&rollout, &codex_rollout(&ws.root, "list files"));
    let second = did_follow(&mut server);
    assert_eq!(
        (second["agent"].as_str(), second["path"].as_str()),
        (Some("codex"), Some(rollout.to_str().unwrap()))
    );
    assert_eq!(second["previousSessionId"], first["sessionId"]);
    let closed = server.request(
        "conversation/history",
        json!({"sessionId": first["sessionId"]}),
    );
    assert!(
        closed.is_err(),
        "the previous auto-followed session is closed"
    );
    let codex_id = second["sessionId"].as_str().unwrap().to_string();
    write(&rollout, &codex_response("a.txt", 4000, 20));
    assert_eq!(next_meter(&mut server, &codex_id)["contextTokens"], 4020);
    // Followed explicitly too, it stays open when auto-follow moves on.
    server
        .request("conversation/follow", json!({"path": rollout}))
        .unwrap();

    // Sessions of another workspace start, then a pi session of this one.
    write(
        &day.join("rollout-2026-11-22T21-01-00-01a204d6-0000-7603-8d4d-34f09abdd863.jsonl"),
        &codex_rollout(&elsewhere, "elsewhere"),
    );
    let pi_other = pi_dir(&home, &elsewhere);
    std::fs::create_dir_all(&pi_other).unwrap();
    write(
        &pi_other.join("2026-11-22T21-01-00-000Z_x.jsonl"),
        &pi_session(&elsewhere, "elsewhere", None),
    );
    let pi_here = pi_dir(&home, &ws.root);
    std::fs::create_dir_all(&pi_here).unwrap();
    let pi_file = pi_here.join("2026-11-22T21-02-00-000Z_01a204d4.jsonl");
    write(&pi_file, &pi_session(&ws.root, "write c.md", None));
    let third = did_follow(&mut server);
    assert_eq!(
        (third["agent"].as_str(), third["path"].as_str()),
        (Some("pi"), Some(pi_file.to_str().unwrap()))
    );
    assert_eq!(third["previousSessionId"], codex_id.as_str());
    assert_eq!(third["meter"]["contextTokens"], 1040);
    server
        .request("conversation/history", json!({"sessionId": codex_id}))
        .unwrap();

    // `follow: "off"`: the auto-followed session closes.
    server.notify(
        "workspace/didChangeConfiguration",
        json!({"settings": {"follow": "off"}}),
    );
    let pi_id = third["sessionId"].clone();
    let error = server
        .request("conversation/history", json!({"sessionId": pi_id}))
        .unwrap_err();
    assert!(error.message.contains("no open session"), "{error:?}");
    assert_eq!(
        server
            .received_notifications("conversation/didFollow")
            .len(),
        3
    );
    server.shutdown_and_exit();
}

#[test]
fn agent_sessions_of_the_workspace_are_listed_newest_first_with_titles() {
    let ws = workspace();
    let mut server = start(&ws, json!({}));
    let home = server.home().to_path_buf();
    let claude = claude_dir(&home, &ws.root);
    std::fs::create_dir_all(&claude).unwrap();
    let claude_file = claude.join("c1.jsonl");
    let command = line(json!({"type": "user", "uuid": "m0", "sessionId": "s1",
        "message": {"role": "user", "content": "<command-name>/model</command-name>"}}));
    let output = line(json!({"type": "user", "uuid": "m1", "sessionId": "s1",
        "message": {"role": "user", "content": "<local-command-stdout>Set model</local-command-stdout>"}}));
    write(
        &claude_file,
        &(command + &output + &prompt("u1", "fix the parser")),
    );
    let day = home.join(".codex/sessions/2026/11/22");
    std::fs::create_dir_all(&day).unwrap();
    let rollout = day.join("rollout-2026-11-22T21-00-00-01a2.jsonl");
    write(&rollout, &codex_rollout(&ws.root, "list files"));
    let pi_here = pi_dir(&home, &ws.root);
    std::fs::create_dir_all(&pi_here).unwrap();
    let pi_file = pi_here.join("2026-11-22T21-02-00-000Z_01a2.jsonl");
    write(
        &pi_file,
        &pi_session(&ws.root, "write c.md", Some("Parser work")),
    );
    set_modified(&claude_file, 300);
    set_modified(&pi_file, 200);
    set_modified(&rollout, 100);

    let listed = server
        .request("conversation/listAgentSessions", json!({}))
        .unwrap();
    assert_eq!(listed["workspace"], ws.root.display().to_string());
    let summary: Vec<(String, String, String)> = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["agent"].as_str().unwrap().into(),
                s["path"].as_str().unwrap().into(),
                s["title"].as_str().unwrap_or("").into(),
            )
        })
        .collect();
    let path = |p: &Path| p.display().to_string();
    assert_eq!(
        summary,
        [
            (
                "codex".to_string(),
                path(&rollout),
                "list files".to_string()
            ),
            ("pi".to_string(), path(&pi_file), "Parser work".to_string()),
            (
                "claude-code".to_string(),
                path(&claude_file),
                "fix the parser".to_string()
            ),
        ]
    );
    let names: Vec<&Value> = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["agentName"])
        .collect();
    assert_eq!(
        names,
        [&json!("Codex"), &json!("pi"), &json!("Claude Code")]
    );
    let first = &listed["sessions"][0];
    assert_eq!(first["size"], std::fs::metadata(&rollout).unwrap().len());
    assert!(first.get("sessionId").is_none());
    let followed = server
        .request("conversation/follow", json!({"path": pi_file}))
        .unwrap();
    let listed = server
        .request("conversation/listAgentSessions", json!({"limit": 2}))
        .unwrap();
    assert_eq!(listed["sessions"].as_array().unwrap().len(), 2);
    assert_eq!(listed["sessions"][1]["sessionId"], followed["sessionId"]);
    server.shutdown_and_exit();
}

/// A Claude Code transcript of four short turns, enough to compact.
fn four_turns() -> String {
    let mut text = String::new();
    for turn in 0..4 {
        text += &prompt(
            &format!("u{turn}"),
            &format!("step {turn}: change the parser so that it handles case {turn} of the input"),
        );
        let reply = json!({"type": "text", "text": format!("Done with step {turn}; the parser now handles that case and its tests pass.")});
        text += &response_line(
            &format!("a{turn}"),
            &format!("msg_{turn}"),
            reply,
            [5, 0, 1000 + 100 * turn, 20],
        );
    }
    text
}

#[test]
fn a_followed_session_is_read_only_and_compacts_into_compactds_own_log() {
    let ws = workspace();
    let mut server = start(&ws, json!({"keepRecentTokens": 30}));
    // Outside Claude Code's folders (it outlives this server's home): its
    // agent is told from its content.
    let transcript = ws.root.parent().unwrap().join("s1.jsonl");
    let text = four_turns();
    write(&transcript, &text);
    let followed = server
        .request("conversation/follow", json!({"path": transcript}))
        .unwrap();
    let id = followed["sessionId"].as_str().unwrap().to_string();
    let history = server
        .request("conversation/history", json!({"sessionId": id}))
        .unwrap();

    let refusals = [
        (
            "conversation/append",
            json!({"sessionId": id, "messages": [{"role": "user", "content": "x"}]}),
        ),
        (
            "conversation/setAutoCompact",
            json!({"sessionId": id, "enabled": true}),
        ),
        ("conversation/pin", json!({"sessionId": id, "text": "keep"})),
        (
            "conversation/branch",
            json!({"sessionId": id, "beforeMessageId": "a1"}),
        ),
        (
            "conversation/reportError",
            json!({"sessionId": id, "message": "prompt is too long: 300000 tokens > 200000 maximum"}),
        ),
        ("conversation/open", json!({"sessionId": id})),
    ];
    for (method, params) in refusals {
        let error = server.request(method, params).unwrap_err();
        assert_eq!(error.code, -32011, "{method}");
        assert!(
            error.message.contains("follows Claude Code's transcript")
                && error.message.contains("read-only"),
            "{method}: {}",
            error.message
        );
    }
    let check = server
        .request("conversation/check", json!({"sessionId": id}))
        .unwrap();
    assert_eq!(
        (
            check["autoCompact"].as_bool(),
            check["compacting"].as_bool()
        ),
        (Some(false), Some(false))
    );

    let compacted = server
        .request("conversation/compact", json!({"sessionId": id}))
        .unwrap();
    assert_eq!(compacted["compacted"], false);
    assert!(
        compacted["reason"]
            .as_str()
            .unwrap()
            .contains("compactd's log only"),
        "{compacted}"
    );
    assert!(
        compacted["summary"].as_str().unwrap().contains("step"),
        "{compacted}"
    );
    assert_eq!(compacted["tokensBefore"], 1325);
    let listed = server
        .request("conversation/compactions", json!({"sessionId": id}))
        .unwrap();
    assert_eq!(listed["compactions"].as_array().unwrap().len(), 1);
    let unchanged = server
        .request("conversation/history", json!({"sessionId": id}))
        .unwrap();
    assert_eq!(
        unchanged["messages"], history["messages"],
        "the mirror is the agent's"
    );

    let handoff = server
        .request(
            "conversation/compact",
            json!({"sessionId": id, "strategy": "handoff", "goal": "finish the parser"}),
        )
        .unwrap();
    let prompt_text = handoff["handoffPrompt"].as_str().unwrap();
    assert!(
        prompt_text.starts_with("This session continues earlier work in another session."),
        "{prompt_text}"
    );
    assert!(prompt_text.contains("finish the parser"), "{prompt_text}");
    let fresh = handoff["handoffSessionId"].as_str().unwrap();
    server.append(fresh, json!([{"role": "user", "content": "go"}]));
    assert_eq!(
        std::fs::read_to_string(&transcript).unwrap(),
        text,
        "the transcript is only read"
    );

    let unfollowed = server
        .request("conversation/unfollow", json!({"sessionId": id}))
        .unwrap();
    assert_eq!(unfollowed, json!({"sessionId": id, "unfollowed": true}));
    assert!(server
        .request("conversation/history", json!({"sessionId": id}))
        .is_err());
    let again = server
        .request("conversation/unfollow", json!({"sessionId": id}))
        .unwrap();
    assert_eq!(again["unfollowed"], false);
    server.shutdown_and_exit();

    // Restarted: following the file again finds compactd's own log of it.
    let mut server = start(&ws, json!({}));
    for read_only in [false, true] {
        let error = server
            .request(
                "conversation/open",
                json!({"sessionId": id, "readOnly": read_only}),
            )
            .unwrap_err();
        assert_eq!(error.code, -32011);
        assert!(error.message.contains("conversation/follow"), "{error:?}");
    }
    let refollowed = server
        .request("conversation/follow", json!({"path": transcript}))
        .unwrap();
    assert_eq!(refollowed["sessionId"], id.as_str());
    let listed = server
        .request("conversation/compactions", json!({"sessionId": id}))
        .unwrap();
    assert_eq!(listed["compactions"].as_array().unwrap().len(), 1);
    let error = server
        .request("conversation/follow", json!({}))
        .unwrap_err();
    assert!(error.message.contains("give `path`"), "{error:?}");
    let error = server
        .request("conversation/follow", json!({"agent": "codex"}))
        .unwrap_err();
    assert!(error.message.contains("no Codex session for"), "{error:?}");
    // It names where Codex's sessions are, not the other agents' folders.
    assert!(error.message.contains("sessions)"), "{error:?}");
    assert!(!error.message.contains("projects"), "{error:?}");
    let notes = ws.root.join("notes.md");
    std::fs::write(&notes, "# notes\n").unwrap();
    let error = server
        .request("conversation/follow", json!({"path": notes}))
        .unwrap_err();
    assert!(
        error
            .message
            .contains("not a Claude Code, Codex, pi, Gemini CLI or opencode transcript"),
        "{error:?}"
    );
    server.shutdown_and_exit();
}

#[test]
fn without_a_file_watcher_the_poll_follows_the_transcript() {
    let ws = workspace();
    let mut server = start(&ws, json!({"fileWatcher": "off"}));
    let dir = claude_dir(server.home(), &ws.root);
    std::fs::create_dir_all(&dir).unwrap();
    let transcript = dir.join("s1.jsonl");
    write(&transcript, &prompt("u1", "go"));
    let id = server
        .request("conversation/follow", json!({"agent": "claude-code"}))
        .unwrap()["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    write(
        &transcript,
        &response_line("a1", "msg_1", json!({"type": "text", "text": "ok"}), FIRST),
    );
    assert_eq!(next_meter(&mut server, &id)["contextTokens"], total(FIRST));
    server.shutdown_and_exit();
}

#[test]
fn pi_moving_to_another_branch_of_its_session_tree_is_read_again() {
    let ws = workspace();
    let mut server = start(&ws, json!({}));
    let dir = pi_dir(server.home(), &ws.root);
    std::fs::create_dir_all(&dir).unwrap();
    let session = dir.join("2026-11-22T21-02-00-000Z_01a2.jsonl");
    let entry = |id: &str, parent: &str, role: &str, text: &str, total: u64| {
        let mut message = json!({"role": role, "content": [{"type": "text", "text": text}]});
        if role == "assistant" {
            message["usage"] = json!({"input": total - 10, "output": 10, "cacheRead": 0, "cacheWrite": 0, "totalTokens": total});
        }
        line(
            json!({"type": "message", "id": id, "parentId": parent, "timestamp": "t", "message": message}),
        )
    };
    let header = line(
        json!({"type": "session", "version": 3, "id": "01a2", "timestamp": "t", "cwd": ws.root}),
    );
    write(
        &session,
        &(header
            + &line(
                json!({"type": "model_change", "id": "e0", "parentId": null, "timestamp": "t", "provider": "p", "modelId": "m"}),
            )),
    );
    write(
        &session,
        &(entry("e1", "e0", "user", "first", 0) + &entry("e2", "e1", "assistant", "one", 1040)),
    );
    let id = server
        .request("conversation/follow", json!({"agent": "pi"}))
        .unwrap()["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    write(
        &session,
        &(entry("e3", "e2", "user", "second", 0) + &entry("e4", "e3", "assistant", "two", 2000)),
    );
    assert_eq!(next_meter(&mut server, &id)["contextTokens"], 2000);
    // /tree back to "one", and on from there.
    write(
        &session,
        &(entry("e5", "e2", "user", "instead", 0) + &entry("e6", "e5", "assistant", "three", 1500)),
    );
    assert_eq!(next_meter(&mut server, &id)["contextTokens"], 1500);
    let history = server
        .request("conversation/history", json!({"sessionId": id}))
        .unwrap();
    let texts: Vec<&str> = history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["first", "one", "instead", "three"]);
    server.shutdown_and_exit();
}

/// `server` compacts the followed session into compactd's own log.
fn assert_recorded(server: &mut Server, compact: &Value) {
    let recorded = server
        .request("conversation/compact", compact.clone())
        .unwrap();
    let reason = recorded["reason"].as_str().unwrap();
    assert!(reason.contains("compactd's log only"), "{recorded}");
}

/// Two servers on one data directory (two editor windows on a workspace)
/// follow the same transcript: both mirror it, and compactd's own log of
/// it has one writer at a time, like every session log.
#[test]
fn two_servers_follow_one_transcript_and_take_turns_at_its_own_log() {
    let ws = workspace();
    let transcript = ws.root.parent().unwrap().join("shared.jsonl");
    let text = four_turns();
    write(&transcript, &text);
    let follow = json!({"path": transcript});
    let mut first = start(&ws, json!({"keepRecentTokens": 30}));
    let mut second = start(&ws, json!({"keepRecentTokens": 30}));
    let a = first
        .request("conversation/follow", follow.clone())
        .unwrap();
    let b = second
        .request("conversation/follow", follow.clone())
        .unwrap();
    assert_eq!(a["sessionId"], b["sessionId"]);
    assert_eq!(a["meter"], b["meter"]);
    let id = a["sessionId"].as_str().unwrap().to_string();
    let compact = json!({"sessionId": id});

    let error = second
        .request("conversation/compact", compact.clone())
        .unwrap_err();
    assert_eq!(error.code, -32010, "{error:?}");
    assert!(
        error.message.contains(&format!("pid {}", first.pid())),
        "{error:?}"
    );
    assert_recorded(&mut first, &compact);

    // The first lets go: the second takes the log, with what the first
    // recorded in it.
    first
        .request("conversation/unfollow", json!({"sessionId": id}))
        .unwrap();
    assert_recorded(&mut second, &compact);
    let listed = second
        .request("conversation/compactions", compact.clone())
        .unwrap();
    assert_eq!(listed["compactions"].as_array().unwrap().len(), 2);
    let error = first
        .request("conversation/follow", follow)
        .map(|_| first.request("conversation/compact", compact).unwrap_err())
        .unwrap();
    assert_eq!(error.code, -32010, "{error:?}");
    first.shutdown_and_exit();
    second.shutdown_and_exit();
}

/// An agent's own compaction, listed by `conversation/compactions`, carries
/// what its transcript says (when, how long) and the context after it as
/// the meter showed it; what the transcript does not say is left out,
/// never a false zero.
#[test]
fn an_agents_compaction_is_listed_with_its_own_times_and_the_meter_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let transcript = dir.path().join("5217d838.jsonl");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/claude-code/5217d838-5181-433d-a8b8-c96b9ad7bfb3.jsonl"),
        &transcript,
    )
    .unwrap();
    let mut server = Server::start(&dir.path().join("data"), json!({"follow": "off"}));
    let followed = server
        .request("conversation/follow", json!({"path": transcript}))
        .unwrap();
    let id = followed["sessionId"].as_str().unwrap();
    let listed = server
        .request("conversation/compactions", json!({"sessionId": id}))
        .unwrap();
    let own = &listed["compactions"][0];
    assert_eq!(own["summarizer"], "claude-code (imported)", "{own}");
    // 2026-11-22T19:50:09.157Z and `durationMs: 136`, as Claude Code wrote them.
    assert_eq!(own["createdAt"], 1_795_377_009_157u64, "{own}");
    assert_eq!(own["durationMs"], 136, "{own}");
    // Right after it, with no usage since: the meter.
    assert_eq!(
        own["tokensAfter"], followed["meter"]["contextTokens"],
        "{own}"
    );
    assert!(own["tokensAfter"].as_u64().unwrap() > 3061, "{own}");

    // pi records when, not how long: the duration is left out.
    let pi = dir.path().join("pi.jsonl");
    let lines = [
        json!({"type": "session", "version": 3, "id": "s", "timestamp": "2026-11-20T10:00:00.000Z", "cwd": "/w"}),
        json!({"type": "message", "id": "e1", "parentId": null, "timestamp": "2026-11-20T10:00:01.000Z", "message": {"role": "user", "content": "first"}}),
        json!({"type": "message", "id": "e2", "parentId": "e1", "timestamp": "2026-11-20T10:00:02.000Z", "message": {"role": "assistant", "content": [{"type": "text", "text": "done"}]}}),
        json!({"type": "message", "id": "e3", "parentId": "e2", "timestamp": "2026-11-20T10:00:03.000Z", "message": {"role": "user", "content": "second"}}),
        json!({"type": "compaction", "id": "e4", "parentId": "e3", "timestamp": "2026-11-20T10:00:04.000Z", "summary": "did things", "firstKeptEntryId": "e3", "tokensBefore": 900}),
    ];
    std::fs::write(
        &pi,
        lines.iter().map(|l| format!("{l}\n")).collect::<String>(),
    )
    .unwrap();
    let imported = server
        .request(
            "conversation/import",
            json!({"path": pi, "sessionId": "pi-import"}),
        )
        .unwrap();
    assert_eq!(imported["compactions"], 1, "{imported}");
    let listed = server
        .request(
            "conversation/compactions",
            json!({"sessionId": "pi-import"}),
        )
        .unwrap();
    let record = &listed["compactions"][0];
    assert_eq!(record["createdAt"], 1_795_168_804_000u64, "{record}");
    assert!(record.get("durationMs").is_none(), "{record}");
    assert!(record["tokensAfter"].as_u64().unwrap() > 0, "{record}");
}

/// A transcript not followed yet is read whole off the state owner, which
/// goes on serving: a request for another session sent right after the
/// follow of a large transcript is answered first (reading 30 MB takes
/// the debug build seconds; the history of a session of one message,
/// none). Before, the read held up every request until it ended.
#[test]
fn a_large_transcript_is_read_while_other_sessions_are_served() {
    let ws = workspace();
    let mut server = start(&ws, json!({}));
    let other = server.open(json!({}));
    server.append(&other, json!([{"role": "user", "content": "hello"}]));
    let transcript = ws.root.join("large.jsonl");
    let result = "fn main() { println!(\"the quick brown fox\"); }\n".repeat(160);
    let mut text = prompt("u0", "read every file");
    let turns = (30 << 20) / result.len();
    for i in 0..turns {
        let call = format!("t{i}");
        let input = json!({"file_path": ws.root.join(format!("src/f{i}.rs"))});
        let block = tool_use(&call, "Read", input);
        text.push_str(&response_line(
            &format!("a{i}"),
            &format!("msg_{i}"),
            block,
            FIRST,
        ));
        text.push_str(&tool_result(&format!("r{i}"), &call, &result));
    }
    write(&transcript, &text);
    let follow = server.send_request("conversation/follow", json!({"path": transcript}));
    let history = server.send_request("conversation/history", json!({"sessionId": other}));
    let answered = |m: &Value| m.get("method").is_none() && m.get("id").is_some();
    let first = server.next_where(answered);
    assert_eq!(first["id"], history, "{first}");
    let followed = server.response(follow).unwrap();
    assert_eq!(followed["agent"], "claude-code");
    let id = followed["sessionId"].as_str().unwrap();
    let messages = server.history_ids(id).len();
    assert_eq!(messages, 1 + 2 * turns);
}

/// A followed transcript replaced by a FIFO (issue #39): each poll opens
/// it again, and a blocking open would hold the state owner until
/// something wrote to the FIFO. Another followed transcript's next line,
/// read in the same poll, still reaches its meter, requests are still
/// answered, the session keeps what it had, and asked to follow the FIFO
/// the server says what it is. Once a file again, what is added is read.
#[cfg(unix)]
#[test]
fn a_followed_transcript_replaced_by_a_fifo_freezes_nothing() {
    let ws = workspace();
    let mut server = start(&ws, json!({"fileWatcher": "off"}));
    let other = server.open(json!({}));
    let follow = |server: &mut Server, path: &Path| {
        server.request("conversation/follow", json!({"path": path}))
    };
    let mut text = prompt("u0", "read a.txt");
    let block = tool_use("t0", "Read", json!({"file_path": ws.root.join("a.txt")}));
    text.push_str(&response_line("a0", "msg_0", block, FIRST));
    text.push_str(&tool_result("r0", "t0", "alpha"));
    let [a, b] = ["a.jsonl", "b.jsonl"].map(|name| ws.root.join(name));
    let [id_a, id_b] = [&a, &b].map(|path| {
        write(path, &text);
        let followed = follow(&mut server, path).unwrap();
        followed["sessionId"].as_str().unwrap().to_string()
    });
    assert_eq!(server.history_ids(&id_a).len(), 3);
    std::fs::remove_file(&a).unwrap();
    crate::support::mkfifo(&a);
    let second = json!({"type": "text", "text": "done"});
    write(&b, &response_line("a1", "msg_1", second, SECOND));
    assert_eq!(
        next_meter(&mut server, &id_b)["contextTokens"],
        total(SECOND)
    );
    server.append(&other, json!([{"role": "user", "content": "still served"}]));
    let refused = follow(&mut server, &a).unwrap_err();
    assert!(
        refused
            .message
            .contains("not a regular file (a FIFO or pipe)"),
        "{refused:?}"
    );
    assert_eq!(server.history_ids(&id_a).len(), 3);
    // A file again: the agent's next line is read.
    std::fs::remove_file(&a).unwrap();
    text.push_str(&prompt("u1", "thanks"));
    write(&a, &text);
    assert_eq!(follow(&mut server, &a).unwrap()["sessionId"], id_a.as_str());
    assert_eq!(server.history_ids(&id_a).len(), 4);
}
