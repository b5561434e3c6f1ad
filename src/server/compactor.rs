//! Running compactions for every caller: `conversation/compact`,
//! auto-compaction after appends and checks, and overflow recovery. One
//! job per session at a time (later callers join it); the summary is
//! written in a background task and applied back on the state owner, so a
//! cancelled or failed job leaves the history exactly as it was.

use std::time::Instant;

use lsp_server::RequestId;

use super::{now_ms, send_progress, RpcError, Server};
use crate::compaction::trigger::{self, AttemptVerdict};
use crate::compaction::Strategy;
use crate::protocol::{
    methods, AutoCompactStoppedNotification, CompactResult, DidCompactNotification, ProgressToken,
    ReportErrorResult,
};
use crate::session::{CompactionJob, JobTarget, PlanOptions, Trigger};
use crate::store::LogEntry;
use crate::summarize::driver::{self, DriverOutput, DriverSettings};
use crate::summarize::{self, Progress};

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
    pub progress: Option<ProgressToken>,
}

/// A finished summarizer job, back on the state owner.
pub(crate) struct Finished {
    pub key: u64,
    pub session_id: String,
    pub trigger: Trigger,
    pub job: CompactionJob,
    pub main: Option<DriverOutput>,
    pub turn_prefix: Option<DriverOutput>,
    pub started: Instant,
    pub auto: bool,
}

/// What a caller asks for.
pub(crate) struct Request {
    pub strategy: Strategy,
    pub keep_recent_tokens: u64,
    pub instructions: Option<String>,
    pub trigger: Trigger,
    pub progress: Option<ProgressToken>,
    pub waiter: Option<Waiter>,
    pub auto: bool,
}

impl Server {
    pub(crate) fn plan_options(
        &self,
        strategy: Strategy,
        keep: u64,
        instructions: Option<String>,
    ) -> PlanOptions {
        PlanOptions::from_config(&self.config, strategy, keep, instructions)
    }

    pub(crate) fn driver_settings(&self, session_id: &str) -> DriverSettings {
        let encoding = self
            .sessions
            .get(session_id)
            .map(|o| o.session.encoding())
            .unwrap_or_default();
        DriverSettings::from_config(&self.config, encoding)
    }
}

/// Starts (or joins) a compaction of `session_id`. Answers the waiter
/// right away when there is nothing to do.
pub(crate) fn start(server: &mut Server, session_id: &str, request: Request) {
    if let Some(job) = server.running.get_mut(session_id) {
        job.waiters.extend(request.waiter);
        return;
    }
    let open = match server.sessions.get(session_id) {
        Some(open) if !open.log.is_read_only() => open,
        found => {
            if let Some(waiter) = request.waiter {
                let error = match found {
                    Some(_) => super::read_only(session_id),
                    None => super::no_session(session_id),
                };
                server.respond(waiter.id().clone(), Err(error));
            }
            return;
        }
    };
    let tokens_before = server.meter_info(&open.session).context_tokens;
    let options = server.plan_options(
        request.strategy,
        request.keep_recent_tokens,
        request.instructions.clone(),
    );
    let job = match open.session.plan(&options, tokens_before) {
        Ok(job) => job,
        Err(reason) => {
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
    let progress = request.progress.clone();
    if let Some(token) = &progress {
        send_progress(
            &server.out,
            token,
            serde_json::json!({
                "kind": "begin",
                "title": "Compacting conversation",
                "cancellable": true,
                "message": format!("{}: {} messages", request.strategy.as_str(), job.messages_summarized),
                "percentage": 0
            }),
        );
    }
    server.next_job += 1;
    let key = server.next_job;
    let summarizer = summarize::from_config(&server.config.summarizer);
    let settings = server.driver_settings(session_id);
    let out = server.out.clone();
    let jobs = server.jobs.clone();
    let task_progress = progress.clone();
    let task_session = session_id.to_string();
    let trigger = request.trigger;
    let auto = request.auto;
    let handle = tokio::spawn(async move {
        let started = Instant::now();
        let report = |p: Progress| {
            if let Some(token) = &task_progress {
                send_progress(
                    &out,
                    token,
                    serde_json::json!({"kind": "report", "message": p.message, "percentage": p.percentage}),
                );
            }
        };
        let main = match &job.input {
            Some(input) => {
                Some(driver::summarize(summarizer.as_ref(), input, settings, &report).await)
            }
            None => None,
        };
        let turn_prefix = match &job.turn_prefix {
            Some(input) => {
                Some(driver::summarize(summarizer.as_ref(), input, settings, &report).await)
            }
            None => None,
        };
        let _ = jobs.send(super::JobDone::Compaction(Box::new(Finished {
            key,
            session_id: task_session,
            trigger,
            job,
            main,
            turn_prefix,
            started,
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
    let result = apply(server, &finished);
    if let Some(token) = &running.progress {
        let message = match &result {
            Ok(r) => format!("{} → {} tokens", r.tokens_before, r.tokens_after),
            Err(e) => e.message.clone(),
        };
        send_progress(
            &server.out,
            token,
            serde_json::json!({"kind": "end", "message": message}),
        );
    }
    if let Some(result) = result.as_ref().ok().filter(|r| r.compacted) {
        server.out.notify(
            methods::DID_COMPACT,
            DidCompactNotification {
                session_id: finished.session_id.clone(),
                trigger: finished.trigger,
                result: result.clone(),
            },
        );
        if let Some(open) = server.sessions.get(&finished.session_id) {
            server.send_meter(&open.session);
        }
    }
    if finished.auto {
        let outcome = match &result {
            Ok(r) => Ok((r.tokens_before, r.tokens_after)),
            Err(e) => Err(e.message.clone()),
        };
        note_auto_outcome(server, &finished.session_id, outcome);
    }
    for waiter in &running.waiters {
        answer(server, waiter, result.clone());
    }
}

fn apply(server: &mut Server, finished: &Finished) -> Result<CompactResult, RpcError> {
    let open = server.session_mut(&finished.session_id)?;
    let job = &finished.job;
    if job.generation != open.session.compactions().len() {
        return Err(RpcError::internal(
            "compaction superseded by another one, history unchanged",
        ));
    }
    let record = open.session.record_compaction(
        job,
        finished.main.as_ref(),
        finished.turn_prefix.as_ref(),
        finished.trigger,
        now_ms(),
        finished.started.elapsed().as_millis() as u64,
    );
    if job.target == JobTarget::Handoff {
        return handoff(server, &finished.session_id, &record);
    }
    if record.tokens_after >= record.tokens_before {
        // A summary larger than what it replaces would only cost context.
        let mut result = CompactResult::not_compacted(
            format!(
                "not applied: the compacted history would not be smaller ({} → {} tokens)",
                record.tokens_before, record.tokens_after
            ),
            record.tokens_before,
            record.strategy,
        );
        result.summary = record.full_summary();
        result.tokens_after = record.tokens_after;
        return Ok(result);
    }
    open.log
        .append(&[LogEntry::Compaction(Box::new(record.clone()))], true)
        .map_err(|e| {
            RpcError::internal(format!(
                "could not record the compaction, history unchanged: {e}"
            ))
        })?;
    open.session.apply_compaction(record.clone());
    Ok(CompactResult::from_record(&record))
}

/// Starts the new session a handoff writes; the source stays as it was.
fn handoff(
    server: &mut Server,
    source_id: &str,
    record: &crate::session::CompactionRecord,
) -> Result<CompactResult, RpcError> {
    let source = &server.session(source_id)?.session;
    let settings = crate::store::SessionSettings {
        model: source.model.clone(),
        context_window: source.context_window,
        system_prompt: source.system_prompt.clone(),
        auto_compact: source.auto_compact,
    };
    let new_id = uuid::Uuid::new_v4().to_string();
    let log = server.store.create_log(&new_id)?;
    let mut opened = super::handlers::open::create_session(server, &new_id, settings, log)?;
    let first = crate::compaction::handoff_message(&record.full_summary());
    opened
        .log
        .append(&[LogEntry::message(first.clone())], true)
        .map_err(|e| RpcError::internal(e.to_string()))?;
    opened.session.push(vec![first]);
    let mut result = CompactResult::from_record(record);
    result.compacted = false;
    result.reason = Some(format!(
        "handoff written to the new session {new_id}; this session is unchanged"
    ));
    result.tokens_after = opened.session.estimated_tokens();
    result.handoff_session_id = Some(new_id.clone());
    server.send_meter(&opened.session);
    server.sessions.insert(new_id, opened);
    Ok(result)
}

fn answer(server: &Server, waiter: &Waiter, result: Result<CompactResult, RpcError>) {
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

/// Feeds an automatic compaction's outcome to the session's breaker.
fn note_auto_outcome(server: &mut Server, session_id: &str, outcome: Result<(u64, u64), String>) {
    let still_over = server
        .triggers_fired(session_id)
        .is_some_and(|t| !t.is_empty());
    let Some(open) = server.sessions.get_mut(session_id) else {
        return;
    };
    let verdict = match outcome {
        Ok((before, after)) => open.session.auto.record_attempt(before, after, still_over),
        Err(why) => open.session.auto.record_no_progress(&why),
    };
    match verdict {
        AttemptVerdict::Helped => {}
        AttemptVerdict::Failed { reason } => {
            tracing::info!("session {session_id}: auto-compaction did not help ({reason}); the next try keeps a smaller tail")
        }
        AttemptVerdict::Stop { reason } => {
            tracing::warn!("session {session_id}: {reason}");
            server.out.notify(
                methods::AUTO_COMPACT_STOPPED,
                AutoCompactStoppedNotification {
                    session_id: session_id.to_string(),
                    reason,
                },
            );
        }
    }
}

/// Starts an automatic compaction when a trigger fires and nothing stops
/// it. Returns the triggers that fired.
pub(crate) fn maybe_auto_compact(
    server: &mut Server,
    session_id: &str,
) -> Vec<trigger::TriggerKind> {
    let fired = server.triggers_fired(session_id).unwrap_or_default();
    if fired.is_empty()
        || server.running.contains_key(session_id)
        || !server.auto_compact_allowed(session_id)
    {
        return fired;
    }
    let Some(open) = server.sessions.get(session_id) else {
        return fired;
    };
    let keep = trigger::keep_for_attempt(
        server.config.keep_recent_tokens,
        open.session.auto.failed_attempts,
    );
    let mut strategy = server.config.strategy;
    if matches!(strategy, Strategy::Checkpoint | Strategy::Incremental)
        && prune_suffices(server, session_id)
    {
        strategy = Strategy::Prune;
    }
    if strategy == Strategy::Handoff {
        // A handoff starts a new session; it cannot shrink this one.
        strategy = Strategy::Checkpoint;
    }
    let progress = server.progress_token(None);
    tracing::info!(
        "session {session_id}: auto-compacting ({strategy:?}, triggers {fired:?}, keep {keep})"
    );
    start(
        server,
        session_id,
        Request {
            strategy,
            keep_recent_tokens: keep,
            instructions: None,
            trigger: Trigger::Threshold,
            progress,
            waiter: None,
            auto: true,
        },
    );
    fired
}

/// Pruning alone would bring the context under every trigger.
fn prune_suffices(server: &Server, session_id: &str) -> bool {
    let Some(open) = server.sessions.get(session_id) else {
        return false;
    };
    let options = server.plan_options(Strategy::Prune, 0, None);
    let Ok(job) = open.session.plan(&options, 0) else {
        return false;
    };
    let window = server.context_window(&open.session);
    let at = trigger::auto_compact_at(&server.config, window);
    job.tokens_without_summary < at
}
