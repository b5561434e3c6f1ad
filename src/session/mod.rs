//! One conversation's state: every message ever appended, the compactions
//! applied to it, and the LLM view derived from both. Pure: the engine
//! persists each change to the session log before applying it here, and
//! plans and records compactions with `crate::compaction::job`.
//!
//! The view starts after the latest checkpoint (its summary comes first),
//! then shows the messages appended since, with the runs that
//! `incremental` compactions replaced shown as their summaries and the tool
//! outputs that `prune` removed shown as placeholders; a tool result that
//! answers no open call (`CallTracker`) is kept but not shown. Nothing is
//! ever removed from `messages`. What the view counts (running totals, the
//! calibration, the meter) is in `meter`.

mod meter;
mod totals;

mod amend;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::compaction::job::{self, PlanInput, PlanOptions, PlannedJob};
use crate::compaction::plan::{EntryKind, ViewEntry};
use crate::compaction::record::{pruned_placeholder, CompactionRecord};
use crate::compaction::retention;
use crate::compaction::trigger::CircuitBreaker;
use crate::compaction::{self, Strategy};
use crate::conversation::{CallStep, CallTracker, Message, MessageBody, OffHistory};
use crate::files::{FileEvent, SessionFileLedger};
use crate::tokens::{self, Calibration, Encoding};
use totals::{synthetic_tokens, ViewTotals};

#[derive(Debug, Clone)]
struct Counted {
    /// Shared with views and compaction jobs, which never copy it.
    message: Arc<Message>,
    tokens: u64,
    /// How many compactions had been applied when it was appended; usage
    /// from an older generation describes a context that no longer exists.
    generation: usize,
    /// Part of the history a model sees: false for a tool result that
    /// answers no open call (late, second, or without a call).
    in_view: bool,
    /// Its calls that got no result before the conversation moved on
    /// (id, tool name): the history closes each with a synthetic result,
    /// whose tokens count with this message.
    interrupted: Vec<(String, String)>,
    synthetic_tokens: u64,
    /// What the agent attached to its requests after this message and
    /// in no message (Claude Code's attachments mid-conversation), as
    /// counted when it came: it leaves the view with this message.
    attached_tokens: u64,
}

impl Counted {
    /// Tokens after the message itself in every request that holds it:
    /// the synthetic results closing its calls, what was attached after it.
    fn trailing_tokens(&self) -> u64 {
        self.synthetic_tokens + self.attached_tokens
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// A message, by index into `messages`.
    Message(usize),
    /// The summary of an `incremental` compaction, by record index.
    Summary(usize),
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum AppendError {
    #[error("messages[{index}].id: `{id}` is already used in this session")]
    DuplicateId { index: usize, id: String },
}

#[derive(Debug, Clone)]
pub struct Session {
    pub id: String,
    pub model: Option<String>,
    pub context_window: Option<u64>,
    pub system_prompt: Option<String>,
    /// The tool definitions the client declared, as the provider gets them.
    pub tool_definitions: Option<Vec<serde_json::Value>>,
    /// Per-session auto-compaction switch (`None`: the config decides).
    pub auto_compact_switch: Option<bool>,
    /// The circuit breaker of automatic compaction (not persisted: a
    /// restart gives auto-compaction a fresh chance).
    pub breaker: CircuitBreaker,
    encoding: Encoding,
    messages: Vec<Counted>,
    index: HashMap<String, usize>,
    compactions: Vec<CompactionRecord>,
    pins: Vec<String>,
    checkpoint: Option<usize>,
    view: Vec<Slot>,
    /// Pruned message index → tokens of its placeholder form.
    pruned: HashMap<usize, u64>,
    /// Tokens of each record's summary message.
    summary_tokens: Vec<u64>,
    system_tokens: u64,
    tool_tokens: u64,
    /// What the provider counts beyond our count, learned from usage.
    calibration: Calibration,
    summary_prefix: String,
    totals: ViewTotals,
    /// The file ledger, fed by file events applied in log order.
    pub file_ledger: SessionFileLedger,
    /// Which results may still answer which calls.
    calls: CallTracker,
    /// The message whose calls are open (waiting for results).
    open_caller: Option<usize>,
}

impl Session {
    pub fn new(
        id: String,
        model: Option<String>,
        context_window: Option<u64>,
        system_prompt: Option<String>,
        summary_prefix: String,
    ) -> Session {
        let encoding = Encoding::for_model(model.as_deref());
        let mut session = Session {
            id,
            model,
            context_window,
            system_prompt: None,
            tool_definitions: None,
            auto_compact_switch: None,
            breaker: CircuitBreaker::default(),
            encoding,
            messages: Vec::new(),
            index: HashMap::new(),
            compactions: Vec::new(),
            pins: Vec::new(),
            checkpoint: None,
            view: Vec::new(),
            pruned: HashMap::new(),
            summary_tokens: Vec::new(),
            system_tokens: 0,
            tool_tokens: 0,
            calibration: Calibration::default(),
            summary_prefix,
            totals: ViewTotals::default(),
            file_ledger: SessionFileLedger::default(),
            calls: CallTracker::default(),
            open_caller: None,
        };
        session.set_system_prompt(system_prompt);
        session
    }

    pub fn set_system_prompt(&mut self, prompt: Option<String>) {
        self.system_tokens = prompt
            .as_deref()
            .map(|p| tokens::count_message(self.encoding, &Message::system("system", p)))
            .unwrap_or(0);
        self.system_prompt = prompt;
    }

    pub fn set_tool_definitions(&mut self, tools: Option<Vec<serde_json::Value>>) {
        self.tool_tokens = tools
            .as_deref()
            .map_or(0, |t| tokens::count_tool_definitions(self.encoding, t));
        self.tool_definitions = tools;
    }

    pub fn set_model(&mut self, model: Option<String>) {
        if model == self.model {
            return;
        }
        self.model = model;
        let encoding = Encoding::for_model(self.model.as_deref());
        if encoding != self.encoding {
            self.encoding = encoding;
            for counted in &mut self.messages {
                counted.tokens = tokens::count_message(encoding, &counted.message);
                counted.synthetic_tokens = synthetic_tokens(encoding, &counted.interrupted);
            }
            let prompt = self.system_prompt.take();
            self.set_system_prompt(prompt);
            let tools = self.tool_definitions.take();
            self.set_tool_definitions(tools);
            // Another vocabulary: every summary is counted again.
            self.summary_tokens.clear();
            self.rebuild_view();
        } else {
            // Which usage reports count depends on the model.
            self.recompute_totals();
        }
    }

    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    pub fn message_count(&self) -> usize {
        self.messages.len()
    }

    pub fn last_message_id(&self) -> Option<&str> {
        self.messages.last().map(|c| c.message.id.as_str())
    }

    pub fn compactions(&self) -> &[CompactionRecord] {
        &self.compactions
    }

    pub fn last_compaction(&self) -> Option<&CompactionRecord> {
        self.compactions.last()
    }

    fn latest_checkpoint(&self) -> Option<&CompactionRecord> {
        self.checkpoint.map(|i| &self.compactions[i])
    }

    pub fn pins(&self) -> &[String] {
        &self.pins
    }

    pub fn add_pin(&mut self, text: String) {
        if !self.pins.contains(&text) {
            self.pins.push(text);
        }
    }

    pub fn contains_message(&self, id: &str) -> bool {
        self.index.contains_key(id)
    }

    /// Gives every message an id and rejects ids already used. Does not
    /// change the session: the caller persists, then calls `push`.
    pub fn assign_ids(&self, messages: &mut [Message]) -> Result<(), AppendError> {
        let mut fresh: HashSet<&str> = HashSet::new();
        for (index, message) in messages.iter().enumerate() {
            if message.id.is_empty() {
                continue;
            }
            if self.index.contains_key(&message.id) || !fresh.insert(message.id.as_str()) {
                return Err(AppendError::DuplicateId {
                    index,
                    id: message.id.clone(),
                });
            }
        }
        let mut next = self.messages.len() + 1;
        let mut auto_ids: Vec<(usize, String)> = Vec::new();
        for (index, message) in messages.iter().enumerate() {
            if message.id.is_empty() {
                let id = loop {
                    let candidate = format!("m{next}");
                    next += 1;
                    if !self.index.contains_key(&candidate) && !fresh.contains(candidate.as_str()) {
                        break candidate;
                    }
                };
                auto_ids.push((index, id));
            }
        }
        for (index, id) in auto_ids {
            messages[index].id = id;
        }
        Ok(())
    }

    /// Adds messages that already have unique ids (see `assign_ids`).
    /// Every message is kept; a tool result that answers no open call
    /// stays out of the view (`CallTracker`): returned with its position
    /// in `messages` and why.
    pub fn push(&mut self, messages: Vec<Message>) -> Vec<(usize, OffHistory)> {
        self.push_counted(messages.into_iter().map(|m| (m, None)))
    }

    /// `push` with token counts already known: `Some` is a count made with
    /// this session's encoding (the session log stores them), `None` is
    /// counted here.
    pub fn push_counted(
        &mut self,
        messages: impl IntoIterator<Item = (Message, Option<u64>)>,
    ) -> Vec<(usize, OffHistory)> {
        let generation = self.compactions.len();
        let mut off_history = Vec::new();
        for (position, (message, known)) in messages.into_iter().enumerate() {
            self.file_ledger.observe(&message);
            let index = self.messages.len();
            let in_view = match self.calls.observe(&message) {
                CallStep::Answers => true,
                CallStep::Off(why) => {
                    off_history.push((position, why));
                    false
                }
                CallStep::Turn { interrupted } => {
                    self.close_interrupted(interrupted);
                    self.open_caller = (!message.tool_calls().is_empty()).then_some(index);
                    true
                }
            };
            // After the tracker: the request this reply answers held the
            // synthetic results its arrival closed the calls with.
            self.calibrate(&message);
            let tokens = known.unwrap_or_else(|| tokens::count_message(self.encoding, &message));
            self.index.insert(message.id.clone(), index);
            self.messages.push(Counted {
                message: Arc::new(message),
                tokens,
                generation,
                in_view,
                interrupted: Vec::new(),
                synthetic_tokens: 0,
                attached_tokens: 0,
            });
            if in_view {
                self.view.push(Slot::Message(index));
                self.add_to_totals(Slot::Message(index));
            }
        }
        off_history
    }

    /// All messages ever appended, compacted or not.
    pub fn all_messages(&self) -> impl Iterator<Item = &Message> {
        self.messages.iter().map(|c| c.message.as_ref())
    }

    /// `all_messages`, shared: a later version of a message (an amended
    /// response) is another `Arc`.
    pub(crate) fn all_shared_messages(&self) -> impl ExactSizeIterator<Item = &Arc<Message>> {
        self.messages.iter().map(|c| &c.message)
    }

    /// The messages the agent's own compactions replaced since compactd's
    /// last summary (or the last `/clear`), when the newest summary is the
    /// agent's: its summary may have dropped what they hold (an approved
    /// plan, a rule), and the built-in digest reads them back.
    pub fn replaced_by_agent(&self) -> Vec<Arc<Message>> {
        let summaries: Vec<&CompactionRecord> = self
            .compactions
            .iter()
            .filter(|r| !r.summary.is_empty())
            .collect();
        let Some((newest, before)) = summaries.split_last() else {
            return Vec::new();
        };
        if !newest.is_agents() || newest.clears() {
            return Vec::new();
        }
        let after = |r: &CompactionRecord| {
            r.last_replaced_id()
                .and_then(|id| self.index.get(id))
                .map(|i| i + 1)
        };
        let start = before
            .iter()
            .rev()
            .find(|r| !r.is_agents() || r.clears())
            .and_then(|r| after(r))
            .unwrap_or(0);
        let end = after(newest).unwrap_or(start).max(start);
        self.messages[start..end]
            .iter()
            .map(|c| Arc::clone(&c.message))
            .collect()
    }

    /// Where the current conversation starts: after the last `/clear` an
    /// agent's transcript recorded (`CompactionRecord::clears`), else at
    /// the first message.
    fn conversation_start(&self) -> usize {
        self.compactions
            .iter()
            .rev()
            .find(|r| r.clears())
            .and_then(|r| r.last_replaced_id())
            .and_then(|id| self.index.get(id))
            .map_or(0, |i| i + 1)
    }

    /// The messages of the current conversation (see
    /// `conversation_start`), shared: the task, the rules and the recap
    /// come from them.
    pub fn conversation_messages(&self) -> impl Iterator<Item = &Arc<Message>> {
        self.messages[self.conversation_start()..]
            .iter()
            .map(|c| &c.message)
    }

    /// The compactions since the current conversation started.
    pub fn conversation_compactions(&self) -> &[CompactionRecord] {
        let cleared = self.compactions.iter().rposition(|r| r.clears());
        &self.compactions[cleared.map_or(0, |i| i + 1)..]
    }

    /// Every message ever appended, shared (recall reads them off the
    /// state owner without copying them).
    pub fn shared_messages(&self) -> impl Iterator<Item = &Arc<Message>> {
        self.messages.iter().map(|c| &c.message)
    }

    /// A message by id, with its position.
    pub fn position(&self, id: &str) -> Option<usize> {
        self.index.get(id).copied()
    }

    /// The position of the message an id or a summary's citation names
    /// (`conversation::short_id`: the start of a longer id, when exactly one
    /// message's id starts so).
    pub fn find(&self, id: &str) -> Option<usize> {
        if let Some(at) = self.position(id) {
            return Some(at);
        }
        if id.chars().count() < 8 {
            return None;
        }
        let mut found = self.index.iter().filter(|(full, _)| full.starts_with(id));
        match (found.next(), found.next()) {
            (Some((_, at)), None) => Some(*at),
            _ => None,
        }
    }

    /// Raw messages in the current view (after the latest checkpoint,
    /// excluding those replaced by an incremental summary).
    pub fn view_messages(&self) -> impl Iterator<Item = &Message> {
        self.view.iter().filter_map(|slot| match slot {
            Slot::Message(i) => Some(self.messages[*i].message.as_ref()),
            Slot::Summary(_) => None,
        })
    }

    /// The view as the model sees it, checkpoint summary first.
    pub fn view_entries(&self) -> Vec<ViewEntry> {
        let summary = |r: usize, kind| ViewEntry {
            message: Arc::new(self.summary_message(r)),
            tokens: self.summary_tokens[r],
            message_tokens: self.summary_tokens[r],
            kind,
        };
        let mut entries = Vec::with_capacity(self.view.len() + 1);
        if let Some(i) = self.checkpoint {
            entries.push(summary(i, EntryKind::CheckpointSummary));
        }
        for slot in &self.view {
            entries.push(match *slot {
                Slot::Message(i) => match self.pruned.get(&i) {
                    Some(tokens) => ViewEntry {
                        message: Arc::new(pruned_message(&self.messages[i])),
                        tokens: *tokens,
                        message_tokens: *tokens,
                        kind: EntryKind::Pruned,
                    },
                    None => ViewEntry {
                        message: Arc::clone(&self.messages[i].message),
                        tokens: self.slot_tokens(slot),
                        message_tokens: self.messages[i].tokens,
                        kind: EntryKind::Message,
                    },
                },
                Slot::Summary(r) => summary(r, EntryKind::IncrementalSummary),
            });
        }
        entries
    }

    /// The LLM-facing history: system prompt, then the view with
    /// interrupted tool calls closed.
    pub fn history(&self) -> Vec<Message> {
        let entries: Vec<Message> = self
            .view_entries()
            .into_iter()
            .map(|e| Arc::unwrap_or_clone(e.message))
            .collect();
        compaction::rebuild_history(self.system_prompt.as_deref(), entries)
    }

    fn slot_tokens(&self, slot: &Slot) -> u64 {
        match *slot {
            Slot::Message(i) => {
                let counted = &self.messages[i];
                let own = self.pruned.get(&i).copied().unwrap_or(counted.tokens);
                own + counted.trailing_tokens()
            }
            Slot::Summary(r) => self.summary_tokens[r],
        }
    }

    /// What planning a compaction sees of this session.
    pub fn plan_input(&self) -> PlanInput<'_> {
        PlanInput {
            entries: self.view_entries(),
            system_tokens: self.declared_tokens(),
            correction: self.correction(),
            has_checkpoint: self.checkpoint.is_some(),
            records: &self.compactions,
            task: retention::first_request(self.conversation_messages().map(Arc::as_ref)),
            replaced_by_agent: self.replaced_by_agent(),
            pins: &self.pins,
            files: self.file_ledger.sections(),
            encoding: self.encoding,
            summary_prefix: &self.summary_prefix,
            system_prompt: self.system_prompt.as_deref(),
            tool_definitions: self.tool_definitions.as_deref().unwrap_or(&[]),
            model: self.model.as_deref(),
        }
    }

    /// Plans a compaction (see `compaction::job::plan`); `Err` says why
    /// there is nothing to compact.
    pub fn plan(&self, options: &PlanOptions, tokens_before: u64) -> Result<PlannedJob, String> {
        job::plan(&self.plan_input(), options, tokens_before)
    }

    /// Tokens the summary message of `record` takes in the view.
    pub fn summary_tokens_of(&self, record: &CompactionRecord) -> u64 {
        record.summary_tokens(self.encoding, &self.summary_prefix)
    }

    fn summary_message(&self, record_index: usize) -> Message {
        self.compactions[record_index].view_message(&self.summary_prefix)
    }

    /// Applies a file event (new or replayed from the log) to the ledger.
    pub fn apply_file_event(&mut self, event: &FileEvent) {
        self.file_ledger.apply(event, self.compactions.len());
    }

    /// Applies a compaction (new or replayed from the log).
    pub fn apply_compaction(&mut self, record: CompactionRecord) {
        let recounted = record.provider_tokens_after;
        self.compactions.push(record);
        self.rebuild_view();
        // The provider's count of the compacted history is a sample of how
        // it counts, as a response's usage is.
        if let Some(reported) = recounted {
            let estimate = self.estimated_tokens();
            self.calibration
                .observe(self.model.as_deref(), estimate, reported);
        }
    }

    /// Sets the latest compaction's `tokens_after` to the context the
    /// session now holds as the meter shows it (an imported compaction,
    /// whose source counted without the system prompt and tools, or not at
    /// all), and returns it.
    pub fn settle_tokens_after(&mut self) -> u64 {
        let tokens = self.calibrated_tokens();
        if let Some(record) = self.compactions.last_mut() {
            record.tokens_after = tokens;
        }
        tokens
    }

    /// Recomputes the view from the messages and every compaction record.
    fn rebuild_view(&mut self) {
        // Records are only ever added: count the new ones' summaries, not
        // every summary again (an agent's transcript with 200 compactions
        // cost 200² counts of summaries of up to 80 KB each).
        let counted = self.summary_tokens.len().min(self.compactions.len());
        self.summary_tokens.truncate(counted);
        for r in counted..self.compactions.len() {
            let tokens = self.summary_tokens_of(&self.compactions[r]);
            self.summary_tokens.push(tokens);
        }
        self.checkpoint = self.compactions.iter().rposition(|r| {
            r.strategy == Strategy::Checkpoint && r.last_summarized_message_id.is_some()
        });
        let start = self
            .latest_checkpoint()
            .and_then(|r| r.last_summarized_message_id.as_ref())
            .and_then(|id| self.index.get(id))
            .map(|i| i + 1)
            .unwrap_or(0);
        let mut replaced: HashMap<usize, (usize, usize)> = HashMap::new();
        let mut pruned: HashMap<usize, u64> = HashMap::new();
        for (r, record) in self.compactions.iter().enumerate() {
            match record.strategy {
                Strategy::Incremental => {
                    let Some(range) = &record.replaces else {
                        continue;
                    };
                    if let (Some(&from), Some(&to)) = (
                        self.index.get(&range.from_message_id),
                        self.index.get(&range.to_message_id),
                    ) {
                        if from >= start && to >= from {
                            replaced.insert(from, (to, r));
                        }
                    }
                }
                Strategy::Prune => {
                    for id in &record.pruned_message_ids {
                        if let Some(&i) = self.index.get(id) {
                            if i >= start {
                                let tokens = tokens::count_message(
                                    self.encoding,
                                    &pruned_message(&self.messages[i]),
                                );
                                pruned.insert(i, tokens);
                            }
                        }
                    }
                }
                Strategy::Checkpoint | Strategy::Handoff => {}
            }
        }
        let mut view = Vec::with_capacity(self.messages.len() - start.min(self.messages.len()));
        let mut i = start;
        while i < self.messages.len() {
            if let Some(&(to, r)) = replaced.get(&i) {
                view.push(Slot::Summary(r));
                i = to + 1;
            } else {
                if self.messages[i].in_view {
                    view.push(Slot::Message(i));
                }
                i += 1;
            }
        }
        self.view = view;
        self.pruned = pruned;
        // Open calls whose caller a compaction took out of the view are
        // closed: a result arriving for them now is late.
        if let Some(caller) = self.open_caller {
            if !self.view.iter().rev().any(|s| *s == Slot::Message(caller)) {
                self.calls.close_open();
                self.open_caller = None;
            }
        }
        self.recompute_totals();
    }
}

fn pruned_message(counted: &Counted) -> Message {
    let mut message = Message::clone(&counted.message);
    if let MessageBody::Tool { content, .. } = &mut message.body {
        *content = pruned_placeholder(counted.tokens).text().into();
    }
    message
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A session counted in o200k with a system prompt, its summaries
    /// introduced by `PREFIX`.
    pub(crate) fn session() -> Session {
        Session::new(
            "s".into(),
            Some("gpt-4o".into()),
            None,
            Some("be brief".into()),
            "PREFIX".into(),
        )
    }

    #[test]
    fn ids_are_assigned_and_duplicates_rejected() {
        let mut s = session();
        let mut batch = vec![
            Message::user("", "a"),
            Message::user("x", "b"),
            Message::user("", "c"),
        ];
        s.assign_ids(&mut batch).unwrap();
        let ids: Vec<_> = batch.iter().map(|m| m.id.clone()).collect();
        assert_eq!(ids, ["m1", "x", "m2"]);
        s.push(batch);
        let mut again = vec![Message::user("x", "dup")];
        assert_eq!(
            s.assign_ids(&mut again),
            Err(AppendError::DuplicateId {
                index: 0,
                id: "x".into()
            })
        );
    }

    #[test]
    fn a_citation_finds_the_one_message_whose_id_starts_with_it() {
        let mut s = session();
        let ids = [
            "5217d838-5181-433d-a8b8-c96b9ad7bfb3",
            "9a1c04e2-0000-4000-8000-000000000001",
            "9a1c04e2-0000-4000-8000-000000000002",
        ];
        s.push(ids.iter().map(|id| Message::user(*id, "x")).collect());
        let cite = crate::conversation::short_id(ids[0]);
        assert_eq!(cite, "5217d838");
        assert_eq!(s.find(cite), Some(0));
        assert_eq!(s.find(ids[1]), Some(1), "a whole id");
        assert_eq!(s.find("9a1c04e2"), None, "two messages start so");
        assert_eq!(s.find("5217"), None, "too short to name one");
        assert_eq!(crate::conversation::short_id("m12"), "m12");
    }
}
