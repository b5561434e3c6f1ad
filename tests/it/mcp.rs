//! `compactd mcp` driven by `rmcp`'s own client, as an agent drives it:
//! what a compaction dropped is found and read back, in a session another
//! compactd holds open, and in a followed agent transcript found from the
//! working directory; bad input gets a clear answer, not a failure.

use std::path::Path;

use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::ServiceExt;
use serde_json::{json, Value};

use crate::follow::claude_dir;
use crate::recall::planted_session;
use crate::support::Server;

type Client = RunningService<RoleClient, ()>;

async fn start(home: &Path, cwd: &Path, args: &[&str]) -> Client {
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
async fn call(client: &Client, tool: &'static str, arguments: Value) -> String {
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
