//! `conversation/import`: a transcript in another tool's format becomes a
//! new session, written to its own log before it is opened. Parsing runs on
//! the state owner, like every other request, so requests stay in order.

use crate::engine;
use crate::import::{self, Imported};
use crate::protocol::{ImportParams, ImportResult};
use crate::server::{RpcError, RpcResult, Server};

pub fn handle(server: &mut Server, params: ImportParams) -> RpcResult<ImportResult> {
    let mut imported = read(&params, server.config.max_import_bytes)?;
    let id = engine::create::session_id(params.session_id)?;
    if params.model.is_some() {
        imported.settings.model = params.model;
    }
    if params.context_window.is_some() {
        imported.settings.context_window = params.context_window;
    }
    let open = engine::create::import(
        &server.store,
        &id,
        server.sessions.contains_key(&id),
        &mut imported,
        &server.file_tracking.tools,
        &server.session_env(),
    )?;
    let meter = server.meter_info(&open.session);
    server.send_meter(&open.session);
    server.insert_session(open);
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

fn read(params: &ImportParams, max_bytes: u64) -> RpcResult<Imported> {
    match (&params.path, &params.content) {
        (Some(path), None) => {
            import::read_file(std::path::Path::new(path), params.format, max_bytes)
                .map_err(|e| RpcError::invalid_params(format!("path: {e}")))
        }
        (None, Some(content)) => import::parse(content.as_bytes(), params.format)
            .map_err(|e| RpcError::invalid_params(format!("content: {e}"))),
        _ => Err(RpcError::invalid_params(
            "give either `path` or `content` (exactly one)",
        )),
    }
}
