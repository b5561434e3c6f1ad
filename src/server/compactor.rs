//! Running compactions on the server: one job per session at a time (later
//! callers join it as waiters), the summary written in a spawned task, the
//! result applied back on the state owner and answered to every waiter.
//! What a compaction plans, writes and changes is the engine's
//! (`engine::compaction`, `engine::auto`); this file only schedules it, so
//! a cancelled or failed job leaves the history exactly as it was.

use lsp_server::RequestId;

use lsp_server::ErrorCode;

use super::{JobResult, RpcError, Server};
use crate::compaction::trigger::{AttemptVerdict, TriggerKind};
use crate::compaction::{CompactionRecord, PlannedJob};
use crate::engine;
use crate::engine::compaction::{JobSummarizer, NotPlanned, Outcome, Written};
use crate::protocol::{
    methods, AutoCompactStoppedNotification, CompactResult, DidCompactNotification, ProgressToken,
    ReportErrorResult, Strategy, Trigger,
};
use crate::summarize::Progress;

/// Who waits for a job's answer, and in what shape.
#[derive(Debug, Clone)]
pub(crate) enum Waiter {
    Compact(RequestId),
    ReportError { id: RequestId, kind: String },
}

impl Waiter {
    pub fn id(&self) -> &RequestId {
        match self {
            Waiter::Compact(id) | Waiter::ReportError { id, .. } => id,
        }
    }
}

/// A running compaction.
pub(crate) struct RunningJob {
    pub key: u64,
    /// The request that started it, if any (auto-compaction has none).
    pub owner: Option<RequestId>,
    pub waiters: Vec<Waiter>,
    pub abort: tokio::task::AbortHandle,
    /// The token its progress goes under: the client's, or one created
    /// when the job started.
    pub progress: Option<ProgressToken>,
}

/// A progress report from a running job, on its way to the client through
/// the state owner (which knows whether its token may be used yet).
pub(crate) struct JobProgress {
    pub session_id: String,
    pub key: u64,
    pub progress: Progress,
}

/// A job whose summaries are written and recorded (or why not), back on
/// the state owner.
pub(crate) struct Finished {
    pub key: u64,
    pub session_id: String,
    pub trigger: Trigger,
    pub outcome: Result<Written, String>,
    pub auto: bool,
}

/// What a caller asks the compactor for.
pub(crate) struct CompactionRequest {
    pub strategy: Strategy,
    pub keep_recent_tokens: u64,
    pub instructions: Option<String>,
    pub trigger: Trigger,
    /// The client's `workDoneToken`; without one, a token is created when
    /// the client can create them, once the compaction will run.
    pub progress: Option<ProgressToken>,
    pub waiter: Option<Waiter>,
    pub auto: bool,
}

/// Starts (or joins) a compaction of `session_id`. Answers the waiter
/// right away when there is nothing to do.
pub(crate) fn start(server: &mut Server, session_id: &str, request: CompactionRequest) {
    if let Some(job) = server.running.get_mut(session_id) {
        job.waiters.extend(request.waiter);
        return;
    }
    let open = match server.compactable_session(session_id) {
        Ok(open) => open,
        Err(error) => {
            if let Some(waiter) = request.waiter {
                server.respond(waiter.id().clone(), Err(error));
            }
            return;
        }
    };
    let planned = engine::compaction::plan(
        &server.config,
        &open.session,
        request.strategy,
        request.keep_recent_tokens,
        request.instructions.clone(),
    );
    let planned = match planned {
        Ok(planned) => planned,
        Err(NotPlanned {
            reason,
            tokens_before,
        }) => {
            if request.auto {
                note_auto_outcome(server, session_id, Err(reason.clone()));
            }
            if let Some(waiter) = request.waiter {
                let result = CompactResult::not_compacted(reason, tokens_before, request.strategy);
                answer(server, &waiter, Ok(result));
            }
            return;
        }
    };
    spawn(server, session_id, request, planned);
}

/// Starts the progress (creating a token if need be) and runs the job in
/// a background task: its summarizer inputs are prepared on a blocking
/// thread (their cost grows with what is summarized; the state owner only
/// planned), then summarized. Progress and result come back to the state
/// owner through the job channel.
fn spawn(server: &mut Server, session_id: &str, request: CompactionRequest, planned: PlannedJob) {
    let progress = request
        .progress
        .clone()
        .or_else(|| server.create_progress_token());
    if let Some(token) = &progress {
        let begin = serde_json::json!({
            "kind": "begin",
            "title": "Compacting conversation",
            "cancellable": true,
            "message": format!("{}: {} messages", request.strategy.as_str(), planned.job.messages_summarized),
            "percentage": 0
        });
        server.send_progress(token, begin);
    }
    server.next_job += 1;
    let key = server.next_job;
    let summarizer = JobSummarizer::new(&server.config, planned.job.encoding);
    let job_results = server.job_results_tx.clone();
    let task_session = session_id.to_string();
    let (trigger, auto) = (request.trigger, request.auto);
    let handle = tokio::spawn(async move {
        let report = |progress: Progress| {
            let _ = job_results.send(JobResult::Progress(JobProgress {
                session_id: task_session.clone(),
                key,
                progress,
            }));
        };
        let outcome = engine::compaction::write(planned, &summarizer, trigger, &report).await;
        let _ = job_results.send(JobResult::Compaction(Box::new(Finished {
            key,
            session_id: task_session,
            trigger,
            outcome,
            auto,
        })));
    });
    server.running.insert(
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
pub(crate) fn report(server: &mut Server, report: JobProgress) {
    let Some(token) = server
        .running
        .get(&report.session_id)
        .filter(|job| job.key == report.key)
        .and_then(|job| job.progress.clone())
    else {
        return;
    };
    let mut value = serde_json::json!({"kind": "report", "message": report.progress.message});
    // LSP's percentage is optional: left out when unknown, never null.
    if let Some(percentage) = report.progress.percentage {
        value["percentage"] = percentage.into();
    }
    server.send_progress(&token, value);
}

/// Cancels the running compaction of a session: the task is aborted (the
/// history stays as it was), its progress ends, and everyone waiting on it
/// is answered with -32800.
pub(crate) fn cancel(server: &mut Server, session_id: &str) {
    let Some(job) = server.running.remove(session_id) else {
        return;
    };
    job.abort.abort();
    if let Some(token) = &job.progress {
        let end = serde_json::json!({"kind": "end", "message": "cancelled"});
        server.send_progress(token, end);
    }
    for waiter in job.waiters {
        server.respond(waiter.id().clone(), Err(cancelled()));
    }
}

/// The answer to a cancelled request.
pub(crate) fn cancelled() -> RpcError {
    RpcError::new(ErrorCode::RequestCanceled, "request cancelled")
}

/// Applies a finished job and answers everyone waiting on it.
pub(crate) fn finish(server: &mut Server, finished: Finished) {
    let Some(running) = server.running.remove(&finished.session_id) else {
        return; // cancelled: already answered
    };
    if running.key != finished.key {
        // A newer job owns the session now; this one was cancelled.
        server.running.insert(finished.session_id.clone(), running);
        return;
    }
    let Finished {
        session_id,
        trigger,
        outcome,
        auto,
        ..
    } = finished;
    let result = apply(server, &session_id, outcome);
    if let Some(token) = &running.progress {
        let message = match &result {
            Ok(r) => format!("{} → {} tokens", r.tokens_before, r.tokens_after),
            Err(e) => e.message.clone(),
        };
        let end = serde_json::json!({"kind": "end", "message": message});
        server.send_progress(token, end);
    }
    if let Some(result) = result.as_ref().ok().filter(|r| r.compacted) {
        server.notify_session(
            &session_id,
            methods::DID_COMPACT,
            DidCompactNotification {
                session_id: session_id.clone(),
                trigger,
                result: result.clone(),
            },
        );
        if let Some(open) = server.sessions.get(&session_id) {
            server.send_meter(&open.session);
        }
    }
    if auto {
        let outcome = match &result {
            Ok(r) => Ok((r.tokens_before, r.tokens_after)),
            Err(e) => Err(e.message.clone()),
        };
        note_auto_outcome(server, &session_id, outcome);
    }
    for waiter in &running.waiters {
        answer(server, waiter, result.clone());
    }
}

/// What the engine settles the finished job into, carried out: applied
/// (to a followed session: recorded in compactd's own log), left out, or
/// handed off to a new session.
fn apply(
    server: &mut Server,
    session_id: &str,
    outcome: Result<Written, String>,
) -> Result<CompactResult, RpcError> {
    let written = outcome.map_err(|why| {
        RpcError::internal(format!("compaction failed, history unchanged: {why}"))
    })?;
    let settled = server.settle(session_id, written)?;
    match settled.outcome {
        Outcome::Applied(record) => Ok(match server.recorded_reason(session_id) {
            // Only the agent changes what its model sees.
            Some(reason) => CompactResult {
                compacted: false,
                reason: Some(reason),
                ..CompactResult::from_record(&record)
            },
            None => CompactResult::from_record(&record),
        }),
        Outcome::NotSmaller { record, reason } => Ok(CompactResult::not_applied(&record, reason)),
        Outcome::Handoff(record) => handoff(server, session_id, &record),
    }
}

/// Starts the new session a handoff writes; the source stays as it was.
fn handoff(
    server: &mut Server,
    source_id: &str,
    record: &CompactionRecord,
) -> Result<CompactResult, RpcError> {
    let source = &server.session(source_id)?.session;
    let opened = engine::create::handoff(&server.store, source, record, &server.session_env())?;
    let new_id = opened.session.id.clone();
    let tokens = engine::compaction::handoff_tokens(source, &opened.session);
    let result = CompactResult::handed_off(record, tokens, &new_id);
    server.clients.follow_on(source_id, &new_id);
    server.send_meter(&opened.session);
    server.insert_session(opened);
    Ok(result)
}

fn answer(server: &mut Server, waiter: &Waiter, result: Result<CompactResult, RpcError>) {
    let value = match waiter {
        Waiter::Compact(_) => result.map(|r| serde_json::to_value(r).expect("results serialize")),
        Waiter::ReportError { kind, .. } => result.map(|r| {
            serde_json::to_value(ReportErrorResult {
                overflow: true,
                kind: kind.clone(),
                retry: r.compacted,
                compaction: Some(r),
            })
            .expect("results serialize")
        }),
    };
    server.respond(waiter.id().clone(), value);
}

/// Feeds an automatic compaction's outcome to the session's breaker, and
/// tells the client when the breaker stops auto-compaction.
fn note_auto_outcome(server: &mut Server, session_id: &str, outcome: Result<(u64, u64), String>) {
    let Some(open) = server.sessions.get_mut(session_id) else {
        return;
    };
    match engine::auto::record_outcome(&server.config, &mut open.session, outcome) {
        AttemptVerdict::Helped => {}
        AttemptVerdict::Failed { reason } => {
            tracing::info!("session {session_id}: auto-compaction did not help ({reason}); the next try keeps a smaller tail")
        }
        AttemptVerdict::Stop { reason } => {
            tracing::warn!("session {session_id}: {reason}");
            server.notify_session(
                session_id,
                methods::AUTO_COMPACT_STOPPED,
                AutoCompactStoppedNotification {
                    session_id: session_id.to_string(),
                    reason,
                },
            );
        }
    }
}

/// Starts an automatic compaction when the engine decides one is due.
/// Returns the triggers that fired.
pub(crate) fn maybe_auto_compact(server: &mut Server, session_id: &str) -> Vec<TriggerKind> {
    let Some(open) = server.sessions.get(session_id) else {
        return Vec::new();
    };
    let compacting = server.running.contains_key(session_id);
    let decision = engine::auto::decide(&server.config, &open.session, open.access(), compacting);
    let Some(start_now) = decision.start else {
        return decision.fired;
    };
    tracing::info!(
        "session {session_id}: auto-compacting ({:?}, triggers {:?}, keep {})",
        start_now.strategy,
        decision.fired,
        start_now.keep_recent_tokens
    );
    start(
        server,
        session_id,
        CompactionRequest {
            strategy: start_now.strategy,
            keep_recent_tokens: start_now.keep_recent_tokens,
            instructions: None,
            trigger: Trigger::Threshold,
            progress: None,
            waiter: None,
            auto: true,
        },
    );
    decision.fired
}
