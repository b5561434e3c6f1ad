//! opencode's session store: the SQLite database opencode 1.18 keeps its
//! sessions in (`$XDG_DATA_HOME/opencode/opencode.db`, WAL journal), read
//! and never written. opencode writes it while it runs, so compactd opens
//! it read-only (no `immutable=1`: the file changes under us), reads in
//! short read transactions (a WAL reader never blocks opencode's writer),
//! waits at most `BUSY_TIMEOUT` for a lock, and refuses anything but a
//! regular file. A database without the tables and columns read here is an
//! `UnknownSchema` error, never a guess.
//!
//! What is read, measured on the pinned 1.18.33: `session(id, directory,
//! title, parent_id, time_created, time_updated)`; `message(id,
//! session_id, time_created, time_updated, data)`, `data` a JSON object
//! (`role`, the assistant's `tokens`, `modelID`, `providerID`, `summary:
//! true` on a compaction's summary); `part(id, message_id, session_id,
//! time_created, time_updated, data)`, `data` a JSON object (`type`:
//! `text`, `tool` with `state.input.filePath`, `step-finish` with
//! `tokens`, `compaction` on the user message that asks for one). A
//! message and its parts come back as one `StoredMessage`, in opencode's
//! order (`time_created`, then `id`, which opencode makes ascending).

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension};
use serde_json::Value;

use super::super::Homes;
use crate::regular_file;

/// The variable that names opencode's database (absolute, or relative to
/// its data folder), as opencode reads it.
pub(super) const DB_VAR: &str = "OPENCODE_DB";
/// Where its data folder lives (`$XDG_DATA_HOME/opencode`).
pub(super) const DATA_HOME: &str = "XDG_DATA_HOME";
/// The longest compactd waits for opencode's write lock before a read
/// fails (opencode itself waits 5 s; a reader need not).
const BUSY_TIMEOUT: Duration = Duration::from_millis(1000);
/// The largest `data` of one message or part read; a larger one is
/// skipped and counted (opencode keeps whole tool outputs in a part).
pub const MAX_DATA_BYTES: i64 = 64 << 20;
/// How long before the newest `time_updated` seen a live read still looks
/// for updated rows: a row opencode stamped earlier may commit after a
/// newer one (another opencode process on the same database).
const LATE_MS: i64 = 5_000;

/// What went wrong reading opencode's database.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// There is no database there (opencode has not run as this user).
    #[error("no opencode database at {0}")]
    Missing(PathBuf),
    /// The path is not a regular file, or cannot be read.
    #[error("cannot read opencode's database {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// It is not an opencode 1.18 database (what is missing is said).
    #[error("{path} is not an opencode database compactd reads ({why})")]
    UnknownSchema { path: PathBuf, why: String },
    /// SQLite refused (locked past the timeout, corrupt, …).
    #[error("reading opencode's database {path}: {source}")]
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
    },
}

/// One opencode session, as its `session` row has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredSession {
    pub id: String,
    pub directory: PathBuf,
    pub title: String,
    /// The session it was forked from or runs under (a subagent's).
    pub parent_id: Option<String>,
    /// Milliseconds since the epoch.
    pub time_updated: i64,
}

/// One message with its parts, in the order opencode wrote them.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredMessage {
    pub id: String,
    pub time_created: i64,
    pub time_updated: i64,
    /// The message's `data` (`role`, `tokens`, …).
    pub data: Value,
    /// Each part's `data`, its id added as `id`.
    pub parts: Vec<Value>,
}

/// What a read of a session's messages skipped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Skipped {
    /// Rows whose `data` is over `MAX_DATA_BYTES`.
    pub too_large: usize,
    /// Rows whose `data` is not a JSON object.
    pub unreadable: usize,
    /// Each row skipped, and why.
    pub rows: Vec<SkippedRow>,
}

/// A row not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedRow {
    /// `message` or `part`.
    pub table: &'static str,
    pub id: String,
    pub why: String,
}

/// How far a live read of a session got (`Store::changes`); the default
/// has read nothing.
#[derive(Debug, Clone, Default)]
pub struct Cursor {
    /// The largest rowids of the session's messages and parts read (SQLite
    /// gives a new row a larger one).
    rowids: Option<(i64, i64)>,
    /// How many message and part rows the session had then.
    seen: (i64, i64),
    /// The newest `time_updated` of its messages and parts then.
    updated: i64,
    /// The last message read, read again each time (it may still stream).
    last: Option<(i64, String)>,
}

/// Where opencode keeps its database: `OPENCODE_DB` (absolute, or under
/// its data folder), else `opencode.db` in `$XDG_DATA_HOME/opencode`
/// (`~/.local/share` without it, or with a relative one).
pub fn db_path(homes: &Homes) -> PathBuf {
    let data = homes
        .var(DATA_HOME)
        .filter(|p| p.is_absolute())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| homes.home().join(".local/share"))
        .join("opencode");
    match homes.var(DB_VAR) {
        Some(db) if db.is_absolute() => db.to_path_buf(),
        Some(db) if !db.as_os_str().is_empty() => data.join(db),
        _ => data.join("opencode.db"),
    }
}

/// An open, read-only connection to opencode's database.
pub struct Store {
    path: PathBuf,
    connection: Connection,
}

/// The columns read, per table: a database without one of them is not
/// read at all.
const SCHEMA: &[(&str, &[&str])] = &[
    (
        "session",
        &["id", "directory", "title", "parent_id", "time_updated"],
    ),
    (
        "message",
        &["id", "session_id", "time_created", "time_updated", "data"],
    ),
    (
        "part",
        &[
            "id",
            "message_id",
            "session_id",
            "time_created",
            "time_updated",
            "data",
        ],
    ),
];

impl Store {
    /// Opens the database at `path` read-only, after checking it is a
    /// regular file and has the tables and columns read here.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let io = |source| StoreError::Io {
            path: path.to_path_buf(),
            source,
        };
        match std::fs::metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(StoreError::Missing(path.to_path_buf()))
            }
            Err(e) => return Err(io(e)),
            Ok(meta) => regular_file::check_regular(&meta).map_err(io)?,
        }
        // NO_CREATE is implied by READ_ONLY; NO_MUTEX: one thread uses it.
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let connection =
            Connection::open_with_flags(path, flags).map_err(|source| StoreError::Sqlite {
                path: path.to_path_buf(),
                source,
            })?;
        let store = Store {
            path: path.to_path_buf(),
            connection,
        };
        store
            .connection
            .busy_timeout(BUSY_TIMEOUT)
            .map_err(|e| store.sqlite(e))?;
        store.check_schema()?;
        Ok(store)
    }

    fn sqlite(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Sqlite {
            path: self.path.clone(),
            source,
        }
    }

    /// Refuses a database missing a table or column read here.
    fn check_schema(&self) -> Result<(), StoreError> {
        for (table, columns) in SCHEMA {
            let mut statement = self
                .connection
                .prepare("SELECT name FROM pragma_table_info(?1)")
                .map_err(|e| self.sqlite(e))?;
            let present: Vec<String> = statement
                .query_map([table], |row| row.get(0))
                .and_then(|rows| rows.collect())
                .map_err(|e| self.sqlite(e))?;
            if present.is_empty() {
                return Err(self.unknown(format!("no table {table}")));
            }
            if let Some(missing) = columns.iter().find(|c| !present.iter().any(|p| p == *c)) {
                return Err(self.unknown(format!("no column {table}.{missing}")));
            }
        }
        Ok(())
    }

    fn unknown(&self, why: String) -> StoreError {
        StoreError::UnknownSchema {
            path: self.path.clone(),
            why,
        }
    }

    /// The sessions opencode ran in `directory` (its real path), newest
    /// first, at most `limit`.
    pub fn sessions(
        &self,
        directory: &Path,
        limit: usize,
    ) -> Result<Vec<StoredSession>, StoreError> {
        let Some(directory) = directory.to_str() else {
            return Ok(Vec::new());
        };
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut statement = self
            .connection
            .prepare(
                "SELECT id, directory, title, parent_id, time_updated FROM session \
                 WHERE directory = ?1 ORDER BY time_updated DESC, id DESC LIMIT ?2",
            )
            .map_err(|e| self.sqlite(e))?;
        let rows = statement
            .query_map(rusqlite::params![directory, limit], |row| {
                Ok(StoredSession {
                    id: row.get(0)?,
                    directory: PathBuf::from(row.get::<_, String>(1)?),
                    title: row.get(2)?,
                    parent_id: row.get(3)?,
                    time_updated: row.get(4)?,
                })
            })
            .and_then(|rows| rows.collect());
        rows.map_err(|e| self.sqlite(e))
    }

    /// The session with this id, when there is one.
    pub fn session(&self, id: &str) -> Result<Option<StoredSession>, StoreError> {
        self.connection
            .query_row(
                "SELECT id, directory, title, parent_id, time_updated FROM session WHERE id = ?1",
                [id],
                |row| {
                    Ok(StoredSession {
                        id: row.get(0)?,
                        directory: PathBuf::from(row.get::<_, String>(1)?),
                        title: row.get(2)?,
                        parent_id: row.get(3)?,
                        time_updated: row.get(4)?,
                    })
                },
            )
            .optional()
            .map_err(|e| self.sqlite(e))
    }

    /// What session `id`'s messages and parts take, in bytes of their
    /// `data`.
    pub fn size(&self, id: &str) -> Result<u64, StoreError> {
        self.connection
            .query_row(
                "SELECT (SELECT coalesce(sum(length(CAST(data AS BLOB))), 0) FROM message \
                 WHERE session_id = ?1) + (SELECT coalesce(sum(length(CAST(data AS BLOB))), 0) \
                 FROM part WHERE session_id = ?1)",
                [id],
                |row| row.get::<_, i64>(0),
            )
            .map(|n| u64::try_from(n).unwrap_or(0))
            .map_err(|e| self.sqlite(e))
    }

    /// The messages of session `id` with their parts, in opencode's order,
    /// in one read transaction (a message and its parts as one snapshot,
    /// however opencode writes meanwhile), and what was skipped.
    pub fn messages(&self, id: &str) -> Result<(Vec<StoredMessage>, Skipped), StoreError> {
        let read = self.changes(id, &mut Cursor::default())?;
        Ok(read.unwrap_or_default())
    }

    /// A counter that moves when another connection (opencode) commits to
    /// the database: unchanged, nothing was written since it was read.
    pub fn data_version(&self) -> Result<i64, StoreError> {
        self.connection
            .query_row("PRAGMA data_version", [], |row| row.get(0))
            .map_err(|e| self.sqlite(e))
    }

    /// What of session `id` changed since `cursor`, in one read
    /// transaction: each message added or updated since, or whose parts
    /// were (a part grows while it streams), read again whole with its
    /// parts, and the last message read always; `cursor` moved past them.
    /// `None` when rows read before are gone (opencode reverted or deleted
    /// messages): the session must be read again from the start.
    pub fn changes(
        &self,
        id: &str,
        cursor: &mut Cursor,
    ) -> Result<Option<(Vec<StoredMessage>, Skipped)>, StoreError> {
        let read = self
            .connection
            .unchecked_transaction()
            .map_err(|e| self.sqlite(e))?;
        if let Some((message_rowid, part_rowid)) = cursor.rowids {
            let still: (i64, i64) = self
                .connection
                .query_row(
                    "SELECT (SELECT count(*) FROM message WHERE session_id = ?1 AND rowid <= ?2), \
                     (SELECT count(*) FROM part WHERE session_id = ?1 AND rowid <= ?3)",
                    rusqlite::params![id, message_rowid, part_rowid],
                    |row| Ok((row.get(0)?, row.get(1)?)),
                )
                .map_err(|e| self.sqlite(e))?;
            if still.0 < cursor.seen.0 || still.1 < cursor.seen.1 {
                return Ok(None);
            }
        }
        // Where the rows are now, read in the same snapshot as the rows.
        let tables = |table: &str| {
            self.connection
                .query_row(
                    &format!(
                        "SELECT coalesce(max(rowid), 0), count(*), coalesce(max(time_updated), 0) \
                         FROM {table} WHERE session_id = ?1"
                    ),
                    [id],
                    |row| {
                        Ok((
                            row.get::<_, i64>(0)?,
                            row.get::<_, i64>(1)?,
                            row.get::<_, i64>(2)?,
                        ))
                    },
                )
                .map_err(|e| self.sqlite(e))
        };
        let (messages_now, parts_now) = (tables("message")?, tables("part")?);
        let mut skipped = Skipped::default();
        let mut messages = self.changed_messages(id, cursor, &mut skipped)?;
        for message in &mut messages {
            message.parts = self.parts_of(&message.id, &mut skipped)?;
        }
        // Dropping `read` ends the transaction; nothing was written.
        drop(read);
        cursor.rowids = Some((messages_now.0, parts_now.0));
        cursor.seen = (messages_now.1, parts_now.1);
        cursor.updated = cursor.updated.max(messages_now.2).max(parts_now.2);
        Ok(Some((messages, skipped)))
    }

    /// The messages `changes` reads: those added since `cursor` (a larger
    /// rowid), updated since (a `time_updated` within `LATE_MS` of the
    /// newest seen, for a row committed after a newer one), with a part
    /// added or updated since, and the last one read and any after it.
    fn changed_messages(
        &self,
        id: &str,
        cursor: &mut Cursor,
        skipped: &mut Skipped,
    ) -> Result<Vec<StoredMessage>, StoreError> {
        let (message_rowid, part_rowid) = cursor.rowids.unwrap_or((i64::MIN, i64::MIN));
        let since = match cursor.rowids {
            None => i64::MIN,
            Some(_) => cursor.updated.saturating_sub(LATE_MS),
        };
        let (last_created, last_id) = cursor.last.clone().unwrap_or((i64::MIN, String::new()));
        let mut statement = self
            .connection
            .prepare(
                "SELECT id, time_created, time_updated, \
                 CASE WHEN length(CAST(data AS BLOB)) <= ?6 THEN data END \
                 FROM message WHERE session_id = ?1 AND (rowid > ?2 OR time_updated >= ?4 \
                 OR (time_created, id) >= (?5, ?7) OR id IN (SELECT message_id FROM part \
                 WHERE session_id = ?1 AND (rowid > ?3 OR time_updated >= ?4))) \
                 ORDER BY time_created, id",
            )
            .map_err(|e| self.sqlite(e))?;
        let params = rusqlite::params![
            id,
            message_rowid,
            part_rowid,
            since,
            last_created,
            MAX_DATA_BYTES,
            last_id
        ];
        let rows = statement
            .query_map(params, |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, i64>(1)?,
                    row.get::<_, i64>(2)?,
                    row.get::<_, Option<String>>(3)?,
                ))
            })
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(|e| self.sqlite(e))?;
        let mut messages = Vec::with_capacity(rows.len());
        for (id, time_created, time_updated, data) in rows {
            cursor.last = Some((time_created, id.clone()));
            let Some(data) = object("message", &id, data, skipped) else {
                continue;
            };
            messages.push(StoredMessage {
                id,
                time_created,
                time_updated,
                data,
                parts: Vec::new(),
            });
        }
        Ok(messages)
    }

    /// A message's parts, in opencode's order, each with its id.
    fn parts_of(&self, message: &str, skipped: &mut Skipped) -> Result<Vec<Value>, StoreError> {
        let mut statement = self
            .connection
            .prepare_cached(
                "SELECT id, CASE WHEN length(CAST(data AS BLOB)) <= ?2 THEN data END \
                 FROM part WHERE message_id = ?1 ORDER BY time_created, id",
            )
            .map_err(|e| self.sqlite(e))?;
        let rows = statement
            .query_map(rusqlite::params![message, MAX_DATA_BYTES], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, Option<String>>(1)?))
            })
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(|e| self.sqlite(e))?;
        let mut parts = Vec::with_capacity(rows.len());
        for (id, data) in rows {
            let Some(mut data) = object("part", &id, data, skipped) else {
                continue;
            };
            if let Some(fields) = data.as_object_mut() {
                fields.insert("id".into(), Value::String(id));
            }
            parts.push(data);
        }
        Ok(parts)
    }
}

/// A row's `data` as a JSON object, or why not (counted in `skipped`).
fn object(
    table: &'static str,
    id: &str,
    data: Option<String>,
    skipped: &mut Skipped,
) -> Option<Value> {
    let mut skip = |why: String| {
        skipped.rows.push(SkippedRow {
            table,
            id: id.to_string(),
            why,
        });
        None
    };
    let Some(data) = data else {
        skipped.too_large += 1;
        return skip(format!("its data is over the {MAX_DATA_BYTES} bytes read"));
    };
    match serde_json::from_str::<Value>(&data) {
        Ok(value) if value.is_object() => Some(value),
        Ok(_) => {
            skipped.unreadable += 1;
            skip("its data is not a JSON object".into())
        }
        Err(e) => {
            skipped.unreadable += 1;
            skip(format!("its data is not JSON ({e})"))
        }
    }
}

/// opencode 1.18.33's tables as it creates them, the columns read here
/// and a few beside them (the tests build databases in its shape).
#[cfg(test)]
pub(super) const TABLES: &str = "
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A database in opencode's shape (WAL, as opencode sets it) with two
    /// sessions in `/ws` and one elsewhere; the writer stays open.
    fn database(dir: &Path) -> (PathBuf, Connection) {
        let path = dir.join("opencode.db");
        let db = Connection::open(&path).unwrap();
        db.execute_batch("PRAGMA journal_mode = WAL;").unwrap();
        db.execute_batch(TABLES).unwrap();
        for (id, directory, updated) in [
            ("ses_a", "/ws", 10),
            ("ses_b", "/ws", 20),
            ("ses_c", "/other", 30),
        ] {
            db.execute(
                "INSERT INTO session VALUES (?1, 'global', NULL, 's', ?2, 'Run the tests', '1.18.33', 1, ?3)",
                rusqlite::params![id, directory, updated],
            )
            .unwrap();
        }
        let messages = [
            ("msg_1", 1, r#"{"role":"user","time":{"created":1}}"#),
            (
                "msg_2",
                2,
                r#"{"role":"assistant","tokens":{"total":1520,"input":1500,"output":20,"reasoning":0,"cache":{"write":0,"read":0}},"modelID":"scripted","providerID":"local"}"#,
            ),
        ];
        for (id, at, data) in messages {
            db.execute(
                "INSERT INTO message VALUES (?1, 'ses_a', ?2, ?2, ?3)",
                rusqlite::params![id, at, data],
            )
            .unwrap();
        }
        let parts = [
            (
                "prt_1",
                "msg_1",
                1,
                r#"{"type":"text","text":"Run the tests."}"#,
            ),
            (
                "prt_3",
                "msg_2",
                3,
                r#"{"type":"tool","tool":"read","callID":"call_read","state":{"status":"completed","input":{"filePath":"/ws/src/b.py"},"output":"print('b')"}}"#,
            ),
            ("prt_2", "msg_2", 2, r#"{"type":"step-start"}"#),
        ];
        for (id, message, at, data) in parts {
            db.execute(
                "INSERT INTO part VALUES (?1, ?2, 'ses_a', ?3, ?3, ?4)",
                rusqlite::params![id, message, at, data],
            )
            .unwrap();
        }
        (path, db)
    }

    #[test]
    fn a_workspace_s_sessions_come_newest_first() {
        let dir = tempfile::tempdir().unwrap();
        let (path, _writer) = database(dir.path());
        let store = Store::open(&path).unwrap();
        let ids: Vec<String> = store
            .sessions(Path::new("/ws"), 10)
            .unwrap()
            .into_iter()
            .map(|s| s.id)
            .collect();
        assert_eq!(ids, ["ses_b", "ses_a"]);
        assert_eq!(store.sessions(Path::new("/ws"), 1).unwrap().len(), 1);
        assert!(store
            .sessions(Path::new("/nowhere"), 10)
            .unwrap()
            .is_empty());
        let one = store.session("ses_c").unwrap().unwrap();
        assert_eq!(one.directory, Path::new("/other"));
        assert_eq!(store.session("ses_x").unwrap(), None);
    }

    #[test]
    fn a_session_s_messages_carry_their_parts_in_opencode_s_order() {
        let dir = tempfile::tempdir().unwrap();
        let (path, _writer) = database(dir.path());
        let store = Store::open(&path).unwrap();
        let (messages, skipped) = store.messages("ses_a").unwrap();
        assert_eq!(skipped, Skipped::default());
        assert_eq!(messages.len(), 2);
        assert_eq!(messages[0].data["role"], "user");
        assert_eq!(messages[0].parts[0]["text"], "Run the tests.");
        assert_eq!(messages[1].data["tokens"]["input"], 1500);
        let types: Vec<&str> = messages[1]
            .parts
            .iter()
            .map(|p| p["type"].as_str().unwrap())
            .collect();
        assert_eq!(types, ["step-start", "tool"]);
        assert_eq!(messages[1].parts[1]["id"], "prt_3");
        assert_eq!(
            messages[1].parts[1]["state"]["input"]["filePath"],
            "/ws/src/b.py"
        );
    }

    #[test]
    fn opencode_writes_while_compactd_reads_and_compactd_sees_what_it_committed() {
        let dir = tempfile::tempdir().unwrap();
        let (path, writer) = database(dir.path());
        let store = Store::open(&path).unwrap();
        assert_eq!(store.messages("ses_a").unwrap().0.len(), 2);
        // opencode holds its write lock: compactd still reads, at once.
        writer.execute_batch("BEGIN IMMEDIATE").unwrap();
        writer
            .execute(
                "INSERT INTO message VALUES ('msg_3', 'ses_a', 3, 3, '{\"role\":\"user\"}')",
                [],
            )
            .unwrap();
        assert_eq!(store.messages("ses_a").unwrap().0.len(), 2);
        writer.execute_batch("COMMIT").unwrap();
        assert_eq!(store.messages("ses_a").unwrap().0.len(), 3);
    }

    #[test]
    fn compactd_never_writes_to_it() {
        let dir = tempfile::tempdir().unwrap();
        let (path, _writer) = database(dir.path());
        let store = Store::open(&path).unwrap();
        let refused = store.connection.execute("DELETE FROM session", []);
        assert!(refused.is_err(), "{refused:?}");
        assert_eq!(store.sessions(Path::new("/ws"), 10).unwrap().len(), 2);
    }

    #[test]
    fn a_row_that_is_not_a_json_object_is_skipped_and_counted() {
        let dir = tempfile::tempdir().unwrap();
        let (path, writer) = database(dir.path());
        writer
            .execute(
                "INSERT INTO part VALUES ('prt_9', 'msg_1', 'ses_a', 9, 9, 'not json')",
                [],
            )
            .unwrap();
        let (messages, skipped) = Store::open(&path).unwrap().messages("ses_a").unwrap();
        assert_eq!(skipped.unreadable, 1);
        assert_eq!(messages[0].parts.len(), 1);
    }

    #[test]
    fn what_is_not_opencode_s_database_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("opencode.db");
        assert!(matches!(Store::open(&missing), Err(StoreError::Missing(_))));
        assert!(matches!(
            Store::open(dir.path()),
            Err(StoreError::Io { .. })
        ));
        let text = dir.path().join("text.db");
        std::fs::write(
            &text,
            "not a database, just text that is long enough to be read",
        )
        .unwrap();
        assert!(matches!(Store::open(&text), Err(StoreError::Sqlite { .. })));
        let other = dir.path().join("other.db");
        Connection::open(&other)
            .unwrap()
            .execute_batch("CREATE TABLE session (id text); CREATE TABLE message (id text);")
            .unwrap();
        let refused = Store::open(&other).err().unwrap().to_string();
        assert!(refused.contains("no column session.directory"), "{refused}");
    }

    #[test]
    fn the_database_is_where_opencode_looks_for_it() {
        let homes = Homes::under(Path::new("/home/u"));
        assert_eq!(
            db_path(&homes),
            Path::new("/home/u/.local/share/opencode/opencode.db")
        );
        let homes = homes.with_var(DATA_HOME, "/data");
        assert_eq!(db_path(&homes), Path::new("/data/opencode/opencode.db"));
        let relative = homes.clone().with_var(DB_VAR, "other.db");
        assert_eq!(db_path(&relative), Path::new("/data/opencode/other.db"));
        let absolute = homes.with_var(DB_VAR, "/elsewhere/x.db");
        assert_eq!(db_path(&absolute), Path::new("/elsewhere/x.db"));
    }
}
