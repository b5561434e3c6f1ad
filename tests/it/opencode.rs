//! opencode's sessions, which live in its SQLite database, each named by a
//! locator `<database>#<session id>`: listed by `compactd sessions` and
//! `conversation/listAgentSessions`, served whole by `compactd mcp`, and
//! refused by a live follow (not supported yet) with a message saying so;
//! each from a database in the shape opencode 1.18.33 writes.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;

use crate::mcp::{call, start};
use crate::support::{file_uri, Server};

/// opencode 1.18.33's tables, as it creates them.
const TABLES: &str = "
    CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL,
        parent_id text, slug text NOT NULL, directory text NOT NULL,
        title text NOT NULL, version text NOT NULL,
        time_created integer NOT NULL, time_updated integer NOT NULL);
    CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL,
        time_created integer NOT NULL, time_updated integer NOT NULL,
        data text NOT NULL);
    CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL,
        session_id text NOT NULL, time_created integer NOT NULL,
        time_updated integer NOT NULL, data text NOT NULL);";

/// The workspace `ws` under `home` (its real path) and opencode's
/// database where opencode keeps it with `XDG_DATA_HOME` at `home/data`:
/// two sessions of the workspace (the newer asked to run the tests, with a
/// marker, and read a file), a session of another folder.
fn database(home: &Path) -> (PathBuf, PathBuf) {
    let ws = home.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let ws = ws.canonicalize().unwrap();
    let db = home.join("data/opencode/opencode.db");
    std::fs::create_dir_all(db.parent().unwrap()).unwrap();
    let connection = rusqlite::Connection::open(&db).unwrap();
    connection
        .execute_batch("PRAGMA journal_mode = WAL;")
        .unwrap();
    connection.execute_batch(TABLES).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    for (id, directory, title, updated) in [
        (
            "ses_old",
            ws.to_str().unwrap(),
            "Fix the parser",
            now - 7_200_000,
        ),
        (
            "ses_new",
            ws.to_str().unwrap(),
            "Run the tests",
            now - 60_000,
        ),
        ("ses_far", "/elsewhere", "Elsewhere", now),
    ] {
        connection
            .execute(
                "INSERT INTO session VALUES (?1, 'global', NULL, 's', ?2, ?3, '1.18.33', 1, ?4)",
                rusqlite::params![id, directory, title, updated],
            )
            .unwrap();
    }
    let read = json!({"type": "tool", "tool": "read", "callID": "call_1",
        "state": {"status": "completed", "input": {"filePath": ws.join("src/b.py")},
            "output": "print('b')"}});
    let rows = [
        (
            "msg_1",
            json!({"role": "user"}),
            vec![json!({"type": "text", "text": "Run the tests. Marker OC-ZQX-5150."})],
        ),
        (
            "msg_2",
            json!({"role": "assistant", "modelID": "scripted", "providerID": "local",
                "tokens": {"input": 1500, "output": 20, "reasoning": 0, "cache": {"write": 0, "read": 0}}}),
            vec![read, json!({"type": "text", "text": "It reads b.py."})],
        ),
    ];
    for (at, (id, data, parts)) in rows.into_iter().enumerate() {
        connection
            .execute(
                "INSERT INTO message VALUES (?1, 'ses_new', ?2, ?2, ?3)",
                rusqlite::params![id, at as i64, data.to_string()],
            )
            .unwrap();
        for (n, part) in parts.into_iter().enumerate() {
            connection
                .execute(
                    "INSERT INTO part VALUES (?1, ?2, 'ses_new', ?3, ?3, ?4)",
                    rusqlite::params![format!("prt_{id}_{n}"), id, n as i64, part.to_string()],
                )
                .unwrap();
        }
    }
    (ws, db)
}

fn locator(db: &Path, id: &str) -> String {
    format!("{}#{id}", db.display())
}

fn compactd(home: &Path, ws: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_compactd"));
    command
        .arg("--no-user-config")
        .current_dir(ws)
        .env("HOME", home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env_remove("OPENCODE_DB");
    command
}

#[test]
fn compactd_sessions_lists_its_sessions_of_the_workspace_newest_first() {
    let home = tempfile::tempdir().unwrap();
    let (ws, db) = database(home.path());
    let out = compactd(home.path(), &ws)
        .args(["sessions", "opencode"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let listed = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = listed.lines().collect();
    assert_eq!(lines.len(), 2, "{listed}");
    assert!(lines[0].starts_with("opencode "), "{listed}");
    assert!(
        lines[0].contains("1 min ago")
            && lines[0].contains(&locator(&db, "ses_new"))
            && lines[0].ends_with("Run the tests"),
        "{listed}"
    );
    assert!(
        lines[1].contains(&locator(&db, "ses_old")) && lines[1].ends_with("Fix the parser"),
        "{listed}"
    );
    // With every agent's, too.
    let all = compactd(home.path(), &ws).arg("sessions").output().unwrap();
    let all = String::from_utf8(all.stdout).unwrap();
    assert!(all.contains(&locator(&db, "ses_new")), "{all}");
}

#[test]
fn the_editors_list_them_and_a_live_follow_of_one_is_refused_saying_so() {
    let home = tempfile::tempdir().unwrap();
    let (ws, db) = database(home.path());
    let refused = "live follow of opencode sessions is not supported yet";
    let out = compactd(home.path(), &ws)
        .args(["follow", &locator(&db, "ses_new"), "--once"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(refused), "{stderr}");

    let mut server = Server::spawn_at(&home.path().join("sessions"), home.path(), &ws, &[], &[]);
    server.initialize_params(json!({}), json!({"rootUri": file_uri(&ws)}));
    // The editors' list has them, as `compactd sessions` does.
    let listed = server
        .request("conversation/listAgentSessions", json!({}))
        .unwrap();
    let sessions = listed["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 2, "{listed}");
    assert_eq!(sessions[0]["agent"], "opencode");
    assert_eq!(sessions[0]["path"], locator(&db, "ses_new"));
    assert_eq!(sessions[0]["title"], "Run the tests");
    assert_eq!(sessions[1]["path"], locator(&db, "ses_old"));
    for params in [
        json!({"path": locator(&db, "ses_new")}),
        json!({"agent": "opencode"}),
    ] {
        let error = server.request("conversation/follow", params).unwrap_err();
        assert!(error.message.contains(refused), "{error:?}");
    }
    assert_eq!(server.shutdown_and_exit(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn compactd_mcp_serves_one_whole() {
    let home = tempfile::tempdir().unwrap();
    let (ws, db) = database(home.path());
    let client = start(
        home.path(),
        &ws,
        &["--transcript", &locator(&db, "ses_new")],
    )
    .await;
    let found = call(&client, "search_history", json!({"query": "OC-ZQX-5150"})).await;
    assert!(found.contains("user"), "{found}");
    assert!(found.contains("Marker OC-ZQX-5150"), "{found}");
    let files = call(&client, "list_files", json!({})).await;
    assert!(files.contains("src/b.py"), "{files}");
    client.cancel().await.unwrap();
}
