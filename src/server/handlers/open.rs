use crate::engine::{self, create::Opened, Access};
use crate::protocol::{OpenParams, OpenResult};
use crate::server::context::Context;
use crate::server::rpc::RpcResult;
use crate::store::SessionSettings;

/// Opens a session: the one already open, else resumed from its log, else
/// a new one; under its lock, or (`readOnly`) as a snapshot without it.
/// Settings given on reopen replace the stored ones. A read-only session
/// is a snapshot: opening it again reads the log anew (or takes the lock,
/// when asked to write), and it stays as it was if that fails.
pub fn handle(context: &mut Context, params: OpenParams) -> RpcResult<OpenResult> {
    let state = &mut *context.state;
    let id = engine::create::session_id(params.session_id)?;
    state.sessions.unreserved(&id)?;
    let requested = SessionSettings {
        model: params.model.or_else(|| state.config.model.clone()),
        context_window: params.context_window,
        system_prompt: params.system_prompt,
        tool_definitions: params.tool_definitions,
        auto_compact: None,
    };
    let from_store = state
        .sessions
        .find(&id)
        .is_none_or(|open| open.access() == Access::ReadOnly);
    let (resumed, warnings) = if from_store {
        let env = state.session_env();
        let Opened {
            open,
            resumed,
            warnings,
        } = if params.read_only {
            engine::create::open_read_only(&state.sessions.store, &id, &env)?
        } else {
            engine::create::open(
                &state.sessions.store,
                &id,
                requested.clone(),
                params.mirrors.clone(),
                &env,
            )?
        };
        state.insert_session(open, &mut context.effects);
        (resumed, warnings)
    } else {
        (true, Vec::new())
    };
    engine::append::change_settings(state.sessions.get_mut(&id)?, requested)?;
    // The opener subscribes to the session (a second client of a session
    // already open here shares it).
    context.caller.subscribe(&id);
    let meter = state.send_meter(&id, &mut context.effects)?;
    let open = state.sessions.get(&id)?;
    let session = &open.session;
    Ok(OpenResult {
        session_id: id,
        resumed,
        message_count: session.message_count(),
        warnings,
        read_only: open.access() == Access::ReadOnly,
        meter,
    })
}
