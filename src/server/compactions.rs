//! The running compactions: one job per session at a time (later callers
//! join it as waiters), the summary written in a spawned task, progress
//! passed on under the job's token. What a compaction plans, writes and
//! changes is the engine's (`engine::compaction`, `engine::auto`); this
//! owner only schedules it and says what to send, so a cancelled or
//! failed job leaves the history exactly as it was. Settling a finished
//! job into its session is the state's (`State::finish_compaction`).

use std::collections::HashMap;

use lsp_server::{ErrorCode, RequestId};

use super::effects::Effects;
use super::jobs::{CompactionDone, JobProgress, JobResult, JobSender, Pending};
use super::rpc::RpcError;
use crate::compaction::trigger::{AttemptVerdict, TriggerKind};
use crate::compaction::PlannedJob;
use crate::config::Config;
use crate::engine;
use crate::engine::compaction::{JobSummarizer, NotPlanned};
use crate::engine::OpenSession;
use crate::protocol::{
    methods, AutoCompactStoppedNotification, CompactResult, ProgressToken, ReportErrorResult,
    Strategy, Trigger,
};
use crate::summarize::Progress;

/// Who waits for a job's answer, and in what shape (its method's result).
#[derive(Debug, Clone)]
pub(crate) enum Waiter {
    Compact(Pending<methods::Compact>),
    ReportError {
        pending: Pending<methods::ReportError>,
        kind: String,
    },
}

impl Waiter {
    pub fn id(&self) -> &RequestId {
        match self {
            Waiter::Compact(pending) => pending.id(),
            Waiter::ReportError { pending, .. } => pending.id(),
        }
    }

    /// The answer in this waiter's shape.
    fn answer(self, result: Result<CompactResult, RpcError>, effects: &mut Effects) {
        match self {
            Waiter::Compact(pending) => pending.respond(effects, result),
            Waiter::ReportError { pending, kind } => {
                let result = result.map(|r| ReportErrorResult {
                    overflow: true,
                    kind,
                    retry: r.compacted,
                    compaction: Some(r),
                });
                pending.respond(effects, result);
            }
        }
    }
}

/// A running compaction.
pub(crate) struct RunningJob {
    key: u64,
    /// The request that started it, if any (auto-compaction has none).
    owner: Option<RequestId>,
    waiters: Vec<Waiter>,
    abort: tokio::task::AbortHandle,
    /// The token its progress goes under: the client's, or one created
    /// when the job started.
    progress: Option<ProgressToken>,
}

/// What a caller asks for.
pub(crate) struct CompactionRequest {
    pub strategy: Strategy,
    pub keep_recent_tokens: u64,
    /// Overrides the configured `keepRecentMessages`.
    pub keep_recent_messages: Option<usize>,
    pub instructions: Option<String>,
    pub trigger: Trigger,
    /// The client's `workDoneToken`; without one, a token is created
    /// (`new_token`) when the client can create them, once the compaction
    /// will run.
    pub progress: Option<ProgressToken>,
    pub waiter: Option<Waiter>,
    pub auto: bool,
}

pub(crate) struct Compactions {
    running: HashMap<String, RunningJob>,
    next_job: u64,
    results: JobSender,
}

impl Compactions {
    pub fn new(results: JobSender) -> Compactions {
        Compactions {
            running: HashMap::new(),
            next_job: 0,
            results,
        }
    }

    pub fn is_running(&self, session_id: &str) -> bool {
        self.running.contains_key(session_id)
    }

    /// The request that started a session's running job.
    pub fn owner(&self, session_id: &str) -> Option<&RequestId> {
        self.running.get(session_id)?.owner.as_ref()
    }

    /// The session whose running job `request` started.
    pub fn started_by(&self, request: &RequestId) -> Option<String> {
        self.running
            .iter()
            .find(|(_, job)| job.owner.as_ref() == Some(request))
            .map(|(session, _)| session.clone())
    }

    /// The session whose running job reports under `token`.
    pub fn reporting_under(&self, token: &ProgressToken) -> Option<String> {
        self.running
            .iter()
            .find(|(_, job)| job.progress.as_ref() == Some(token))
            .map(|(session, _)| session.clone())
    }

    /// Takes a request that joined a running job off its waiters; false
    /// when none waits under that id.
    pub fn leave(&mut self, request: &RequestId) -> bool {
        self.running.values_mut().any(|job| {
            let at = job.waiters.iter().position(|w| w.id() == request);
            at.map(|at| job.waiters.remove(at)).is_some()
        })
    }

    /// Starts (or joins) a compaction of the session the caller found.
    /// Answers the waiter right away when there is nothing to do.
    pub fn start(
        &mut self,
        open: &mut OpenSession,
        config: &Config,
        request: CompactionRequest,
        new_token: &mut dyn FnMut() -> Option<ProgressToken>,
        effects: &mut Effects,
    ) {
        let session_id = &*open.session.id.clone();
        if let Some(job) = self.running.get_mut(session_id) {
            job.waiters.extend(request.waiter);
            return;
        }
        if let Err(error) = open.check_compactable() {
            if let Some(waiter) = request.waiter {
                effects.respond(waiter.id().clone(), Err(error.into()));
            }
            return;
        }
        let config = &*config.with_kept_messages(request.keep_recent_messages);
        let planned = engine::compaction::plan(
            config,
            &open.session,
            request.strategy,
            request.keep_recent_tokens,
            request.instructions.clone(),
        );
        match planned {
            Ok(planned) => self.spawn(config, session_id, request, planned, new_token, effects),
            Err(NotPlanned {
                reason,
                tokens_before,
            }) => {
                if request.auto {
                    note_auto_outcome(open, config, Err(reason.clone()), effects);
                }
                if let Some(waiter) = request.waiter {
                    let result =
                        CompactResult::not_compacted(reason, tokens_before, request.strategy);
                    waiter.answer(Ok(result), effects);
                }
            }
        }
    }

    /// Starts the progress (creating a token if need be) and runs the job
    /// in a background task: its summarizer inputs are prepared on a
    /// blocking thread (their cost grows with what is summarized; the
    /// state owner only planned), then summarized. Progress and result
    /// come back to the state owner through the job channel.
    fn spawn(
        &mut self,
        config: &Config,
        session_id: &str,
        request: CompactionRequest,
        planned: PlannedJob,
        new_token: &mut dyn FnMut() -> Option<ProgressToken>,
        effects: &mut Effects,
    ) {
        let progress = request.progress.clone().or_else(new_token);
        if let Some(token) = &progress {
            let begin = serde_json::json!({
                "kind": "begin",
                "title": "Compacting conversation",
                "cancellable": true,
                "message": format!("{}: {} messages", request.strategy.as_str(), planned.job.messages_summarized),
                "percentage": 0
            });
            effects.progress(token, begin);
        }
        self.next_job += 1;
        let key = self.next_job;
        let summarizer = JobSummarizer::new(config, planned.job.encoding);
        let results = self.results.clone();
        let task_session = session_id.to_string();
        let (trigger, auto) = (request.trigger, request.auto);
        let handle = tokio::spawn(async move {
            let report = |progress: Progress| {
                let _ = results.send(JobResult::Progress(JobProgress {
                    session_id: task_session.clone(),
                    key,
                    progress,
                }));
            };
            let outcome = engine::compaction::write(planned, &summarizer, trigger, &report).await;
            let _ = results.send(JobResult::Compaction(Box::new(CompactionDone {
                key,
                session_id: task_session,
                trigger,
                outcome,
                auto,
            })));
        });
        self.running.insert(
            session_id.to_string(),
            RunningJob {
                key,
                owner: request.waiter.as_ref().map(|w| w.id().clone()),
                waiters: request.waiter.into_iter().collect(),
                abort: handle.abort_handle(),
                progress,
            },
        );
    }

    /// Passes a running job's progress on under its token; a job that was
    /// cancelled or replaced meanwhile reports nothing more.
    pub fn report(&self, report: JobProgress, effects: &mut Effects) {
        let Some(token) = self
            .running
            .get(&report.session_id)
            .filter(|job| job.key == report.key)
            .and_then(|job| job.progress.as_ref())
        else {
            return;
        };
        let mut value = serde_json::json!({"kind": "report", "message": report.progress.message});
        // LSP's percentage is optional: left out when unknown, never null.
        if let Some(percentage) = report.progress.percentage {
            value["percentage"] = percentage.into();
        }
        effects.progress(token, value);
    }

    /// Cancels the running compaction of a session: the task is aborted
    /// (the history stays as it was), its progress ends, and everyone
    /// waiting on it is answered with -32800.
    pub fn cancel(&mut self, session_id: &str, effects: &mut Effects) {
        let Some(job) = self.running.remove(session_id) else {
            return;
        };
        job.abort.abort();
        if let Some(token) = &job.progress {
            effects.progress(
                token,
                serde_json::json!({"kind": "end", "message": "cancelled"}),
            );
        }
        for waiter in job.waiters {
            effects.respond(waiter.id().clone(), Err(cancelled()));
        }
    }

    /// Stops a session's job without a word (its session is gone).
    pub fn abort(&mut self, session_id: &str) {
        if let Some(job) = self.running.remove(session_id) {
            job.abort.abort();
        }
    }

    /// Stops every job (the server is stopping).
    pub fn abort_all(&mut self) {
        for (_, job) in self.running.drain() {
            job.abort.abort();
        }
    }

    /// The running job a finished one was, when it is still the session's
    /// (a cancelled or replaced job's result is dropped).
    pub fn take_finished(&mut self, done: &CompactionDone) -> Option<RunningJob> {
        let running = self.running.remove(&done.session_id)?;
        if running.key != done.key {
            // A newer job owns the session now; this one was cancelled.
            self.running.insert(done.session_id.clone(), running);
            return None;
        }
        Some(running)
    }

    /// Starts an automatic compaction of the session the caller found
    /// when the engine decides one is due. Returns the triggers that fired.
    pub fn maybe_auto_compact(
        &mut self,
        open: &mut OpenSession,
        config: &Config,
        new_token: &mut dyn FnMut() -> Option<ProgressToken>,
        effects: &mut Effects,
    ) -> Vec<TriggerKind> {
        let session_id = &open.session.id;
        let compacting = self.is_running(session_id);
        let decision = engine::auto::decide(config, &open.session, open.access(), compacting);
        let Some(start_now) = decision.start else {
            return decision.fired;
        };
        tracing::info!(
            "session {session_id}: auto-compacting ({:?}, triggers {:?}, keep {})",
            start_now.strategy,
            decision.fired,
            start_now.keep_recent_tokens
        );
        let request = CompactionRequest {
            strategy: start_now.strategy,
            keep_recent_tokens: start_now.keep_recent_tokens,
            keep_recent_messages: None,
            instructions: None,
            trigger: Trigger::Threshold,
            progress: None,
            waiter: None,
            auto: true,
        };
        self.start(open, config, request, new_token, effects);
        decision.fired
    }
}

impl RunningJob {
    /// Ends the job's progress with what came of it.
    pub fn end_progress(&self, result: &Result<CompactResult, RpcError>, effects: &mut Effects) {
        if let Some(token) = &self.progress {
            let message = match result {
                Ok(r) => format!("{} → {} tokens", r.tokens_before, r.tokens_after),
                Err(e) => e.message.clone(),
            };
            effects.progress(
                token,
                serde_json::json!({"kind": "end", "message": message}),
            );
        }
    }

    /// Answers everyone waiting on the job.
    pub fn answer(self, result: &Result<CompactResult, RpcError>, effects: &mut Effects) {
        for waiter in self.waiters {
            waiter.answer(result.clone(), effects);
        }
    }
}

/// The answer to a cancelled request.
pub(crate) fn cancelled() -> RpcError {
    RpcError::new(ErrorCode::RequestCanceled, "request cancelled")
}

/// Feeds an automatic compaction's outcome to the session's breaker, and
/// tells the client when the breaker stops auto-compaction.
pub(crate) fn note_auto_outcome(
    open: &mut OpenSession,
    config: &Config,
    outcome: Result<(u64, u64), String>,
    effects: &mut Effects,
) {
    let session_id = &*open.session.id.clone();
    match engine::auto::record_outcome(config, &mut open.session, outcome) {
        AttemptVerdict::Helped => {}
        AttemptVerdict::Failed { reason } => {
            tracing::info!("session {session_id}: auto-compaction did not help ({reason}); the next try keeps a smaller tail")
        }
        AttemptVerdict::Stop { reason } => {
            tracing::warn!("session {session_id}: {reason}");
            effects.notify::<methods::AutoCompactStopped>(
                session_id,
                AutoCompactStoppedNotification {
                    session_id: session_id.to_string(),
                    reason,
                },
            );
        }
    }
}
