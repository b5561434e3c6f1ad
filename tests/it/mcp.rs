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

#[tokio::test(flavor = "multi_thread")]
async fn it_serves_the_newest_agent_session_of_its_directory() {
    let home = tempfile::tempdir().unwrap();
    let ws = home.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let ws = ws.canonicalize().unwrap();
    let dir = claude_dir(home.path(), &ws);
    std::fs::create_dir_all(&dir).unwrap();
    let transcript = dir.join("00000000-0000-4000-8000-000000000001.jsonl");
    let line = |uuid: &str, parent: Option<&str>, text: &str| {
        json!({"type": "user", "uuid": uuid, "parentUuid": parent, "sessionId": "00000000-0000-4000-8000-000000000001", "cwd": ws, "timestamp": "2026-11-26T10:00:00Z",
               "message": {"role": "user", "content": text}})
        .to_string()
            + "\n"
    };
    std::fs::write(
        &transcript,
        line("u1", None, "remember the token PLUM-2231"),
    )
    .unwrap();
    let client = start(home.path(), &ws, &[]).await;
    let found = call(&client, "search_history", json!({"query": "plum-2231"})).await;
    assert!(found.contains("PLUM-2231"), "{found}");
    // The transcript grows: the next call reads what was written.
    let mut more = std::fs::read_to_string(&transcript).unwrap();
    more.push_str(&line("u2", Some("u1"), "and the second token FIG-7"));
    std::fs::write(&transcript, more).unwrap();
    let found = call(&client, "search_history", json!({"query": "FIG-7"})).await;
    assert!(found.contains("FIG-7"), "{found}");
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

    // No session there: a clear error before any MCP traffic.
    let empty = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_compactd"))
        .args(["--no-user-config", "mcp"])
        .current_dir(empty.path())
        .env("HOME", empty.path())
        .env_remove("CLAUDE_CONFIG_DIR")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no agent session of"), "{stderr}");
    let unknown = std::process::Command::new(env!("CARGO_BIN_EXE_compactd"))
        .args(["--no-user-config", "mcp", "--session", "nope"])
        .current_dir(empty.path())
        .env("HOME", empty.path())
        .env("XDG_DATA_HOME", empty.path().join("data"))
        .output()
        .unwrap();
    assert!(!unknown.status.success());
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("nope"));
}
