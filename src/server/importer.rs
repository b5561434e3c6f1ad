//! `conversation/import` off the state owner. Reading and parsing a
//! transcript, writing the new session's log and building the session take
//! time in proportion to its size, so they run on a blocking thread while
//! the state owner keeps serving every other request; the session opens,
//! and the request is answered, when that thread hands the session back.
//! Until then the new id is reserved: a request naming it is refused with
//! a message saying it is being imported (`Sessions::get`), and another
//! import or `conversation/open` of it too. An import cannot be cancelled.

use std::sync::Arc;

use super::effects::Effects;
use super::jobs::{ImportDone, ImportSummary, JobResult, JobSender, Pending};
use super::rpc::{Reply, RpcError, RpcResult};
use super::state::State;
use crate::engine::{self, OpenSession, SessionEnv};
use crate::files::FileTools;
use crate::import::{self, Imported};
use crate::protocol::{methods, ImportParams, ImportResult};
use crate::store::SessionStore;

const ONE_SOURCE: &str = "give either `path` or `content` (exactly one)";

/// What the blocking thread needs, taken from the state.
struct Context {
    store: SessionStore,
    tools: Arc<FileTools>,
    env: SessionEnv,
    max_import_bytes: u64,
}

/// Checks the request, reserves the id and starts the import; answered
/// by `finish`.
pub(crate) fn start(
    state: &mut State,
    results: &JobSender,
    pending: Pending<methods::Import>,
    params: ImportParams,
) -> Reply<ImportResult> {
    if params.path.is_some() == params.content.is_some() {
        return Reply::Now(Err(RpcError::invalid_params(ONE_SOURCE)));
    }
    let session_id = match engine::create::session_id(params.session_id.clone()) {
        Ok(session_id) => session_id,
        Err(e) => return Reply::Now(Err(e.into())),
    };
    if let Err(e) = state.sessions.unreserved(&session_id) {
        return Reply::Now(Err(e));
    }
    if state.sessions.contains(&session_id) {
        return Reply::Now(Err(engine::create::already_exists(&session_id).into()));
    }
    let context = Context {
        store: state.sessions.store.clone(),
        tools: state.files.tools.clone(),
        env: state.session_env(),
        max_import_bytes: state.config.max_import_bytes,
    };
    state.sessions.reserve(&session_id, pending.id().clone());
    let job_results = results.clone();
    tokio::task::spawn_blocking(move || {
        // A panic in an importer still answers the request.
        let outcome = std::panic::catch_unwind(|| run(&context, &session_id, params))
            .unwrap_or_else(|_| Err(RpcError::internal("the import failed (see the log)")));
        let _ = job_results.send(JobResult::Import(Box::new(ImportDone {
            request: pending,
            session_id,
            outcome,
        })));
    });
    Reply::Later
}

/// Reads, parses, writes and builds: everything that grows with the
/// transcript.
fn run(
    context: &Context,
    session_id: &str,
    params: ImportParams,
) -> RpcResult<(OpenSession, ImportSummary)> {
    let mut imported = read(&params, context.max_import_bytes)?;
    if params.model.is_some() {
        imported.settings.model = params.model;
    }
    if params.context_window.is_some() {
        imported.settings.context_window = params.context_window;
    }
    let summary = ImportSummary {
        format: imported.format,
        messages: imported.message_count(),
        compactions: imported.compaction_count(),
        skipped: imported.skipped.total(),
        skipped_reasons: imported.skipped.reasons(),
    };
    let open = engine::create::import(
        &context.store,
        session_id,
        imported,
        &context.tools,
        &context.env,
    )
    .map_err(RpcError::from)?;
    Ok((open, summary))
}

fn read(params: &ImportParams, max_bytes: u64) -> RpcResult<Imported> {
    match (&params.path, &params.content) {
        (Some(path), _) => import::read_file(std::path::Path::new(path), params.format, max_bytes)
            .map_err(|e| RpcError::invalid_params(format!("path: {e}"))),
        (None, Some(content)) => import::parse(content.as_bytes(), params.format)
            .map_err(|e| RpcError::invalid_params(format!("content: {e}"))),
        (None, None) => Err(RpcError::invalid_params(ONE_SOURCE)),
    }
}

/// Opens the imported session and answers the request.
pub(crate) fn finish(state: &mut State, done: ImportDone, effects: &mut Effects) {
    state.sessions.release(&done.session_id);
    let result = done.outcome.map(|(open, summary)| {
        let meter = state.meter(&open, None);
        effects.meter(&done.session_id, meter.clone());
        state.insert_session(open, effects);
        ImportResult {
            session_id: done.session_id,
            format: summary.format,
            messages: summary.messages,
            compactions: summary.compactions,
            skipped: summary.skipped,
            skipped_reasons: summary.skipped_reasons,
            meter,
        }
    });
    done.request.respond(effects, result);
}
