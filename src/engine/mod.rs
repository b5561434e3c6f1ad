//! The engine: every operation on a session that both front ends (the
//! server's handlers and the transcript commands in `cli`) need, each
//! written once. It sits between the pure core (`session`, `compaction`,
//! `files`, `tokens`) and the edges (`store`, `summarize`): it creates
//! sessions from log entries, appends (persist, then apply), resolves the
//! context window and the meter, makes the one auto-compaction decision,
//! and plans, summarizes, concludes and applies compactions. It never
//! speaks the protocol: results are core types the front ends turn into
//! wire types.

pub mod append;
pub mod auto;
pub mod compaction;
pub mod create;
pub mod follow;
pub mod window;

use crate::config::Config;
use crate::files::Workspace;
use crate::session::Session;
use crate::store::{SessionLog, StoreError};

/// A session with its log: what the server keeps open.
#[derive(Debug)]
pub struct OpenSession {
    pub session: Session,
    pub log: SessionLog,
}

/// Why an engine operation changed nothing.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EngineError {
    /// The request cannot be met as asked (a bad id, a message id already
    /// used, no such message); the message names the field.
    #[error("{0}")]
    Invalid(String),
    /// Reading or writing the session log failed, or the state changed
    /// underneath; nothing was applied.
    #[error("{0}")]
    Failed(String),
}

impl From<StoreError> for EngineError {
    fn from(e: StoreError) -> EngineError {
        EngineError::Failed(e.to_string())
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
