//! The append-only JSONL session log: one file per session, one entry per
//! line. Nothing is ever rewritten in place; compaction appends an entry.
//! Loading skips a torn last line (a crash mid-write) and any corrupt line,
//! with a warning, and keeps everything else. A process writes a log only
//! while it holds the session's lock (`lock.rs`); others may read it.

pub(crate) mod blobs;
mod entry;
mod error;
mod ids;
mod load;
mod lock;
mod log;

use std::fs::OpenOptions;
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};

use crate::files::{FileTools, SessionFileLedger, Workspace};
use crate::regular_file;
use crate::session::Session;

pub use blobs::Blobs;
pub use entry::{
    FollowedTranscript, LogEntry, MirroredSession, SessionHeader, SessionSettings, TokenCount,
    LOG_VERSION,
};
use error::io_error;
pub use error::StoreError;
pub use ids::{shown_id, validate_session_id};
pub use load::{
    apply_entry, apply_settings, fill_token_counts, read_entries, replay, ReadReport, Replay,
};
pub use lock::{LockError, SessionLock};
pub use log::{Durability, SessionLog};

/// Where session logs live, and how they are written.
#[derive(Debug, Clone)]
pub struct SessionStore {
    dir: PathBuf,
    durability: log::SharedDurability,
}

/// A session read back from its log, entries kept (for branching).
#[derive(Debug)]
pub struct Loaded {
    pub entries: Vec<LogEntry>,
    pub warnings: Vec<String>,
    /// The file does not end with a newline (a torn write).
    pub torn_tail: bool,
}

/// A session replayed from its log.
#[derive(Debug)]
pub struct Resumed {
    pub session: Session,
    pub warnings: Vec<String>,
    pub torn_tail: bool,
}

impl SessionStore {
    pub fn new(dir: impl Into<PathBuf>, durability: Durability) -> SessionStore {
        let store = SessionStore {
            dir: dir.into(),
            durability: Default::default(),
        };
        store.set_durability(durability);
        store
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The blob store of this store's sessions.
    pub fn blobs(&self) -> Blobs {
        Blobs::in_data_dir(&self.dir)
    }

    /// Applies to every log this store opened, immediately.
    pub fn set_durability(&self, durability: Durability) {
        self.durability.set(durability);
    }

    pub fn path_for(&self, id: &str) -> Result<PathBuf, StoreError> {
        validate_session_id(id)?;
        Ok(self.dir.join(format!("{id}.jsonl")))
    }

    /// The sidecar whose lock says which process writes the session.
    pub fn lock_path_for(&self, id: &str) -> Result<PathBuf, StoreError> {
        validate_session_id(id)?;
        Ok(self.dir.join(format!("{id}.lock")))
    }

    /// Takes the session's lock, so this process alone writes its log.
    pub fn lock(&self, id: &str) -> Result<SessionLock, StoreError> {
        let path = self.lock_path_for(id)?;
        std::fs::create_dir_all(&self.dir).map_err(io_error(&self.dir))?;
        SessionLock::acquire(&path).map_err(|e| match e {
            LockError::Held { pid } => StoreError::Locked {
                id: id.to_string(),
                pid,
            },
            LockError::Io(source) => io_error(&path)(source),
        })
    }

    /// Reads a session's log with every entry; `None` when it does not exist.
    pub fn load(&self, id: &str) -> Result<Option<Loaded>, StoreError> {
        let mut entries = Vec::new();
        let report = self.read(id, |entry| entries.push(entry))?;
        Ok(report.map(|report| Loaded {
            entries,
            warnings: report.warnings,
            torn_tail: report.torn_tail,
        }))
    }

    /// Replays a session from its log as it is read; `None` when there is
    /// no log. Takes no lock: call `lock` first to write afterwards.
    pub fn resume(&self, id: &str, summary_prefix: String) -> Result<Option<Resumed>, StoreError> {
        let mut replay = Replay::new(id, summary_prefix);
        let report = self.read(id, |entry| replay.add(entry))?;
        Ok(report.map(|mut report| {
            let (session, distrusted) = replay.finish_with_warnings();
            report.warnings.extend(distrusted);
            Resumed {
                session,
                warnings: report.warnings,
                torn_tail: report.torn_tail,
            }
        }))
    }

    /// The agent transcript a log follows, from its header (the first
    /// line only); `None` for a session of its own or no log.
    pub fn follows(&self, id: &str) -> Result<Option<FollowedTranscript>, StoreError> {
        Ok(self.header(id)?.and_then(|h| h.follows))
    }

    /// The agent's session the log of `id` says it mirrors, if any (from
    /// its first line).
    pub fn mirrors(&self, id: &str) -> Result<Option<MirroredSession>, StoreError> {
        Ok(self.header(id)?.and_then(|h| h.mirrors))
    }

    /// The header of the log of `id`, read from its first line alone.
    fn header(&self, id: &str) -> Result<Option<SessionHeader>, StoreError> {
        let path = self.path_for(id)?;
        let file = match regular_file::open_read(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_error(&path)(e)),
        };
        let mut first = String::new();
        // Headers are small; a first line past this is no follow header.
        io::Read::take(BufReader::new(file), 64 << 10)
            .read_line(&mut first)
            .map_err(io_error(&path))?;
        Ok(match serde_json::from_str::<LogEntry>(&first) {
            Ok(LogEntry::Header(header)) => Some(header),
            _ => None,
        })
    }

    fn read(&self, id: &str, each: impl FnMut(LogEntry)) -> Result<Option<ReadReport>, StoreError> {
        let path = self.path_for(id)?;
        let file = match regular_file::open_read(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_error(&path)(e)),
        };
        let reader = BufReader::with_capacity(1 << 20, file);
        read_entries(reader, each)
            .map(Some)
            .map_err(io_error(&path))
    }

    /// Opens a log for appending under a lock this process holds, creating
    /// the directory and file. After a torn tail, the fragment is ended
    /// first so it stays a line of its own. The log itself is locked too
    /// (on Unix, where the lock is advisory and readers are not stopped):
    /// a lock file deleted under a running writer cannot let a second
    /// process write the same log.
    pub fn open_log(
        &self,
        id: &str,
        lock: SessionLock,
        torn_tail: bool,
    ) -> Result<SessionLog, StoreError> {
        let path = self.path_for(id)?;
        std::fs::create_dir_all(&self.dir).map_err(io_error(&self.dir))?;
        let file = regular_file::open_with(&path, OpenOptions::new().create(true).append(true))
            .map_err(io_error(&path))?;
        #[cfg(unix)]
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(StoreError::Locked {
                    id: id.to_string(),
                    pid: None,
                })
            }
            // No locks on this filesystem: the lock file already said so.
            Err(std::fs::TryLockError::Error(e)) if e.kind() == io::ErrorKind::Unsupported => {}
            Err(std::fs::TryLockError::Error(e)) => return Err(io_error(&path)(e)),
        }
        let mut log = SessionLog::writable(id, path, file, lock, self.durability.clone())?;
        if torn_tail {
            log.write_raw(b"\n", false)?;
        }
        Ok(log)
    }

    /// Locks and opens the log of a new session: refused when a log with
    /// content already exists under that id.
    pub fn create_log(&self, id: &str) -> Result<SessionLog, StoreError> {
        let lock = self.lock(id)?;
        let path = self.path_for(id)?;
        match std::fs::metadata(&path) {
            Ok(meta) if meta.len() > 0 => return Err(StoreError::Exists { id: id.to_string() }),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_error(&path)(e)),
        }
        self.open_log(id, lock, false)
    }

    /// A session opened for reading only: no lock, no writes.
    pub fn read_only_log(&self, id: &str) -> Result<SessionLog, StoreError> {
        Ok(SessionLog::read_only(id, self.path_for(id)?))
    }
}

/// Parses log bytes, skipping lines that do not parse.
pub fn parse_log(bytes: &[u8]) -> Loaded {
    let mut entries = Vec::new();
    let report = read_entries(bytes, |entry| entries.push(entry)).expect("reading memory");
    Loaded {
        entries,
        warnings: report.warnings,
        torn_tail: report.torn_tail,
    }
}

/// Adds, after each result that completes a successful tool call, the
/// file events of that call: for logs written without them (imported
/// transcripts). A log that already has file events is left as it is.
pub fn with_tool_file_events(
    entries: Vec<LogEntry>,
    tools: &FileTools,
    workspace: &Workspace,
) -> Vec<LogEntry> {
    if entries.iter().any(|e| matches!(e, LogEntry::File(_))) {
        return entries;
    }
    let mut files = SessionFileLedger::new(workspace.clone(), 0);
    let mut out = Vec::with_capacity(entries.len());
    for entry in entries {
        let mut events = Vec::new();
        if let LogEntry::Message { message, .. } = &entry {
            events = files.tool_events(std::slice::from_ref(message), tools);
            files.observe(message);
        }
        out.push(entry);
        out.extend(events.into_iter().map(|(_, event)| LogEntry::File(event)));
    }
    out
}

/// The entries of a new session branched from `entries` before the message
/// `before_message_id`: everything logged before it, compactions included,
/// so branching before a compaction undoes it. `None` if no such message.
pub fn branch_entries(
    entries: &[LogEntry],
    new_id: &str,
    created_at: u64,
    before_message_id: &str,
) -> Option<Vec<LogEntry>> {
    let position = entries.iter().position(
        |e| matches!(e, LogEntry::Message { message, .. } if message.id == before_message_id),
    )?;
    let mut out = Vec::with_capacity(position + 1);
    for entry in &entries[..position] {
        out.push(match entry {
            LogEntry::Header(header) => LogEntry::Header(SessionHeader {
                session_id: new_id.to_string(),
                created_at,
                ..header.clone()
            }),
            other => other.clone(),
        });
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::Message;
    use crate::tokens::Encoding;

    fn message_line(id: &str) -> String {
        serde_json::to_string(&LogEntry::message(Message::user(id, "hi"))).unwrap()
    }

    #[test]
    fn torn_and_corrupt_lines_are_skipped() {
        let text = format!(
            "{}\n{{not json\n{}\n{}",
            message_line("a"),
            message_line("b"),
            &message_line("c")[..20]
        );
        let loaded = parse_log(text.as_bytes());
        assert_eq!(loaded.entries.len(), 2);
        assert!(loaded.torn_tail);
        assert_eq!(loaded.warnings.len(), 2);
        assert!(loaded.warnings[0].contains("line 2: unreadable"));
        assert!(loaded.warnings[1].contains("line 4: torn last line"));
        let whole = parse_log(format!("{}\n\n", message_line("a")).as_bytes());
        assert_eq!((whole.entries.len(), whole.torn_tail), (1, false));
    }

    #[test]
    fn appends_after_a_torn_tail_start_on_a_new_line() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path(), Durability::Flush);
        std::fs::write(dir.path().join("s.jsonl"), "{\"type\":\"message\",\"mess").unwrap();
        let resumed = store.resume("s", String::new()).unwrap().unwrap();
        let mut log = store
            .open_log("s", store.lock("s").unwrap(), resumed.torn_tail)
            .unwrap();
        log.append(&[LogEntry::message(Message::user("x", "y"))], false)
            .unwrap();
        let reloaded = store.load("s").unwrap().unwrap();
        assert_eq!(reloaded.entries.len(), 1);
        assert!(!reloaded.torn_tail);
    }

    #[test]
    fn one_writer_per_session_and_readers_write_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path(), Durability::Fsync);
        let mut log = store.create_log("s").unwrap();
        log.append(&[LogEntry::message(Message::user("a", "hi"))], false)
            .unwrap();
        match store.lock("s") {
            Err(e @ StoreError::Locked { pid: Some(pid), .. }) => {
                assert_eq!(pid, std::process::id());
                assert!(e.to_string().contains(&format!("pid {pid}")), "{e}");
            }
            other => panic!("second lock: {other:?}"),
        }
        let mut reader = store.read_only_log("s").unwrap();
        assert!(reader.is_read_only());
        let refused = reader.append(&[LogEntry::message(Message::user("b", "no"))], false);
        assert!(matches!(refused, Err(StoreError::ReadOnly { .. })));
        drop(log);
        assert!(matches!(
            store.create_log("s"),
            Err(StoreError::Exists { .. })
        ));
        assert_eq!(store.load("s").unwrap().unwrap().entries.len(), 1);
        assert!(store.create_log("t").is_ok());
    }

    /// Counts stored with the session's encoding are taken as they are;
    /// others are counted again.
    #[test]
    fn stored_counts_are_used_only_for_their_encoding() {
        let counted = |encoding: &str, count: u64| LogEntry::Message {
            message: Message::user(format!("m{count}"), "hello world"),
            tokens: Some(TokenCount {
                encoding: encoding.into(),
                count,
            }),
        };
        // Counts within what "hello world" could tokenize to (15 at most).
        let entries = vec![
            counted("o200k_base", 10),
            counted("cl100k_base", 11),
            counted("o200k_base/2", 12),
            LogEntry::message(Message::user("plain", "hello world")),
        ];
        let session = replay("s", entries, String::new());
        let fresh =
            crate::tokens::count_message(Encoding::O200k, &Message::user("x", "hello world"));
        assert_ne!(fresh, 10);
        assert_eq!(session.estimated_tokens(), 10 + 3 * fresh);
    }

    #[test]
    fn parallel_counts_equal_counting_one_by_one() {
        let text = include_str!("mod.rs");
        let mut entries: Vec<LogEntry> = (0..400)
            .map(|i| {
                let start = (i * 997) % (text.len() - 3000);
                let slice =
                    &text[text.floor_char_boundary(start)..text.floor_char_boundary(start + 3000)];
                LogEntry::message(Message::user(format!("m{i}"), slice))
            })
            .collect();
        fill_token_counts(&mut entries, Encoding::O200k);
        for entry in &entries {
            let LogEntry::Message { message, tokens } = entry else {
                unreachable!()
            };
            let expected = crate::tokens::count_message(Encoding::O200k, message);
            assert_eq!(
                tokens.as_ref(),
                Some(&TokenCount::new(Encoding::O200k, message, expected))
            );
        }
    }
}
