//! What background work hands back to the state owner, on one channel:
//! compactions (their progress, then their written summaries), imports,
//! the file watcher's reports and the follow poll's ticks. Every owner
//! that starts work holds a `JobSender`.

use std::marker::PhantomData;

use lsp_server::RequestId;
use serde::Serialize;
use tokio::sync::mpsc;

use super::effects::Effects;
use super::rpc::{to_json, RpcResult};
use crate::engine::compaction::Written;
use crate::engine::OpenSession;
use crate::files::watch::DiskChange;
use crate::protocol::methods::{self, Method};
use crate::protocol::{Format, Trigger};
use crate::summarize::Progress;

pub(crate) type JobSender = mpsc::UnboundedSender<JobResult>;

/// A request of method `M` a background job owes an answer to: answered
/// once, with `M`'s result (its type from the method table) or an error.
pub(crate) struct Pending<M> {
    id: RequestId,
    method: PhantomData<fn() -> M>,
}

impl<M> Clone for Pending<M> {
    fn clone(&self) -> Self {
        Pending::new(self.id.clone())
    }
}

impl<M> std::fmt::Debug for Pending<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Pending({})", self.id)
    }
}

impl<M> Pending<M> {
    /// Only the routes make one, for the request they route to `M`'s
    /// handler.
    pub(super) fn new(id: RequestId) -> Pending<M> {
        Pending {
            id,
            method: PhantomData,
        }
    }

    /// The request's (server-wide) id.
    pub fn id(&self) -> &RequestId {
        &self.id
    }
}

impl<M: Method<Result: Serialize>> Pending<M> {
    /// Answers it among what a message or job caused, after the
    /// notifications before it.
    pub fn respond(self, effects: &mut Effects, result: RpcResult<M::Result>) {
        effects.respond(self.id, result.map(to_json));
    }

    /// Answers it from a thread off the state owner, through it.
    pub fn send(self, results: &JobSender, result: RpcResult<M::Result>) {
        let _ = results.send(JobResult::Answer(self.id, result.map(to_json)));
    }
}

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
    /// A transcript read whole to be followed (or why not).
    Followed(Box<FollowLoaded>),
    /// A request answered off the state owner (a search, a recap), by
    /// `Pending::send`.
    Answer(RequestId, RpcResult<serde_json::Value>),
}

/// A transcript read to be followed, off the state owner (a large one
/// takes seconds).
pub(crate) struct FollowLoaded {
    pub id: String,
    pub outcome: RpcResult<(OpenSession, crate::engine::follow::Mirror)>,
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
    pub request: Pending<methods::Import>,
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
