use crate::engine::{self, create::Opened, Access};
use crate::protocol::{OpenParams, OpenResult};
use crate::server::{RpcResult, Server};
use crate::store::SessionSettings;

/// Opens a session: the one already open, else resumed from its log, else
/// a new one; under its lock, or (`readOnly`) as a snapshot without it.
/// Settings given on reopen replace the stored ones. A read-only session
/// is a snapshot: opening it again reads the log anew (or takes the lock,
/// when asked to write), and it stays as it was if that fails.
pub fn handle(server: &mut Server, params: OpenParams) -> RpcResult<OpenResult> {
    let id = engine::create::session_id(params.session_id)?;
    server.unreserved(&id)?;
    let requested = SessionSettings {
        model: params.model.or_else(|| server.config.model.clone()),
        context_window: params.context_window,
        system_prompt: params.system_prompt,
        tool_definitions: params.tool_definitions,
        auto_compact: None,
    };
    let from_store = server
        .sessions
        .get(&id)
        .is_none_or(|open| open.access() == Access::ReadOnly);
    let (resumed, warnings) = if from_store {
        let env = server.session_env();
        let Opened {
            open,
            resumed,
            warnings,
        } = if params.read_only {
            engine::create::open_read_only(&server.store, &id, &env)?
        } else {
            engine::create::open(&server.store, &id, requested.clone(), &env)?
        };
        server.insert_session(open);
        (resumed, warnings)
    } else {
        (true, Vec::new())
    };
    engine::append::change_settings(server.session_mut(&id)?, requested)?;
    // The opener follows the session (a second client of a session already
    // open here shares it).
    server.clients.subscribe_current(&id);
    let open = &server.sessions[&id];
    let session = &open.session;
    let meter = server.meter_info(session);
    server.send_meter(session);
    Ok(OpenResult {
        session_id: id,
        resumed,
        message_count: session.message_count(),
        warnings,
        read_only: open.access() == Access::ReadOnly,
        meter,
    })
}
