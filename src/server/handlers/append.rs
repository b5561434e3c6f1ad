use crate::protocol::{AppendParams, AppendResult};
use crate::server::files::hash_from_disk;
use crate::server::{compactor, RpcError, RpcResult, Server};
use crate::store::{LogEntry, TokenCount};
use crate::tokens;

/// Appends messages: persisted first, then applied, so a message the
/// client saw acknowledged is always in the log. Then decides whether to
/// compact, and starts an automatic compaction when a trigger fires.
pub fn handle(server: &mut Server, params: AppendParams) -> RpcResult<AppendResult> {
    let AppendParams {
        session_id,
        mut messages,
    } = params;
    let tools = server.files.tools.clone();
    let open = server.session_mut(&session_id)?;
    open.session
        .assign_ids(&mut messages)
        .map_err(|e| RpcError::invalid_params(e.to_string()))?;
    let mut file_events = open.session.files.tool_events(&messages, &tools);
    hash_from_disk(file_events.iter_mut().map(|(_, e)| e));
    // Counted once: the count is logged, so a resume does not recount.
    let encoding = open.session.encoding();
    let counts: Vec<u64> = messages
        .iter()
        .map(|m| tokens::count_message(encoding, m))
        .collect();
    // Each call's file events follow the result that completed it.
    let mut entries: Vec<LogEntry> = Vec::with_capacity(messages.len() + file_events.len());
    let mut pending = file_events.iter().peekable();
    for (index, message) in messages.iter().enumerate() {
        entries.push(LogEntry::Message {
            message: message.clone(),
            tokens: Some(TokenCount::new(encoding, counts[index])),
        });
        while let Some((_, event)) = pending.next_if(|(i, _)| *i == index) {
            entries.push(LogEntry::File(event.clone()));
        }
    }
    open.log
        .append(&entries, false)
        .map_err(|e| RpcError::internal(e.to_string()))?;
    let ids = messages.iter().map(|m| m.id.clone()).collect();
    open.session
        .push_counted(messages.into_iter().zip(counts.into_iter().map(Some)));
    for (_, event) in &file_events {
        open.session.apply_file_event(event);
    }
    if !file_events.is_empty() {
        server.sync_watches();
    }
    let session = &server.sessions[&session_id].session;
    let meter = server.meter_info(session);
    server.send_meter(session);
    let fired = compactor::maybe_auto_compact(server, &session_id);
    Ok(AppendResult {
        ids,
        should_compact: !fired.is_empty(),
        compacting: server.running.contains_key(&session_id),
        meter,
    })
}
