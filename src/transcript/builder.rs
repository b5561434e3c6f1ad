//! The batch side of importing: the events a reader gave for a whole
//! transcript become the entries of a session log (`collect`), each foreign
//! compaction placed as our compaction record (`place`, which a followed
//! transcript uses too).

use std::collections::HashMap;

use super::emit::{Event, ForeignCompaction};
use super::format::Format;
use super::imported::{Attachment, Imported, Skips};
use crate::compaction::retention;
use crate::compaction::CompactionRecord;
use crate::compaction::{Strategy, Trigger};
use crate::conversation::Message;
use crate::files::FileTools;
use crate::session::Session;
use crate::store::{LogEntry, SessionSettings};
use crate::tokens::Encoding;
use std::sync::Arc;

enum Item {
    Message { message: Message, line: usize },
    Settings(SessionSettings),
    Compaction(ForeignCompaction),
    Attached(String),
    AttachedMidway(Attachment),
    Cleared(Vec<String>),
}

/// A whole transcript's events as an import: the conversation's settings,
/// then messages (in their final form), settings changes and compactions
/// in order. A `Restart` cannot occur here (batch readers know the whole
/// transcript), and would only drop what came before it.
/// Pushes `message` into the import's session, its count made once: the
/// count goes with the entry, so a session built from the entries
/// (`stats`) need not count it again.
fn counted_into(session: &mut Session, message: &Message, count: u64) -> crate::store::TokenCount {
    session.push_counted([(message.clone(), Some(count))]);
    crate::store::TokenCount::new(session.encoding(), message, count)
}

/// Fewer messages than this are counted on one thread.
const PARALLEL_COUNT: usize = 512;

/// Each message's count in the vocabulary of the model then, in order,
/// when `wanted` (none without a session to push them to), made on two
/// threads: counting is most of an import that builds a
/// session (a fifth of reading the real sessions whole, under `perf`).
fn message_counts(wanted: bool, settings: &SessionSettings, items: &[Item]) -> Vec<u64> {
    if !wanted {
        return Vec::new();
    }
    let mut encoding = Encoding::for_model(settings.model.as_deref());
    let mut messages = Vec::new();
    for item in items {
        match item {
            Item::Message { message, .. } => messages.push((encoding, message)),
            Item::Settings(change) if change.model.is_some() => {
                encoding = Encoding::for_model(change.model.as_deref());
            }
            _ => {}
        }
    }
    let count = |part: &[(Encoding, &Message)]| -> Vec<u64> {
        part.iter()
            .map(|(encoding, message)| crate::tokens::count_message(*encoding, message))
            .collect()
    };
    if messages.len() < PARALLEL_COUNT {
        return count(&messages);
    }
    let (first, second) = messages.split_at(messages.len() / 2);
    std::thread::scope(|scope| {
        let later = scope.spawn(|| count(second));
        let mut counts = count(first);
        counts.extend(later.join().expect("counting does not panic"));
        counts
    })
}

pub(crate) fn collect(format: Format, events: Vec<Event>, mut skipped: Skips) -> Imported {
    let (settings, items) = fold(events);
    let has_compactions = items
        .iter()
        .any(|i| matches!(i, Item::Compaction(_) | Item::Cleared(_)));
    // Only compactions need the session: their record says how much they
    // summarized and what the context was afterwards.
    let mut session = has_compactions.then(|| import_session(&settings));
    let mut counts = message_counts(session.is_some(), &settings, &items).into_iter();
    let mut entries = Vec::with_capacity(items.len());
    let mut message_lines = Vec::new();
    // What attachments are counted with: the model's vocabulary then.
    let mut encoding = Encoding::for_model(settings.model.as_deref());
    let mut compactions = 0usize;
    let mut changed = ChangedFiles::default();
    // The latest item was a compaction placed: what is attached next is
    // its own.
    let mut placed = false;
    for item in items {
        let was_placed = std::mem::take(&mut placed);
        match item {
            Item::Message { message, line } => {
                let tokens = (session.as_mut().zip(counts.next()))
                    .map(|(session, count)| counted_into(session, &message, count));
                message_lines.push(line);
                entries.push(LogEntry::Message { message, tokens });
            }
            Item::Settings(change) => {
                if change.model.is_some() {
                    encoding = Encoding::for_model(change.model.as_deref());
                }
                if let (Some(session), Some(_)) = (&mut session, &change.model) {
                    session.set_model(change.model.clone());
                }
                entries.push(LogEntry::Settings(change));
            }
            Item::Compaction(foreign) => {
                let session = session.as_mut().expect("created when compactions exist");
                match place(session, &foreign, format, compactions + 1, &mut changed) {
                    Ok(record) => {
                        compactions += 1;
                        placed = true;
                        entries.push(LogEntry::Compaction(Box::new(record)));
                    }
                    Err((kind, why)) => skipped.add(foreign.line, kind, why),
                }
            }
            Item::Attached(text) if was_placed => {
                let session = session.as_mut().expect("created when compactions exist");
                attach(session, &text, entries.last_mut());
                placed = true;
            }
            Item::Attached(_) => {}
            Item::AttachedMidway(attachment) => {
                let tokens = attachment.tokens(encoding);
                if let Some(session) = &mut session {
                    session.attach_after_latest(tokens);
                }
                entries.push(LogEntry::Attached { tokens });
            }
            Item::Cleared(ids) => {
                if let Some(session) = &mut session {
                    compactions += 1;
                    let record = place_clearing(session, ids, format, compactions);
                    entries.push(LogEntry::Compaction(Box::new(record)));
                }
            }
        }
    }
    Imported {
        format,
        settings,
        entries,
        message_lines,
        skipped,
        subagents: Vec::new(),
    }
}

fn import_session(settings: &SessionSettings) -> Session {
    Session::new(
        "import".into(),
        settings.model.clone(),
        settings.context_window,
        settings.system_prompt.clone(),
        crate::compaction::DEFAULT_SUMMARY_PREFIX
            .trim_end()
            .to_string(),
    )
}

/// The conversation's settings, and the items in order with every
/// message in its final form.
fn fold(events: Vec<Event>) -> (SessionSettings, Vec<Item>) {
    let mut settings = SessionSettings::default();
    let mut items: Vec<Item> = Vec::with_capacity(events.len());
    let mut by_id: HashMap<String, usize> = HashMap::new();
    for event in events {
        match event {
            Event::Message { message, line } => {
                by_id.insert(message.id.clone(), items.len());
                items.push(Item::Message { message, line });
            }
            Event::Amend(amended) => {
                if let Some(Item::Message { message, .. }) =
                    by_id.get(&amended.id).and_then(|i| items.get_mut(*i))
                {
                    *message = amended;
                }
            }
            Event::Settings(change) => items.push(Item::Settings(change)),
            Event::Facts(facts) => merge_settings(&mut settings, facts),
            Event::Compaction(compaction) => items.push(Item::Compaction(compaction)),
            Event::Attached(text) => items.push(Item::Attached(text)),
            Event::AttachedMidway(attachment) => items.push(Item::AttachedMidway(attachment)),
            Event::Cleared(ids) => items.push(Item::Cleared(ids)),
            Event::MaxOutputTokens(_) => {}
            Event::Restart => {
                items.clear();
                by_id.clear();
            }
        }
    }
    (settings, items)
}

/// A foreign compaction as our compaction record, applied to `session`
/// (whose context after it is the record's `tokensAfter`). `number` counts
/// the compactions placed so far, this one included. `Err`: the kind of
/// skip, and why.
pub(crate) fn place(
    session: &mut Session,
    foreign: &ForeignCompaction,
    format: Format,
    number: usize,
    changed: &mut ChangedFiles,
) -> Result<CompactionRecord, (&'static str, Option<String>)> {
    let mut record = record(session, foreign, changed, format, number)
        .map_err(|why| ("compactions that could not be placed", Some(why)))?;
    session.apply_compaction(record.clone());
    // As the meter shows it: with the overhead the usage so far shows; the
    // session's copy too, which `conversation/compactions` lists.
    record.tokens_after = session.settle_tokens_after();
    Ok(record)
}

/// What the agent re-attached right after the compaction it just placed
/// (`Event::Attached`), counted on it, in the session and in its entry.
fn attach(session: &mut Session, text: &str, placed: Option<&mut LogEntry>) {
    session.attach_unseen(session.encoding().count(text));
    if let (Some(LogEntry::Compaction(record)), Some(now)) = (placed, session.compactions().last())
    {
        record.unseen_tokens = now.unseen_tokens;
        record.tokens_after = now.tokens_after;
    }
}

/// The agent's trim of old tool results that its transcript does not
/// record (`Event::Cleared`), as a `prune` compaction record of the
/// agent's, applied to `session`: compactd's view then sends what the agent
/// sends, and its meter counts it.
pub(crate) fn place_clearing(
    session: &mut Session,
    ids: Vec<String>,
    format: Format,
    number: usize,
) -> CompactionRecord {
    let tokens_before = session.calibrated_tokens();
    let mut record = CompactionRecord {
        id: format!("{}-{number}", format.name()),
        strategy: Strategy::Prune,
        summary: String::new(),
        first_kept_message_id: None,
        last_summarized_message_id: None,
        messages_summarized: ids.len(),
        tokens_before,
        tokens_after: 0,
        read_files: Vec::new(),
        modified_files: Vec::new(),
        file_marks: Default::default(),
        trigger: Trigger::Threshold,
        summarizer: format!("{}{}", format.name(), crate::compaction::record::IMPORTED),
        chunks: 0,
        degraded: false,
        degraded_reason: None,
        recall: 1.0,
        retained_rules: Vec::new(),
        usage: None,
        replaces: None,
        pruned_message_ids: ids,
        created_at: None,
        images: Vec::new(),
        provider_tokens_after: None,
        recount_note: None,
        dropped: Vec::new(),
        duration_ms: None,
        unseen_tokens: None,
    };
    session.apply_compaction(record.clone());
    record.tokens_after = session.settle_tokens_after();
    record
}

/// The rules of what a foreign compaction replaced, and of the summaries
/// before it: they stay required, so a later compaction must keep them
/// even where the agent's own summary dropped them. A new conversation
/// (`cleared`) carries none: the person started over.
fn carried_rules(session: &Session, replaced: &[&Message], cleared: bool) -> Vec<String> {
    if cleared {
        return Vec::new();
    }
    let mut rules = session
        .compactions()
        .iter()
        .rev()
        .find(|r| !r.summary.is_empty())
        .map(|r| r.retained_rules.clone())
        .unwrap_or_default();
    for rule in retention::rule_lines(replaced.iter().copied()) {
        if !rules.contains(&rule) {
            rules.push(rule);
        }
    }
    rules
}

fn record(
    session: &Session,
    foreign: &ForeignCompaction,
    changed: &mut ChangedFiles,
    format: Format,
    number: usize,
) -> Result<CompactionRecord, String> {
    let first_kept_id = foreign.first_kept.clone();
    let view: Vec<&Message> = session.view_messages().collect();
    let summarized = match &first_kept_id {
        Some(id) => view
            .iter()
            .position(|m| &m.id == id)
            .ok_or_else(|| format!("its first kept message {id} was already compacted"))?,
        None => view.len(),
    };
    if summarized == 0 {
        return Err("it summarizes no message".into());
    }
    let retained_rules = carried_rules(session, &view[..summarized], foreign.cleared);
    // The agent's summary checked as compactd checks its own: against the
    // files changed so far, the rules, the task and the latest request it
    // replaced (the summary alone: the same whether the rest of the
    // transcript is read yet or not).
    let required = if foreign.cleared {
        Vec::new()
    } else {
        retention::required(
            &modified_files(session, changed),
            retention::latest_request(view[..summarized].iter().copied()),
            &retained_rules,
            retention::first_request(session.all_messages()),
            &[],
        )
    };
    let outcome = retention::check(&foreign.summary, std::iter::empty(), &required);
    Ok(CompactionRecord {
        id: format!("{}-{number}", format.name()),
        strategy: Strategy::Checkpoint,
        summary: foreign.summary.clone(),
        first_kept_message_id: first_kept_id,
        last_summarized_message_id: Some(view[summarized - 1].id.clone()),
        messages_summarized: summarized,
        tokens_before: foreign.tokens_before,
        tokens_after: 0,
        read_files: foreign.read_files.clone(),
        modified_files: foreign.modified_files.clone(),
        file_marks: Default::default(),
        trigger: foreign.trigger,
        summarizer: format!("{}{}", format.name(), crate::compaction::record::IMPORTED),
        chunks: 1,
        degraded: false,
        degraded_reason: None,
        recall: outcome.recall,
        retained_rules,
        usage: None,
        replaces: None,
        pruned_message_ids: Vec::new(),
        created_at: foreign.created_at,
        images: Vec::new(),
        provider_tokens_after: None,
        recount_note: None,
        dropped: retention::describe_missing(&required, &outcome.missing),
        duration_ms: foreign.duration_ms,
        unseen_tokens: None,
    })
}

/// The files the messages' tool calls changed (by the shipped tool
/// mapping, a call whose result is no error), by file name: an agent's
/// summary names a file as it likes, the name is what it cannot leave out.
fn modified_files(session: &Session, changed: &mut ChangedFiles) -> Vec<String> {
    changed.update(session.all_shared_messages());
    let failed: std::collections::HashSet<&str> = changed
        .seen
        .iter()
        .filter_map(|seen| seen.failed.as_deref())
        .collect();
    let mut files: Vec<String> = Vec::new();
    for (call, names) in changed.seen.iter().flat_map(|seen| &seen.calls) {
        if failed.contains(call.as_str()) {
            continue;
        }
        for name in names {
            if !files.contains(name) {
                files.push(name.clone());
            }
        }
    }
    files
}

/// What each message of the session says of changed files, worked out
/// once per message: every compaction of an agent is checked against all
/// the files changed before it, and working each call out again at each
/// one (a shell command is parsed to find its files) made a transcript
/// with many compactions cost its length times their number.
#[derive(Default)]
pub(crate) struct ChangedFiles {
    tools: FileTools,
    /// By position in the session's messages.
    seen: Vec<Seen>,
}

struct Seen {
    /// The message as it was worked out (held, so that a later version,
    /// an amended response, is told apart by its address).
    message: Arc<Message>,
    /// Its calls that change files: the call's id and the files' names.
    calls: Vec<(String, Vec<String>)>,
    /// The call it answers with an error.
    failed: Option<String>,
}

impl ChangedFiles {
    fn update<'a>(&mut self, messages: impl ExactSizeIterator<Item = &'a Arc<Message>>) {
        self.seen.truncate(messages.len());
        for (i, message) in messages.enumerate() {
            if self
                .seen
                .get(i)
                .is_some_and(|seen| Arc::ptr_eq(&seen.message, message))
            {
                continue;
            }
            let seen = Seen {
                message: message.clone(),
                calls: message
                    .tool_calls()
                    .iter()
                    .map(|call| (call.id.clone(), self.names(call)))
                    .filter(|(_, names)| !names.is_empty())
                    .collect(),
                failed: message
                    .is_error_result()
                    .then(|| message.answers().map(str::to_string))
                    .flatten(),
            };
            match self.seen.get_mut(i) {
                Some(slot) => *slot = seen,
                None => self.seen.push(seen),
            }
        }
    }

    fn names(&self, call: &crate::conversation::ToolCall) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for (op, path) in self.tools.ops(call) {
            let name = path.rsplit(['/', '\\']).next().unwrap_or(&path).to_string();
            if op.is_modification() && !names.contains(&name) {
                names.push(name);
            }
        }
        names
    }
}

fn merge_settings(base: &mut SessionSettings, change: SessionSettings) {
    if change.model.is_some() {
        base.model = change.model;
    }
    if change.context_window.is_some() {
        base.context_window = change.context_window;
    }
    if change.system_prompt.is_some() {
        base.system_prompt = change.system_prompt;
    }
}
