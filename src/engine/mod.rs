//! The engine: every operation on a session that both front ends (the
//! server's handlers and the transcript commands in `cli`) need, each
//! written once. It sits between the pure core (`session`, `compaction`,
//! `files`, `tokens`) and the edges (`store`, `summarize`): it creates
//! sessions from log entries, appends (persist, then apply), resolves the
//! context window and the meter, makes the one auto-compaction decision,
//! and plans, summarizes, concludes and applies compactions. It never
//! speaks the protocol: results are core types the front ends turn into
//! wire types.

pub(crate) mod append;
pub(crate) mod auto;
pub(crate) mod blobs;
pub mod compaction;
pub mod create;
pub(crate) mod disk;
pub mod follow;
pub(crate) mod meter;
pub(crate) mod recap;

use crate::config::Config;
use crate::files::Workspace;
use crate::session::Session;
use crate::store::{FollowedTranscript, SessionLog, StoreError};

/// A session with its log: what the server keeps open.
#[derive(Debug)]
pub struct OpenSession {
    pub session: Session,
    pub log: SessionLog,
    /// The agent transcript the session mirrors (`engine::follow`): its
    /// conversation comes from there, and `log` is compactd's own log of
    /// it.
    pub follows: Option<FollowedTranscript>,
}

/// What this process may do with an open session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// It holds the session's lock: it alone writes the log.
    Write,
    /// It read a snapshot of a log another process may be writing: nothing
    /// changes the session here, automatic compaction included.
    ReadOnly,
    /// It mirrors an agent's transcript: only the agent changes the
    /// conversation, so nothing else does here either, automatic
    /// compaction included. compactd writes only its own log of it (under
    /// that log's lock): the compactions a client asks for, recorded
    /// without changing the mirror.
    Follows,
}

impl OpenSession {
    pub fn new(session: Session, log: SessionLog) -> OpenSession {
        OpenSession {
            session,
            log,
            follows: None,
        }
    }

    pub fn access(&self) -> Access {
        if self.follows.is_some() {
            Access::Follows
        } else if self.log.is_read_only() {
            Access::ReadOnly
        } else {
            Access::Write
        }
    }

    /// Refuses every change to a session opened read-only or following an
    /// agent, before anything is planned, counted or written.
    pub fn check_writable(&self) -> EngineResult<()> {
        match self.access() {
            Access::Write => Ok(()),
            Access::ReadOnly => Err(EngineError::Refused(StoreError::ReadOnly {
                id: self.session.id.clone(),
            })),
            Access::Follows => Err(self.refusal()),
        }
    }

    /// Refuses a compaction of a session opened read-only. A followed
    /// session may be compacted: the compaction is recorded in compactd's
    /// own log of it (`engine::follow::record_own`).
    pub fn check_compactable(&self) -> EngineResult<()> {
        match self.access() {
            Access::ReadOnly => self.check_writable(),
            Access::Write | Access::Follows => Ok(()),
        }
    }

    /// Refuses what needs the conversation in the session's log (a
    /// branch): a followed session's is the agent's transcript.
    pub fn check_logged(&self) -> EngineResult<()> {
        match self.access() {
            Access::Follows => Err(self.refusal()),
            Access::Write | Access::ReadOnly => Ok(()),
        }
    }

    fn refusal(&self) -> EngineError {
        match &self.follows {
            Some(followed) => EngineError::follows(&self.session.id, followed),
            None => EngineError::Failed("no transcript followed".into()),
        }
    }
}

/// Why an engine operation changed nothing.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The request cannot be met as asked (a message id already used, no
    /// such message); the message names the field.
    #[error("{0}")]
    Invalid(String),
    /// Reading or writing the session log failed, or the state changed
    /// underneath; nothing was applied.
    #[error("{0}")]
    Failed(String),
    /// The store refused the session as asked: its id is no portable file
    /// name (`InvalidId`), a log already exists under it (`Exists`), another
    /// process writes it (`Locked`), or it is open read-only here
    /// (`ReadOnly`). Never `Io`, which is `Failed`.
    #[error(transparent)]
    Refused(StoreError),
    /// The session follows an agent's transcript: only the agent changes
    /// its conversation (`conversation/open` of its log is refused too).
    #[error("session `{id}` follows {agent}'s transcript {path}: only {agent} changes its conversation, so it is read-only here (conversation/follow opens it; conversation/compact records a summary in compactd's own log of it; strategy `handoff` starts a new session)")]
    Follows {
        id: String,
        /// The agent's name as people know it.
        agent: String,
        path: String,
    },
}

impl EngineError {
    pub fn follows(id: &str, followed: &FollowedTranscript) -> EngineError {
        let agent = crate::agents::Agent::from_name(&followed.agent)
            .map_or(followed.agent.clone(), |a| a.display_name().to_string());
        EngineError::Follows {
            id: id.to_string(),
            agent,
            path: followed.path.display().to_string(),
        }
    }
}

impl From<StoreError> for EngineError {
    fn from(e: StoreError) -> EngineError {
        match e {
            StoreError::Io { .. } => EngineError::Failed(e.to_string()),
            refused => EngineError::Refused(refused),
        }
    }
}

pub type EngineResult<T> = Result<T, EngineError>;

/// What a session takes from where it runs: how its summaries are
/// introduced, and how its file ledger resolves and lists paths.
#[derive(Debug, Clone)]
pub struct SessionEnv {
    pub summary_prefix: String,
    pub workspace: Workspace,
    pub max_listed_files: usize,
}

impl SessionEnv {
    pub fn new(config: &Config, workspace: Workspace) -> SessionEnv {
        SessionEnv {
            summary_prefix: summary_prefix(config),
            workspace,
            max_listed_files: config.max_listed_files,
        }
    }

    /// Gives a session this environment's workspace and listing cap.
    pub fn configure(&self, session: &mut Session) {
        session.file_ledger.workspace = self.workspace.clone();
        session.file_ledger.max_listed_files = self.max_listed_files;
    }
}

/// The text that introduces a summary: the configured one, else the
/// shipped default.
pub fn summary_prefix(config: &Config) -> String {
    config.summary_prefix.clone().unwrap_or_else(|| {
        crate::compaction::DEFAULT_SUMMARY_PREFIX
            .trim_end()
            .to_string()
    })
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests;
