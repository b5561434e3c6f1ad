//! Sessions come from log entries. Opening a new session, resuming one,
//! importing a transcript, branching and handing off all build the
//! session with `replay` (`store::replay`, which applies each entry with
//! `store::apply_entry`), and every new one is written by `create` (its
//! whole log first, then the state), so a session in memory is always one
//! its log rebuilds.

use super::{now_ms, EngineError, EngineResult, OpenSession, SessionEnv};
use crate::compaction::{self, CompactionRecord};
use crate::files::FileTools;
use crate::import::Imported;
use crate::session::Session;
use crate::store::{self, LogEntry, SessionHeader, SessionSettings, SessionStore, LOG_VERSION};

/// The requested id, checked (ids are file names), or a new one.
pub fn session_id(requested: Option<String>) -> EngineResult<String> {
    match requested {
        Some(id) => {
            store::validate_session_id(&id)
                .map_err(|e| EngineError::Invalid(format!("sessionId: {e}")))?;
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

/// Writes a new session's log (header first) and builds the session from
/// it. A log that cannot be written is removed again: it was created just
/// now and holds nothing worth keeping.
pub fn create(
    store: &SessionStore,
    id: &str,
    entries: Vec<LogEntry>,
    env: &SessionEnv,
) -> EngineResult<OpenSession> {
    let mut log = store.open_log(id, false)?;
    if let Err(e) = log.append(&entries, true) {
        let _ = std::fs::remove_file(log.path());
        return Err(EngineError::Failed(format!(
            "could not write the session log: {e}"
        )));
    }
    Ok(OpenSession {
        session: replay(id, entries, env),
        log,
    })
}

/// A session resumed from its log, and what could not be read in it.
#[derive(Debug)]
pub struct Resumed {
    pub open: OpenSession,
    pub warnings: Vec<String>,
}

/// Resumes a session from its log; `None` when it has none.
pub fn resume(store: &SessionStore, id: &str, env: &SessionEnv) -> EngineResult<Option<Resumed>> {
    let Some(loaded) = store.load(id)? else {
        return Ok(None);
    };
    if let Some(LogEntry::Header(SessionHeader {
        follows: Some(followed),
        ..
    })) = loaded.entries.first()
    {
        // Its conversation is the agent's transcript, not this log.
        return Err(EngineError::Invalid(format!(
            "sessionId: `{id}` follows {} ({}); open it with conversation/follow",
            followed.path.display(),
            followed.agent
        )));
    }
    for warning in &loaded.warnings {
        tracing::warn!("session {id}: {warning}");
    }
    let session = replay(id, loaded.entries, env);
    let log = store.open_log(id, loaded.torn_tail)?;
    Ok(Some(Resumed {
        open: OpenSession { session, log },
        warnings: loaded.warnings,
    }))
}

/// A new, empty session with these settings.
pub fn open_new(
    store: &SessionStore,
    id: &str,
    settings: SessionSettings,
    env: &SessionEnv,
) -> EngineResult<OpenSession> {
    create(store, id, vec![header(id, now_ms(), settings)], env)
}

/// A new session holding an imported transcript, with the file events of
/// its tool calls. `already_open`: the id names a session open in memory.
pub fn import(
    store: &SessionStore,
    id: &str,
    already_open: bool,
    imported: &mut Imported,
    tools: &FileTools,
    env: &SessionEnv,
) -> EngineResult<OpenSession> {
    if already_open || store.load(id)?.is_some() {
        return Err(EngineError::Invalid(format!(
            "sessionId: `{id}` already exists; an import always creates a new session"
        )));
    }
    imported.track_files(tools, &env.workspace);
    let entries = imported.log_entries(id, now_ms());
    create(store, id, entries, env)
}

/// A new session whose log holds everything logged in `source_id` before
/// `before_message_id`, compactions included: branching before a
/// compaction undoes it.
pub fn branch(
    store: &SessionStore,
    source_id: &str,
    before_message_id: &str,
    env: &SessionEnv,
) -> EngineResult<OpenSession> {
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
        auto_compact: source.auto_compact_switch,
    };
    vec![
        header(id, created_at, settings),
        LogEntry::Message {
            message: compaction::handoff_message(&record.full_summary()),
        },
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
