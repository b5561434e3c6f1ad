//! One conversation's state: every message ever appended, the compactions
//! applied to it, and the LLM view derived from both. Pure: the server
//! persists each change to the session log before applying it here.
//!
//! The view starts after the latest checkpoint (its summary comes first),
//! then shows the messages appended since, with the runs that
//! `incremental` compactions replaced shown as their summaries and the tool
//! outputs that `prune` removed shown as placeholders. Nothing is ever
//! removed from `messages`.

use std::collections::{HashMap, HashSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::compaction::plan::{self, EntryKind, ViewEntry};
use crate::compaction::retention::{self, Required};
use crate::compaction::trigger::{AutoCompactState, TriggerInput};
use crate::compaction::{self, FileMarks, FileSections, Strategy};
use crate::conversation::{repair_for_model, Message, MessageBody, Role, Usage};
use crate::files::{FileEvent, SessionFiles};
use crate::summarize::driver::{DriverOutput, SummaryInput};
use crate::summarize::SummaryRequest;
use crate::tokens::{self, Encoding, Meter, MeterSource};

/// Why a compaction ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Trigger {
    Manual,
    Threshold,
    Overflow,
}

/// The run of messages an `incremental` compaction replaced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplacedRange {
    pub from_message_id: String,
    pub to_message_id: String,
}

fn full_recall() -> f64 {
    1.0
}

/// A compaction as the session log records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompactionRecord {
    pub id: String,
    #[serde(default)]
    pub strategy: Strategy,
    /// The summary body (with any `<preserved>` section), without the file
    /// sections. Empty for `prune`.
    #[serde(default)]
    pub summary: String,
    /// `checkpoint`: the first message kept verbatim, if any was.
    #[serde(default)]
    pub first_kept_message_id: Option<String>,
    /// `checkpoint`: the newest message the summary replaces; the view
    /// starts after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_summarized_message_id: Option<String>,
    /// `incremental`: the run the summary replaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaces: Option<ReplacedRange>,
    /// `prune`: tool results whose output is replaced by a placeholder.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pruned_message_ids: Vec<String>,
    pub messages_summarized: usize,
    pub tokens_before: u64,
    pub tokens_after: u64,
    #[serde(default)]
    pub read_files: Vec<String>,
    #[serde(default)]
    pub modified_files: Vec<String>,
    /// Created and deleted files among `modified_files`, and how many
    /// files the sections left out.
    #[serde(default, skip_serializing_if = "FileMarks::is_empty")]
    pub file_marks: FileMarks,
    pub trigger: Trigger,
    pub summarizer: String,
    #[serde(default)]
    pub chunks: u32,
    /// A lower rung of the fallback ladder wrote the summary.
    #[serde(default)]
    pub degraded: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub degraded_reason: Option<String>,
    /// Share of the required items (modified files, latest request, user
    /// rules, the task, pins) the summary and kept messages held before
    /// `<preserved>` added the missing ones.
    #[serde(default = "full_recall")]
    pub recall: f64,
    /// User rules carried to the next compaction's retention check.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retained_rules: Vec<String>,
    /// What the summarizer's provider reported for its calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Milliseconds since the Unix epoch.
    pub created_at: u64,
    pub duration_ms: u64,
}

impl CompactionRecord {
    pub fn file_sections(&self) -> FileSections {
        FileSections {
            read: self.read_files.clone(),
            modified: self.modified_files.clone(),
            marks: self.file_marks.clone(),
        }
    }

    /// The summary as the model sees it: body plus file sections.
    pub fn full_summary(&self) -> String {
        format!(
            "{}\n{}",
            self.summary.trim_end(),
            self.file_sections().render()
        )
        .trim()
        .to_string()
    }
}

#[derive(Debug, Clone)]
struct Counted {
    message: Message,
    tokens: u64,
    /// How many compactions had been applied when it was appended; usage
    /// from an older generation describes a context that no longer exists.
    generation: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// A message, by index into `messages`.
    Message(usize),
    /// The summary of an `incremental` compaction, by record index.
    Summary(usize),
}

/// Running sums over the view, kept up to date on every append so the
/// meter and the triggers cost nothing per message.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct ViewTotals {
    /// Estimated tokens of every slot.
    tokens: u64,
    /// Raw messages, and the user messages among them.
    messages: u64,
    user_turns: u64,
    /// The latest current provider report: the context it gives, and the
    /// estimated tokens of the slots after it.
    latest_usage: Option<(u64, u64)>,
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
    /// Per-session auto-compaction switch (`None`: the config decides).
    pub auto_compact: Option<bool>,
    /// The circuit breaker of automatic compaction (not persisted: a
    /// restart gives auto-compaction a fresh chance).
    pub auto: AutoCompactState,
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
    summary_prefix: String,
    totals: ViewTotals,
    /// The file ledger, fed by file events applied in log order.
    pub files: SessionFiles,
}

/// How to plan a compaction.
#[derive(Debug, Clone)]
pub struct PlanOptions {
    pub strategy: Strategy,
    pub keep_recent_tokens: u64,
    pub retention_window: usize,
    pub prune_protect_tokens: u64,
    pub prune_minimum_tokens: u64,
    pub instructions: Option<String>,
    pub max_tool_output_chars: usize,
    pub compact_prompt: Option<String>,
    pub update_prompt: Option<String>,
}

impl PlanOptions {
    /// The options the configuration gives, for one strategy and tail.
    pub fn from_config(
        config: &crate::config::Config,
        strategy: Strategy,
        keep_recent_tokens: u64,
        instructions: Option<String>,
    ) -> PlanOptions {
        PlanOptions {
            strategy,
            keep_recent_tokens,
            retention_window: config.retention_window,
            prune_protect_tokens: config.prune_protect_tokens,
            prune_minimum_tokens: config.prune_minimum_tokens,
            instructions,
            max_tool_output_chars: config.max_tool_output_chars,
            compact_prompt: config.compact_prompt.clone(),
            update_prompt: config.update_prompt.clone(),
        }
    }
}

/// What a compaction will change once its summary exists.
#[derive(Debug, Clone, PartialEq)]
pub enum JobTarget {
    Checkpoint {
        last_summarized_message_id: String,
        first_kept_message_id: Option<String>,
    },
    Incremental(ReplacedRange),
    Prune {
        message_ids: Vec<String>,
        freed: u64,
    },
    /// A first message for a new session; this one is not changed.
    Handoff,
}

/// Everything a compaction needs, captured from the session so the
/// summarizer can run without it.
#[derive(Debug, Clone)]
pub struct CompactionJob {
    pub strategy: Strategy,
    pub target: JobTarget,
    /// The main summary's input (`None` for `prune`).
    pub input: Option<SummaryInput>,
    /// A split turn's prefix, summarized on its own.
    pub turn_prefix: Option<SummaryInput>,
    pub messages_summarized: usize,
    /// Ids of the view entries summarized, kept and pruned (for previews).
    pub summarized_ids: Vec<String>,
    pub kept_ids: Vec<String>,
    pub pruned_ids: Vec<String>,
    pub files: FileSections,
    pub tokens_before: u64,
    /// Estimated tokens of the view once applied, without the new summary.
    pub tokens_without_summary: u64,
    /// The view after the compaction, without the summary, for the
    /// retention check.
    pub kept_messages: Vec<Message>,
    pub required: Vec<Required>,
    pub retained_rules: Vec<String>,
    /// Number of compactions when planned; a job planned against an older
    /// generation is stale and must not be applied.
    pub generation: usize,
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
            auto_compact: None,
            auto: AutoCompactState::default(),
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
            summary_prefix,
            totals: ViewTotals::default(),
            files: SessionFiles::default(),
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
            }
            let prompt = self.system_prompt.take();
            self.set_system_prompt(prompt);
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

    /// The latest compaction that wrote a summary (checkpoint or
    /// incremental): its summary and rules carry forward.
    fn last_summary_record(&self) -> Option<&CompactionRecord> {
        self.compactions
            .iter()
            .rev()
            .find(|r| !r.summary.is_empty())
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
    pub fn push(&mut self, messages: Vec<Message>) {
        let generation = self.compactions.len();
        for message in messages {
            self.files.observe(&message);
            let tokens = tokens::count_message(self.encoding, &message);
            let index = self.messages.len();
            self.index.insert(message.id.clone(), index);
            self.messages.push(Counted {
                message,
                tokens,
                generation,
            });
            self.view.push(Slot::Message(index));
            self.add_to_totals(Slot::Message(index));
        }
    }

    fn add_to_totals(&mut self, slot: Slot) {
        let tokens = self.slot_tokens(&slot);
        let report = match slot {
            Slot::Message(i) => {
                self.totals.messages += 1;
                if self.messages[i].message.role() == Role::User {
                    self.totals.user_turns += 1;
                }
                self.current_usage(&self.messages[i], self.compactions.len())
            }
            Slot::Summary(_) => None,
        };
        self.totals.tokens += tokens;
        match (report, &mut self.totals.latest_usage) {
            (Some(context), latest) => *latest = Some((context, 0)),
            (None, Some((_, after))) => *after += tokens,
            (None, None) => {}
        }
    }

    fn recompute_totals(&mut self) {
        self.totals = ViewTotals::default();
        for slot in self.view.clone() {
            self.add_to_totals(slot);
        }
    }

    /// All messages ever appended, compacted or not.
    pub fn all_messages(&self) -> impl Iterator<Item = &Message> {
        self.messages.iter().map(|c| &c.message)
    }

    /// Raw messages in the current view (after the latest checkpoint,
    /// excluding those replaced by an incremental summary).
    pub fn view_messages(&self) -> impl Iterator<Item = &Message> {
        self.view.iter().filter_map(|slot| match slot {
            Slot::Message(i) => Some(&self.messages[*i].message),
            Slot::Summary(_) => None,
        })
    }

    /// The view as the model sees it, checkpoint summary first.
    pub fn view_entries(&self) -> Vec<ViewEntry> {
        let mut entries = Vec::with_capacity(self.view.len() + 1);
        if let Some(i) = self.checkpoint {
            entries.push(ViewEntry {
                message: self.summary_message(i),
                tokens: self.summary_tokens[i],
                kind: EntryKind::CheckpointSummary,
            });
        }
        for slot in &self.view {
            entries.push(match *slot {
                Slot::Message(i) => match self.pruned.get(&i) {
                    Some(tokens) => ViewEntry {
                        message: pruned_message(&self.messages[i]),
                        tokens: *tokens,
                        kind: EntryKind::Pruned,
                    },
                    None => ViewEntry {
                        message: self.messages[i].message.clone(),
                        tokens: self.messages[i].tokens,
                        kind: EntryKind::Message,
                    },
                },
                Slot::Summary(r) => ViewEntry {
                    message: self.summary_message(r),
                    tokens: self.summary_tokens[r],
                    kind: EntryKind::IncrementalSummary,
                },
            });
        }
        entries
    }

    /// The LLM-facing history: system prompt, then the view with
    /// interrupted tool calls closed.
    pub fn history(&self) -> Vec<Message> {
        let entries: Vec<Message> = self.view_entries().into_iter().map(|e| e.message).collect();
        compaction::rebuild_history(self.system_prompt.as_deref(), entries)
    }

    fn slot_tokens(&self, slot: &Slot) -> u64 {
        match *slot {
            Slot::Message(i) => self
                .pruned
                .get(&i)
                .copied()
                .unwrap_or(self.messages[i].tokens),
            Slot::Summary(r) => self.summary_tokens[r],
        }
    }

    fn fixed_tokens(&self) -> u64 {
        self.system_tokens + self.checkpoint.map(|i| self.summary_tokens[i]).unwrap_or(0)
    }

    /// Our own estimate of the whole view, ignoring provider usage.
    pub fn estimated_tokens(&self) -> u64 {
        self.fixed_tokens() + self.totals.tokens
    }

    /// The meter: the provider's latest current report plus our estimate
    /// of what came after it; otherwise our estimate of everything.
    pub fn meter(&self, context_window: u64, auto_compact_at: u64) -> Meter {
        let (context_tokens, source) = match self.totals.latest_usage {
            Some((reported, after)) => (reported + after, MeterSource::Usage),
            None => (self.estimated_tokens(), MeterSource::Estimate),
        };
        Meter {
            context_tokens,
            context_window,
            auto_compact_at,
            source,
        }
    }

    /// What the auto-compaction triggers look at.
    pub fn trigger_input(&self, context_window: u64, auto_compact_at: u64) -> TriggerInput {
        TriggerInput {
            tokens: self.meter(context_window, auto_compact_at).context_tokens,
            window: context_window,
            messages: self.totals.messages,
            user_turns: self.totals.user_turns,
        }
    }

    /// Usage that still describes this view: reported after the latest
    /// compaction, by the session's model.
    fn current_usage(&self, counted: &Counted, generation: usize) -> Option<u64> {
        if counted.generation != generation || counted.message.role() != Role::Assistant {
            return None;
        }
        let usage = counted.message.usage?;
        if let (
            MessageBody::Assistant {
                model: Some(reported),
                ..
            },
            Some(ours),
        ) = (&counted.message.body, &self.model)
        {
            if !same_model(reported, ours) {
                return None;
            }
        }
        let context = usage.context_tokens();
        (context > 0).then_some(context)
    }

    /// Plans a compaction; `Err` says why there is nothing to compact.
    pub fn plan(&self, options: &PlanOptions, tokens_before: u64) -> Result<CompactionJob, String> {
        let entries = self.view_entries();
        let total: u64 = self.system_tokens + entries.iter().map(|e| e.tokens).sum::<u64>();
        let raw_view: Vec<Message> = self.view_messages().cloned().collect();
        // The ledger covers the whole session so far, kept part included,
        // so the model sees every file it touched in one place.
        let files = self.files.sections();
        let ids = |range: std::ops::Range<usize>| -> Vec<String> {
            entries[range]
                .iter()
                .map(|e| e.message.id.clone())
                .collect()
        };
        let mut job = CompactionJob {
            strategy: options.strategy,
            target: JobTarget::Handoff,
            input: None,
            turn_prefix: None,
            messages_summarized: 0,
            summarized_ids: Vec::new(),
            kept_ids: Vec::new(),
            pruned_ids: Vec::new(),
            files,
            tokens_before,
            tokens_without_summary: 0,
            kept_messages: Vec::new(),
            required: Vec::new(),
            retained_rules: Vec::new(),
            generation: self.compactions.len(),
        };
        match options.strategy {
            Strategy::Checkpoint => {
                let plan = plan::plan_checkpoint(&entries, options.keep_recent_tokens).ok_or_else(|| {
                    format!(
                        "nothing to compact: the history after the last compaction fits in keepRecentTokens ({}) or has no place to cut",
                        options.keep_recent_tokens
                    )
                })?;
                let first = usize::from(self.checkpoint.is_some());
                let main_end = plan.turn_start.unwrap_or(plan.cut);
                let summarized: Vec<Message> = entries[first..plan.cut]
                    .iter()
                    .map(|e| e.message.clone())
                    .collect();
                job.input = Some(
                    self.summary_input(
                        entries[first..main_end]
                            .iter()
                            .map(|e| e.message.clone())
                            .collect(),
                        self.last_summary_record().map(|r| r.summary.clone()),
                        options,
                        None,
                    ),
                );
                job.turn_prefix = plan.turn_start.map(|start| {
                    self.summary_input(
                        entries[start..plan.cut].iter().map(|e| e.message.clone()).collect(),
                        None,
                        options,
                        Some("This is the beginning of the current turn; its continuation is kept verbatim after the summary."),
                    )
                });
                job.target = JobTarget::Checkpoint {
                    last_summarized_message_id: self.anchor_id(&entries[plan.cut - 1]),
                    first_kept_message_id: entries.get(plan.cut).map(|e| self.first_id(e)),
                };
                job.messages_summarized = plan.cut - first;
                job.summarized_ids = ids(first..plan.cut);
                job.kept_ids = ids(plan.cut..entries.len());
                job.kept_messages = entries[plan.cut..]
                    .iter()
                    .map(|e| e.message.clone())
                    .collect();
                job.tokens_without_summary =
                    self.system_tokens + entries[plan.cut..].iter().map(|e| e.tokens).sum::<u64>();
                self.requirements(&mut job, &summarized, &raw_view);
            }
            Strategy::Incremental => {
                let run = plan::plan_incremental(&entries, options.retention_window).ok_or_else(|| {
                    format!(
                        "nothing to compact: no run of assistant and tool messages outside the newest {} messages",
                        options.retention_window
                    )
                })?;
                let summarized: Vec<Message> = entries[run.clone()]
                    .iter()
                    .map(|e| e.message.clone())
                    .collect();
                job.input = Some(self.summary_input(summarized.clone(), None, options, None));
                job.target = JobTarget::Incremental(ReplacedRange {
                    from_message_id: entries[run.start].message.id.clone(),
                    to_message_id: entries[run.end - 1].message.id.clone(),
                });
                job.messages_summarized = run.len();
                job.summarized_ids = ids(run.clone());
                job.kept_ids = ids(0..run.start)
                    .into_iter()
                    .chain(ids(run.end..entries.len()))
                    .collect();
                job.kept_messages = entries[..run.start]
                    .iter()
                    .chain(&entries[run.end..])
                    .map(|e| e.message.clone())
                    .collect();
                job.tokens_without_summary =
                    total - entries[run].iter().map(|e| e.tokens).sum::<u64>();
                self.requirements(&mut job, &summarized, &raw_view);
            }
            Strategy::Prune => {
                let placeholder =
                    tokens::count_message(self.encoding, &pruned_message_text(1_000_000));
                let plan = plan::plan_prune(&entries, placeholder, options.prune_protect_tokens, options.prune_minimum_tokens)
                    .ok_or_else(|| {
                        format!(
                            "nothing to prune: old tool outputs beyond the newest {} tokens would free less than {} tokens",
                            options.prune_protect_tokens, options.prune_minimum_tokens
                        )
                    })?;
                let message_ids: Vec<String> = plan
                    .indices
                    .iter()
                    .map(|&i| entries[i].message.id.clone())
                    .collect();
                job.pruned_ids = message_ids.clone();
                job.kept_ids = ids(0..entries.len());
                job.messages_summarized = 0;
                job.tokens_without_summary = total - plan.freed;
                job.target = JobTarget::Prune {
                    message_ids,
                    freed: plan.freed,
                };
            }
            Strategy::Handoff => {
                let first = usize::from(self.checkpoint.is_some());
                if entries.len() <= first {
                    return Err("nothing to hand off: the session has no messages".into());
                }
                let summarized: Vec<Message> =
                    entries[first..].iter().map(|e| e.message.clone()).collect();
                job.input = Some(self.summary_input(
                    summarized.clone(),
                    self.last_summary_record().map(|r| r.summary.clone()),
                    options,
                    None,
                ));
                job.messages_summarized = summarized.len();
                job.summarized_ids = ids(first..entries.len());
                job.tokens_without_summary = self.system_tokens;
                self.requirements(&mut job, &summarized, &raw_view);
            }
        }
        Ok(job)
    }

    /// The run an incremental summary entry stands for.
    fn replaced_range(&self, entry: &ViewEntry) -> Option<&ReplacedRange> {
        if entry.kind != EntryKind::IncrementalSummary {
            return None;
        }
        self.compactions
            .iter()
            .find(|r| entry.message.id == summary_id(&r.id))
            .and_then(|r| r.replaces.as_ref())
    }

    /// The id that anchors a checkpoint after `entry`: for a replaced run,
    /// its last message.
    fn anchor_id(&self, entry: &ViewEntry) -> String {
        self.replaced_range(entry)
            .map(|r| r.to_message_id.clone())
            .unwrap_or_else(|| entry.message.id.clone())
    }

    /// The first message id of `entry`: for a replaced run, its first one.
    fn first_id(&self, entry: &ViewEntry) -> String {
        self.replaced_range(entry)
            .map(|r| r.from_message_id.clone())
            .unwrap_or_else(|| entry.message.id.clone())
    }

    fn summary_input(
        &self,
        messages: Vec<Message>,
        previous_summary: Option<String>,
        options: &PlanOptions,
        extra_instructions: Option<&str>,
    ) -> SummaryInput {
        let mut messages = repair_for_model(messages);
        close_trailing_calls(&mut messages);
        let instructions = match (options.instructions.as_deref(), extra_instructions) {
            (Some(a), Some(b)) => Some(format!("{a}\n\n{b}")),
            (a, b) => a.or(b).map(str::to_string),
        };
        SummaryInput::new(
            SummaryRequest {
                previous_summary,
                messages,
                partial_summaries: Vec::new(),
                instructions,
                max_tool_output_chars: options.max_tool_output_chars,
                compact_prompt: options.compact_prompt.clone(),
                update_prompt: options.update_prompt.clone(),
            },
            self.encoding,
        )
    }

    /// What the retention check must find after summarizing `summarized`.
    fn requirements(&self, job: &mut CompactionJob, summarized: &[Message], raw_view: &[Message]) {
        let mut rules: Vec<String> = self
            .last_summary_record()
            .map(|r| r.retained_rules.clone())
            .unwrap_or_default();
        for rule in retention::rule_lines(summarized) {
            if !rules.contains(&rule) {
                rules.push(rule);
            }
        }
        let mut required: Vec<Required> = job
            .files
            .modified
            .iter()
            .cloned()
            .map(Required::Path)
            .collect();
        if let Some(latest) = retention::latest_request(raw_view) {
            required.push(Required::LatestRequest(latest));
        }
        required.extend(rules.iter().cloned().map(Required::Rule));
        if let Some(task) = retention::first_request(self.all_messages()) {
            required.push(Required::Verbatim(task));
        }
        required.extend(self.pins.iter().cloned().map(Required::Verbatim));
        job.required = required;
        job.retained_rules = rules;
    }

    /// The log record for a finished job. The retention check runs here:
    /// whatever the summary and the kept messages lack is appended
    /// verbatim in `<preserved>`.
    pub fn record_compaction(
        &self,
        job: &CompactionJob,
        main: Option<&DriverOutput>,
        turn_prefix: Option<&DriverOutput>,
        trigger: Trigger,
        created_at: u64,
        duration_ms: u64,
    ) -> CompactionRecord {
        let mut body = main.map(|o| o.text.trim().to_string()).unwrap_or_default();
        if let Some(prefix) = turn_prefix {
            body.push_str(&format!(
                "\n\n<turn-prefix>\n{}\n</turn-prefix>",
                prefix.text.trim()
            ));
        }
        let mut record = CompactionRecord {
            id: uuid::Uuid::new_v4().simple().to_string()[..12].to_string(),
            strategy: job.strategy,
            summary: String::new(),
            first_kept_message_id: None,
            last_summarized_message_id: None,
            replaces: None,
            pruned_message_ids: Vec::new(),
            messages_summarized: job.messages_summarized,
            tokens_before: job.tokens_before,
            tokens_after: 0,
            read_files: job.files.read.clone(),
            modified_files: job.files.modified.clone(),
            file_marks: job.files.marks.clone(),
            trigger,
            summarizer: main
                .map(|o| o.summarizer.clone())
                .unwrap_or_else(|| "none".into()),
            chunks: main.map(|o| o.chunks).unwrap_or(0)
                + turn_prefix.map(|o| o.chunks).unwrap_or(0),
            degraded: false,
            degraded_reason: None,
            recall: 1.0,
            retained_rules: job.retained_rules.clone(),
            usage: None,
            created_at,
            duration_ms,
        };
        let reasons: Vec<String> = [main, turn_prefix]
            .into_iter()
            .flatten()
            .filter_map(|o| o.degraded.clone())
            .collect();
        if !reasons.is_empty() {
            record.degraded = true;
            record.degraded_reason = Some(reasons.join("; "));
        }
        for output in [main, turn_prefix].into_iter().flatten() {
            Usage::accumulate(&mut record.usage, output.usage);
        }
        match &job.target {
            JobTarget::Checkpoint {
                last_summarized_message_id,
                first_kept_message_id,
            } => {
                record.last_summarized_message_id = Some(last_summarized_message_id.clone());
                record.first_kept_message_id = first_kept_message_id.clone();
            }
            JobTarget::Incremental(range) => record.replaces = Some(range.clone()),
            JobTarget::Prune { message_ids, .. } => record.pruned_message_ids = message_ids.clone(),
            JobTarget::Handoff => {}
        }
        if job.strategy != Strategy::Prune {
            // Checked against what the model will see: body plus sections.
            let sections = if job.strategy == Strategy::Incremental {
                String::new()
            } else {
                record.file_sections().render()
            };
            let outcome = retention::check(
                &format!("{body}\n{sections}"),
                &job.kept_messages,
                &job.required,
            );
            record.recall = (outcome.recall * 1000.0).round() / 1000.0;
            if let Some(preserved) = outcome.preserved_section() {
                body.push_str("\n\n");
                body.push_str(&preserved);
            }
            record.summary = body;
        }
        record.tokens_after = job.tokens_without_summary + self.summary_tokens_of(&record);
        record
    }

    /// Tokens the summary message of `record` takes in the view.
    pub fn summary_tokens_of(&self, record: &CompactionRecord) -> u64 {
        match record.strategy {
            Strategy::Prune => 0,
            Strategy::Checkpoint | Strategy::Handoff => tokens::count_message(
                self.encoding,
                &compaction::summary_message(
                    &record.id,
                    &self.summary_prefix,
                    &record.full_summary(),
                ),
            ),
            Strategy::Incremental => {
                tokens::count_message(self.encoding, &incremental_message(record))
            }
        }
    }

    fn summary_message(&self, record_index: usize) -> Message {
        let record = &self.compactions[record_index];
        match record.strategy {
            Strategy::Incremental => incremental_message(record),
            _ => compaction::summary_message(
                &record.id,
                &self.summary_prefix,
                &record.full_summary(),
            ),
        }
    }

    /// Applies a file event (new or replayed from the log) to the ledger.
    pub fn apply_file_event(&mut self, event: &FileEvent) {
        self.files.apply(event, self.compactions.len());
    }

    /// Applies a compaction (new or replayed from the log).
    pub fn apply_compaction(&mut self, record: CompactionRecord) {
        self.compactions.push(record);
        self.rebuild_view();
    }

    /// Recomputes the view from the messages and every compaction record.
    fn rebuild_view(&mut self) {
        self.summary_tokens = self
            .compactions
            .iter()
            .map(|r| self.summary_tokens_of(r))
            .collect();
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
                view.push(Slot::Message(i));
                i += 1;
            }
        }
        self.view = view;
        self.pruned = pruned;
        self.recompute_totals();
    }
}

/// The id of a record's summary message in the view.
pub fn summary_id(record_id: &str) -> String {
    format!("summary-{record_id}")
}

fn incremental_message(record: &CompactionRecord) -> Message {
    Message::assistant(
        summary_id(&record.id),
        format!(
            "[compactd] Summary of {} earlier assistant and tool messages:\n\n{}",
            record.messages_summarized,
            record.summary.trim()
        ),
        vec![],
    )
}

fn pruned_message_text(tokens: u64) -> Message {
    Message::tool_result(
        "pruned",
        "pruned",
        format!("[compactd] Output pruned to save context (was {tokens} tokens). Run the tool again if you need it."),
        false,
    )
}

fn pruned_message(counted: &Counted) -> Message {
    let mut message = counted.message.clone();
    if let MessageBody::Tool { content, .. } = &mut message.body {
        *content = pruned_message_text(counted.tokens).text().to_string();
    }
    message
}

/// A call with no result at the end of the summarized part gets the
/// synthetic note too: its turn was cut off by the compaction.
fn close_trailing_calls(messages: &mut Vec<Message>) {
    let answered: HashSet<String> = messages
        .iter()
        .filter_map(|m| m.answers().map(str::to_string))
        .collect();
    let Some(last_caller) = messages.iter().rposition(|m| !m.tool_calls().is_empty()) else {
        return;
    };
    let missing: Vec<(String, String)> = messages[last_caller]
        .tool_calls()
        .iter()
        .filter(|c| !answered.contains(&c.id))
        .map(|c| (c.id.clone(), c.name.clone()))
        .collect();
    for (id, name) in missing {
        messages.push(Message {
            id: format!("{}{id}", crate::conversation::SYNTHETIC_RESULT_PREFIX),
            body: MessageBody::Tool {
                tool_call_id: id,
                tool_name: Some(name),
                content: crate::conversation::NO_RESULT_NOTE.into(),
                is_error: true,
            },
            usage: None,
        });
    }
}

fn same_model(a: &str, b: &str) -> bool {
    let strip = |m: &str| m.rsplit('/').next().unwrap_or(m).to_ascii_lowercase();
    strip(a) == strip(b)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::conversation::Usage;

    fn session() -> Session {
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

    pub(crate) fn options(strategy: Strategy, keep: u64) -> PlanOptions {
        PlanOptions {
            strategy,
            keep_recent_tokens: keep,
            retention_window: 2,
            prune_protect_tokens: 40_000,
            prune_minimum_tokens: 20_000,
            instructions: None,
            max_tool_output_chars: 2000,
            compact_prompt: None,
            update_prompt: None,
        }
    }

    fn offline(job: &CompactionJob) -> Option<DriverOutput> {
        job.input.as_ref().map(|input| DriverOutput {
            text: crate::summarize::offline::summarize_offline(&input.request),
            summarizer: "offline".into(),
            usage: None,
            chunks: 1,
            degraded: None,
        })
    }

    /// Plans, summarizes offline and applies one compaction.
    pub(crate) fn compact(
        s: &mut Session,
        options: &PlanOptions,
    ) -> Result<CompactionRecord, String> {
        let before = s.estimated_tokens();
        let job = s.plan(options, before)?;
        let main = offline(&job);
        let prefix = job.turn_prefix.as_ref().map(|input| DriverOutput {
            text: crate::summarize::offline::summarize_offline(&input.request),
            summarizer: "offline".into(),
            usage: None,
            chunks: 1,
            degraded: None,
        });
        let record =
            s.record_compaction(&job, main.as_ref(), prefix.as_ref(), Trigger::Manual, 0, 0);
        s.apply_compaction(record.clone());
        Ok(record)
    }

    #[test]
    fn stale_usage_is_ignored_after_compaction() {
        let mut s = session();
        let mut a = Message::assistant("a1", "done", vec![]);
        a.usage = Some(Usage {
            input: 1000,
            output: 10,
            ..Usage::default()
        });
        s.push(vec![
            Message::user("u1", "go"),
            a,
            Message::user("u2", "more"),
            Message::assistant("a2", "ok", vec![]),
        ]);
        let before = s.meter(10_000, 9_000);
        assert_eq!(before.source, tokens::MeterSource::Usage);
        assert!(before.context_tokens > 1010);
        let job = s
            .plan(&options(Strategy::Checkpoint, 1), before.context_tokens)
            .unwrap();
        assert_eq!(
            job.target,
            JobTarget::Checkpoint {
                last_summarized_message_id: "u2".into(),
                first_kept_message_id: Some("a2".into())
            }
        );
        assert_eq!(job.messages_summarized, 3);
        let record = s.record_compaction(&job, offline(&job).as_ref(), None, Trigger::Manual, 0, 0);
        s.apply_compaction(record.clone());
        let after = s.meter(10_000, 9_000);
        assert_eq!(
            after.source,
            tokens::MeterSource::Estimate,
            "usage from before the compaction is stale"
        );
        let history = s.history();
        assert_eq!(history[0].role(), Role::System);
        assert_eq!(history[1].id, summary_id(&record.id));
        assert!(history[1].text().starts_with("PREFIX"));
        assert_eq!(history[2].id, "a2");
        assert_eq!(history.len(), 3);
    }

    #[test]
    fn meter_prefers_the_latest_report_plus_later_estimates() {
        let mut s = Session::new("s".into(), None, None, None, "P".into());
        let mut a = Message::assistant("a1", "done", vec![]);
        a.usage = Some(Usage {
            input: 500,
            ..Usage::default()
        });
        s.push(vec![Message::user("u1", "go"), a]);
        let after = [
            Message::user("u2", "more words here"),
            Message::assistant("a2", "ok", vec![]),
        ];
        let expected_after: u64 = after
            .iter()
            .map(|m| tokens::count_message(s.encoding(), m))
            .sum();
        s.push(after.to_vec());
        let m = s.meter(1000, 900);
        assert_eq!(
            (m.context_tokens, m.source),
            (500 + expected_after, MeterSource::Usage)
        );
        assert_eq!(
            m.percent(),
            ((500 + expected_after) as f64 / 10.0 * 10.0).round() / 10.0
        );
        let fresh = Session::new("t".into(), None, None, None, "P".into());
        assert_eq!(fresh.meter(1000, 900).source, MeterSource::Estimate);
        // Appending tracks the same totals as recomputing from scratch.
        let mut recomputed = s.clone();
        recomputed.recompute_totals();
        assert_eq!(recomputed.totals, s.totals);
    }

    #[test]
    fn usage_from_another_model_is_ignored() {
        let mut s = session();
        let mut a = Message::assistant("a1", "done", vec![]);
        a.usage = Some(Usage {
            input: 5000,
            ..Usage::default()
        });
        if let MessageBody::Assistant { model, .. } = &mut a.body {
            *model = Some("claude-sonnet-4-5".into());
        }
        s.push(vec![Message::user("u1", "go"), a]);
        assert_eq!(s.meter(10_000, 9_000).source, tokens::MeterSource::Estimate);
    }
}

/// Property tests: whatever the history and whatever the sequence of
/// compactions, the view sent to a model stays valid, nothing appended is
/// lost, and replaying the log gives the same view.
#[cfg(test)]
mod invariants {
    use super::tests::{compact, options};
    use super::{Message, Role, Session};
    use crate::compaction::Strategy as Kind;
    use crate::conversation::{validate_history, ToolCall};
    use crate::store::{self, LogEntry};
    use proptest::prelude::*;
    use proptest::strategy::Strategy;

    #[derive(Debug, Clone)]
    enum Turn {
        User(usize),
        Text(usize),
        /// Parallel calls: (output size, answered?, failed?) each; results
        /// arrive in the order of `order`.
        Tools {
            calls: Vec<(usize, bool, bool)>,
            reversed: bool,
        },
    }

    #[derive(Debug, Clone)]
    enum Step {
        Append(Vec<Turn>),
        Compact(Kind, u64),
    }

    fn turn() -> impl Strategy<Value = Turn> {
        prop_oneof![
            (1usize..400).prop_map(Turn::User),
            (1usize..400).prop_map(Turn::Text),
            (
                prop::collection::vec(
                    (
                        1usize..3000,
                        prop::bool::weighted(0.85),
                        prop::bool::weighted(0.1)
                    ),
                    1..4
                ),
                any::<bool>()
            )
                .prop_map(|(calls, reversed)| Turn::Tools { calls, reversed }),
        ]
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            3 => prop::collection::vec(turn(), 1..12).prop_map(Step::Append),
            1 => (
                prop_oneof![
                    Just(Kind::Checkpoint),
                    Just(Kind::Incremental),
                    Just(Kind::Prune)
                ],
                prop_oneof![Just(0u64), 1u64..400, 400u64..3000]
            )
                .prop_map(|(s, keep)| Step::Compact(s, keep)),
        ]
    }

    fn messages_of(turns: &[Turn], next: &mut usize) -> Vec<Message> {
        let mut out = Vec::new();
        let text = |n: usize, seed: usize| "word ".repeat(n / 5 + 1) + &seed.to_string();
        for t in turns {
            *next += 1;
            let n = *next;
            match t {
                Turn::User(len) => out.push(Message::user(format!("u{n}"), text(*len, n))),
                Turn::Text(len) => {
                    out.push(Message::assistant(format!("a{n}"), text(*len, n), vec![]))
                }
                Turn::Tools { calls, reversed } => {
                    let ids: Vec<String> = (0..calls.len()).map(|j| format!("c{n}-{j}")).collect();
                    let tool_calls = ids
                        .iter()
                        .map(|id| ToolCall {
                            id: id.clone(),
                            name: "edit".into(),
                            arguments: serde_json::json!({"path": format!("src/{id}.rs")}),
                        })
                        .collect();
                    out.push(Message::assistant(format!("a{n}"), "", tool_calls));
                    let mut results: Vec<Message> = calls
                        .iter()
                        .zip(&ids)
                        .filter(|((_, answered, _), _)| *answered)
                        .map(|((len, _, failed), id)| {
                            Message::tool_result(
                                format!("t-{id}"),
                                id.clone(),
                                text(*len, n),
                                *failed,
                            )
                        })
                        .collect();
                    if *reversed {
                        results.reverse();
                    }
                    out.extend(results);
                }
            }
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

        #[test]
        fn every_strategy_keeps_the_history_valid(steps in prop::collection::vec(step(), 1..14)) {
            let mut session = Session::new("p".into(), None, None, Some("sys".into()), "PREFIX".into());
            let mut log = vec![LogEntry::Header(store::SessionHeader {
                version: 1,
                session_id: "p".into(),
                created_at: 0,
                settings: store::SessionSettings { system_prompt: Some("sys".into()), ..Default::default() },
            })];
            let mut next = 0;
            let mut appended = 0;
            for step in steps {
                match step {
                    Step::Append(turns) => {
                        let mut batch = messages_of(&turns, &mut next);
                        session.assign_ids(&mut batch).unwrap();
                        appended += batch.len();
                        log.extend(batch.iter().cloned().map(|message| LogEntry::Message { message }));
                        session.push(batch);
                    }
                    Step::Compact(strategy, keep) => {
                        let mut opts = options(strategy, keep);
                        opts.prune_protect_tokens = 500;
                        opts.prune_minimum_tokens = 100;
                        if let Ok(record) = compact(&mut session, &opts) {
                            prop_assert!(record.tokens_after <= record.tokens_before + 2_000 || strategy == Kind::Checkpoint,
                                "{strategy:?} grew the view: {} → {}", record.tokens_before, record.tokens_after);
                            log.push(LogEntry::Compaction(Box::new(record)));
                        }
                    }
                }
                let history = session.history();
                prop_assert!(validate_history(&history, true).is_ok(), "{:?}", validate_history(&history, true));
                prop_assert_eq!(history.first().map(|m| m.role()), Some(Role::System));
                prop_assert_eq!(session.all_messages().count(), appended, "nothing appended is lost");
                let mut recomputed = session.clone();
                recomputed.recompute_totals();
                prop_assert_eq!(recomputed.totals, session.totals, "running totals match a recount");
            }
            let replayed = store::replay("p", log, "PREFIX".into());
            prop_assert_eq!(replayed.history(), session.history(), "the log replays to the same view");
            prop_assert_eq!(replayed.estimated_tokens(), session.estimated_tokens());
        }
    }
}

#[cfg(test)]
mod split_turn {
    use super::tests::{compact, options};
    use super::*;
    use crate::conversation::ToolCall;

    #[test]
    fn a_cut_inside_a_long_turn_summarizes_its_prefix_separately() {
        let mut s = Session::new("s".into(), None, None, None, "PREFIX".into());
        let mut messages = vec![
            Message::user("u1", "first task"),
            Message::assistant("a1", "done", vec![]),
            Message::user("u2", "second task: refactor the lexer"),
        ];
        for i in 0..6 {
            let call = ToolCall {
                id: format!("c{i}"),
                name: "read".into(),
                arguments: serde_json::json!({"path": format!("src/f{i}.rs")}),
            };
            messages.push(Message::assistant(format!("a{}", i + 2), "", vec![call]));
            messages.push(Message::tool_result(
                format!("t{i}"),
                format!("c{i}"),
                "x ".repeat(200),
                false,
            ));
        }
        s.push(messages);
        let record = compact(&mut s, &options(Strategy::Checkpoint, 500)).unwrap();
        let first_kept = record.first_kept_message_id.clone().unwrap();
        assert!(
            first_kept.starts_with('a'),
            "the cut is inside the second turn: {first_kept}"
        );
        let (main, prefix) = record
            .summary
            .split_once("<turn-prefix>")
            .expect("a separate turn prefix summary");
        assert!(main.contains("first task"));
        assert!(
            prefix.contains("second task: refactor the lexer"),
            "{prefix}"
        );
        assert!(crate::conversation::validate_history(&s.history(), true).is_ok());
    }
}
