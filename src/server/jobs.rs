//! What background work hands back to the state owner, on one channel:
//! compactions (their progress, then their written summaries), imports,
//! the file watcher's reports and the follow poll's ticks. Every owner
//! that starts work holds a `JobSender`.

use lsp_server::RequestId;
use tokio::sync::mpsc;

use super::rpc::RpcResult;
use crate::engine::compaction::Written;
use crate::engine::OpenSession;
use crate::files::watch::DiskChange;
use crate::protocol::{Format, Trigger};
use crate::summarize::Progress;

pub(crate) type JobSender = mpsc::UnboundedSender<JobResult>;

/// What a background job hands back to the state owner.
pub(crate) enum JobResult {
    Compaction(Box<CompactionDone>),
    /// A running compaction's progress, for its token.
    Progress(JobProgress),
    /// An import whose session is built.
    Import(Box<ImportDone>),
    /// The file watcher saw changes on disk.
    FilesChanged(Vec<DiskChange>),
    /// Time to look at the followed transcripts again.
    FollowPoll,
    /// A request answered off the state owner (a search).
    Answer(RequestId, RpcResult<serde_json::Value>),
}

/// A progress report from a running compaction, on its way to the client
/// through the state owner (which knows whether its token may be used yet).
pub(crate) struct JobProgress {
    pub session_id: String,
    pub key: u64,
    pub progress: Progress,
}

/// A compaction whose summaries are written (or why not).
pub(crate) struct CompactionDone {
    pub key: u64,
    pub session_id: String,
    pub trigger: Trigger,
    pub outcome: Result<Written, String>,
    pub auto: bool,
}

/// An import whose session was built (or not).
pub(crate) struct ImportDone {
    pub request: RequestId,
    pub session_id: String,
    pub outcome: RpcResult<(OpenSession, ImportSummary)>,
}

/// What an import's result reports of the transcript.
pub(crate) struct ImportSummary {
    pub format: Format,
    pub messages: usize,
    pub compactions: usize,
    pub skipped: usize,
    pub skipped_reasons: Vec<String>,
}
