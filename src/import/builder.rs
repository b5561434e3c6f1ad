//! What every foreign importer shares: collect items in source order, then
//! give messages unique ids and turn foreign compactions into ours.
//! Importers may still change a collected message (merge split lines,
//! attach usage reported later) until `finish`.

use std::collections::HashSet;

use super::{Format, Imported, Skips};
use crate::compaction::Strategy;
use crate::compaction::{CompactionRecord, Trigger};
use crate::conversation::Message;
use crate::session::Session;
use crate::store::{LogEntry, SessionSettings};

/// Where a foreign compaction's kept part starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FirstKept {
    /// The first message at or after this item index is the first kept.
    Item(usize),
    /// Everything before the compaction was summarized.
    Nothing,
}

/// A compaction as another tool recorded it.
#[derive(Debug, Clone)]
pub struct ForeignCompaction {
    pub summary: String,
    pub first_kept: FirstKept,
    pub tokens_before: u64,
    pub read_files: Vec<String>,
    pub modified_files: Vec<String>,
    pub trigger: Trigger,
    pub line: usize,
}

#[derive(Debug, Clone)]
pub enum Item {
    Message {
        preferred_id: Option<String>,
        message: Message,
        line: usize,
    },
    Settings(SessionSettings),
    Compaction(ForeignCompaction),
}

pub struct Builder {
    format: Format,
    pub settings: SessionSettings,
    pub items: Vec<Item>,
    pub skipped: Skips,
}

impl Builder {
    pub fn new(format: Format) -> Builder {
        Builder {
            format,
            settings: SessionSettings::default(),
            items: Vec::new(),
            skipped: Skips::default(),
        }
    }

    /// Adds a message; returns its item index.
    pub fn message(&mut self, line: usize, preferred_id: Option<&str>, message: Message) -> usize {
        self.items.push(Item::Message {
            preferred_id: preferred_id.filter(|id| !id.is_empty()).map(str::to_string),
            message,
            line,
        });
        self.items.len() - 1
    }

    pub fn has_messages(&self) -> bool {
        self.items.iter().any(|i| matches!(i, Item::Message { .. }))
    }

    pub fn message_mut(&mut self, index: usize) -> Option<&mut Message> {
        match self.items.get_mut(index) {
            Some(Item::Message { message, .. }) => Some(message),
            _ => None,
        }
    }

    /// Changes the model (or other settings) from here on; before any
    /// message it sets the starting settings.
    pub fn settings(&mut self, change: SessionSettings) {
        let has_messages = self.has_messages();
        // The first model named is the session's, even when the source
        // names it only after the first messages (Codex's turn_context).
        let first_model = self.settings.model.is_none() && self.current_model().is_none();
        if !has_messages || first_model && change.system_prompt.is_none() {
            merge_settings(&mut self.settings, change);
            return;
        }
        let current = self.current_model();
        if change.model.is_some() && change.model != current
            || change.system_prompt.is_some()
            || change.context_window.is_some()
        {
            self.items.push(Item::Settings(change));
        }
    }

    fn current_model(&self) -> Option<String> {
        self.items
            .iter()
            .rev()
            .find_map(|i| match i {
                Item::Settings(s) if s.model.is_some() => s.model.clone(),
                _ => None,
            })
            .or_else(|| self.settings.model.clone())
    }

    pub fn compaction(&mut self, compaction: ForeignCompaction) {
        self.items.push(Item::Compaction(compaction));
    }

    /// The line's JSON, or `None` after counting it as unreadable.
    pub fn readable<'a>(&mut self, line: &'a super::Line) -> Option<&'a serde_json::Value> {
        match &line.value {
            Ok(value) => Some(value),
            Err(why) => {
                self.skip_because(line.number, "unreadable lines", why);
                None
            }
        }
    }

    pub fn skip(&mut self, line: usize, kind: &str) {
        self.skipped.add(line, kind, None);
    }

    pub fn skip_because(&mut self, line: usize, kind: &str, detail: impl Into<String>) {
        self.skipped.add(line, kind, Some(detail.into()));
    }

    /// Skips a line whose type is not conversation: one the source writes
    /// for itself (`bookkeeping`), one without a type, or an unknown one.
    pub fn skip_line_type(&mut self, line: usize, kind: &str, bookkeeping: &[&str]) {
        match kind {
            "" => self.skip_because(line, "unreadable lines", "no `type`"),
            kind if bookkeeping.contains(&kind) => self.skip(line, &format!("{kind} lines")),
            other => self.skip(line, &format!("unknown line type `{other}`")),
        }
    }

    /// Assigns ids (the source's where unique) and resolves compactions
    /// against the messages before them.
    pub fn finish(self) -> Imported {
        let Builder {
            format,
            settings,
            items,
            mut skipped,
        } = self;
        let ids = message_ids(&items);
        let has_compactions = items.iter().any(|i| matches!(i, Item::Compaction(_)));
        // Only compactions need the session: their record says how much
        // they summarized and what the context was afterwards.
        let mut session = has_compactions.then(|| {
            Session::new(
                "import".into(),
                settings.model.clone(),
                settings.context_window,
                settings.system_prompt.clone(),
                crate::compaction::DEFAULT_SUMMARY_PREFIX
                    .trim_end()
                    .to_string(),
            )
        });
        let mut entries = Vec::with_capacity(items.len());
        let mut message_lines = Vec::new();
        let mut compactions = 0usize;
        for (index, item) in items.iter().enumerate() {
            match item {
                Item::Message { message, line, .. } => {
                    let mut message = message.clone();
                    message.id = ids[index].clone().expect("assigned above");
                    if let Some(session) = &mut session {
                        session.push(vec![message.clone()]);
                    }
                    message_lines.push(*line);
                    entries.push(LogEntry::message(message));
                }
                Item::Settings(change) => {
                    if let Some(session) = &mut session {
                        if change.model.is_some() {
                            session.set_model(change.model.clone());
                        }
                    }
                    entries.push(LogEntry::Settings(change.clone()));
                }
                Item::Compaction(foreign) => {
                    let session = session.as_mut().expect("created when compactions exist");
                    let number = compactions + 1;
                    match place(session, foreign, &ids[..index], format, number) {
                        Ok(entry) => {
                            compactions = number;
                            entries.push(entry);
                        }
                        Err((kind, why)) => skipped.add(foreign.line, kind, why),
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
}

/// The id of the message at each item index: the source's where it is
/// unique and not of the shape we generate, else the next free `m<n>`.
fn message_ids(items: &[Item]) -> Vec<Option<String>> {
    let mut used: HashSet<String> = HashSet::new();
    let mut ids: Vec<Option<String>> = vec![None; items.len()];
    let mut next = 1usize;
    for (index, item) in items.iter().enumerate() {
        if let Item::Message { preferred_id, .. } = item {
            let id = match preferred_id {
                Some(id) if !used.contains(id) && !looks_generated(id) => id.clone(),
                _ => loop {
                    let candidate = format!("m{next}");
                    next += 1;
                    if !used.contains(&candidate) {
                        break candidate;
                    }
                },
            };
            used.insert(id.clone());
            ids[index] = Some(id);
        }
    }
    ids
}

/// A foreign compaction as our log entry, applied to `session` (whose
/// context after it is the record's `tokensAfter`); `earlier_ids` are the
/// message ids of the items before it. `Err`: the kind of skip, and why.
fn place(
    session: &mut Session,
    foreign: &ForeignCompaction,
    earlier_ids: &[Option<String>],
    format: Format,
    number: usize,
) -> Result<LogEntry, (&'static str, Option<String>)> {
    let first_kept_id = match foreign.first_kept {
        FirstKept::Nothing => None,
        FirstKept::Item(at) => Some(
            earlier_ids
                .get(at..)
                .into_iter()
                .flatten()
                .find_map(|id| id.clone())
                .ok_or(("compactions that keep no earlier message", None))?,
        ),
    };
    let mut record = record(session, foreign, first_kept_id, format, number)
        .map_err(|why| ("compactions that could not be placed", Some(why)))?;
    session.apply_compaction(record.clone());
    // As the meter shows it: with the overhead the usage so far shows.
    record.tokens_after = session.calibrated_tokens();
    Ok(LogEntry::Compaction(Box::new(record)))
}

fn record(
    session: &Session,
    foreign: &ForeignCompaction,
    first_kept_id: Option<String>,
    format: Format,
    number: usize,
) -> Result<CompactionRecord, String> {
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
        summarizer: format!("{} (imported)", format.name()),
        chunks: 1,
        degraded: false,
        degraded_reason: None,
        // What the source's summary kept was not checked here.
        recall: 1.0,
        retained_rules: Vec::new(),
        usage: None,
        replaces: None,
        pruned_message_ids: Vec::new(),
        created_at: 0,
        duration_ms: 0,
    })
}

/// `m<digits>`, the shape of the ids we generate.
fn looks_generated(id: &str) -> bool {
    id.strip_prefix('m')
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
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
