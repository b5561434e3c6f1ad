use crate::protocol::{OpenParams, OpenResult};
use crate::server::{now_ms, OpenSession, RpcError, RpcResult, Server};
use crate::session::Session;
use crate::store::{self, LogEntry, SessionHeader, SessionSettings, LOG_VERSION};

pub fn handle(server: &mut Server, params: OpenParams) -> RpcResult<OpenResult> {
    let id = match params.session_id {
        Some(id) => {
            store::validate_session_id(&id)
                .map_err(|e| RpcError::invalid_params(format!("sessionId: {e}")))?;
            id
        }
        None => uuid::Uuid::new_v4().to_string(),
    };
    let requested = SessionSettings {
        model: params.model.or_else(|| server.config.model.clone()),
        context_window: params.context_window,
        system_prompt: params.system_prompt,
        auto_compact: None,
    };
    let mut warnings = Vec::new();
    let resumed;
    if server.sessions.contains_key(&id) {
        resumed = true;
    } else {
        let prefix = server.summary_prefix();
        let loaded = server
            .store
            .load(&id)
            .map_err(|e| RpcError::internal(e.to_string()))?;
        let opened = match loaded {
            Some(loaded) => {
                resumed = true;
                for warning in &loaded.warnings {
                    tracing::warn!("session {id}: {warning}");
                }
                warnings = loaded.warnings;
                let mut session = store::replay(&id, loaded.entries, prefix);
                server.files.configure(&mut session.files);
                let log = server
                    .store
                    .open_log(&id, loaded.torn_tail)
                    .map_err(|e| RpcError::internal(e.to_string()))?;
                OpenSession { session, log }
            }
            None => {
                resumed = false;
                create_session(server, &id, requested.clone())?
            }
        };
        server.sessions.insert(id.clone(), opened);
        server.sync_watches();
    }
    let open = server.sessions.get_mut(&id).expect("inserted above");
    // Settings given on reopen replace the stored ones and are logged.
    let changed = SessionSettings {
        model: requested
            .model
            .filter(|m| Some(m) != open.session.model.as_ref()),
        context_window: requested
            .context_window
            .filter(|w| Some(*w) != open.session.context_window),
        system_prompt: requested
            .system_prompt
            .filter(|p| Some(p) != open.session.system_prompt.as_ref()),
        auto_compact: None,
    };
    if resumed && changed != SessionSettings::default() {
        open.log
            .append(&[LogEntry::Settings(changed.clone())], false)
            .map_err(|e| RpcError::internal(e.to_string()))?;
        if changed.model.is_some() {
            open.session.set_model(changed.model);
        }
        if changed.context_window.is_some() {
            open.session.context_window = changed.context_window;
        }
        if changed.system_prompt.is_some() {
            open.session.set_system_prompt(changed.system_prompt);
        }
    }
    let session = &server.sessions[&id].session;
    let meter = server.meter_info(session);
    server.send_meter(session);
    Ok(OpenResult {
        session_id: id,
        resumed,
        message_count: session.message_count(),
        warnings,
        meter,
    })
}

/// Creates a new session's log (with its header) and its state.
pub fn create_session(
    server: &Server,
    id: &str,
    settings: SessionSettings,
) -> RpcResult<OpenSession> {
    let mut log = server
        .store
        .open_log(id, false)
        .map_err(|e| RpcError::internal(e.to_string()))?;
    let header = SessionHeader {
        version: LOG_VERSION,
        session_id: id.to_string(),
        created_at: now_ms(),
        settings: settings.clone(),
    };
    log.append(&[LogEntry::Header(header)], true)
        .map_err(|e| RpcError::internal(e.to_string()))?;
    let mut session = Session::new(
        id.to_string(),
        settings.model,
        settings.context_window,
        settings.system_prompt,
        server.summary_prefix(),
    );
    session.auto_compact = settings.auto_compact;
    server.files.configure(&mut session.files);
    Ok(OpenSession { session, log })
}

impl Server {
    pub fn summary_prefix(&self) -> String {
        self.config.summary_prefix.clone().unwrap_or_else(|| {
            crate::compaction::DEFAULT_SUMMARY_PREFIX
                .trim_end()
                .to_string()
        })
    }
}
