//! `compactd mcp` driven by `rmcp`'s own client, as an agent drives it:
//! what a compaction dropped is found and read back, in a session another
//! compactd holds open, and in a followed agent transcript found from the
//! working directory; bad input gets a clear answer, not a failure. And
//! spoken to line by line (`Raw`), bad lines included: every request is
//! answered once, and the server reads on.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver};

use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::ServiceExt;
use serde_json::{json, Value};

use crate::follow::claude_dir;
use crate::recall::planted_session;
use crate::support::{Server, PATIENCE};

type Client = RunningService<RoleClient, ()>;

pub(crate) async fn start(home: &Path, cwd: &Path, args: &[&str]) -> Client {
    let command = tokio::process::Command::new(env!("CARGO_BIN_EXE_compactd")).configure(|c| {
        c.arg("--no-user-config")
            .arg("mcp")
            .args(args)
            .current_dir(cwd)
            .env("HOME", home)
            .env("XDG_DATA_HOME", home.join("data"))
            .env_remove("CLAUDE_CONFIG_DIR");
    });
    ().serve(TokioChildProcess::new(command).unwrap())
        .await
        .unwrap()
}

/// One `check()` for the tools: a call's text.
pub(crate) async fn call(client: &Client, tool: &'static str, arguments: Value) -> String {
    let params =
        CallToolRequestParams::new(tool).with_arguments(arguments.as_object().unwrap().clone());
    let result = client.call_tool(params).await.unwrap();
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_compacted_away_marker_is_found_and_read_back_over_mcp() {
    let home = tempfile::tempdir().unwrap();
    // Another compactd holds the session open (and its lock) meanwhile.
    let mut server = Server::start(&home.path().join("data/compactd/sessions"), json!({}));
    let id = planted_session(&mut server);
    let client = start(home.path(), home.path(), &["--session", &id]).await;

    let tools: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    for tool in [
        "search_history",
        "read_messages",
        "list_files",
        "last_summary",
    ] {
        assert!(tools.iter().any(|t| t == tool), "{tools:?}");
    }
    let found = call(
        &client,
        "search_history",
        json!({"query": "zqx-marker-7741"}),
    )
    .await;
    assert!(
        found.contains("[m3] tool · compacted") && found.contains("ZQX-MARKER-7741"),
        "{found}"
    );
    let read = call(&client, "read_messages", json!({"ids": ["m3"]})).await;
    assert!(
        read.contains("const STAGING_HINT: &str = \"ZQX-MARKER-7741\";"),
        "{read}"
    );
    assert!(
        read.contains("[image image/png, 12 bytes of base64]"),
        "{read}"
    );
    let files = call(&client, "list_files", json!({})).await;
    assert!(files.contains("src/frobnicate_widget.rs"), "{files}");
    let summary = call(&client, "last_summary", json!({})).await;
    assert!(summary.starts_with("Compaction "), "{summary}");

    // What the session gains later is found by the next call.
    server
        .request("conversation/append", json!({"sessionId": id, "messages": [{"id": "m40", "role": "user", "content": "later marker QQ-5150"}]}))
        .unwrap();
    let later = call(&client, "search_history", json!({"query": "QQ-5150"})).await;
    assert!(later.contains("[m40] user"), "{later}");

    // Bad input: a clear answer, and the server goes on.
    let long = call(
        &client,
        "search_history",
        json!({"query": "x".repeat(1 << 20)}),
    )
    .await;
    assert!(long.contains("at most 1000 are taken"), "{long}");
    let none = call(&client, "search_history", json!({"query": "foo(.*)[ \\d+"})).await;
    assert!(none.starts_with("No message"), "{none}");
    let unknown = call(&client, "read_messages", json!({"ids": ["m999"]})).await;
    assert!(unknown.contains("no message `m999`"), "{unknown}");
    assert!(call(&client, "search_history", json!({"query": "ZQX"}))
        .await
        .contains("[m3]"));
    client.cancel().await.unwrap();
    server.shutdown_and_exit();
}

/// Agents start their MCP servers before they write their transcript, in
/// a directory that may hold older sessions: `compactd mcp` serves the
/// session that appears (or grows) after it started, never an older one,
/// and says so while it cannot tell.
#[tokio::test(flavor = "multi_thread")]
async fn it_serves_the_session_of_the_agent_that_launched_it() {
    let home = tempfile::tempdir().unwrap();
    let ws = home.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let ws = ws.canonicalize().unwrap();
    let dir = claude_dir(home.path(), &ws);
    std::fs::create_dir_all(&dir).unwrap();
    let line = |session: &str, uuid: &str, parent: Option<&str>, text: &str| {
        json!({"type": "user", "uuid": uuid, "parentUuid": parent, "sessionId": session, "cwd": ws, "timestamp": "2026-11-26T10:00:00Z",
               "message": {"role": "user", "content": text}})
        .to_string()
            + "\n"
    };
    let old_id = "00000000-0000-4000-8000-000000000001";
    let old = dir.join(format!("{old_id}.jsonl"));
    std::fs::write(&old, line(old_id, "o1", None, "the old token PLUM-2231")).unwrap();
    let client = start(home.path(), &ws, &[]).await;
    // Nothing written since it started: it cannot tell, and says so.
    let unknown = call(&client, "search_history", json!({"query": "plum-2231"})).await;
    assert!(
        unknown.contains("cannot tell which one is yours") && !unknown.contains("PLUM-2231"),
        "{unknown}"
    );
    // The launching agent's transcript appears: that is the session.
    let new_id = "00000000-0000-4000-8000-000000000002";
    let transcript = dir.join(format!("{new_id}.jsonl"));
    std::fs::write(
        &transcript,
        line(new_id, "u1", None, "remember the token FIG-7"),
    )
    .unwrap();
    let found = call(&client, "search_history", json!({"query": "FIG-7"})).await;
    assert!(found.contains("FIG-7"), "{found}");
    let other = call(&client, "search_history", json!({"query": "plum-2231"})).await;
    assert!(
        !other.contains("PLUM-2231"),
        "the older session is not this one: {other}"
    );
    // The transcript grows: the next call reads what was written.
    let mut more = std::fs::read_to_string(&transcript).unwrap();
    more.push_str(&line(
        new_id,
        "u2",
        Some("u1"),
        "and the second token KIWI-9",
    ));
    std::fs::write(&transcript, more).unwrap();
    let found = call(&client, "search_history", json!({"query": "KIWI-9"})).await;
    assert!(found.contains("KIWI-9"), "{found}");
    // It only reads: an editor's compactd following the same transcript
    // meanwhile takes compactd's log of it and records a compaction there.
    let mut server = Server::start(&home.path().join("data/compactd/sessions"), json!({}));
    let followed = server
        .request(
            "conversation/follow",
            json!({"path": transcript, "workspace": ws}),
        )
        .unwrap();
    let recorded = server
        .request(
            "conversation/compact",
            json!({"sessionId": followed["sessionId"], "keepRecentTokens": 1}),
        )
        .unwrap();
    assert!(recorded["summary"].as_str().is_some(), "{recorded}");
    server.shutdown_and_exit();
    client.cancel().await.unwrap();

    // A directory with no session at all: it starts all the same (the
    // agent's first session writes its transcript later).
    let empty = tempfile::tempdir().unwrap();
    let client = start(empty.path(), empty.path(), &[]).await;
    let none = call(&client, "search_history", json!({"query": "x"})).await;
    assert!(none.contains("no session of"), "{none}");
    client.cancel().await.unwrap();
    let unknown = std::process::Command::new(env!("CARGO_BIN_EXE_compactd"))
        .args(["--no-user-config", "mcp", "--session", "nope"])
        .current_dir(empty.path())
        .env("HOME", empty.path())
        .env("XDG_DATA_HOME", empty.path().join("data"))
        .output()
        .unwrap();
    assert!(!unknown.status.success());
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("nope"));
    // A transcript that is not there is no such file, not "not a transcript".
    let missing = std::process::Command::new(env!("CARGO_BIN_EXE_compactd"))
        .args(["--no-user-config", "mcp", "--transcript", "missing.jsonl"])
        .current_dir(empty.path())
        .env("HOME", empty.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(!missing.status.success());
    assert!(stderr.contains("missing.jsonl: No such file"), "{stderr}");
}

/// Every optional argument of the tools takes `null` as "not given", as
/// `conversation/search` and `conversation/messages` do: a model often
/// writes out the arguments it leaves unset.
#[tokio::test(flavor = "multi_thread")]
async fn null_arguments_are_taken_as_not_given() {
    let home = tempfile::tempdir().unwrap();
    let mut server = Server::start(&home.path().join("data/compactd/sessions"), json!({}));
    let id = planted_session(&mut server);
    let client = start(home.path(), home.path(), &["--session", &id]).await;
    let found = call(
        &client,
        "search_history",
        json!({"query": "zqx-marker-7741", "limit": null, "compacted_only": null}),
    )
    .await;
    assert!(found.contains("[m3] tool · compacted"), "{found}");
    let read = call(
        &client,
        "read_messages",
        json!({"ids": ["m3"], "from": null, "to": null, "offset": null}),
    )
    .await;
    assert!(read.contains("ZQX-MARKER-7741"), "{read}");
    let range = call(
        &client,
        "read_messages",
        json!({"ids": null, "from": "m3", "to": "m4"}),
    )
    .await;
    assert!(
        range.contains("--- [m3]") && range.contains("--- [m4]"),
        "{range}"
    );
    // Still refused: a required argument as null, and nothing to read.
    let params = CallToolRequestParams::new("search_history")
        .with_arguments(json!({"query": null}).as_object().unwrap().clone());
    let refused = client.call_tool(params).await.unwrap();
    assert_eq!(refused.is_error, Some(true), "{refused:?}");
    let nothing = call(&client, "read_messages", json!({"ids": null})).await;
    assert!(
        nothing.contains("give `ids`, or `from` and `to`"),
        "{nothing}"
    );
    client.cancel().await.unwrap();
    server.shutdown_and_exit();
}

/// `compactd mcp` only reads: a data directory it cannot use (here a file
/// stands where the folder should be) leaves it serving the transcript.
#[tokio::test(flavor = "multi_thread")]
async fn it_serves_read_only_when_the_data_directory_is_unusable() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("data"), "not a folder").unwrap();
    let transcript = home.path().join("t.jsonl");
    let line = json!({"type": "user", "uuid": "u1", "sessionId": "s", "cwd": home.path(),
        "message": {"role": "user", "content": "the token PEAR-41"}});
    std::fs::write(&transcript, format!("{line}\n")).unwrap();
    let client = start(
        home.path(),
        home.path(),
        &["--transcript", transcript.to_str().unwrap()],
    )
    .await;
    let found = call(&client, "search_history", json!({"query": "pear-41"})).await;
    assert!(found.contains("PEAR-41"), "{found}");
    client.cancel().await.unwrap();
}

/// A compaction the agent makes while `compactd mcp` runs marks the
/// messages it summarized at the next call, as a fresh process would.
#[tokio::test(flavor = "multi_thread")]
async fn a_compaction_made_while_it_runs_marks_what_it_summarized() {
    let home = tempfile::tempdir().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/claude-code/5217d838-5181-433d-a8b8-c96b9ad7bfb3.jsonl");
    let lines: Vec<String> = std::fs::read_to_string(fixture)
        .unwrap()
        .lines()
        .map(|l| format!("{l}\n"))
        .collect();
    let transcript = home
        .path()
        .join("5217d838-5181-433d-a8b8-c96b9ad7bfb3.jsonl");
    // Up to the agent's answer; the compaction's lines come later.
    std::fs::write(&transcript, lines[..42].concat()).unwrap();
    let path = transcript.to_str().unwrap();
    let client = start(home.path(), home.path(), &["--transcript", path]).await;
    let before = call(
        &client,
        "search_history",
        json!({"query": "edit a.txt and write c.md"}),
    )
    .await;
    assert!(
        before.contains("user:") && !before.contains("compacted:"),
        "{before}"
    );
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&transcript)
        .unwrap();
    std::io::Write::write_all(&mut file, lines[42..].concat().as_bytes()).unwrap();
    drop(file);
    let after = call(
        &client,
        "search_history",
        json!({"query": "edit a.txt and write c.md"}),
    )
    .await;
    assert!(after.contains("user · compacted"), "{after}");
    client.cancel().await.unwrap();
    // A fresh process says the same.
    let fresh = start(home.path(), home.path(), &["--transcript", path]).await;
    let again = call(
        &fresh,
        "search_history",
        json!({"query": "edit a.txt and write c.md"}),
    )
    .await;
    assert!(again.contains("user · compacted"), "{again}");
    fresh.cancel().await.unwrap();
}

/// `compactd mcp` over its real stdin and stdout, written to line by line
/// as raw bytes: what `rmcp`'s client never sends.
struct Raw {
    child: Option<Child>,
    stdin: Option<ChildStdin>,
    /// Each line of its stdout, parsed: a line that is not JSON fails the
    /// test.
    lines: Receiver<Value>,
    stderr: Option<std::thread::JoinHandle<String>>,
}

impl Raw {
    fn start(home: &Path, args: &[&str]) -> Raw {
        let mut child = Command::new(env!("CARGO_BIN_EXE_compactd"))
            .arg("--no-user-config")
            .arg("mcp")
            .args(args)
            .current_dir(home)
            .env("HOME", home)
            .env("XDG_DATA_HOME", home.join("data"))
            .env_remove("CLAUDE_CONFIG_DIR")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.split(b'\n') {
                let line = line.unwrap();
                let value: Value = serde_json::from_slice(&line).unwrap_or_else(|e| {
                    panic!("{e}: not JSON: {}", String::from_utf8_lossy(&line))
                });
                if tx.send(value).is_err() {
                    return;
                }
            }
        });
        let mut stderr = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            text
        });
        Raw {
            stdin: child.stdin.take(),
            child: Some(child),
            lines,
            stderr: Some(stderr),
        }
    }

    /// A transcript of one short message at `home/t.jsonl`, served.
    fn with_transcript(home: &Path) -> Raw {
        let transcript = home.join("t.jsonl");
        let line = json!({"type": "user", "uuid": "u1", "sessionId": "s", "cwd": home,
            "message": {"role": "user", "content": "fix the parser"}});
        std::fs::write(&transcript, format!("{line}\n")).unwrap();
        Raw::start(home, &["--transcript", transcript.to_str().unwrap()])
    }

    /// `bytes` and a newline, in one write.
    fn send(&mut self, bytes: &[u8]) {
        let mut line = bytes.to_vec();
        line.push(b'\n');
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(&line).unwrap();
        stdin.flush().unwrap();
    }

    fn send_json(&mut self, message: Value) {
        self.send(message.to_string().as_bytes());
    }

    fn next(&mut self) -> Option<Value> {
        match self.lines.recv_timeout(PATIENCE) {
            Ok(value) => Some(value),
            Err(mpsc::RecvTimeoutError::Disconnected) => None,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                panic!("no answer in {PATIENCE:?}; stderr:\n{}", self.stderr())
            }
        }
    }

    /// Every message up to the answer to request `id` (that one last).
    fn until_answer(&mut self, id: Value) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let Some(message) = self.next() else {
                panic!(
                    "output closed before the answer to {id}: {seen:?}; stderr:\n{}",
                    self.stderr()
                );
            };
            let done = message["id"] == id && message.get("method").is_none();
            seen.push(message);
            if done {
                return seen;
            }
        }
    }

    fn initialize(&mut self) {
        self.send_json(json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}));
        let answers = self.until_answer(json!("init"));
        assert!(
            answers.last().unwrap()["result"]["serverInfo"].is_object(),
            "{answers:?}"
        );
        self.send_json(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }

    fn alive(&mut self) -> bool {
        let child = self.child.as_mut().unwrap();
        child.try_wait().unwrap().is_none()
    }

    /// Closes stdin; every message still to come, and how it exited.
    fn end(mut self) -> (Vec<Value>, ExitStatus) {
        drop(self.stdin.take());
        let mut rest = Vec::new();
        while let Some(message) = self.next() {
            rest.push(message);
        }
        let child = self.child.take().unwrap();
        let status = crate::support::wait_with_patience(child, PATIENCE).status;
        (rest, status)
    }

    fn stderr(&mut self) -> String {
        if let Some(child) = self.child.as_mut() {
            let _ = child.kill();
        }
        self.stderr
            .take()
            .map(|t| t.join().unwrap_or_default())
            .unwrap_or_default()
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The first 200 characters of `text`, for a failure's message.
fn start_of(text: &str) -> String {
    text.chars().take(200).collect()
}

fn ping(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "ping"})
}

/// Bad lines (issue #39) each get their own answer, and the next request
/// on the line after is answered: the server reads on. The answer carries
/// the request's id whenever it can be read from the line, else `null`
/// (as on the LSP side, docs/protocol.md "Errors").
#[test]
fn each_bad_line_is_answered_and_the_server_reads_on() {
    let home = tempfile::tempdir().unwrap();
    let mut mcp = Raw::with_transcript(home.path());
    mcp.initialize();
    let call = |id: Value, query: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"search_history","arguments":{{"query":"{query}"}}}}}}"#
        )
    };
    let mut invalid_utf8 = call(json!(3), "ab??").into_bytes();
    let at = invalid_utf8.windows(2).position(|w| w == b"??").unwrap();
    invalid_utf8[at..at + 2].copy_from_slice(b"\xff\xfe");
    // Code and id of the refusal each line gets.
    let cases: Vec<(&str, Vec<u8>, i64, Value)> = vec![
        (
            "cut short",
            br#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"search_hi"#.to_vec(),
            -32700,
            Value::Null,
        ),
        (
            "cut short after its id",
            br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"na"#.to_vec(),
            -32700,
            json!(2),
        ),
        (
            "invalid UTF-8",
            b"{\"jsonrpc\":\"2.0\",\"method\":\"tools/call\",\"params\":{\"name\":\"search_history\",\"arguments\":{\"query\":\"\xff\xfe\"}}}".to_vec(),
            -32700,
            Value::Null,
        ),
        ("invalid UTF-8 in a request", invalid_utf8, -32700, json!(3)),
        ("100,000-deep nesting", "[".repeat(100_000).into_bytes(), -32600, Value::Null),
        (
            // Its id, first, is read from the line's first 64 KiB.
            "17 MiB",
            call(json!(5), &"x".repeat(17 << 20)).into_bytes(),
            -32600,
            json!(5),
        ),
    ];
    for (n, (what, line, code, id)) in cases.into_iter().enumerate() {
        mcp.send(&line);
        let next = 100 + n as i64;
        mcp.send_json(ping(next));
        let seen = mcp.until_answer(json!(next));
        let (answer, refusals) = seen.split_last().unwrap();
        assert_eq!(answer["result"], json!({}), "{what}: {answer}");
        assert_eq!(refusals.len(), 1, "{what}: {refusals:?}");
        let error = &refusals[0]["error"];
        assert_eq!(
            (error["code"].as_i64(), &refusals[0]["id"]),
            (Some(code), &id),
            "{what}: {}",
            refusals[0]
        );
        let message = error["message"].as_str().unwrap();
        let named = match code {
            -32700 => "parse error",
            _ if what.contains("MiB") => "too long",
            _ => "127 levels",
        };
        assert!(message.contains(named), "{what}: {message}");
        assert!(mcp.alive(), "{what}");
    }
    // A lone surrogate escape is JSON, not Unicode: it reads as U+FFFD
    // (as on the LSP side) and the request is served.
    mcp.send(call(json!(1), r"parser \ud800").as_bytes());
    let seen = mcp.until_answer(json!(1));
    assert_eq!(seen.len(), 1, "{seen:?}");
    let text = seen[0]["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("parser \u{fffd}"), "{text}");
    mcp.send_json(json!({"jsonrpc": "2.0", "id": 200, "method": "tools/list"}));
    let tools = mcp.until_answer(json!(200));
    assert_eq!(tools.len(), 1, "{tools:?}");
    assert!(tools[0]["result"]["tools"].as_array().unwrap().len() >= 4);
    assert!(mcp.alive());
    let (rest, status) = mcp.end();
    assert!(rest.is_empty(), "{rest:?}");
    assert!(status.success(), "{status}");
}

/// Two requests in flight under one id: `rmcp` keeps one request per id
/// and answered only one of them. The second is refused -32600 naming the
/// id (MCP: an id must not be reused in a session; the LSP side does the
/// same), and the first is answered as usual: every request gets exactly
/// one answer. All pairs go out in one write and stdin then closes: the
/// server answers what is in flight before it exits, so nothing is waited
/// for by time.
#[test]
fn two_requests_in_flight_with_one_id_are_both_answered() {
    let home = tempfile::tempdir().unwrap();
    let mut mcp = Raw::with_transcript(home.path());
    mcp.initialize();
    let mut pairs = String::new();
    for id in 50..70 {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "search_history", "arguments": {"query": "parser"}}});
        pairs.push_str(&format!("{call}\n{call}\n"));
    }
    mcp.send(pairs.trim_end().as_bytes());
    let (answers, status) = mcp.end();
    assert!(status.success(), "{status}");
    let mut refused = 0;
    for id in 50..70 {
        let of_id: Vec<&Value> = answers.iter().filter(|a| a["id"] == id).collect();
        assert_eq!(of_id.len(), 2, "id {id}: {of_id:?}");
        assert!(
            of_id.iter().any(|a| a["result"]["content"][0]["text"]
                .as_str()
                .is_some_and(|t| t.contains("fix the parser"))),
            "id {id}: {of_id:?}"
        );
        for error in of_id.iter().filter(|a| a.get("error").is_some()) {
            assert_eq!(error["error"]["code"], -32600, "{error}");
            let message = error["error"]["message"].as_str().unwrap();
            assert!(
                message.contains(&format!("id {id} is already in use")),
                "{message}"
            );
            refused += 1;
        }
    }
    // The pairs were read together: the second of a pair came while the
    // first was in flight.
    assert!(refused > 0, "{answers:?}");
}

/// A message over the 60,000 characters `read_messages` promises stops
/// there and says how to read on; reading on by `offset` gives the whole
/// message back word for word.
#[tokio::test(flavor = "multi_thread")]
async fn read_messages_answers_at_most_60000_characters_and_says_how_to_read_on() {
    let home = tempfile::tempdir().unwrap();
    let mut big: String = (0..3 * 1024 * 1024 / 32)
        .map(|i| format!("line {i:07} é 😀 of the big output\n"))
        .collect();
    big.pop();
    let transcript = home.path().join("t.jsonl");
    // A short first line: the agent is told from the start of the file.
    let lines = [
        ("u0", None, "print the big output"),
        ("u1", Some("u0"), big.as_str()),
        ("u2", Some("u1"), "after it"),
    ]
        .map(|(uuid, parent, text)| {
            json!({"type": "user", "uuid": uuid, "parentUuid": parent, "sessionId": "s", "cwd": home.path(),
                "message": {"role": "user", "content": text}})
            .to_string()
                + "\n"
        })
        .concat();
    std::fs::write(&transcript, lines).unwrap();
    let path = transcript.to_str().unwrap();
    let client = start(home.path(), home.path(), &["--transcript", path]).await;
    let first = call(&client, "read_messages", json!({"from": "u1", "to": "u2"})).await;
    assert!(
        first.chars().count() <= 60_000,
        "{} characters",
        first.chars().count()
    );
    assert!(
        first.starts_with("--- [u1] user ---\nline 0000000 é 😀"),
        "{}",
        start_of(&first)
    );
    let tail = first.rsplit_once("(The answer stops here").unwrap().1;
    assert!(
        tail.contains(r#"read_messages {"ids":["u1"],"offset":"#),
        "{tail}"
    );
    assert!(
        tail.contains(r#"{"from":"u2","to":"u2"}"#) || tail.contains(r#"{"ids":["u2"]}"#),
        "{tail}"
    );
    // Read on to the end: the message whole, then u2.
    let (mut whole, mut answer, mut calls, mut read) = (String::new(), first, 1, 0);
    loop {
        assert!(answer.chars().count() <= 60_000, "call {calls}");
        let body = answer.split_once(" ---\n").unwrap().1;
        let Some((part, note)) = body.split_once("\n\n(The answer stops here") else {
            let (rest, u2) = body.split_once("\n--- [u2]").unwrap();
            whole.push_str(rest);
            assert_eq!(u2, " user ---\nafter it\n");
            break;
        };
        whole.push_str(part);
        read += part.chars().count();
        let at = note.find("\"offset\":").unwrap() + "\"offset\":".len();
        let offset: usize = note[at..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect::<String>()
            .parse()
            .unwrap();
        assert_eq!(offset, read);
        answer = call(
            &client,
            "read_messages",
            json!({"ids": ["u1", "u2"], "offset": offset}),
        )
        .await;
        assert!(
            answer.contains(&format!("from character {offset} of")),
            "{}",
            start_of(&answer)
        );
        calls += 1;
    }
    assert!(
        whole == big,
        "{} of {} characters back",
        whole.chars().count(),
        big.chars().count()
    );
    assert!(calls > 50, "{calls} calls");
    client.cancel().await.unwrap();
}

/// Before `initialize` a request is refused with an error that says to
/// send `initialize` (not `rmcp`'s -32602 about `_meta`), a notification
/// is dropped rather than stopping the server, and `ping` is answered
/// (MCP allows it).
#[test]
fn a_request_before_initialize_is_told_to_initialize_first() {
    let home = tempfile::tempdir().unwrap();
    let mut mcp = Raw::with_transcript(home.path());
    mcp.send_json(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
    let refused = mcp.until_answer(json!(1));
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0]["error"]["code"], -32600, "{}", refused[0]);
    let message = refused[0]["error"]["message"].as_str().unwrap();
    assert!(message.contains("send `initialize` first"), "{message}");
    mcp.send_json(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    mcp.send_json(ping(2));
    assert_eq!(
        mcp.until_answer(json!(2)),
        [json!({"jsonrpc": "2.0", "id": 2, "result": {}})]
    );
    mcp.initialize();
    mcp.send_json(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}));
    assert!(mcp.until_answer(json!(3))[0]["result"]["tools"].is_array());
    let (rest, status) = mcp.end();
    assert!(rest.is_empty() && status.success(), "{rest:?} {status}");
}

/// The end of stdin is a clean end: exit status 0, before `initialize`
/// (nothing sent at all) as after it.
#[test]
fn the_end_of_input_exits_0() {
    let home = tempfile::tempdir().unwrap();
    let (said, status) = Raw::with_transcript(home.path()).end();
    assert!(said.is_empty() && status.success(), "{said:?} {status}");
    let mut mcp = Raw::with_transcript(home.path());
    mcp.initialize();
    let (said, status) = mcp.end();
    assert!(said.is_empty() && status.success(), "{said:?} {status}");
}
