//! Why a session log could not be used.

use std::io;
use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("invalid sessionId `{shown}`: {why}; use 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit, not ending with '.', and no Windows device name (con, prn, aux, nul, com0-com9, lpt0-lpt9)")]
    InvalidId { shown: String, why: &'static str },
    /// Another process (or an earlier open in this one) writes this session.
    #[error("session `{id}` is open in another compactd process ({}); open it with `readOnly: true` to read it, or close it there first", holder(*.pid))]
    Locked { id: String, pid: Option<u32> },
    #[error("session `{id}` already exists")]
    Exists { id: String },
    /// The session was opened to read only (`readOnly`): nothing writes it.
    #[error("session `{id}` is open read-only: it cannot be appended to, compacted, pinned or reconfigured (open it without `readOnly` once no other process writes it)")]
    ReadOnly { id: String },
    #[error("session log {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: io::Error,
    },
}

fn holder(pid: Option<u32>) -> String {
    match pid {
        Some(pid) => format!("pid {pid}"),
        None => "pid not recorded".to_string(),
    }
}

pub(super) fn io_error(path: &Path) -> impl FnOnce(io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.display().to_string(),
        source,
    }
}
