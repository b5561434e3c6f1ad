use crate::protocol::{OpenParams, OpenResult};
use crate::server::{now_ms, OpenSession, RpcError, RpcResult, Server};
use crate::session::Session;
use crate::store::{self, LogEntry, SessionHeader, SessionLog, SessionSettings, LOG_VERSION};

pub fn handle(server: &mut Server, params: OpenParams) -> RpcResult<OpenResult> {
    let id = match params.session_id {
        Some(id) => {
            store::validate_session_id(&id)?;
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
    // A read-only session is a snapshot: opening it again reads the log
    // anew (or takes the lock, when asked to write); it stays as it was if
    // that fails.
    let from_store = server
        .sessions
        .get(&id)
        .is_none_or(|open| open.log.is_read_only());
    let mut warnings = Vec::new();
    let resumed = if from_store {
        let (opened, resumed) =
            open_from_store(server, &id, params.read_only, &requested, &mut warnings)?;
        server.sessions.insert(id.clone(), opened);
        server.sync_watches();
        resumed
    } else {
        true
    };
    let open = server.sessions.get_mut(&id).expect("inserted above");
    if resumed && !open.log.is_read_only() {
        apply_requested_settings(open, requested)?;
    }
    let session = &server.sessions[&id].session;
    let meter = server.meter_info(session);
    server.send_meter(session);
    Ok(OpenResult {
        session_id: id.clone(),
        resumed,
        message_count: session.message_count(),
        warnings,
        read_only: server.sessions[&id].log.is_read_only(),
        meter,
    })
}

/// Opens a session this server does not have: under its lock, resumed from
/// its log or created; or, for `readOnly`, read without the lock. Returns
/// the session and whether it was resumed.
fn open_from_store(
    server: &Server,
    id: &str,
    read_only: bool,
    requested: &SessionSettings,
    warnings: &mut Vec<String>,
) -> RpcResult<(OpenSession, bool)> {
    // The lock comes first, so no other process appends between reading
    // the log and opening it for writing.
    let lock = if read_only {
        None
    } else {
        Some(server.store.lock(id)?)
    };
    let Some(resumed) = server.store.resume(id, server.summary_prefix())? else {
        let Some(lock) = lock else {
            return Err(RpcError::invalid_params(format!(
                "sessionId: there is no session `{id}` to open read-only"
            )));
        };
        let log = server.store.open_log(id, lock, false)?;
        return Ok((create_session(server, id, requested.clone(), log)?, false));
    };
    for warning in &resumed.warnings {
        tracing::warn!("session {id}: {warning}");
    }
    *warnings = resumed.warnings;
    let mut session = resumed.session;
    server.files.configure(&mut session.files);
    let log = match lock {
        Some(lock) => server.store.open_log(id, lock, resumed.torn_tail)?,
        None => server.store.read_only_log(id)?,
    };
    Ok((OpenSession { session, log }, true))
}

/// Settings given on reopen replace the stored ones and are logged.
fn apply_requested_settings(open: &mut OpenSession, requested: SessionSettings) -> RpcResult<()> {
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
    if changed == SessionSettings::default() {
        return Ok(());
    }
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
    Ok(())
}

/// Creates a new session's state and writes its header to `log` (opened
/// under the session's lock).
pub fn create_session(
    server: &Server,
    id: &str,
    settings: SessionSettings,
    mut log: SessionLog,
) -> RpcResult<OpenSession> {
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
