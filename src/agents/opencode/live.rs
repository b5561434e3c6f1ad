//! A live read of one opencode session (`AgentKind::stored_feed`), for a
//! follow: the database is looked at again only when opencode committed
//! to it since (`PRAGMA data_version` on the connection kept open), and
//! then only the messages added or changed since are read
//! (`store::Store::changes`), each whole with its parts, as one entry for
//! the session's reader, which amends a message it gave before. Rows it
//! cannot read are given once, as lines that say why. Messages removed (a
//! revert) or a database replaced under the same path are a `Changed`:
//! the follow reads the session again from the start.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::super::{FeedStep, StoredFeed};
use super::store::{Cursor, Skipped, SkippedRow, Store, StoredMessage};
use crate::transcript::Line;

/// One opencode session read as it grows.
pub struct Feed {
    db: PathBuf,
    id: String,
    /// The connection (kept open between steps) and the file it opened.
    store: Option<(Store, Identity)>,
    /// `data_version` at the last read.
    version: Option<i64>,
    cursor: Cursor,
    /// Entries given so far: the next one's number.
    given: usize,
    /// Rows reported skipped, each once.
    reported: HashSet<(&'static str, String)>,
}

/// Which file the database is: a database replaced under its path is
/// another one.
type Identity = (u64, u64);

impl Feed {
    pub fn new(db: &Path, id: &str) -> Feed {
        Feed {
            db: db.to_path_buf(),
            id: id.to_string(),
            store: None,
            version: None,
            cursor: Cursor::default(),
            given: 0,
            reported: HashSet::new(),
        }
    }
}

fn identity(db: &Path) -> Result<Identity, String> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(db).map_err(|e| format!("opencode's database: {e}"))?;
    Ok((meta.dev(), meta.ino()))
}

impl StoredFeed for Feed {
    fn step(&mut self) -> Result<FeedStep, String> {
        let now = identity(&self.db)?;
        if self.store.is_none() {
            let store = Store::open(&self.db).map_err(|e| e.to_string())?;
            self.store = Some((store, now));
        }
        let Some((store, opened)) = &self.store else {
            return Ok(FeedStep::Read(Vec::new()));
        };
        if *opened != now {
            return Ok(FeedStep::Changed("replaced"));
        }
        let version = store.data_version().map_err(|e| e.to_string())?;
        if self.version == Some(version) {
            return Ok(FeedStep::Read(Vec::new()));
        }
        let Some((messages, skipped)) = store
            .changes(&self.id, &mut self.cursor)
            .map_err(|e| e.to_string())?
        else {
            return Ok(FeedStep::Changed("rewritten: messages were removed"));
        };
        self.version = Some(version);
        let mut lines = Vec::with_capacity(messages.len());
        for message in messages {
            self.given += 1;
            lines.push(entry(self.given, message));
        }
        let Skipped { rows, .. } = skipped;
        for row in rows {
            if self.reported.insert((row.table, row.id.clone())) {
                self.given += 1;
                lines.push(skipped_line(self.given, &row));
            }
        }
        Ok(FeedStep::Read(lines))
    }
}

/// A message with its parts as the entry the session's reader takes.
pub(super) fn entry(number: usize, message: StoredMessage) -> Line {
    let StoredMessage {
        id, data, parts, ..
    } = message;
    Line {
        number,
        value: Ok(serde_json::json!({"id": id, "data": data, "parts": parts})),
    }
}

/// A row the store skipped, as a line that says why (the reader counts it
/// among the unreadable lines, as a torn line of a transcript).
pub(super) fn skipped_line(number: usize, row: &SkippedRow) -> Line {
    Line {
        number,
        value: Err(format!("opencode's {} {}: {}", row.table, row.id, row.why)),
    }
}
