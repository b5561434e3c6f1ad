//! File tracking through the real binary: every source of file events, the
//! watcher, persistence, and the ledger against real transcripts.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Component, Path, PathBuf};

use serde_json::{json, Value};

use crate::support::{
    claude_code_edited_paths, file_uri, pi_edited_paths, read_claude_code_session, read_pi_session,
    summary_section, transcripts_dir, Server,
};

fn list(server: &mut Server, id: &str) -> Value {
    server
        .request("files/list", json!({"sessionId": id}))
        .unwrap()
}

/// displayPath → status, for the whole ledger.
fn statuses(server: &mut Server, id: &str) -> BTreeMap<String, String> {
    list(server, id)["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["displayPath"].as_str().unwrap().to_string(),
                f["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn entry<'a>(list: &'a Value, display: &str) -> &'a Value {
    list["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["displayPath"] == display)
        .unwrap_or_else(|| panic!("{display} not in the ledger: {list}"))
}

fn unchanged(server: &mut Server, id: &str) -> Vec<String> {
    let result = server
        .request("files/unchangedSinceRead", json!({"sessionId": id}))
        .unwrap();
    serde_json::from_value(result["files"].clone()).unwrap()
}

/// Appends an exchange long enough for a summary to shrink it and
/// compacts everything before its last message.
fn compact(server: &mut Server, id: &str, tag: &str) -> Value {
    let explanation = "Walking through the details of the change. ".repeat(60);
    server.append(
        id,
        json!([
            {"role": "user", "content": format!("{tag}: carry on")},
            {"role": "assistant", "content": explanation},
            {"role": "user", "content": format!("{tag}: thanks")},
            {"role": "assistant", "content": "Carrying on."}
        ]),
    );
    let result = server
        .request(
            "conversation/compact",
            json!({"sessionId": id, "keepRecentTokens": 1}),
        )
        .unwrap();
    assert_eq!(result["compacted"], true, "{result}");
    result
}

use crate::support::tool_call as call;

fn result(call_id: &str, is_error: bool) -> Value {
    json!({"role": "tool", "toolCallId": call_id, "content": if is_error {"failed"} else {"ok"}, "isError": is_error})
}

fn write(root: &Path, relative: &str, content: &str) -> PathBuf {
    let path = root.join(relative);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, content).unwrap();
    path
}

fn did_change_of(server: &mut Server, path: &Path) -> Value {
    let path = path.display().to_string();
    server.next_where(|m| m["method"] == "files/didChange" && m["params"]["path"] == path)["params"]
        .clone()
}

#[test]
fn editor_notifications_feed_the_ledger() {
    let data = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let mut server = Server::start_in_workspace(data.path(), root.path(), json!({}));
    let id = server.open(json!({}));
    let a = write(root.path(), "src/a.rs", "fn a() {}\n");
    let doc = json!({"uri": file_uri(&a), "version": 1});

    server.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": file_uri(&a), "languageId": "rust", "version": 1, "text": "fn a() {}\n"}}),
    );
    server.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": "untitled:Untitled-1", "languageId": "rust", "version": 1, "text": "scratch"}}),
    );
    let l = list(&mut server, &id);
    assert_eq!(l["files"].as_array().unwrap().len(), 1, "{l}");
    let f = entry(&l, "src/a.rs");
    assert_eq!(f["path"], a.display().to_string());
    assert_eq!(f["status"], "read");
    assert_eq!(f["origins"], json!(["lsp"]));
    assert!(f["contentHash"].as_str().unwrap().starts_with("sha256:"));
    assert_eq!(
        unchanged(&mut server, &id),
        [a.display().to_string()],
        "the opened text is what is on disk"
    );

    for (version, text) in [
        (2, "fn a() { 1 }\n"),
        (3, "fn a() { 12 }\n"),
        (4, "fn a() { 2 }\n"),
    ] {
        server.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": file_uri(&a), "version": version}, "contentChanges": [{"text": text}]}),
        );
    }
    let l = list(&mut server, &id);
    let f = entry(&l, "src/a.rs");
    assert_eq!(f["status"], "modified");
    assert_eq!(
        f["modifications"], 1,
        "one burst of edits is one modification"
    );
    assert_eq!(
        (f["firstOp"].as_str(), f["lastOp"].as_str()),
        (Some("read"), Some("modify"))
    );

    server.notify(
        "textDocument/didSave",
        json!({"textDocument": doc, "text": "fn a() { 2 }\n"}),
    );
    server.notify("textDocument/didClose", json!({"textDocument": doc}));
    let l = list(&mut server, &id);
    assert_eq!(entry(&l, "src/a.rs")["modifications"], 2);
    assert_eq!(l["modifiedFiles"], json!(["src/a.rs"]));

    // The editor's watcher: a new file, a change the session already knows
    // (the saved text is on disk), a deletion, and a bad type.
    std::fs::write(&a, "fn a() { 2 }\n").unwrap();
    let b = write(root.path(), "src/b.rs", "fn b() {}\n");
    server.notify(
        "workspace/didChangeWatchedFiles",
        json!({"changes": [
            {"uri": file_uri(&b), "type": 1},
            {"uri": file_uri(&a), "type": 2},
            {"uri": file_uri(&root.path().join("old.rs")), "type": 3},
            {"uri": file_uri(&b), "type": 9}
        ]}),
    );
    let l = list(&mut server, &id);
    assert_eq!(
        entry(&l, "src/a.rs")["modifications"],
        2,
        "content the session saved itself is not news"
    );
    assert_eq!(entry(&l, "src/b.rs")["status"], "created");
    assert_eq!(entry(&l, "old.rs")["status"], "deleted");
    assert_eq!(
        l["modifiedFiles"],
        json!(["old.rs", "src/b.rs", "src/a.rs"])
    );
    let stderr = server.stderr_after_containing(0, "changes[3].type: 9");
    assert!(stderr.contains("changes[3].type: 9"), "{stderr}");
}

#[test]
fn explicit_notifications_reach_one_session_or_all() {
    let data = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let mut server = Server::start_in_workspace(data.path(), root.path(), json!({}));
    let s1 = server.open(json!({"sessionId": "s1"}));
    let s2 = server.open(json!({"sessionId": "s2"}));
    server.append(
        &s1,
        json!([{"id": "u1", "role": "user", "content": "look at the notes"}]),
    );
    write(root.path(), "notes/r.md", "# notes\n");
    let m = write(root.path(), "m.rs", "fn m() {}\n");
    let range = json!({"start": {"line": 0, "character": 0}, "end": {"line": 10, "character": 0}});

    server.notify(
        "files/didRead",
        json!({"sessionId": s1, "path": "notes/r.md", "range": range}),
    );
    server.notify("files/didModify", json!({"path": m.display().to_string()}));
    server.notify(
        "files/didCreate",
        json!({"sessionId": s2, "path": file_uri(&root.path().join("n.rs"))}),
    );
    server.notify(
        "files/didDelete",
        json!({"sessionId": s2, "path": "./old/../gone.rs"}),
    );
    server.notify(
        "files/didRead",
        json!({"sessionId": "nope", "path": "x.rs"}),
    );
    server.notify("files/didRead", json!({"sessionId": s1}));

    let l1 = list(&mut server, &s1);
    assert_eq!(l1["readFiles"], json!(["notes/r.md"]));
    assert_eq!(l1["modifiedFiles"], json!(["m.rs"]));
    let r = entry(&l1, "notes/r.md");
    assert_eq!(r["origins"], json!(["explicit"]));
    assert_eq!(r["lastRange"], range);
    assert_eq!(r["lastMessageId"], "u1");
    assert!(r["contentHash"].is_string());
    assert_eq!(
        statuses(&mut server, &s2),
        BTreeMap::from([
            ("gone.rs".to_string(), "deleted".to_string()),
            ("n.rs".into(), "created".into()),
            ("m.rs".into(), "modified".into()),
        ])
    );
    let l2 = list(&mut server, &s2);
    assert_eq!(l2["modifiedFiles"], json!(["gone.rs", "n.rs", "m.rs"]));
    assert!(
        entry(&l2, "m.rs").get("lastMessageId").is_none(),
        "s2 has no messages"
    );
    server.stderr_after_containing(0, "no open session `nope`");
    let stderr = server.stderr_after_containing(0, "missing field `path`");
    assert!(stderr.contains("no open session `nope`"), "{stderr}");
    assert!(stderr.contains("missing field `path`"), "{stderr}");
}

#[test]
fn tool_calls_of_every_shipped_mapping() {
    let data = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    let mut server = Server::start_in_workspace(data.path(), r, json!({"maxListedFiles": 5}));
    let id = server.open(json!({}));
    let abs = |p: &str| r.join(p).display().to_string();
    let patch = "*** Begin Patch\n*** Add File: ap/new.rs\n+fn new() {}\n*** Update File: ap/up.rs\n@@\n-a\n+b\n*** Update File: ap/old.rs\n*** Move to: ap/moved.rs\n*** Delete File: ap/gone.rs\n*** End Patch";
    let calls = vec![
        call("c1", "read", json!({"path": "pi/r.ts"})),
        call(
            "c2",
            "edit",
            json!({"path": "pi/e.ts", "oldText": "a", "newText": "b"}),
        ),
        call(
            "c3",
            "write",
            json!({"path": "./pi/../pi/w.ts", "content": "x"}),
        ),
        call("c4", "Read", json!({"file_path": abs("cc/r.py")})),
        call("c5", "Edit", json!({"file_path": abs("cc/e.py")})),
        call(
            "c6",
            "MultiEdit",
            json!({"file_path": abs("cc/m.py"), "edits": []}),
        ),
        call("c7", "Write", json!({"file_path": abs("cc/w.py")})),
        call(
            "c8",
            "NotebookEdit",
            json!({"notebook_path": abs("cc/n.ipynb")}),
        ),
        call("c9", "read_file", json!({"path": "oa/r.go"})),
        call("c10", "write_file", json!({"path": "oa/w.go"})),
        call("c11", "edit_file", json!({"path": "oa/e.go"})),
        call(
            "c12",
            "str_replace_based_edit_tool",
            json!({"command": "view", "path": abs("te/v.c")}),
        ),
        call(
            "c13",
            "str_replace_based_edit_tool",
            json!({"command": "create", "path": abs("te/c.c")}),
        ),
        call(
            "c14",
            "str_replace_based_edit_tool",
            json!({"command": "str_replace", "path": abs("te/s.c")}),
        ),
        call("c15", "Edit", json!({"file_path": abs("cc/denied.py")})),
        call("c16", "apply_patch", json!({"input": patch})),
        call("c17", "bash", json!({"command": "touch not-tracked.txt"})),
    ];
    let mut batch = vec![
        json!({"role": "user", "content": "do everything"}),
        json!({"id": "a1", "role": "assistant", "content": "", "toolCalls": calls}),
    ];
    for n in 1..=17 {
        batch.push(result(&format!("c{n}"), n == 15));
    }
    batch.extend([
        json!({"id": "a2", "role": "assistant", "content": "", "toolCalls": [call("lost", "edit", json!({"path": "pi/lost.ts"}))]}),
        json!({"role": "user", "content": "stop that"}),
        json!({"id": "a3", "role": "assistant", "content": "", "toolCalls": [call("later", "write", json!({"path": "pi/later.ts"}))]}),
    ]);
    server.append(&id, batch);
    assert!(
        !statuses(&mut server, &id).contains_key("pi/later.ts"),
        "a call counts once its result arrives"
    );
    server.append(&id, json!([result("later", false)]));

    let expected: BTreeMap<String, String> = [
        ("pi/r.ts", "read"),
        ("pi/e.ts", "modified"),
        ("pi/w.ts", "modified"),
        ("cc/r.py", "read"),
        ("cc/e.py", "modified"),
        ("cc/m.py", "modified"),
        ("cc/w.py", "modified"),
        ("cc/n.ipynb", "modified"),
        ("oa/r.go", "read"),
        ("oa/w.go", "modified"),
        ("oa/e.go", "modified"),
        ("te/v.c", "read"),
        ("te/c.c", "created"),
        ("te/s.c", "modified"),
        ("ap/new.rs", "created"),
        ("ap/up.rs", "modified"),
        ("ap/old.rs", "deleted"),
        ("ap/moved.rs", "created"),
        ("ap/gone.rs", "deleted"),
        ("pi/later.ts", "modified"),
    ]
    .into_iter()
    .map(|(p, s)| (p.to_string(), s.to_string()))
    .collect();
    assert_eq!(
        statuses(&mut server, &id),
        expected,
        "failed (cc/denied.py) and interrupted (pi/lost.ts) calls are not modifications"
    );
    let l = list(&mut server, &id);
    let later = entry(&l, "pi/later.ts");
    assert_eq!(later["lastMessageId"], "a3", "the calling message");
    assert_eq!(later["origins"], json!(["tool"]));
    assert_eq!(entry(&l, "pi/e.ts")["lastMessageId"], "a1");

    let summary = compact(&mut server, &id, "one")["summary"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        summary_section(&summary, "modified-files"),
        [
            "pi/later.ts",
            "ap/gone.rs (deleted)",
            "ap/moved.rs (created)",
            "ap/old.rs (deleted)",
            "ap/up.rs",
            "… and 11 more"
        ],
        "{summary}"
    );
    assert_eq!(
        summary_section(&summary, "read-files"),
        ["te/v.c", "oa/r.go", "cc/r.py", "pi/r.ts"]
    );
}

#[test]
fn changes_on_disk_by_someone_else_are_reported_and_listed() {
    let data = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    let mut server = Server::start_in_workspace(data.path(), r, json!({}));
    let id = server.open(json!({}));
    let a = write(r, "src/a.rs", "fn a() {}\n");
    let b = write(r, "src/b.rs", "fn b() {}\n");
    let c = write(r, "c.rs", "fn c() {}\n");
    let d = write(r, "d.rs", "fn d() {}\n");
    server.append(
        &id,
        json!([
            {"role": "user", "content": "read them"},
            {"role": "assistant", "content": "", "toolCalls": [
                call("c1", "read", json!({"path": "src/a.rs"})),
                call("c2", "read", json!({"path": "c.rs"})),
                call("c3", "read", json!({"path": "d.rs"}))
            ]},
            result("c1", false), result("c2", false), result("c3", false)
        ]),
    );
    // The editor has b open and edits it; it will write the buffer to disk
    // before its didSave arrives: its own write, not someone else's.
    server.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": file_uri(&b), "languageId": "rust", "version": 1, "text": "fn b() {}\n"}}),
    );
    for (version, text) in [(2, "fn b() { 1 }\n"), (3, "fn b() { 12 }\n")] {
        server.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": file_uri(&b), "version": version}, "contentChanges": [{"text": text}]}),
        );
    }
    let l = list(&mut server, &id);
    assert!(
        ["src/a.rs", "src/b.rs", "c.rs", "d.rs"]
            .iter()
            .all(|p| entry(&l, p)["watched"] == true),
        "{l}"
    );

    std::fs::write(&b, "fn b() { 12 }\n").unwrap();
    std::fs::write(&a, "fn a() { changed() }\n").unwrap();
    let change = did_change_of(&mut server, &a);
    assert_eq!(change["sessionId"], id.as_str());
    assert_eq!(change["kind"], "changed");
    let l = list(&mut server, &id);
    let fa = entry(&l, "src/a.rs");
    assert_eq!(fa["status"], "modified");
    assert_eq!(fa["origins"], json!(["tool", "disk"]));
    assert_eq!(
        entry(&l, "src/b.rs")["origins"],
        json!(["lsp"]),
        "the editor's own save is not someone else's change"
    );
    assert!(
        server
            .received_notifications("files/didChange")
            .iter()
            .all(|n| n["path"] != b.display().to_string()),
        "{:?}",
        server.received_notifications("files/didChange")
    );

    std::fs::remove_file(&c).unwrap();
    assert_eq!(did_change_of(&mut server, &c)["kind"], "deleted");
    let e = r.join("e.rs");
    std::fs::rename(&d, &e).unwrap();
    let renamed = did_change_of(&mut server, &d);
    assert_eq!(renamed["kind"], "renamed");
    assert_eq!(renamed["newPath"], e.display().to_string());

    let summary = compact(&mut server, &id, "after")["summary"]
        .as_str()
        .unwrap()
        .to_string();
    let modified = summary_section(&summary, "modified-files");
    assert_eq!(
        modified,
        [
            "e.rs (created)",
            "d.rs (deleted)",
            "c.rs (deleted)",
            "src/a.rs",
            "src/b.rs"
        ],
        "{summary}"
    );
    // The log holds the disk events, so they survive a restart.
    let log = std::fs::read_to_string(data.path().join(format!("{id}.jsonl"))).unwrap();
    assert_eq!(log.matches("\"origin\":\"disk\"").count(), 4, "{log}");
}

#[test]
fn polling_watcher_reports_changes_too() {
    let data = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let mut server =
        Server::start_in_workspace(data.path(), root.path(), json!({"fileWatcher": "poll"}));
    let id = server.open(json!({}));
    let a = write(root.path(), "a.txt", "one\n");
    server.notify("files/didRead", json!({"path": "a.txt"}));
    assert_eq!(entry(&list(&mut server, &id), "a.txt")["watched"], true);
    std::fs::write(&a, "two, longer\n").unwrap();
    assert_eq!(did_change_of(&mut server, &a)["kind"], "changed");
    assert_eq!(
        entry(&list(&mut server, &id), "a.txt")["origins"],
        json!(["explicit", "disk"])
    );
}

#[test]
fn watched_directories_are_capped_newest_first() {
    let data = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let mut server =
        Server::start_in_workspace(data.path(), root.path(), json!({"maxWatchedPaths": 2}));
    let id = server.open(json!({}));
    for dir in ["d1", "d2", "d3"] {
        write(root.path(), &format!("{dir}/f.txt"), dir);
        server.notify("files/didRead", json!({"path": format!("{dir}/f.txt")}));
    }
    let l = list(&mut server, &id);
    let watched: Vec<bool> = ["d3/f.txt", "d2/f.txt", "d1/f.txt"]
        .iter()
        .map(|p| entry(&l, p)["watched"].as_bool().unwrap())
        .collect();
    assert_eq!(watched, [true, true, false]);
    // Touching the oldest again makes it the newest.
    server.notify("files/didRead", json!({"path": "d1/f.txt"}));
    let l = list(&mut server, &id);
    assert_eq!(entry(&l, "d1/f.txt")["watched"], true);
    assert_eq!(entry(&l, "d2/f.txt")["watched"], false);
}

#[test]
fn live_configuration_reaches_the_file_side() {
    let data = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let mut server =
        Server::start_in_workspace(data.path(), root.path(), json!({"fileWatcher": "off"}));
    let id = server.open(json!({}));
    write(root.path(), "a.txt", "a\n");
    server.notify("files/didRead", json!({"path": "a.txt"}));
    assert_eq!(entry(&list(&mut server, &id), "a.txt")["watched"], false);
    server.notify(
        "workspace/didChangeConfiguration",
        json!({"settings": {"fileWatcher": "auto", "fileTools": {"open_doc": {"operation": "read", "pathField": "uri"}}}}),
    );
    assert_eq!(entry(&list(&mut server, &id), "a.txt")["watched"], true);
    server.append(
        &id,
        json!([
            {"role": "user", "content": "open b"},
            {"role": "assistant", "content": "", "toolCalls": [call("c1", "open_doc", json!({"uri": "b.txt"}))]},
            result("c1", false)
        ]),
    );
    assert_eq!(entry(&list(&mut server, &id), "b.txt")["status"], "read");
}

#[test]
fn ledger_survives_restart_and_compactions_and_tracks_unchanged_files() {
    let data = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    let one = write(r, "src/one.rs", "fn one() {}\n");
    write(r, "src/two.rs", "fn two() {}\n");
    let options = json!({"fileWatcher": "off"});
    let mut server = Server::start_in_workspace(data.path(), r, options.clone());
    let id = server.open(json!({"sessionId": "kept"}));
    server.append(
        &id,
        json!([
            {"role": "user", "content": "read one, fix two"},
            {"id": "a1", "role": "assistant", "content": "", "toolCalls": [
                call("c1", "read", json!({"path": "src/one.rs"})),
                call("c2", "edit", json!({"path": "src/two.rs"}))
            ]},
            result("c1", false), result("c2", false)
        ]),
    );
    let first = compact(&mut server, &id, "first");
    assert_eq!(first["readFiles"], json!(["src/one.rs"]));
    assert_eq!(first["modifiedFiles"], json!(["src/two.rs"]));
    server.append(&id, json!([
                {"role": "user", "content": "add three"},
                {"id": "a2", "role": "assistant", "content": "", "toolCalls": [
                    call("c3", "apply_patch", json!({"input": "*** Begin Patch\n*** Add File: src/three.rs\n+fn three() {}\n*** End Patch"}))
                ]},
                result("c3", false)
            ]));
    let second = compact(&mut server, &id, "second");
    assert_eq!(
        summary_section(second["summary"].as_str().unwrap(), "modified-files"),
        ["src/three.rs (created)", "src/two.rs"],
        "cumulative across compactions"
    );
    assert_eq!(second["readFiles"], json!(["src/one.rs"]));
    let before = list(&mut server, &id);
    assert_eq!(entry(&before, "src/one.rs")["generation"], 0);
    assert_eq!(entry(&before, "src/three.rs")["generation"], 1);
    assert_eq!(unchanged(&mut server, &id), [one.display().to_string()]);
    assert_eq!(server.shutdown_and_exit(), 0);

    let mut server = Server::start_in_workspace(data.path(), r, options);
    server.open(json!({"sessionId": "kept"}));
    let after = list(&mut server, &id);
    assert_eq!(before, after, "the ledger is rebuilt from the log");
    assert_eq!(unchanged(&mut server, &id), [one.display().to_string()]);
    std::fs::write(&one, "fn one() { changed() }\n").unwrap();
    assert!(
        unchanged(&mut server, &id).is_empty(),
        "a changed file must be read again"
    );
    let third = compact(&mut server, &id, "third");
    assert_eq!(third["readFiles"], json!(["src/one.rs"]));
    assert_eq!(
        third["modifiedFiles"],
        json!(["src/three.rs", "src/two.rs"])
    );
}

// ---------------------------------------------------------------------------
// Real transcripts: the modified set equals what successful edits touched.

/// The path a tool wrote, made absolute the way a shell would: `~/` under
/// `home`, relative under `cwd`, `.` and `..` resolved.
fn absolute(raw: &str, cwd: &Path, home: &Path) -> PathBuf {
    let joined = match raw.strip_prefix("~/") {
        Some(rest) => home.join(rest),
        None => cwd.join(raw),
    };
    let mut out = PathBuf::new();
    for part in joined.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

fn absolute_all(paths: HashSet<String>, cwd: &Path, home: &Path) -> BTreeSet<PathBuf> {
    paths.iter().map(|p| absolute(p, cwd, home)).collect()
}

/// Feeds a transcript to the binary in its recorded working directory, as
/// appended messages and through `conversation/import`, and checks
/// `files/list` and a compaction's `<modified-files>` against the
/// independently computed set.
fn check_transcript(
    file: &Path,
    cwd: &Path,
    messages: &[Value],
    edited: impl Fn(&Path) -> BTreeSet<PathBuf>,
) {
    let name = file.display().to_string();
    let data = tempfile::tempdir().unwrap();
    let mut server = Server::start_in_workspace(
        data.path(),
        cwd,
        json!({"maxListedFiles": 1000, "fileWatcher": "off"}),
    );
    let expected = edited(server.home());
    assert!(!expected.is_empty(), "{name}: no successful edits found");
    let id = server.open(json!({}));
    for batch in messages.chunks(100) {
        server.append(&id, batch);
    }
    let modified = |l: &Value| -> BTreeSet<PathBuf> {
        l["files"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["status"] != "read")
            .map(|f| PathBuf::from(f["path"].as_str().unwrap()))
            .collect()
    };
    let l = list(&mut server, &id);
    assert_eq!(modified(&l), expected, "{name}: files/list");
    let imported = server
        .request("conversation/import", json!({"path": file}))
        .unwrap();
    let imported_id = imported["sessionId"].as_str().unwrap().to_string();
    assert_eq!(
        modified(&list(&mut server, &imported_id)),
        expected,
        "{name}: files/list of the imported session"
    );
    let shown: BTreeSet<String> = serde_json::from_value(l["modifiedFiles"].clone()).unwrap();
    let summary = compact(&mut server, &id, "check")["summary"]
        .as_str()
        .unwrap()
        .to_string();
    let listed: BTreeSet<String> = summary_section(&summary, "modified-files")
        .into_iter()
        .collect();
    assert_eq!(listed, shown, "{name}: <modified-files>");
    println!("{name}: {} modified files match", expected.len());
}

#[test]
fn modified_files_of_real_pi_sessions_equal_their_successful_edits() {
    let Some(dir) = transcripts_dir() else { return };
    let mut seen = 0;
    for file in std::fs::read_dir(dir.join("pi-session-jsonl")).unwrap() {
        let path = file.unwrap().path();
        let raw = std::fs::read_to_string(&path).unwrap();
        let header: Value = serde_json::from_str(raw.lines().next().unwrap()).unwrap();
        let cwd = PathBuf::from(header["cwd"].as_str().unwrap());
        let messages = read_pi_session(&path);
        check_transcript(&path, &cwd, &messages, |home| {
            absolute_all(pi_edited_paths(&raw), &cwd, home)
        });
        seen += 1;
    }
    assert_eq!(seen, 2);
}

#[test]
fn modified_files_of_real_claude_code_sessions_equal_their_successful_edits() {
    let Some(dir) = transcripts_dir() else { return };
    let mut seen = 0;
    for project in std::fs::read_dir(dir.join("claude-code-jsonl")).unwrap() {
        for file in std::fs::read_dir(project.unwrap().path()).unwrap() {
            let path = file.unwrap().path();
            let raw = std::fs::read_to_string(&path).unwrap();
            let cwd = raw
                .lines()
                .find_map(|l| {
                    let v: Value = serde_json::from_str(l).unwrap();
                    v["cwd"].as_str().map(PathBuf::from)
                })
                .unwrap();
            let messages = read_claude_code_session(&path);
            check_transcript(&path, &cwd, &messages, |home| {
                absolute_all(claude_code_edited_paths(&raw), &cwd, home)
            });
            seen += 1;
        }
    }
    assert_eq!(seen, 4);
}

/// A FIFO wherever compactd would hash a file: named by each file event,
/// by a tool call, created beside a watched file, and swapped in for a
/// tracked one. Opened, it would block the state owner until something
/// wrote to it; every request after these must still be answered, and the
/// FIFO is recorded without a hash.
#[cfg(unix)]
#[test]
fn a_fifo_at_a_hashed_path_freezes_nothing() {
    let data = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    let mut server = Server::start_in_workspace(data.path(), r, json!({}));
    let id = server.open(json!({}));
    let a = write(r, "src/a.rs", "fn a() {}\n");
    let b = write(r, "src/b.rs", "fn b() {}\n");
    let fifo = r.join("src/pipe.rs");
    crate::support::mkfifo(&fifo);
    let f = fifo.display().to_string();
    server.append(
        &id,
        json!([
            {"role": "user", "content": "read them"},
            {"role": "assistant", "content": "", "toolCalls": [
                call("c1", "read", json!({"path": "src/a.rs"})),
                call("c2", "read", json!({"path": "src/b.rs"})),
                call("c3", "read", json!({"path": "src/pipe.rs"}))
            ]},
            result("c1", false), result("c2", false), result("c3", false)
        ]),
    );
    server.notify("files/didRead", json!({"sessionId": id, "path": f}));
    server.notify("files/didModify", json!({"path": f}));
    server.notify(
        "textDocument/didSave",
        json!({"textDocument": {"uri": file_uri(&fifo), "version": 1}}),
    );
    server.notify(
        "workspace/didChangeWatchedFiles",
        json!({"changes": [{"uri": file_uri(&fifo), "type": 2}]}),
    );
    let l = list(&mut server, &id);
    assert_eq!(entry(&l, "src/pipe.rs")["status"], "modified", "{l}");
    assert!(entry(&l, "src/pipe.rs").get("contentHash").is_none(), "{l}");
    assert!(entry(&l, "src/a.rs")["contentHash"].is_string(), "{l}");

    // The watcher: a FIFO appears beside a watched file, and a tracked file
    // is replaced by one; a later change to another file still arrives.
    crate::support::mkfifo(&r.join("src/new-pipe"));
    std::fs::remove_file(&b).unwrap();
    crate::support::mkfifo(&b);
    std::fs::write(&a, "fn a() { changed() }\n").unwrap();
    assert_eq!(did_change_of(&mut server, &a)["kind"], "changed");
    let l = list(&mut server, &id);
    assert_eq!(entry(&l, "src/a.rs")["status"], "modified", "{l}");
}
