//! `conversation/import`: a transcript in another tool's format becomes a
//! new session, written to its own log before it is opened. Parsing runs on
//! the state owner, like every other request, so requests stay in order.

use crate::import::{self, Imported};
use crate::protocol::{ImportParams, ImportResult};
use crate::server::{now_ms, OpenSession, RpcError, RpcResult, Server};
use crate::store::{self, StoreError};
use crate::tokens::Encoding;

pub fn handle(server: &mut Server, params: ImportParams) -> RpcResult<ImportResult> {
    let mut imported = read(&params)?;
    let id = match params.session_id {
        Some(id) => {
            store::validate_session_id(&id)?;
            id
        }
        None => uuid::Uuid::new_v4().to_string(),
    };
    if server.sessions.contains_key(&id) {
        return Err(already_exists(&id));
    }
    if params.model.is_some() {
        imported.settings.model = params.model;
    }
    if params.context_window.is_some() {
        imported.settings.context_window = params.context_window;
    }
    imported.track_files(&server.files.tools, &server.files.workspace);
    let mut entries = imported.log_entries(&id, now_ms());
    // Counted once here, so resuming the session never tokenizes it again.
    let encoding = Encoding::for_model(imported.settings.model.as_deref());
    store::fill_token_counts(&mut entries, encoding);
    // Under the new session's lock, and only if no log exists there.
    let mut log = server.store.create_log(&id).map_err(|e| match e {
        StoreError::Exists { .. } => already_exists(&id),
        e => e.into(),
    })?;
    if let Err(e) = log.append(&entries, true) {
        // The file was created just now and holds nothing worth keeping.
        let _ = std::fs::remove_file(log.path());
        return Err(RpcError::internal(format!(
            "could not write the session log: {e}"
        )));
    }
    let mut session = store::replay(&id, entries, server.summary_prefix());
    server.files.configure(&mut session.files);
    let meter = server.meter_info(&session);
    server.send_meter(&session);
    server
        .sessions
        .insert(id.clone(), OpenSession { session, log });
    server.sync_watches();
    Ok(ImportResult {
        session_id: id,
        format: imported.format,
        messages: imported.message_count(),
        compactions: imported.compaction_count(),
        skipped: imported.skipped.total(),
        skipped_reasons: imported.skipped.reasons(),
        meter,
    })
}

fn already_exists(id: &str) -> RpcError {
    RpcError::invalid_params(format!(
        "sessionId: `{id}` already exists; an import always creates a new session"
    ))
}

fn read(params: &ImportParams) -> RpcResult<Imported> {
    match (&params.path, &params.content) {
        (Some(path), None) => import::read_file(std::path::Path::new(path), params.format)
            .map_err(|e| RpcError::invalid_params(format!("path: {e}"))),
        (None, Some(content)) => import::parse(content.as_bytes(), params.format)
            .map_err(|e| RpcError::invalid_params(format!("content: {e}"))),
        _ => Err(RpcError::invalid_params(
            "give either `path` or `content` (exactly one)",
        )),
    }
}
