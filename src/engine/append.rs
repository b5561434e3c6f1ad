//! Changes to an open session. Each is written to the session's log
//! first and applied only once written, so a change the client saw
//! acknowledged is always in the log, and a failed write changes nothing.
//! A session opened read-only refuses them all, except that settings given
//! when it is reopened are left out instead; so does a session following
//! an agent's transcript, whose conversation only the agent changes.

use super::{Access, EngineError, EngineResult, OpenSession};
use crate::conversation::Message;
use crate::files::{disk, FileEvent, FileOp, FileTools};
use crate::store::{apply_settings, LogEntry, SessionSettings, TokenCount};
use crate::tokens;

/// What an append did.
#[derive(Debug, Clone, PartialEq)]
pub struct Appended {
    /// The messages' ids, in order.
    pub ids: Vec<String>,
    /// A file event was recorded.
    pub touched_files: bool,
    /// Images counted on an assumption (`tokens::image_notes`), then tool
    /// results logged but kept out of the model's history (late, second,
    /// or without a call), each as `messages[i]…: why`.
    pub warnings: Vec<String>,
}

/// Appends messages: each gets an id (the client's, if unused), the
/// file events of the tool calls they complete are hashed from disk and
/// logged right after the result that completed them, then all of it is
/// applied.
pub fn append(
    open: &mut OpenSession,
    mut messages: Vec<Message>,
    tools: &FileTools,
) -> EngineResult<Appended> {
    open.check_writable()?;
    refuse_implausible_usage(&messages)?;
    super::blobs::refuse_references(&messages)?;
    // An image no provider could read is refused; one counted on an
    // assumption (its size unknown or implausible) is kept and said.
    let image_notes = tokens::image_notes(open.session.encoding().images(), &messages)
        .map_err(EngineError::Invalid)?;
    open.session
        .assign_ids(&mut messages)
        .map_err(|e| EngineError::Invalid(e.to_string()))?;
    // Large data is on disk before the line that names it.
    super::blobs::store_data(&open.log.blobs(), &mut messages)?;
    let mut file_events = open.session.file_ledger.tool_events(&messages, tools);
    hash_from_disk(file_events.iter_mut().map(|(_, e)| e));
    // Counted once: the count is logged, so a resume does not recount.
    let encoding = open.session.encoding();
    let counts: Vec<u64> = messages
        .iter()
        .map(|m| tokens::count_message(encoding, m))
        .collect();
    let ids = messages.iter().map(|m| m.id.clone()).collect();
    let answers: Vec<String> = messages
        .iter()
        .map(|m| m.answers().unwrap_or_default().to_string())
        .collect();
    // Each call's file events follow the result that completed it, so a
    // branch cut between messages keeps exactly the events before it. The
    // messages move into the entries and back out, never copied: an append
    // of a 200 MB message holds it once.
    let mut entries: Vec<LogEntry> = Vec::with_capacity(messages.len() + file_events.len());
    let mut pending = file_events.iter().peekable();
    for (index, message) in messages.into_iter().enumerate() {
        let tokens = Some(TokenCount::new(encoding, &message, counts[index]));
        entries.push(LogEntry::Message { message, tokens });
        while let Some((_, event)) = pending.next_if(|(i, _)| *i == index) {
            entries.push(LogEntry::File(event.clone()));
        }
    }
    open.log.append(&entries, false)?;
    let messages = entries.into_iter().filter_map(|entry| match entry {
        LogEntry::Message { message, .. } => Some(message),
        _ => None,
    });
    let off_history = open
        .session
        .push_counted(messages.zip(counts.into_iter().map(Some)));
    for (_, event) in &file_events {
        open.session.apply_file_event(event);
    }
    let warnings = image_notes
        .into_iter()
        .chain(
            off_history
                .into_iter()
                .map(|(i, why)| format!("messages[{i}]: {}", why.describe(&answers[i]))),
        )
        .collect();
    Ok(Appended {
        ids,
        touched_files: !file_events.is_empty(),
        warnings,
    })
}

/// Fills each event's content hash from the file as it is now, right after
/// the operation (deleted files have none).
pub fn hash_from_disk<'a>(events: impl IntoIterator<Item = &'a mut FileEvent>) {
    for event in events {
        if event.op != FileOp::Delete && event.content_hash.is_none() {
            event.content_hash = disk::content_hash(&event.path);
        }
    }
}

/// Logs file events, then applies them to the session's ledger.
pub fn record_file_events(open: &mut OpenSession, events: &[FileEvent]) -> EngineResult<()> {
    open.check_writable()?;
    if events.is_empty() {
        return Ok(());
    }
    let entries: Vec<LogEntry> = events.iter().cloned().map(LogEntry::File).collect();
    open.log
        .append(&entries, false)
        .map_err(|e| EngineError::Failed(format!("could not record file events: {e}")))?;
    for event in events {
        open.session.apply_file_event(event);
    }
    Ok(())
}

/// Pins text to keep verbatim through every compaction (once).
pub fn pin(open: &mut OpenSession, text: String) -> EngineResult<()> {
    open.check_writable()?;
    if text.trim().is_empty() {
        return Err(EngineError::Invalid(
            "invalid params at `text`: nothing to pin".into(),
        ));
    }
    if open.session.pins().contains(&text) {
        return Ok(());
    }
    open.log
        .append(&[LogEntry::Pin { text: text.clone() }], false)?;
    open.session.add_pin(text);
    Ok(())
}

/// Switches auto-compaction for the session; switching it on also resets
/// the circuit breaker.
pub fn set_auto_compact(open: &mut OpenSession, enabled: bool) -> EngineResult<()> {
    open.check_writable()?;
    let settings = SessionSettings {
        auto_compact: Some(enabled),
        ..SessionSettings::default()
    };
    open.log.append(&[LogEntry::Settings(settings)], false)?;
    open.session.auto_compact_switch = Some(enabled);
    if enabled {
        open.session.breaker.reset();
    }
    Ok(())
}

/// Settings given when a session is reopened replace the stored ones:
/// those that differ are logged, then applied. A read-only session keeps
/// the settings its log gives it; a followed one is no session to open.
pub fn change_settings(open: &mut OpenSession, requested: SessionSettings) -> EngineResult<()> {
    match open.access() {
        Access::ReadOnly => return Ok(()),
        Access::Follows => return open.check_writable(),
        Access::Write => {}
    }
    let session = &open.session;
    let changed = SessionSettings {
        model: requested
            .model
            .filter(|m| Some(m) != session.model.as_ref()),
        context_window: requested
            .context_window
            .filter(|w| Some(*w) != session.context_window),
        system_prompt: requested
            .system_prompt
            .filter(|p| Some(p) != session.system_prompt.as_ref()),
        tool_definitions: requested
            .tool_definitions
            .filter(|t| Some(t) != session.tool_definitions.as_ref()),
        auto_compact: None,
    };
    if changed == SessionSettings::default() {
        return Ok(());
    }
    open.log
        .append(&[LogEntry::Settings(changed.clone())], false)?;
    apply_settings(&mut open.session, changed);
    Ok(())
}

/// Usage no provider reports is a client's bug: refused, naming the
/// message, rather than metered.
fn refuse_implausible_usage(messages: &[Message]) -> EngineResult<()> {
    for (i, message) in messages.iter().enumerate() {
        if let Some(largest) = message.usage.and_then(|u| u.implausible()) {
            return Err(EngineError::Invalid(format!(
                "invalid params at `messages[{i}].usage`: {largest} tokens is more than any model reads or writes (at most {}); nothing was appended",
                crate::conversation::Usage::MAX_TOKENS
            )));
        }
    }
    Ok(())
}
