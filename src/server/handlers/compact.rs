//! `conversation/compact`: planned on the state owner, summarized in a
//! background task, applied back on the state owner. The history changes
//! only when a summary exists; cancelling the task leaves it untouched.

use std::time::Instant;

use lsp_server::RequestId;

use crate::protocol::{methods, CompactParams, CompactResult, DidCompactNotification};
use crate::server::{now_ms, send_progress, JobDone, Reply, RpcError, RunningJob, Server};
use crate::session::{CompactionJob, Trigger};
use crate::store::LogEntry;
use crate::summarize::{self, Progress, SummarizeError, SummaryOutput};

/// A finished summarizer job, back on the state owner.
pub struct Finished {
    pub request_id: RequestId,
    pub session_id: String,
    pub trigger: Trigger,
    pub job: CompactionJob,
    pub output: Result<SummaryOutput, SummarizeError>,
    pub started: Instant,
}

pub fn start(server: &mut Server, id: RequestId, params: CompactParams) -> Reply {
    let session_id = params.session_id.clone();
    if let Err(e) = server.session(&session_id) {
        return Reply::Now(Err(e));
    }
    // Single flight: a second request for the same session joins the first.
    if let Some(job) = server
        .running
        .values_mut()
        .find(|j| j.session_id == session_id)
    {
        job.joined.push(id);
        return Reply::Later;
    }
    let keep = params
        .keep_recent_tokens
        .unwrap_or(server.config.keep_recent_tokens);
    let session = &server.sessions[&session_id].session;
    let tokens_before = server.meter_info(session).context_tokens;
    let Some(job) = session.plan_compaction(
        keep,
        tokens_before,
        params.instructions.clone(),
        server.config.max_tool_output_chars,
    ) else {
        return Reply::from(Ok(CompactResult {
            compacted: false,
            reason: Some(format!(
                "nothing to compact: the history after the last compaction fits in keepRecentTokens ({keep}) or has no place to cut"
            )),
            tokens_before,
            tokens_after: tokens_before,
            summarizer: "none".into(),
            ..CompactResult::default()
        }));
    };
    let progress = server.progress_token(params.work_done_token.clone());
    if let Some(token) = &progress {
        send_progress(
            &server.out,
            token,
            serde_json::json!({
                "kind": "begin",
                "title": "Compacting conversation",
                "cancellable": true,
                "message": format!("summarizing {} messages", job.messages_summarized),
                "percentage": 0
            }),
        );
    }
    let summarizer = summarize::from_config(&server.config.summarizer);
    let out = server.out.clone();
    let jobs = server.jobs.clone();
    let task_progress = progress.clone();
    let request_id = id.clone();
    let task_session = session_id.clone();
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
        let output = summarizer.summarize(job.request.clone(), &report).await;
        let _ = jobs.send(JobDone::Compaction(Box::new(Finished {
            request_id,
            session_id: task_session,
            trigger: Trigger::Manual,
            job,
            output,
            started,
        })));
    });
    server.running.insert(
        id,
        RunningJob {
            session_id,
            abort: handle.abort_handle(),
            joined: Vec::new(),
            progress,
        },
    );
    Reply::Later
}

/// Applies a finished job and answers everyone waiting on it.
pub fn finish(server: &mut Server, finished: Finished) {
    let Some(running) = server.running.remove(&finished.request_id) else {
        // Cancelled after the summary was written: already answered.
        return;
    };
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
    if let Ok(result) = &result {
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
    let value = result.map(|r| serde_json::to_value(r).expect("results serialize"));
    for id in std::iter::once(finished.request_id).chain(running.joined) {
        server.respond(id, value.clone());
    }
}

fn apply(server: &mut Server, finished: &Finished) -> Result<CompactResult, RpcError> {
    let output = finished
        .output
        .as_ref()
        .map_err(|e| RpcError::internal(format!("compaction failed, history unchanged: {e}")))?;
    let open = server.session_mut(&finished.session_id)?;
    let job = &finished.job;
    if job.generation != open.session.compactions().len() {
        return Err(RpcError::internal(
            "compaction superseded by another one, history unchanged",
        ));
    }
    let record = open.session.record_compaction(
        job,
        output,
        finished.trigger,
        now_ms(),
        finished.started.elapsed().as_millis() as u64,
    );
    open.log
        .append(&[LogEntry::Compaction(record.clone())], true)
        .map_err(|e| {
            RpcError::internal(format!(
                "could not record the compaction, history unchanged: {e}"
            ))
        })?;
    open.session.apply_compaction(record.clone());
    Ok(CompactResult::from_record(&record))
}
