//! Sessions come from log entries. Opening a new session, resuming one,
//! importing a transcript, branching and handing off all build the
//! session with `replay` (`store::replay`, which applies each entry with
//! `store::apply_entry`), and every new one is written by `create` (its
//! whole log first, then the state), so a session in memory is always one
//! its log rebuilds. A session opened to write is held under its lock
//! (`store::SessionLock`) for as long as it is open: one process writes a
//! log; others may only read it (`open_read_only`).

use super::{now_ms, EngineError, EngineResult, OpenSession, SessionEnv};
use crate::compaction::{self, CompactionRecord};
use crate::files::FileTools;
use crate::import::Imported;
use crate::session::Session;
use crate::store::{
    self, LogEntry, SessionHeader, SessionLog, SessionSettings, SessionStore, StoreError,
    LOG_VERSION,
};
use crate::tokens::Encoding;

/// The requested id, checked (ids are file names), or a new one.
pub fn session_id(requested: Option<String>) -> EngineResult<String> {
    match requested {
        Some(id) => {
            store::validate_session_id(&id)?;
            Ok(id)
        }
        None => Ok(new_session_id()),
    }
}

pub fn new_session_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// The first entry of a session's log.
pub fn header(id: &str, created_at: u64, settings: SessionSettings) -> LogEntry {
    LogEntry::Header(SessionHeader {
        version: LOG_VERSION,
        session_id: id.to_string(),
        created_at,
        settings,
        follows: None,
        mirrors: None,
    })
}

/// Rebuilds a session from its log entries (`store::replay`), in this
/// environment. Only the latest compaction decides the view; earlier ones
/// are history.
pub fn replay(id: &str, entries: Vec<LogEntry>, env: &SessionEnv) -> Session {
    let mut session = store::replay(id, entries, env.summary_prefix.clone());
    env.configure(&mut session);
    session
}

/// Writes a new session's log (header first) under its lock, and builds
/// the session from it. Refused when a log already exists under `id` or
/// another process holds its lock.
pub fn create(
    store: &SessionStore,
    id: &str,
    entries: Vec<LogEntry>,
    env: &SessionEnv,
) -> EngineResult<OpenSession> {
    write_new(store.create_log(id)?, id, entries, env)
}

/// Writes the entries of a new session to its freshly opened `log`, with
/// the token count of every message (so resuming it counts nothing), then
/// builds the session. A log that cannot be written is removed again: it
/// was created just now and holds nothing worth keeping.
fn write_new(
    mut log: SessionLog,
    id: &str,
    mut entries: Vec<LogEntry>,
    env: &SessionEnv,
) -> EngineResult<OpenSession> {
    let model = entries.iter().find_map(|e| match e {
        LogEntry::Header(header) => Some(header.settings.model.as_deref()),
        _ => None,
    });
    let encoding = Encoding::for_model(model.flatten());
    let blobs = log.blobs();
    for entry in entries.iter_mut() {
        if let LogEntry::Message { message, .. } = entry {
            let stored = super::blobs::store_data(&blobs, std::slice::from_mut(message));
            if let Err(e) = stored {
                let _ = std::fs::remove_file(log.path());
                return Err(e);
            }
        }
    }
    store::fill_token_counts(&mut entries, encoding);
    if let Err(e) = log.append(&entries, true) {
        let _ = std::fs::remove_file(log.path());
        return Err(EngineError::Failed(format!(
            "could not write the session log: {e}"
        )));
    }
    Ok(OpenSession::new(replay(id, entries, env), log))
}

/// A session opened from the store, and what could not be read in its log.
#[derive(Debug)]
pub struct Opened {
    pub open: OpenSession,
    /// It was resumed from an existing log (not created).
    pub resumed: bool,
    pub warnings: Vec<String>,
}

/// Opens the session `id` to write: under its lock, taken before the log
/// is read so no other process appends in between; resumed from its log,
/// or created with `settings` when it has none.
pub fn open(
    store: &SessionStore,
    id: &str,
    settings: SessionSettings,
    mirrors: Option<crate::store::MirroredSession>,
    env: &SessionEnv,
) -> EngineResult<Opened> {
    refuse_follow_log(store, id)?;
    let lock = store.lock(id)?;
    let Some(resumed) = store.resume(id, env.summary_prefix.clone())? else {
        let log = store.open_log(id, lock, false)?;
        let mut entries = vec![header(id, now_ms(), settings)];
        // A new session records the agent's session it mirrors.
        if let Some(LogEntry::Header(header)) = entries.first_mut() {
            header.mirrors = mirrors;
        }
        return Ok(Opened {
            open: write_new(log, id, entries, env)?,
            resumed: false,
            warnings: Vec::new(),
        });
    };
    let log = store.open_log(id, lock, resumed.torn_tail)?;
    Ok(opened(id, resumed, log, env))
}

/// Opens the session `id` to read only: a snapshot of its log as it is
/// now, without its lock (another process may be writing it). Every change
/// to it is refused.
pub fn open_read_only(store: &SessionStore, id: &str, env: &SessionEnv) -> EngineResult<Opened> {
    refuse_follow_log(store, id)?;
    let Some(resumed) = store.resume(id, env.summary_prefix.clone())? else {
        return Err(EngineError::Invalid(format!(
            "sessionId: there is no session `{id}` to open read-only"
        )));
    };
    let log = store.read_only_log(id)?;
    Ok(opened(id, resumed, log, env))
}

/// A log whose header names an agent's transcript is compactd's log of a
/// followed session (`engine::follow`): its conversation is the
/// transcript, which only `conversation/follow` reads.
fn refuse_follow_log(store: &SessionStore, id: &str) -> EngineResult<()> {
    match store.follows(id)? {
        Some(followed) => Err(EngineError::follows(id, &followed)),
        None => Ok(()),
    }
}

/// A session resumed from its log, in this environment.
fn opened(id: &str, mut resumed: store::Resumed, log: SessionLog, env: &SessionEnv) -> Opened {
    // A message naming data the blob store lacks is kept and reported.
    let missing = super::blobs::missing(&log.blobs(), resumed.session.all_messages());
    resumed.warnings.extend(missing);
    for warning in &resumed.warnings {
        tracing::warn!("session {id}: {warning}");
    }
    let mut session = resumed.session;
    env.configure(&mut session);
    Opened {
        open: OpenSession::new(session, log),
        resumed: true,
        warnings: resumed.warnings,
    }
}

/// A new session holding an imported transcript, with the file events of
/// its tool calls. The caller has checked that no session with this id is
/// open in memory. The new log is taken (locked, and refused if one
/// exists) before the transcript is turned into entries.
pub fn import(
    store: &SessionStore,
    id: &str,
    mut imported: Imported,
    tools: &FileTools,
    env: &SessionEnv,
) -> EngineResult<OpenSession> {
    let log = store.create_log(id).map_err(|e| match e {
        StoreError::Exists { .. } => already_exists(id),
        e => e.into(),
    })?;
    imported.track_files(tools, &env.workspace);
    let entries = imported.into_log_entries(id, now_ms());
    write_new(log, id, entries, env)
}

/// An import under an id that is taken.
pub fn already_exists(id: &str) -> EngineError {
    EngineError::Invalid(format!(
        "sessionId: `{id}` already exists; an import always creates a new session"
    ))
}

/// A new session whose log holds everything logged in `source_id` before
/// `before_message_id`, compactions included: branching before a
/// compaction undoes it.
pub fn branch(
    store: &SessionStore,
    source: &OpenSession,
    before_message_id: &str,
    env: &SessionEnv,
) -> EngineResult<OpenSession> {
    source.check_logged()?;
    let source_id = source.session.id.as_str();
    let loaded = store
        .load(source_id)?
        .ok_or_else(|| EngineError::Failed("the session log is missing".into()))?;
    let new_id = new_session_id();
    let entries = store::branch_entries(&loaded.entries, &new_id, now_ms(), before_message_id)
        .ok_or_else(|| {
            EngineError::Invalid(format!(
                "invalid params at `beforeMessageId`: no message `{before_message_id}` in session `{source_id}`"
            ))
        })?;
    create(store, &new_id, entries, env)
}

/// The log of the session a handoff starts: the source's settings, then
/// the handoff message carrying the summary.
pub fn handoff_entries(
    source: &Session,
    record: &CompactionRecord,
    id: &str,
    created_at: u64,
) -> Vec<LogEntry> {
    let settings = SessionSettings {
        model: source.model.clone(),
        context_window: source.context_window,
        system_prompt: source.system_prompt.clone(),
        tool_definitions: source.tool_definitions.clone(),
        auto_compact: source.auto_compact_switch,
    };
    vec![
        header(id, created_at, settings),
        LogEntry::message(compaction::handoff_message(&record.full_summary())),
    ]
}

/// Starts the new session a handoff writes; the source stays as it was.
pub fn handoff(
    store: &SessionStore,
    source: &Session,
    record: &CompactionRecord,
    env: &SessionEnv,
) -> EngineResult<OpenSession> {
    let id = new_session_id();
    let entries = handoff_entries(source, record, &id, now_ms());
    create(store, &id, entries, env)
}
