//! What every foreign importer writes to, line by line: the `Emitter`
//! gives messages unique ids as they appear, keeps the messages a reader
//! may still change (a response written over several lines, usage that
//! arrives later) and turns each change into an `Event`. The batch import
//! feeds a reader every line and collects the events (`builder`); a
//! followed transcript feeds it the lines as they are written and applies
//! the events to a live session (`engine::follow`). One reader serves both.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::format::Format;
use super::imported::{Attachment, Skips};
use super::line::Line;
use crate::compaction::Trigger;
use crate::conversation::Message;
use crate::store::SessionSettings;

/// A compaction as another tool recorded it, its kept part resolved to
/// the id of the first message it kept (`None`: everything before it was
/// summarized).
#[derive(Debug, Clone, PartialEq)]
pub struct ForeignCompaction {
    pub summary: String,
    pub first_kept: Option<String>,
    pub tokens_before: u64,
    /// The context right after it, when the source says (Claude Code's
    /// `postTokens`).
    pub tokens_after: Option<u64>,
    pub read_files: Vec<String>,
    pub modified_files: Vec<String>,
    pub trigger: Trigger,
    pub line: usize,
    /// When it happened (ms since the epoch), when the source says.
    pub created_at: Option<u64>,
    /// How long it took, when the source says (Claude Code's `durationMs`).
    pub duration_ms: Option<u64>,
    /// Not a summary: a new conversation started in the same transcript
    /// (Claude Code's `/clear`), so nothing before it is context any more,
    /// and the rules said before it are not carried past it.
    pub cleared: bool,
}

/// What a transcript said, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A new message, its id unique in the transcript.
    Message {
        message: Message,
        line: usize,
    },
    /// A message given earlier (same id, same role) changed: a later line
    /// of the same response, or its usage.
    Amend(Message),
    /// Settings that change from here on (the model switched).
    Settings(SessionSettings),
    /// Settings of the whole conversation, learned now (its first model,
    /// the context window the agent states, its system prompt).
    Facts(SessionSettings),
    Compaction(ForeignCompaction),
    /// Content the agent added to its requests right after its latest
    /// compaction, before any message: what it re-attached (files read
    /// last, its plan, task list, invoked skills), in the transcript but
    /// not a message of the conversation. The meter counts it with the
    /// compaction (`CompactionRecord::unseen_tokens`).
    Attached(String),
    /// Content the agent added to its next request after the latest
    /// message, in no message, anywhere but right after a compaction
    /// (Claude Code's attachments mid-conversation: a file changed on
    /// disk, a reminder of its mode or tasks): in every request from here
    /// until that message leaves the context, so counted with it.
    AttachedMidway(Attachment),
    /// The agent replaced the results of these tool messages in its
    /// requests from here on, writing nothing of it (Claude Code's
    /// clearing of old tool results after the person was away): the view
    /// counts them as pruned.
    Cleared(Vec<String>),
    /// The most output tokens a request asks for (Claude Code states it),
    /// which moves the agent's auto-compaction point.
    MaxOutputTokens(u64),
    /// What came before is no longer the conversation (pi moved to another
    /// branch of its session tree): read the transcript again from the
    /// start.
    Restart,
}

/// A transcript format read one line at a time.
pub trait Reader {
    fn line(&mut self, number: usize, entry: &Value, out: &mut Emitter);
    /// The transcript ended (a batch import); a followed one never ends.
    fn finish(&mut self, _out: &mut Emitter) {}
    /// A followed transcript was read to its current end; from here on
    /// it grows.
    fn caught_up(&mut self) {}
}

/// Feeds `lines` to `reader`, unreadable ones counted as skipped.
pub(crate) fn feed(reader: &mut dyn Reader, lines: &[Line], out: &mut Emitter) {
    for line in lines {
        if let Some(entry) = out.readable(line) {
            reader.line(line.number, entry, out);
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Emitter {
    pub format: Format,
    #[serde(skip)]
    events: Vec<Event>,
    /// Not kept by the status line's cache, which reports none.
    #[serde(skip)]
    pub skipped: Skips,
    /// Ids given so far. Not kept by `compactd statusline`'s cache, which
    /// never looks at ids.
    #[serde(skip)]
    used: HashSet<String>,
    next_generated: usize,
    /// The id of each message by position (its 0-based number). Not kept
    /// by the status line's cache either.
    #[serde(skip)]
    ids: Vec<String>,
    emitted: usize,
    /// Messages a reader may still change, by position.
    open: BTreeMap<usize, Message>,
    changed: BTreeSet<usize>,
    /// The model the conversation is on now.
    model: Option<String>,
    /// Where the latest compaction was given (`emitted` then): content
    /// attached before the next message belongs to it.
    #[serde(default)]
    compacted_at: Option<usize>,
}

impl Emitter {
    pub fn new(format: Format) -> Emitter {
        Emitter {
            format,
            events: Vec::new(),
            skipped: Skips::default(),
            used: HashSet::new(),
            next_generated: 1,
            ids: Vec::new(),
            emitted: 0,
            open: BTreeMap::new(),
            changed: BTreeSet::new(),
            model: None,
            compacted_at: None,
        }
    }

    /// The events since the last call, changes to open messages included.
    pub fn drain(&mut self) -> Vec<Event> {
        self.flush_changes();
        std::mem::take(&mut self.events)
    }

    fn push(&mut self, event: Event) {
        // A change to an earlier message precedes what follows it, so a
        // tool call added to a response is known before its result.
        self.flush_changes();
        self.events.push(event);
    }

    fn flush_changes(&mut self) {
        for position in std::mem::take(&mut self.changed) {
            if let Some(message) = self.open.get(&position) {
                self.events.push(Event::Amend(message.clone()));
            }
        }
    }

    /// Adds a message and returns its position. `open`: the reader may
    /// still change it (`message_mut`) until it closes it.
    pub fn message(
        &mut self,
        line: usize,
        preferred_id: Option<&str>,
        mut message: Message,
        open: bool,
    ) -> usize {
        message.id = self.new_id(preferred_id.filter(|id| !id.is_empty()));
        let position = self.emitted;
        self.emitted += 1;
        self.ids.push(message.id.clone());
        if open {
            self.open.insert(position, message.clone());
        }
        self.push(Event::Message { message, line });
        position
    }

    /// The source's id where it is unused and not of the shape we
    /// generate, else the next free `m<n>`.
    fn new_id(&mut self, preferred: Option<&str>) -> String {
        let id = match preferred {
            Some(id) if !self.used.contains(id) && !looks_generated(id) => id.to_string(),
            _ => loop {
                let candidate = format!("m{}", self.next_generated);
                self.next_generated += 1;
                if !self.used.contains(&candidate) {
                    break candidate;
                }
            },
        };
        self.used.insert(id.clone());
        id
    }

    pub fn has_messages(&self) -> bool {
        self.emitted > 0
    }

    /// An open message, to change; the change becomes an `Amend`.
    pub fn message_mut(&mut self, position: usize) -> Option<&mut Message> {
        let message = self.open.get_mut(&position)?;
        self.changed.insert(position);
        Some(message)
    }

    /// An open message as it stands.
    pub fn open_message(&self, position: usize) -> Option<&Message> {
        self.open.get(&position)
    }

    /// The reader will not change this message again.
    pub fn close(&mut self, position: usize) {
        if self.changed.remove(&position) {
            if let Some(message) = self.open.get(&position) {
                self.events.push(Event::Amend(message.clone()));
            }
        }
        self.open.remove(&position);
    }

    /// The id of the message at `position` (a reader notes
    /// `next_position` where a source entry starts, so an entry that built
    /// no message resolves to the first message after it).
    pub fn first_id_from(&self, position: usize) -> Option<String> {
        self.ids.get(position).cloned()
    }

    /// How many messages were given so far: the position the next one gets.
    pub fn next_position(&self) -> usize {
        self.emitted
    }

    /// Changes the model (or other settings) from here on. Before any
    /// message, and for the first model named at all (Codex names it only
    /// after the first messages), they are the conversation's own.
    pub fn settings(&mut self, change: SessionSettings) {
        let first_model = self.model.is_none();
        let changes_model = change.model.is_some() && change.model != self.model;
        if change.model.is_some() {
            self.model = change.model.clone();
        }
        if !self.has_messages() || first_model && change.system_prompt.is_none() {
            if change != SessionSettings::default() {
                self.push(Event::Facts(change));
            }
        } else if changes_model || change.system_prompt.is_some() || change.context_window.is_some()
        {
            self.push(Event::Settings(change));
        }
    }

    /// Settings of the whole conversation that the source states (a window).
    pub fn facts(&mut self, facts: SessionSettings) {
        self.push(Event::Facts(facts));
    }

    pub fn max_output_tokens(&mut self, tokens: u64) {
        self.push(Event::MaxOutputTokens(tokens));
    }

    /// The model the conversation is on now, as far as it was named.
    pub fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    pub fn compaction(&mut self, compaction: ForeignCompaction) {
        // Nothing before a compaction changes after it.
        for position in self.open.keys().copied().collect::<Vec<_>>() {
            self.close(position);
        }
        self.push(Event::Compaction(compaction));
        self.compacted_at = Some(self.emitted);
    }

    /// The agent stopped sending these tool results (`Event::Cleared`).
    pub fn cleared(&mut self, ids: Vec<String>) {
        if !ids.is_empty() {
            self.push(Event::Cleared(ids));
        }
    }

    /// Content the agent attached to its requests: right after a
    /// compaction, before any message, what the agent re-attached
    /// (`Event::Attached`); after a message, what it added to the next
    /// request (`Event::AttachedMidway`).
    pub fn attached(&mut self, text: String) {
        if text.trim().is_empty() {
            return;
        }
        if self.compacted_at == Some(self.emitted) {
            self.push(Event::Attached(text));
        } else if self.emitted > 0 {
            self.push(Event::AttachedMidway(Attachment::Text(text)));
        }
    }

    /// What the agent's rule says it added to the next request and wrote
    /// nowhere, by size (`Attachment::Estimated`).
    pub fn attached_estimate(&mut self, tokens: u64) {
        if self.emitted > 0 && tokens > 0 {
            self.push(Event::AttachedMidway(Attachment::Estimated(tokens)));
        }
    }

    pub fn restart(&mut self) {
        self.push(Event::Restart);
    }

    /// The line's JSON, or `None` after counting it as unreadable.
    pub fn readable<'a>(&mut self, line: &'a Line) -> Option<&'a Value> {
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
}

/// `m<digits>`, the shape of the ids we generate.
fn looks_generated(id: &str) -> bool {
    id.strip_prefix('m')
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}
