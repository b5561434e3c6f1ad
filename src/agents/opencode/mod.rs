//! opencode: its sessions live in its SQLite database (`store.rs`), not in
//! a file each, so a session is named by a locator, `<database>#<session
//! id>` (`locator`), which `sessions` gives and `stored_session` reads
//! (its metadata, or its whole conversation through `session.rs`'s
//! reader), and `stored_feed` reads as it grows for a live follow
//! (`live.rs`). compactd takes part in its compactions through a plugin
//! (`integrations/opencode/compactd.ts`, plugin API V1 as opencode-ai
//! 1.18.33 loads it), which mirrors each opencode session into compactd
//! over JSON-RPC and asks `conversation/recap` what opencode's summary must
//! keep; `compactd setup opencode` writes it.

mod auto_compact;
mod live;
pub(crate) mod session;
pub(crate) mod store;

use std::io;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::folders::Cwds;
use super::limits::AutoCompactPoint;
use super::setup::{OwnedFile, Setup};
use super::{AgentKind, Homes, LimitsInput, StoredFeed, StoredSession, Supports};
use crate::transcript::{Format, Imported, Line, Reader};
use auto_compact::CONFIG_HOME;

/// Its name on the wire and for `compactd setup`.
pub const NAME: &str = "opencode";
/// Its format's name.
const FORMAT: Format = Format::named(NAME);
/// The variables that move its folders (`Homes::from_env` reads them).
const ENV_VARS: &[&str] = &[CONFIG_HOME, store::DATA_HOME, store::DB_VAR];
/// What separates the database from the session id in a locator.
const LOCATOR_MARK: char = '#';
/// How the plugin's compactd sessions are named: this, then opencode's
/// session id.
const PLUGIN_SESSION_PREFIX: &str = "opencode-";
/// How opencode's session ids start.
const SESSION_ID_PREFIX: &str = "ses_";

/// opencode, as compactd knows it.
pub struct OpenCode;

/// The locator of session `id` of the database at `db`.
pub fn locator(db: &Path, id: &str) -> PathBuf {
    PathBuf::from(format!("{}{LOCATOR_MARK}{id}", db.display()))
}

/// The database and session id a locator names; `None` for any other
/// path (a transcript file).
fn parse_locator(path: &Path) -> Option<(PathBuf, &str)> {
    let (db, id) = path.to_str()?.rsplit_once(LOCATOR_MARK)?;
    let plain = id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    (id.starts_with(SESSION_ID_PREFIX) && plain && !db.is_empty()).then(|| (PathBuf::from(db), id))
}

impl AgentKind for OpenCode {
    fn name(&self) -> &'static str {
        NAME
    }

    fn display_name(&self) -> &'static str {
        "opencode"
    }

    fn format_description(&self) -> &'static str {
        "opencode messages JSONL (each with its parts)"
    }

    fn env_vars(&self) -> &'static [&'static str] {
        ENV_VARS
    }

    /// The sessions opencode ran in `workspace` (not a subagent's), as
    /// locators; none when it has no database.
    fn sessions(&self, homes: &Homes, _: &Cwds, workspace: &Path, limit: usize) -> Vec<PathBuf> {
        let db = store::db_path(homes);
        let Ok(store) = store::Store::open(&db) else {
            return Vec::new();
        };
        store
            .sessions(workspace, limit)
            .unwrap_or_default()
            .into_iter()
            .filter(|s| s.parent_id.is_none())
            .map(|s| locator(&db, &s.id))
            .collect()
    }

    /// The database's folder: a new session is a write to it.
    fn session_dir(&self, homes: &Homes, _: &Path) -> PathBuf {
        let db = store::db_path(homes);
        db.parent().map_or(db.clone(), Path::to_path_buf)
    }

    fn searched_dir(&self, homes: &Homes, _: &Path) -> PathBuf {
        store::db_path(homes)
    }

    fn owns(&self, homes: &Homes, path: &Path) -> bool {
        parse_locator(path).is_some_and(|(db, _)| db == store::db_path(homes))
    }

    /// Its sessions are no JSONL file.
    fn classify(&self, _: &Value) -> bool {
        false
    }

    fn reader(&self, _: Option<&Path>) -> io::Result<Box<dyn Reader + Send>> {
        Ok(Box::new(session::Reader::default()))
    }

    fn import(&self, lines: &[Line]) -> Imported {
        crate::transcript::read_all(&mut session::Reader::default(), FORMAT, lines)
    }

    fn stored_session(&self, path: &Path, whole: bool) -> Option<Result<StoredSession, String>> {
        let (db, id) = parse_locator(path)?;
        Some(read_session(&db, id, whole).map_err(|e| e.to_string()))
    }

    fn stored_feed(&self, path: &Path) -> Option<Result<Box<dyn StoredFeed>, String>> {
        let (db, id) = parse_locator(path)?;
        // A session that is not there is refused now, not followed empty.
        let found = read_session(&db, id, false).map_err(|e| e.to_string());
        Some(found.map(|_| Box::new(live::Feed::new(&db, id)) as Box<dyn StoredFeed>))
    }

    /// The plugin mirrors session `ses_…` as `opencode-ses_…`
    /// (`compactdSessionId` in `integrations/opencode/compactd.ts`; a
    /// locator's id has nothing that function replaces).
    fn mirrored_as(&self, path: &Path) -> Option<(String, String)> {
        let (_, id) = parse_locator(path)?;
        Some((format!("{PLUGIN_SESSION_PREFIX}{id}"), id.to_string()))
    }

    fn limits(&self, input: &LimitsInput) -> (u64, AutoCompactPoint) {
        let settings = input
            .model
            .map(|model| auto_compact::settings(input.homes, input.workspace, model))
            .unwrap_or_default();
        let fallback = input.table_window.unwrap_or(input.default_window);
        let window = auto_compact::window(&settings, input.stated_window.unwrap_or(fallback));
        (window, auto_compact::point(&settings, window))
    }

    fn supports(&self) -> Supports {
        Supports {
            setup: true,
            hooks: true,
            status_line: false,
        }
    }

    fn setup(
        &self,
        homes: &Homes,
        project: Option<&Path>,
        compactd: &Path,
    ) -> Result<Vec<Setup>, String> {
        Ok(vec![Setup::File(setup(homes, project, compactd))])
    }
}

/// Session `id` of the database at `db`: its metadata, and with `whole`
/// its conversation (each message with its parts, one entry for the
/// reader).
fn read_session(db: &Path, id: &str, whole: bool) -> Result<StoredSession, store::StoreError> {
    let store = store::Store::open(db)?;
    let Some(found) = store.session(id)? else {
        return Err(store::StoreError::Io {
            path: db.to_path_buf(),
            source: io::Error::new(io::ErrorKind::NotFound, format!("no session {id}")),
        });
    };
    let size = store.size(id)?;
    let conversation = match whole {
        false => None,
        true => {
            let (messages, skipped) = store.messages(id)?;
            let mut lines: Vec<Line> = Vec::with_capacity(messages.len());
            for message in messages {
                lines.push(live::entry(lines.len() + 1, message));
            }
            // Rows it could not read are reported, as a torn line would be.
            for row in &skipped.rows {
                lines.push(live::skipped_line(lines.len() + 1, row));
            }
            Some(OpenCode.import(&lines))
        }
    };
    Ok(StoredSession {
        modified_ms: u64::try_from(found.time_updated).unwrap_or(0),
        size,
        title: Some(found.title).filter(|t| !t.trim().is_empty()),
        conversation,
    })
}

/// The plugin, as `compactd setup opencode` writes it.
const PLUGIN: &str = include_str!("../../../integrations/opencode/compactd.ts");
/// The line of the plugin that names the compactd binary.
const PATH_LINE: &str = "const COMPACTD_PATH = 'compactd';";
/// The plugin's file recognises it as compactd's.
pub const MARK: &str = "compactd-opencode-plugin";

/// opencode's plugin folder: the project's `.opencode/plugins/`, else the
/// user's `$XDG_CONFIG_HOME/opencode/plugins/` (`~/.config` without it, or
/// with a relative one, as the XDG rules say).
fn setup(homes: &Homes, project: Option<&Path>, compactd: &Path) -> OwnedFile {
    let dir = match project {
        Some(root) => root.join(".opencode"),
        None => homes
            .var(CONFIG_HOME)
            .filter(|p| p.is_absolute())
            .map(Path::to_path_buf)
            .unwrap_or_else(|| homes.home().join(".config"))
            .join("opencode"),
    };
    OwnedFile {
        path: dir.join("plugins").join("compactd.ts"),
        text: plugin(compactd),
        mark: MARK,
        note: Some("opencode loads it the next time it starts".into()),
    }
}

/// The plugin with this binary's path in it.
fn plugin(compactd: &Path) -> String {
    let literal = serde_json::to_string(&compactd.to_string_lossy()).unwrap_or_default();
    PLUGIN.replacen(PATH_LINE, &format!("const COMPACTD_PATH = {literal};"), 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::{discover, Agent};
    use crate::conversation::Role;

    /// An opencode database in `home`'s data folder, in opencode's shape:
    /// two sessions of `ws` (the newer with a request and a read), a
    /// subagent's session under the newer, a session of another folder.
    fn database(home: &Path, ws: &Path) -> PathBuf {
        let db = home.join(".local/share/opencode/opencode.db");
        std::fs::create_dir_all(db.parent().unwrap()).unwrap();
        let connection = rusqlite::Connection::open(&db).unwrap();
        connection
            .execute_batch("PRAGMA journal_mode = WAL;")
            .unwrap();
        connection.execute_batch(store::TABLES).unwrap();
        let ws = ws.to_str().unwrap();
        for (id, parent, directory, title, updated) in [
            ("ses_old", None, ws, "Fix the parser", 10),
            ("ses_new", None, ws, "Run the tests", 20),
            ("ses_sub", Some("ses_new"), ws, "A subagent", 30),
            ("ses_far", None, "/elsewhere", "Elsewhere", 40),
        ] {
            connection
                .execute(
                    "INSERT INTO session VALUES (?1, 'global', ?2, 's', ?3, ?4, '1.18.33', 1, ?5)",
                    rusqlite::params![id, parent, directory, title, updated],
                )
                .unwrap();
        }
        for (id, at, data) in [
            ("msg_1", 1, r#"{"role":"user","time":{"created":1}}"#),
            (
                "msg_2",
                2,
                r#"{"role":"assistant","modelID":"scripted","providerID":"local","tokens":{"input":1500,"output":20,"reasoning":0,"cache":{"write":0,"read":0}}}"#,
            ),
        ] {
            connection
                .execute(
                    "INSERT INTO message VALUES (?1, 'ses_new', ?2, ?2, ?3)",
                    rusqlite::params![id, at, data],
                )
                .unwrap();
        }
        for (id, message, at, data) in [
            (
                "prt_1",
                "msg_1",
                1,
                r#"{"type":"text","text":"Run the tests. ZQX-OC-1"}"#,
            ),
            (
                "prt_2",
                "msg_2",
                2,
                r#"{"type":"tool","tool":"read","callID":"call_1","state":{"status":"completed","input":{"filePath":"/w/src/b.py"},"output":"print('b')"}}"#,
            ),
            ("prt_3", "msg_2", 3, r#"{"type":"text","text":"Read it."}"#),
        ] {
            connection
                .execute(
                    "INSERT INTO part VALUES (?1, ?2, 'ses_new', ?3, ?3, ?4)",
                    rusqlite::params![id, message, at, data],
                )
                .unwrap();
        }
        db
    }

    #[test]
    fn its_sessions_of_a_workspace_are_listed_newest_first_with_their_titles() {
        let home = tempfile::tempdir().unwrap();
        let ws = home.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let ws = ws.canonicalize().unwrap();
        let db = database(home.path(), &ws);
        let homes = Homes::under(home.path());
        let agent = Agent::from_name(NAME).unwrap();
        let found = discover::sessions(&homes, &Cwds::default(), agent, &ws, 10);
        let paths: Vec<PathBuf> = found.iter().map(|s| s.path.clone()).collect();
        assert_eq!(
            paths,
            [locator(&db, "ses_new"), locator(&db, "ses_old")],
            "{found:?}"
        );
        assert_eq!(found[0].modified_ms, 20);
        assert!(found[0].size > 100, "{found:?}");
        assert_eq!(found[1].size, 0);
        assert_eq!(
            discover::title(agent, &found[0].path).as_deref(),
            Some("Run the tests")
        );
        assert_eq!(discover::agent_of(&homes, &found[0].path), Some(agent));
        let all = discover::all_sessions(&homes, &Cwds::default(), &ws, 10);
        assert_eq!(all.len(), 2, "{all:?}");
        // No database: no session, and no error.
        let elsewhere = tempfile::tempdir().unwrap();
        let none = Homes::under(elsewhere.path());
        assert!(discover::sessions(&none, &Cwds::default(), agent, &ws, 10).is_empty());
    }

    #[test]
    fn a_session_read_whole_is_its_conversation() {
        let home = tempfile::tempdir().unwrap();
        let db = database(home.path(), Path::new("/w"));
        let (agent, read) = discover::stored(&locator(&db, "ses_new"), true).unwrap();
        assert_eq!(agent.name(), NAME);
        let imported = read.unwrap().conversation.unwrap();
        let messages: Vec<(Role, &str)> =
            imported.messages().map(|m| (m.role(), m.text())).collect();
        assert_eq!(
            messages,
            [
                (Role::User, "Run the tests. ZQX-OC-1"),
                (Role::Assistant, "Read it."),
                (Role::Tool, "print('b')"),
            ]
        );
        let missing = OpenCode.stored_session(&locator(&db, "ses_none"), false);
        let why = missing.unwrap().err().unwrap();
        assert!(why.contains("no session ses_none"), "{why}");
    }

    /// Auto-follow (`engine::follow::auto_pick`) picks its sessions like
    /// any agent's: the newest at first, then a new one.
    #[test]
    fn auto_follow_picks_its_sessions() {
        let session = |agent: &str, path: &str| discover::AgentSession {
            agent: Agent::from_name(agent).unwrap(),
            path: PathBuf::from(path),
            modified_ms: 1,
            size: 1,
        };
        let found = [
            session(NAME, "/nowhere/opencode.db#ses_1"),
            session("claude-code", "/h/.claude/projects/p/a.jsonl"),
        ];
        let none = std::collections::HashSet::new();
        let pick = crate::engine::follow::auto_pick(&found, &none, true).unwrap();
        assert_eq!(pick.path, found[0].path);
        let seen = [found[1].path.clone()].into();
        let pick = crate::engine::follow::auto_pick(&found, &seen, false).unwrap();
        assert_eq!(pick.path, found[0].path);
    }

    /// Rows opencode's store holds but compactd cannot read are in the
    /// read's report of what it skipped, each saying which row and why.
    #[test]
    fn rows_it_cannot_read_are_reported_skipped() {
        let home = tempfile::tempdir().unwrap();
        let db = database(home.path(), Path::new("/w"));
        let writer = rusqlite::Connection::open(&db).unwrap();
        writer
            .execute(
                "INSERT INTO part VALUES ('prt_bad', 'msg_2', 'ses_new', 4, 4, 'not json')",
                [],
            )
            .unwrap();
        writer
            .execute(
                "INSERT INTO message VALUES ('msg_bad', 'ses_new', 5, 5, '[1]')",
                [],
            )
            .unwrap();
        let (_, read) = discover::stored(&locator(&db, "ses_new"), true).unwrap();
        let imported = read.unwrap().conversation.unwrap();
        assert_eq!(imported.message_count(), 3);
        assert_eq!(imported.skipped.total(), 2, "{:?}", imported.skipped);
        let reasons = imported.skipped.reasons().join("\n");
        assert!(
            reasons.contains("unreadable lines: 2")
                && reasons.contains("opencode's message msg_bad: its data is not a JSON object"),
            "{reasons}"
        );
    }

    /// A session followed live: only what changed is read again, a message
    /// growing as it streams is amended (never given twice), a database
    /// unchanged is not queried, and messages removed read it again.
    #[test]
    fn a_live_read_gives_what_changed_once() {
        use crate::transcript::{Emitter, Event, Reader as _};
        let home = tempfile::tempdir().unwrap();
        let db = database(home.path(), Path::new("/w"));
        let mut feed = OpenCode
            .stored_feed(&locator(&db, "ses_new"))
            .unwrap()
            .unwrap();
        let mut reader = session::Reader::default();
        let mut out = Emitter::new(FORMAT);
        let mut step = |feed: &mut Box<dyn StoredFeed>| -> Option<Vec<Event>> {
            let lines = match feed.step().unwrap() {
                crate::agents::FeedStep::Read(lines) => lines,
                crate::agents::FeedStep::Changed(_) => return None,
            };
            for line in &lines {
                if let Some(value) = out.readable(line) {
                    reader.line(line.number, value, &mut out);
                }
            }
            Some(out.drain())
        };
        let first = step(&mut feed).unwrap();
        assert_eq!(
            first
                .iter()
                .filter(|e| matches!(e, Event::Message { .. }))
                .count(),
            3
        );
        // Nothing committed since: nothing read.
        assert!(step(&mut feed).unwrap().is_empty());
        let writer = rusqlite::Connection::open(&db).unwrap();
        // A new response starts streaming: a step-start, then a text part
        // that grows in place.
        writer
            .execute_batch(
                r#"INSERT INTO message VALUES ('msg_3', 'ses_new', 6, 6, '{"role":"assistant","modelID":"scripted","providerID":"local"}');
                INSERT INTO part VALUES ('prt_4', 'msg_3', 'ses_new', 6, 6, '{"type":"text","text":"Run"}');"#,
            )
            .unwrap();
        let started = step(&mut feed).unwrap();
        let new: Vec<&crate::conversation::Message> = started
            .iter()
            .filter_map(|e| match e {
                Event::Message { message, .. } => Some(message),
                _ => None,
            })
            .collect();
        assert_eq!(new.len(), 1, "{started:?}");
        assert_eq!(new[0].text(), "Run");
        writer
            .execute(
                r#"UPDATE part SET data = '{"type":"text","text":"Running the tests."}', time_updated = 7 WHERE id = 'prt_4'"#,
                [],
            )
            .unwrap();
        let grown = step(&mut feed).unwrap();
        assert!(
            grown.iter().all(|e| !matches!(e, Event::Message { .. })),
            "{grown:?}"
        );
        let amended: Vec<&str> = grown
            .iter()
            .filter_map(|e| match e {
                Event::Amend(message) => Some(message.text()),
                _ => None,
            })
            .collect();
        assert_eq!(amended, ["Running the tests."]);
        // opencode reverts the last message: read again from the start.
        writer
            .execute_batch("DELETE FROM part WHERE message_id = 'msg_3'; DELETE FROM message WHERE id = 'msg_3';")
            .unwrap();
        assert!(step(&mut feed).is_none());
    }

    #[test]
    fn its_model_is_named_as_its_configuration_names_it() {
        let home = tempfile::tempdir().unwrap();
        let db = database(home.path(), Path::new("/w"));
        let (_, read) = discover::stored(&locator(&db, "ses_new"), true).unwrap();
        let imported = read.unwrap().conversation.unwrap();
        let model = imported.messages().find_map(|m| match &m.body {
            crate::conversation::MessageBody::Assistant { model, .. } => model.clone(),
            _ => None,
        });
        assert_eq!(model.as_deref(), Some("local/scripted"));
        // `auto_compact::settings` finds the model's limits by that name.
        let config = home.path().join(".config/opencode");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::write(
            config.join("opencode.json"),
            r#"{"provider":{"local":{"models":{"scripted":{"limit":{"context":8000,"output":1000}}}}}}"#,
        )
        .unwrap();
        let homes = Homes::under(home.path());
        let settings = auto_compact::settings(&homes, Path::new("/w"), model.as_deref().unwrap());
        assert_eq!(
            (settings.context, settings.output),
            (Some(8000), Some(1000))
        );
    }

    #[test]
    fn a_transcript_file_is_no_locator() {
        assert_eq!(parse_locator(Path::new("/h/a.jsonl")), None);
        assert_eq!(parse_locator(Path::new("/h/a#b.jsonl")), None);
        assert_eq!(parse_locator(Path::new("#ses_1")), None);
        let (db, id) = parse_locator(Path::new("/h/opencode.db#ses_1a")).unwrap();
        assert_eq!((db.as_path(), id), (Path::new("/h/opencode.db"), "ses_1a"));
        assert!(OpenCode
            .stored_session(Path::new("/h/a.jsonl"), true)
            .is_none());
    }

    #[test]
    fn the_plugin_names_this_binary_and_carries_the_mark() {
        assert!(PLUGIN.contains(PATH_LINE), "the plugin's path line moved");
        assert!(PLUGIN.contains(MARK));
        let text = plugin(Path::new("/opt/it's here/compactd"));
        assert!(text.contains(r#"const COMPACTD_PATH = "/opt/it's here/compactd";"#));
        let homes = Homes::under(Path::new("/h"));
        let user = setup(&homes, None, Path::new("/c"));
        assert_eq!(
            user.path,
            Path::new("/h/.config/opencode/plugins/compactd.ts")
        );
        let project = setup(&homes, Some(Path::new("/w")), Path::new("/c"));
        assert_eq!(project.path, Path::new("/w/.opencode/plugins/compactd.ts"));
        let moved = setup(
            &homes.clone().with_var(CONFIG_HOME, "/x"),
            None,
            Path::new("/c"),
        );
        assert_eq!(moved.path, Path::new("/x/opencode/plugins/compactd.ts"));
        let relative = setup(&homes.with_var(CONFIG_HOME, "rel"), None, Path::new("/c"));
        assert_eq!(relative.path, user.path);
    }
}
