//! The real Gemini CLI (pinned in `tests/agents`, installed by `npm ci`
//! there) against the scripted Gemini API, offline: compactd finds the
//! session it writes, follows it while it runs (read_file, replace,
//! write_file, a failing run_shell_command, with usage), records its
//! compression (a resumed run under a tiny `compressionThreshold`), and
//! `compactd sessions` lists it. Skipped (`support::skip`), with the reason,
//! when the agents are not installed or python3 is missing.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::follow::follow_line_by_line;
use crate::support::{file_uri, output_within, skip, ScriptedModel, Server, MODEL_PATIENCE};

/// The gemini binary, or why the test is skipped.
fn gemini() -> Result<PathBuf, String> {
    crate::support::agent_binary("gemini")
}

/// Its settings' compression threshold lowered to nearly nothing, then the
/// session resumed with one more prompt: Gemini compresses before it.
fn resume_compressing(binary: &Path, home: &Path, model: &ScriptedModel, ws: &Path) {
    let path = home.join(".gemini/settings.json");
    let mut settings: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    settings["model"] = json!({"compressionThreshold": 0.0002});
    std::fs::write(&path, settings.to_string()).unwrap();
    run_gemini(
        binary,
        home,
        model,
        ws,
        &["--resume", "latest", "-p", "Carry on"],
    );
}

/// The Gemini API requests the scripted model logged, in order.
fn gemini_requests(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|r: &Value| r["api"] == "gemini")
        .collect()
}

/// Its user settings: the API-key auth (with `GOOGLE_GEMINI_BASE_URL`
/// alone it picks a "gateway" auth `-p` refuses), and `more`.
fn write_settings(home: &Path, more: Value) {
    let mut settings = json!({"security": {"auth": {"selectedType": "gemini-api-key"}}});
    if let (Some(base), Some(more)) = (settings.as_object_mut(), more.as_object()) {
        base.extend(more.clone());
    }
    std::fs::create_dir_all(home.join(".gemini")).unwrap();
    std::fs::write(home.join(".gemini/settings.json"), settings.to_string()).unwrap();
}

/// `gemini -m gemini-2.5-pro --skip-trust --yolo ARGS` in `ws`, offline.
fn run_gemini(binary: &Path, home: &Path, model: &ScriptedModel, ws: &Path, args: &[&str]) {
    let mut command = Command::new(binary);
    command
        .args(["-m", "gemini-2.5-pro", "--skip-trust", "--yolo"])
        .args(args)
        .current_dir(ws)
        .env("HOME", home)
        .env("GOOGLE_GEMINI_BASE_URL", &model.url)
        .env("GEMINI_API_KEY", "scripted-key")
        .env_remove("GEMINI_CLI_HOME");
    let output = output_within(&mut command, MODEL_PATIENCE);
    assert!(output.status.success(), "{output:?}");
}

fn workspace(root: &Path) -> PathBuf {
    let ws = root.join("ws");
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(ws.join("a.txt"), "alpha\nbeta\n").unwrap();
    std::fs::write(ws.join("src/b.py"), "print('b')\n").unwrap();
    ws.canonicalize().unwrap()
}

#[test]
fn real_gemini_cli_is_followed_and_its_compression_recorded() {
    let binary = match gemini() {
        Ok(binary) => binary,
        Err(why) => return skip(&why),
    };
    let temp = tempfile::tempdir().unwrap();
    let ws = workspace(temp.path());
    let mut server = Server::spawn(&temp.path().join("data"));
    server.patience = MODEL_PATIENCE;
    let home = server.home().to_path_buf();
    server.initialize_params(json!({"follow": "auto"}), json!({"rootUri": file_uri(&ws)}));
    let model = ScriptedModel::start(
        "gemini-tools.json",
        &temp.path().join("requests.jsonl"),
        &ws,
    );
    write_settings(&home, json!({}));
    run_gemini(
        &binary,
        &home,
        &model,
        &ws,
        &["-p", "Fix the test. Rule: never touch b.py"],
    );

    // Auto-follow found the session it started, where its registry says.
    let followed = server.next_where(|m| m["method"] == "conversation/didFollow")["params"].clone();
    let path = PathBuf::from(followed["path"].as_str().unwrap());
    assert_eq!(path.parent().unwrap(), home.join(".gemini/tmp/ws/chats"));
    let id = followed["sessionId"].as_str().unwrap().to_string();
    let now = server
        .request("conversation/follow", json!({"agent": "gemini"}))
        .unwrap();
    assert_eq!(now["sessionId"], id.as_str());
    // Its last response reported 1,500 prompt and 10 output tokens.
    assert_eq!(
        (
            now["meter"]["contextTokens"].as_u64(),
            now["meter"]["source"].as_str()
        ),
        (Some(1510), Some("usage"))
    );
    let files = server
        .request("files/list", json!({"sessionId": id}))
        .unwrap();
    assert_eq!(files["modifiedFiles"], json!(["c.md", "a.txt"]), "{files}");

    // Resumed under a tiny threshold, it compresses everything first.
    write_settings(&home, json!({"model": {"compressionThreshold": 0.0002}}));
    run_gemini(
        &binary,
        &home,
        &model,
        &ws,
        &["--resume", "latest", "-p", "Carry on"],
    );
    let after = server
        .request("conversation/follow", json!({"agent": "gemini"}))
        .unwrap();
    assert_eq!(after["sessionId"], id.as_str(), "the same file, resumed");
    assert_eq!(after["meter"]["contextTokens"], 1205);
    let compactions = server
        .request("conversation/compactions", json!({"sessionId": id}))
        .unwrap();
    let listed = compactions["compactions"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{compactions}");
    assert!(
        listed[0]["summary"]
            .as_str()
            .unwrap()
            .contains("<state_snapshot>some edits. Status: done."),
        "{compactions}"
    );
    assert_eq!(listed[0]["tokensBefore"], 1510);
    let history = server
        .request("conversation/history", json!({"sessionId": id}))
        .unwrap();
    let texts: Vec<&str> = history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert!(texts.ends_with(&["Carry on", "Carrying on."]), "{texts:?}");

    // `compactd sessions` in the workspace lists it.
    let sessions = Command::new(env!("CARGO_BIN_EXE_compactd"))
        .arg("sessions")
        .current_dir(&ws)
        .env("HOME", &home)
        .env_remove("GEMINI_CLI_HOME")
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&sessions.stdout);
    assert!(
        listed.starts_with("gemini ") && listed.contains(&*path.to_string_lossy()),
        "{listed}"
    );

    // Written again line by line: at every line the meter is what a
    // batch import of the lines so far gives.
    let lines: Vec<String> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| format!("{l}\n"))
        .collect();
    follow_line_by_line(&mut server, &temp.path().join("copy.jsonl"), &lines);
    server.shutdown_and_exit();
}

/// The texts of a logged Gemini request's contents, Gemini CLI's own
/// `<session_context>` (its folder listing names every file) left out.
fn request_text(request: &Value) -> String {
    let mut texts = Vec::new();
    for content in request["body"]["contents"].as_array().into_iter().flatten() {
        for part in content["parts"].as_array().into_iter().flatten() {
            if let Some(text) = part["text"].as_str() {
                texts.push(text.to_string());
            }
        }
    }
    let text = texts.join("\n");
    match (
        text.find("<session_context>"),
        text.find("</session_context>"),
    ) {
        (Some(start), Some(end)) if start < end => {
            format!("{}{}", &text[..start], &text[end..])
        }
        _ => text,
    }
}

/// What the model's first request after Gemini's compression holds of the
/// session: the task, the rule, the two files it changed, the failed test
/// and its error.
fn kept_items(request: &str) -> Vec<(&'static str, bool)> {
    [
        ("the task", "Fix the test"),
        ("the rule", "never touch b.py"),
        ("modified a.txt", "a.txt"),
        ("written c.md", "c.md"),
        ("the failed test", "test_parse"),
        ("its error", "deploy-7731"),
    ]
    .into_iter()
    .map(|(item, needle)| (item, request.contains(needle)))
    .collect()
}

/// The real Gemini CLI through the scenario's tool turn, then resumed
/// under a tiny `compressionThreshold` (it compresses first, with the same
/// lossy snapshot), with `compactd setup gemini` run first or not: the
/// model's first request after the compression, as text.
fn gemini_compression(hooks: bool) -> Option<String> {
    let binary = match gemini() {
        Ok(binary) => binary,
        Err(why) => {
            skip(&why);
            return None;
        }
    };
    let temp = tempfile::tempdir().unwrap();
    let ws = workspace(temp.path());
    let home = temp.path().join("home");
    let log = temp.path().join("requests.jsonl");
    let model = ScriptedModel::start("gemini-tools.json", &log, &ws);
    write_settings(&home, json!({}));
    if hooks {
        let setup = Command::new(env!("CARGO_BIN_EXE_compactd"))
            .args(["setup", "gemini"])
            .env("HOME", &home)
            .env_remove("GEMINI_CLI_HOME")
            .output()
            .unwrap();
        assert!(setup.status.success(), "{setup:?}");
    }
    let task = "Fix the test. Rule: never touch b.py";
    run_gemini(&binary, &home, &model, &ws, &["-p", task]);
    // Its settings again, compactd's entries kept.
    resume_compressing(&binary, &home, &model, &ws);
    let requests = gemini_requests(&log);
    let at = requests.iter().position(|r| r["compaction"] == true)?;
    let next = requests[at..].iter().find(|r| r["compaction"] == false)?;
    Some(request_text(next))
}

#[test]
fn real_gemini_cli_goes_on_after_compressing_with_what_compactd_knows() {
    let Some(without) = gemini_compression(false) else {
        return;
    };
    let with = gemini_compression(true).expect("Gemini CLI compressed");
    let (plain, kept) = (kept_items(&without), kept_items(&with));
    let count = |items: &[(&str, bool)]| items.iter().filter(|(_, k)| *k).count();
    println!("without: {plain:?}\nwith: {kept:?}");
    assert!(with.contains("compactd's record of this session"), "{with}");
    assert!(
        !without.contains("compactd's record of this session"),
        "{without}"
    );
    assert!(
        kept.iter().all(|(_, k)| *k),
        "missing after Gemini CLI compressed with compactd's hook: {kept:?}"
    );
    assert!(
        count(&plain) < kept.len(),
        "the snapshot alone kept everything: {plain:?}"
    );
    println!(
        "| Gemini CLI compression | {}/{} | {}/{} |",
        count(&plain),
        plain.len(),
        count(&kept),
        kept.len()
    );
}

/// `compactd hook gemini` with `input` on stdin, HOME at `home`: whether
/// it succeeded, and its stdout.
fn hook(home: &Path, input: &Value) -> (bool, String) {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_compactd"))
        .args(["--no-user-config", "hook", "gemini"])
        .env("HOME", home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env_remove("GEMINI_CLI_HOME")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// On the real session file (it compressed, and no record went out
/// since), `BeforeAgent` is answered with compactd's record in Gemini
/// CLI's JSON; once the record is in the file, or before any compression
/// far from its point, or for another event, with nothing.
#[test]
fn the_hook_hands_the_record_once_after_a_compression() {
    let home = tempfile::tempdir().unwrap();
    let fixture = crate::support::fixture("gemini/session-2026-11-28T22-01-5755dbc0.jsonl");
    let input = |transcript: &Path, event: &str| {
        json!({"session_id": "s", "transcript_path": transcript, "cwd": home.path(),
            "hook_event_name": event, "timestamp": "2026-11-28T22:01:00.000Z", "prompt": "go on"})
    };
    let (ok, answer) = hook(home.path(), &input(&fixture, "BeforeAgent"));
    assert!(ok, "{answer}");
    let answer: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["hookSpecificOutput"]["hookEventName"], "BeforeAgent");
    let record = answer["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(
        record.starts_with("compactd's record of this session"),
        "{record}"
    );
    for kept in ["Fix the test", "never touch b.py", "c.md", "deploy-7731"] {
        assert!(record.contains(kept), "{kept} missing: {record}");
    }
    assert_eq!(
        hook(home.path(), &input(&fixture, "PreCompress")),
        (true, String::new())
    );

    // The record went out with the next prompt: not again.
    let copy = home.path().join("session.jsonl");
    let handed = json!({"id": "u9", "timestamp": "2026-11-28T22:02:00.000Z", "type": "user",
        "content": [{"text": "go on"}, {"text": format!("<hook_context>{record}</hook_context>")}]});
    let text = std::fs::read_to_string(&fixture).unwrap() + &format!("{handed}\n");
    std::fs::write(&copy, text).unwrap();
    assert_eq!(
        hook(home.path(), &input(&copy, "BeforeAgent")),
        (true, String::new())
    );
    // A session that never compressed, far from its point: nothing.
    let head: String = std::fs::read_to_string(&fixture)
        .unwrap()
        .lines()
        .take(10)
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&copy, head).unwrap();
    assert_eq!(
        hook(home.path(), &input(&copy, "BeforeAgent")),
        (true, String::new())
    );
}

/// The real Gemini CLI, `compactd setup gemini` done: a shell call prints
/// a deploy code, a resumed run compresses it away (the snapshot does not
/// hold it), the model searches its history through `compactd mcp`
/// (`mcp_compactd_search_history`), and the result Gemini CLI sends back
/// holds the code.
#[test]
fn real_gemini_cli_gets_back_what_its_compression_dropped_through_compactd_mcp() {
    let binary = match gemini() {
        Ok(binary) => binary,
        Err(why) => return skip(&why),
    };
    let temp = tempfile::tempdir().unwrap();
    let ws = workspace(temp.path());
    let home = temp.path().join("home");
    let log = temp.path().join("requests.jsonl");
    let model = ScriptedModel::start("gemini-recall.json", &log, &ws);
    write_settings(&home, json!({}));
    let setup = Command::new(env!("CARGO_BIN_EXE_compactd"))
        .args(["setup", "gemini"])
        .env("HOME", &home)
        .env_remove("GEMINI_CLI_HOME")
        .output()
        .unwrap();
    assert!(setup.status.success(), "{setup:?}");
    run_gemini(&binary, &home, &model, &ws, &["-p", "Deploy to staging"]);
    resume_compressing(&binary, &home, &model, &ws);

    let requests = gemini_requests(&log);
    let compressed = requests
        .iter()
        .position(|r| r["compaction"] == true)
        .expect("Gemini CLI compressed");
    let after = &requests[compressed..];
    let asked = after
        .iter()
        .find(|r| request_text(r).contains("Carry on"))
        .expect("the request after the compression");
    assert!(
        !asked["body"].to_string().contains("ZQX-DEPLOY-4417"),
        "the compression dropped it"
    );
    let answered = after
        .iter()
        .find(|r| r["turn"] == 1)
        .expect("the search's result went back to the model");
    let results: Vec<&Value> = answered["body"]["contents"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["parts"].as_array().into_iter().flatten())
        .filter(|p| p["functionResponse"]["id"] == "call_recall")
        .collect();
    assert!(
        results
            .iter()
            .any(|p| p.to_string().contains("ZQX-DEPLOY-4417")),
        "{results:?}"
    );
}
