//! opencode's sessions, which live in its SQLite database, each named by a
//! locator `<database>#<session id>`: listed by `compactd sessions` and
//! `conversation/listAgentSessions`, followed live as opencode writes them
//! (`conversation/follow`, `compactd follow`), and served by `compactd
//! mcp` as it grows; each from a database in the shape opencode 1.18.33
//! writes.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

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
fn the_editors_list_them() {
    let home = tempfile::tempdir().unwrap();
    let (ws, db) = database(home.path());
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
    assert_eq!(server.shutdown_and_exit(), 0);
}

/// opencode writing to its database, as it does: a message row, then its
/// parts, each in a transaction of its own.
fn write_message(db: &rusqlite::Connection, id: &str, at: i64, data: Value, parts: &[Value]) {
    db.execute(
        "INSERT INTO message VALUES (?1, 'ses_new', ?2, ?2, ?3)",
        rusqlite::params![id, at, data.to_string()],
    )
    .unwrap();
    for (n, part) in parts.iter().enumerate() {
        db.execute(
            "INSERT INTO part VALUES (?1, ?2, 'ses_new', ?3, ?3, ?4)",
            rusqlite::params![format!("prt_{id}_{n}"), id, at + n as i64, part.to_string()],
        )
        .unwrap();
    }
}

fn meter_of(server: &mut Server, id: &str) -> Value {
    crate::follow::next_meter(server, id)
}

/// The history's messages as (role, text).
fn history(server: &mut Server, id: &str) -> Vec<(String, String)> {
    let history = server
        .request("conversation/history", json!({"sessionId": id}))
        .unwrap();
    history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let text = match &m["content"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (m["role"].as_str().unwrap().to_string(), text)
        })
        .collect()
}

#[test]
fn a_session_followed_live_grows_as_opencode_writes_it() {
    let home = tempfile::tempdir().unwrap();
    let (ws, db) = database(home.path());
    let mut server = Server::spawn_at(&home.path().join("sessions"), home.path(), &ws, &[], &[]);
    server.initialize_params(json!({}), json!({"rootUri": file_uri(&ws)}));
    let followed = server
        .request(
            "conversation/follow",
            json!({"path": locator(&db, "ses_new")}),
        )
        .unwrap();
    assert_eq!(followed["agent"], "opencode");
    let id = followed["sessionId"].as_str().unwrap().to_string();
    assert!(id.starts_with("follow-opencode-ses_new-"), "{id}");
    // The provider's 1,520, and the read's result after it.
    let first = followed["meter"]["contextTokens"].as_u64().unwrap();
    assert!((1520..1600).contains(&first), "{followed}");
    let writer = rusqlite::Connection::open(&db).unwrap();
    writer
        .busy_timeout(std::time::Duration::from_secs(5))
        .unwrap();

    // A new request, then a response that streams: its text part grows
    // in place, then its usage comes.
    write_message(
        &writer,
        "msg_3",
        10,
        json!({"role": "user"}),
        &[json!({"type": "text", "text": "Now fix the failing test."})],
    );
    let after_request = meter_of(&mut server, &id);
    assert!(
        after_request["contextTokens"].as_u64().unwrap() > first,
        "{after_request}"
    );
    write_message(
        &writer,
        "msg_4",
        20,
        json!({"role": "assistant", "modelID": "scripted", "providerID": "local"}),
        &[json!({"type": "text", "text": "Fixing"})],
    );
    meter_of(&mut server, &id);
    writer
        .execute_batch(
            r#"UPDATE part SET data = '{"type":"text","text":"Fixing it: the test expected 4."}', time_updated = 21 WHERE id = 'prt_msg_4_0';
            UPDATE message SET data = '{"role":"assistant","modelID":"scripted","providerID":"local","tokens":{"input":2600,"output":30,"reasoning":0,"cache":{"write":0,"read":0}}}', time_updated = 22 WHERE id = 'msg_4';"#,
        )
        .unwrap();
    let mut meter = meter_of(&mut server, &id);
    while meter["contextTokens"] != 2630 {
        meter = meter_of(&mut server, &id);
    }
    assert_eq!(meter["source"], "usage", "{meter}");
    let messages = history(&mut server, &id);
    let roles: Vec<&str> = messages.iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(
        roles,
        ["user", "assistant", "tool", "user", "assistant"],
        "{messages:?}"
    );
    assert_eq!(messages[4].1, "Fixing it: the test expected 4.");

    // opencode holds its write lock, mid-transaction: compactd answers at
    // once, and sees the message once it is committed.
    writer.execute_batch("BEGIN IMMEDIATE").unwrap();
    write_message(
        &writer,
        "msg_5",
        30,
        json!({"role": "user"}),
        &[json!({"type": "text", "text": "Marker OC-LIVE-7."})],
    );
    let asked = std::time::Instant::now();
    // By agent: its newest session of the workspace, the one followed.
    let again = server
        .request("conversation/follow", json!({"agent": "opencode"}))
        .unwrap();
    assert_eq!(again["sessionId"], id.as_str());
    assert!(
        asked.elapsed() < std::time::Duration::from_millis(900),
        "{:?}",
        asked.elapsed()
    );
    assert_eq!(history(&mut server, &id).len(), 5);
    writer.execute_batch("COMMIT").unwrap();
    meter_of(&mut server, &id);
    let messages = history(&mut server, &id);
    assert_eq!(messages.len(), 6, "{messages:?}");
    assert_eq!(
        messages[5],
        ("user".to_string(), "Marker OC-LIVE-7.".to_string())
    );

    // opencode reverts its last message: the session is read again, the
    // message gone.
    writer
        .execute_batch(
            "DELETE FROM part WHERE message_id = 'msg_5'; DELETE FROM message WHERE id = 'msg_5';",
        )
        .unwrap();
    meter_of(&mut server, &id);
    assert_eq!(history(&mut server, &id).len(), 5);
    assert_eq!(server.shutdown_and_exit(), 0);
}

#[test]
fn compactd_follow_shows_its_meter() {
    let home = tempfile::tempdir().unwrap();
    let (ws, db) = database(home.path());
    let out = compactd(home.path(), &ws)
        .args(["follow", &locator(&db, "ses_new"), "--once"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("following opencode {}", locator(&db, "ses_new"))),
        "{stdout}"
    );
    assert!(stdout.contains("⛁ 1.5k/"), "{stdout}");
    // A session that is not in the database is refused, saying so, and
    // no log of compactd's is started for it.
    let logs = || {
        std::fs::read_dir(home.path().join("data/compactd/sessions"))
            .unwrap()
            .count()
    };
    let before = logs();
    let out = compactd(home.path(), &ws)
        .args(["follow", &locator(&db, "ses_gone"), "--once"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no session ses_gone"), "{stderr}");
    assert_eq!(logs(), before);
}

#[tokio::test(flavor = "multi_thread")]
async fn compactd_mcp_serves_one_as_it_grows() {
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
    // opencode goes on: the next call reads what it wrote since.
    let writer = rusqlite::Connection::open(&db).unwrap();
    write_message(
        &writer,
        "msg_3",
        10,
        json!({"role": "user"}),
        &[json!({"type": "text", "text": "Then deploy. Marker OC-LATER-31."})],
    );
    let later = call(&client, "search_history", json!({"query": "OC-LATER-31"})).await;
    assert!(later.contains("Then deploy."), "{later}");
    client.cancel().await.unwrap();
}

/// With compactd's opencode plugin, one opencode session is one compactd
/// session: the plugin's session records opencode's id, and a follow of
/// the opencode session (an editor's, from the database) is that session,
/// its log only read (the plugin's compactd writes it); a session whose
/// log records no opencode id is followed as a session of its own.
#[test]
fn a_session_the_plugin_mirrors_is_followed_as_the_plugin_s_session() {
    let home = tempfile::tempdir().unwrap();
    let (ws, db) = database(home.path());
    let data = home.path().join("sessions");
    // The plugin's compactd, as the plugin drives it (it stays open).
    let mut plugin = Server::spawn_at(&data, home.path(), &ws, &[], &[]);
    plugin.initialize(json!({}));
    let mirrors = json!({"agent": "opencode", "sessionId": "ses_new"});
    plugin
        .request(
            "conversation/open",
            json!({"sessionId": "opencode-ses_new", "mirrors": mirrors}),
        )
        .unwrap();
    plugin.append(
        "opencode-ses_new",
        json!([{"role": "user", "content": "Run the tests. Marker OC-ZQX-5150."}]),
    );
    // A session opened without the record is no mirror of `ses_old`.
    plugin
        .request(
            "conversation/open",
            json!({"sessionId": "opencode-ses_old"}),
        )
        .unwrap();

    let mut editor = Server::spawn_at(&data, home.path(), &ws, &[], &[]);
    editor.initialize_params(json!({}), json!({"rootUri": file_uri(&ws)}));
    let followed = editor
        .request(
            "conversation/follow",
            json!({"path": locator(&db, "ses_new")}),
        )
        .unwrap();
    assert_eq!(followed["sessionId"], "opencode-ses_new", "{followed}");
    assert!(followed["meter"]["contextTokens"].as_u64().unwrap() > 1500);
    // One entry for it in the editors' list, naming that session.
    let listed = editor
        .request("conversation/listAgentSessions", json!({}))
        .unwrap();
    let sessions = listed["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 2, "{listed}");
    assert_eq!(sessions[0]["path"], locator(&db, "ses_new"));
    assert_eq!(sessions[0]["sessionId"], "opencode-ses_new");
    // Its log is the plugin's: a compaction is not recorded by the follow.
    let refused = editor
        .request(
            "conversation/compact",
            json!({"sessionId": "opencode-ses_new"}),
        )
        .unwrap_err();
    assert!(
        refused.message.contains("mirrors it") && refused.message.contains("compact it there"),
        "{refused:?}"
    );
    let other = editor
        .request(
            "conversation/follow",
            json!({"path": locator(&db, "ses_old")}),
        )
        .unwrap();
    assert!(
        other["sessionId"]
            .as_str()
            .unwrap()
            .starts_with("follow-opencode-ses_old-"),
        "{other}"
    );
    // The plugin goes on writing its session.
    plugin.append(
        "opencode-ses_new",
        json!([{"role": "assistant", "content": "On it."}]),
    );
    assert_eq!(editor.shutdown_and_exit(), 0);
    assert_eq!(plugin.shutdown_and_exit(), 0);
}
