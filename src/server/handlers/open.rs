use crate::engine::{self, create::Resumed};
use crate::protocol::{OpenParams, OpenResult};
use crate::server::{RpcResult, Server};
use crate::store::SessionSettings;

/// Opens a session: the one already open, else resumed from its log, else
/// a new one. Settings given on reopen replace the stored ones.
pub fn handle(server: &mut Server, params: OpenParams) -> RpcResult<OpenResult> {
    let id = engine::create::session_id(params.session_id)?;
    let requested = SessionSettings {
        model: params.model.or_else(|| server.config.model.clone()),
        context_window: params.context_window,
        system_prompt: params.system_prompt,
        tool_definitions: params.tool_definitions,
        auto_compact: None,
    };
    let (mut resumed, mut warnings) = (true, Vec::new());
    if !server.sessions.contains_key(&id) {
        let env = server.session_env();
        let open = match engine::create::resume(&server.store, &id, &env)? {
            Some(Resumed { open, warnings: w }) => {
                warnings = w;
                open
            }
            None => {
                resumed = false;
                engine::create::open_new(&server.store, &id, requested.clone(), &env)?
            }
        };
        server.insert_session(open);
    }
    engine::append::change_settings(server.session_mut(&id)?, requested)?;
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
