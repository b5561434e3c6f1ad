//! One compaction from plan to record. Pure: `plan` chooses, from a
//! session's view, what the compaction covers (a `PlannedJob`, which
//! shares the view's messages and so costs no copy of them);
//! `PlannedJob::prepare` builds what the summarizer needs and what the
//! retention check looks for (a `CompactionJob`), the part whose cost grows
//! with what is summarized, so the server runs it off the state owner; and
//! `CompactionJob::record` turns the summaries written for it into the log
//! record. Between the last two the engine calls a summarizer; after them it
//! persists the record and applies it to the session.

use std::borrow::Borrow;
use std::ops::Range;
use std::sync::Arc;

use super::plan::{self, EntryKind, ViewEntry};
use super::record::{pruned_placeholder, summary_id, CompactionRecord, ReplacedRange, Trigger};
use super::retention::{self, Required};
use super::summary::{JobSummaries, SummaryInput, SummaryRequest, WrittenSummary};
use super::{FileSections, Strategy};
use crate::conversation::{repair_for_model, synthetic_result, CallTracker, Message, Usage};
use crate::tokens::{self, Correction, Encoding};

/// How to plan a compaction.
#[derive(Debug, Clone)]
pub struct PlanOptions {
    pub strategy: Strategy,
    pub keep_recent_tokens: u64,
    /// At least this many of the newest messages stay verbatim, whatever
    /// `keep_recent_tokens` says (`keepRecentMessages`).
    pub keep_recent_messages: usize,
    pub retention_window: usize,
    pub prune_protect_tokens: u64,
    pub prune_minimum_tokens: u64,
    pub instructions: Option<String>,
    pub max_tool_output_chars: usize,
    pub compact_prompt: Option<String>,
    pub update_prompt: Option<String>,
}

/// What planning sees of a session (`Session::plan_input`).
#[derive(Debug, Clone)]
pub struct PlanInput<'a> {
    /// The view as the model sees it, checkpoint summary first.
    pub entries: Vec<ViewEntry>,
    /// The declared system prompt and tool definitions.
    pub system_tokens: u64,
    /// How the provider's count differs from ours (`tokens::calibration`).
    pub correction: Correction,
    /// The view starts with the latest checkpoint's summary.
    pub has_checkpoint: bool,
    /// Every compaction applied so far, oldest first.
    pub records: &'a [CompactionRecord],
    /// The task: the session's first request, as
    /// `retention::first_request` reads it.
    pub task: Option<String>,
    /// What the agent's own compactions replaced since compactd's last
    /// summary (`Session::replaced_by_agent`).
    pub replaced_by_agent: Vec<Arc<Message>>,
    pub pins: &'a [String],
    /// The file sections as the ledger gives them now.
    pub files: FileSections,
    pub encoding: Encoding,
    /// The text that introduces a summary in the view.
    pub summary_prefix: &'a str,
    /// What every request carries besides the view, and the model (for a
    /// provider's recount of the compacted history).
    pub system_prompt: Option<&'a str>,
    pub tool_definitions: &'a [serde_json::Value],
    pub model: Option<&'a str>,
}

impl PlanInput<'_> {
    /// The latest compaction that wrote a summary (checkpoint or
    /// incremental): its summary and rules carry forward.
    fn last_summary_record(&self) -> Option<&CompactionRecord> {
        self.records.iter().rev().find(|r| !r.summary.is_empty())
    }

    fn previous_summary(&self) -> Option<String> {
        self.last_summary_record().map(|r| r.summary.clone())
    }

    /// The entries' messages, shared.
    fn messages(&self, range: Range<usize>) -> Vec<Arc<Message>> {
        self.entries[range]
            .iter()
            .map(|e| Arc::clone(&e.message))
            .collect()
    }

    /// What a summary of the entries in `range` covers.
    fn source(
        &self,
        range: Range<usize>,
        previous_summary: Option<String>,
        note: Option<&'static str>,
    ) -> SummarySource {
        SummarySource {
            messages: self.entries[range.clone()]
                .iter()
                .map(|e| (Arc::clone(&e.message), e.message_tokens))
                .collect(),
            note,
            later: self.messages(range.end..self.entries.len()),
            earlier: if previous_summary.is_some() {
                self.replaced_by_agent.clone()
            } else {
                Vec::new()
            },
            previous_summary,
        }
    }

    fn ids(&self, range: Range<usize>) -> Vec<String> {
        self.entries[range]
            .iter()
            .map(|e| e.message.id.clone())
            .collect()
    }

    fn tokens(&self, range: Range<usize>) -> u64 {
        self.entries[range].iter().map(|e| e.tokens).sum()
    }

    /// Where the summarizable part of the view starts (after the
    /// checkpoint summary).
    fn first(&self) -> usize {
        usize::from(self.has_checkpoint)
    }

    /// The run an incremental summary entry stands for.
    fn replaced_range(&self, entry: &ViewEntry) -> Option<&ReplacedRange> {
        if entry.kind != EntryKind::IncrementalSummary {
            return None;
        }
        self.records
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

    /// The latest request in the view (`retention::latest_request`;
    /// summaries left out: the requests they hold are older).
    fn latest_request(&self) -> Option<String> {
        retention::latest_request(
            self.entries
                .iter()
                .filter(|e| matches!(e.kind, EntryKind::Message | EntryKind::Pruned))
                .map(|e| e.message.as_ref()),
        )
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
    /// Estimated tokens of the view once applied, without the new summary
    /// (our count, without the overhead).
    pub tokens_without_summary: u64,
    /// How the provider will count the compacted view: `tokensAfter` is
    /// comparable with `tokensBefore`, the meter.
    pub correction: Correction,
    /// The view after the compaction, without the summary, for the
    /// retention check.
    pub kept_messages: Vec<Arc<Message>>,
    /// The images and documents of the summarized messages, named.
    pub images: Vec<String>,
    pub required: Vec<Required>,
    pub retained_rules: Vec<String>,
    /// Number of compactions when planned; a job planned against an older
    /// generation is stale and must not be applied.
    pub generation: usize,
    /// How the session counts and introduces the summary, for its size.
    pub encoding: Encoding,
    pub summary_prefix: String,
    /// The request around the view, for a provider's recount.
    pub system_prompt: Option<String>,
    pub tool_definitions: Vec<serde_json::Value>,
    pub model: Option<String>,
}

/// What one summary covers, as planned: the view's messages (shared, each
/// with its count) and what the summarizer is told besides.
#[derive(Debug, Clone)]
struct SummarySource {
    messages: Vec<(Arc<Message>, u64)>,
    previous_summary: Option<String>,
    /// Said to the summarizer after the client's instructions.
    note: Option<&'static str>,
    /// The messages after `messages` (see `SummaryRequest::later`).
    later: Vec<Arc<Message>>,
    /// See `SummaryRequest::earlier`.
    earlier: Vec<Arc<Message>>,
}

/// A compaction chosen against a session's view, before its summarizer
/// inputs exist. `job` holds everything but `input`, `turn_prefix`,
/// `required` and `retained_rules`, which `prepare` fills in.
#[derive(Debug, Clone)]
pub struct PlannedJob {
    pub job: CompactionJob,
    main: Option<SummarySource>,
    prefix: Option<SummarySource>,
    options: PlanOptions,
    /// Rules carried forward from the previous summary.
    carried_rules: Vec<String>,
    latest_request: Option<String>,
    task: Option<String>,
    pins: Vec<String>,
}

/// Plans a compaction; `Err` says why there is nothing to compact.
pub fn plan(
    input: &PlanInput<'_>,
    options: &PlanOptions,
    tokens_before: u64,
) -> Result<PlannedJob, String> {
    let mut planned = PlannedJob {
        job: CompactionJob {
            strategy: options.strategy,
            target: JobTarget::Handoff,
            input: None,
            turn_prefix: None,
            messages_summarized: 0,
            summarized_ids: Vec::new(),
            kept_ids: Vec::new(),
            pruned_ids: Vec::new(),
            // The ledger covers the whole session so far, kept part
            // included, so the model sees every file it touched in one place.
            files: input.files.clone(),
            tokens_before,
            tokens_without_summary: 0,
            correction: input.correction,
            kept_messages: Vec::new(),
            images: Vec::new(),
            required: Vec::new(),
            retained_rules: Vec::new(),
            generation: input.records.len(),
            encoding: input.encoding,
            summary_prefix: input.summary_prefix.to_string(),
            system_prompt: input.system_prompt.map(str::to_string),
            tool_definitions: input.tool_definitions.to_vec(),
            model: input.model.map(str::to_string),
        },
        main: None,
        prefix: None,
        options: options.clone(),
        carried_rules: input
            .last_summary_record()
            .map(|r| r.retained_rules.clone())
            .unwrap_or_default(),
        latest_request: input.latest_request(),
        task: input.task.clone(),
        pins: input.pins.to_vec(),
    };
    match options.strategy {
        Strategy::Checkpoint => plan_checkpoint(input, options, &mut planned)?,
        Strategy::Incremental => plan_incremental(input, options, &mut planned)?,
        Strategy::Prune => plan_prune(input, options, &mut planned.job)?,
        Strategy::Handoff => plan_handoff(input, &mut planned)?,
    }
    Ok(planned)
}

fn plan_checkpoint(
    input: &PlanInput<'_>,
    options: &PlanOptions,
    planned: &mut PlannedJob,
) -> Result<(), String> {
    let entries = &input.entries;
    let plan = plan::plan_checkpoint(
        entries,
        options.keep_recent_tokens,
        options.keep_recent_messages,
    )
    .ok_or_else(|| {
        format!(
            "nothing to compact: the history after the last compaction fits in keepRecentTokens ({}) and keepRecentMessages ({}), or has no place to cut",
            options.keep_recent_tokens, options.keep_recent_messages
        )
    })?;
    let first = input.first();
    let main_end = plan.turn_start.unwrap_or(plan.cut);
    planned.main = Some(input.source(first..main_end, input.previous_summary(), None));
    planned.prefix = plan.turn_start.map(|start| {
        input.source(
            start..plan.cut,
            None,
            Some("This is the beginning of the current turn; its continuation is kept verbatim after the summary."),
        )
    });
    let job = &mut planned.job;
    job.target = JobTarget::Checkpoint {
        last_summarized_message_id: input.anchor_id(&entries[plan.cut - 1]),
        first_kept_message_id: entries.get(plan.cut).map(|e| input.first_id(e)),
    };
    job.messages_summarized = plan.cut - first;
    job.summarized_ids = input.ids(first..plan.cut);
    job.kept_ids = input.ids(plan.cut..entries.len());
    job.kept_messages = input.messages(plan.cut..entries.len());
    job.tokens_without_summary = input.system_tokens + input.tokens(plan.cut..entries.len());
    Ok(())
}

fn plan_incremental(
    input: &PlanInput<'_>,
    options: &PlanOptions,
    planned: &mut PlannedJob,
) -> Result<(), String> {
    let entries = &input.entries;
    let retention = options.retention_window.max(options.keep_recent_messages);
    let run = plan::plan_incremental(entries, retention).ok_or_else(|| {
        format!(
            "nothing to compact: no run of assistant and tool messages outside the newest {retention} messages"
        )
    })?;
    planned.main = Some(input.source(run.clone(), None, None));
    let job = &mut planned.job;
    job.target = JobTarget::Incremental(ReplacedRange {
        from_message_id: entries[run.start].message.id.clone(),
        to_message_id: entries[run.end - 1].message.id.clone(),
    });
    job.messages_summarized = run.len();
    job.summarized_ids = input.ids(run.clone());
    job.kept_ids = input
        .ids(0..run.start)
        .into_iter()
        .chain(input.ids(run.end..entries.len()))
        .collect();
    job.kept_messages = input
        .messages(0..run.start)
        .into_iter()
        .chain(input.messages(run.end..entries.len()))
        .collect();
    let total = input.system_tokens + input.tokens(0..entries.len());
    job.tokens_without_summary = total - input.tokens(run);
    Ok(())
}

fn plan_prune(
    input: &PlanInput<'_>,
    options: &PlanOptions,
    job: &mut CompactionJob,
) -> Result<(), String> {
    let entries = &input.entries;
    let placeholder = tokens::count_message(input.encoding, &pruned_placeholder(1_000_000));
    let plan = plan::plan_prune(
        entries,
        placeholder,
        options.prune_protect_tokens,
        options.keep_recent_messages,
        options.prune_minimum_tokens,
    )
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
    job.kept_ids = input.ids(0..entries.len());
    job.messages_summarized = 0;
    let total = input.system_tokens + input.tokens(0..entries.len());
    job.tokens_without_summary = total - plan.freed;
    job.target = JobTarget::Prune {
        message_ids,
        freed: plan.freed,
    };
    Ok(())
}

fn plan_handoff(input: &PlanInput<'_>, planned: &mut PlannedJob) -> Result<(), String> {
    let first = input.first();
    let end = input.entries.len();
    if end <= first {
        return Err("nothing to hand off: the session has no messages".into());
    }
    planned.main = Some(input.source(first..end, input.previous_summary(), None));
    let job = &mut planned.job;
    job.messages_summarized = end - first;
    job.summarized_ids = input.ids(first..end);
    job.tokens_without_summary = input.system_tokens;
    Ok(())
}

impl PlannedJob {
    /// Builds the summarizer inputs (interrupted calls closed, each message
    /// counted as the summarizer sees it: only clipped ones are counted
    /// again) and what the retention check must find. Its cost grows with
    /// what is summarized.
    pub fn prepare(self) -> CompactionJob {
        let PlannedJob {
            mut job,
            main,
            prefix,
            options,
            carried_rules,
            latest_request,
            task,
            pins,
        } = self;
        if main.is_none() {
            return job; // prune: nothing to summarize, nothing to check
        }
        let summarized = main.iter().chain(prefix.iter()).flat_map(|s| &s.messages);
        job.images = summarized
            .clone()
            .flat_map(|(m, _)| m.named_parts())
            .collect();
        let mut rules = carried_rules;
        for rule in retention::rule_lines(summarized.map(|(m, _)| m.as_ref())) {
            if !rules.contains(&rule) {
                rules.push(rule);
            }
        }
        job.required =
            retention::required(&job.files.modified, latest_request, &rules, task, &pins);
        job.retained_rules = rules;
        job.input = main.map(|s| summary_input(s, &options, job.encoding));
        job.turn_prefix = prefix.map(|s| summary_input(s, &options, job.encoding));
        job
    }
}

/// A message on its way to the summarizer, with its count when known.
struct Counted {
    message: Arc<Message>,
    tokens: Option<u64>,
}

impl Borrow<Message> for Counted {
    fn borrow(&self) -> &Message {
        &self.message
    }
}

impl From<Message> for Counted {
    fn from(message: Message) -> Counted {
        Counted {
            message: Arc::new(message),
            tokens: None,
        }
    }
}

fn summary_input(source: SummarySource, options: &PlanOptions, encoding: Encoding) -> SummaryInput {
    let counted = source
        .messages
        .into_iter()
        .map(|(message, tokens)| Counted {
            message,
            tokens: Some(tokens),
        })
        .collect();
    let mut counted = repair_for_model(counted);
    close_trailing_calls(&mut counted);
    let instructions = match (options.instructions.as_deref(), source.note) {
        (Some(a), Some(b)) => Some(format!("{a}\n\n{b}")),
        (a, b) => a.or(b).map(str::to_string),
    };
    let known = counted.iter().map(|c| c.tokens).collect();
    SummaryInput::with_counts(
        SummaryRequest {
            previous_summary: source.previous_summary,
            messages: counted.into_iter().map(|c| c.message).collect(),
            partial_summaries: Vec::new(),
            later: source.later,
            earlier: source.earlier,
            instructions,
            max_tool_output_chars: options.max_tool_output_chars,
            compact_prompt: options.compact_prompt.clone(),
            update_prompt: options.update_prompt.clone(),
        },
        known,
        encoding,
    )
}

impl CompactionJob {
    /// The view once applied, without the new summary, as the provider
    /// would count it (what the triggers compare with their limit).
    pub fn context_without_summary(&self) -> u64 {
        self.correction.context(self.tokens_without_summary)
    }

    /// The log record for this job once its summaries are written. The
    /// retention check runs here: whatever the summary and the kept
    /// messages lack is appended verbatim in `<preserved>`.
    pub fn record(
        &self,
        summaries: &JobSummaries,
        trigger: Trigger,
        created_at: u64,
        duration_ms: u64,
    ) -> CompactionRecord {
        let (main, turn_prefix) = (summaries.main.as_ref(), summaries.turn_prefix.as_ref());
        let mut record = CompactionRecord {
            id: uuid::Uuid::new_v4().simple().to_string()[..12].to_string(),
            strategy: self.strategy,
            summary: String::new(),
            first_kept_message_id: None,
            last_summarized_message_id: None,
            replaces: None,
            pruned_message_ids: Vec::new(),
            messages_summarized: self.messages_summarized,
            tokens_before: self.tokens_before,
            tokens_after: 0,
            read_files: self.files.read.clone(),
            modified_files: self.files.modified.clone(),
            file_marks: self.files.marks.clone(),
            trigger,
            summarizer: main
                .map(|o| o.summarizer.clone())
                .unwrap_or_else(|| "none".into()),
            chunks: main.map(|o| o.chunks).unwrap_or(0)
                + turn_prefix.map(|o| o.chunks).unwrap_or(0),
            degraded: false,
            degraded_reason: None,
            recall: 1.0,
            retained_rules: self.retained_rules.clone(),
            usage: None,
            created_at: Some(created_at),
            duration_ms: Some(duration_ms),
            images: self.images.clone(),
            provider_tokens_after: None,
            recount_note: None,
            dropped: Vec::new(),
            unseen_tokens: None,
        };
        note_summarizers(&mut record, [main, turn_prefix]);
        self.set_target(&mut record);
        if self.strategy != Strategy::Prune {
            record.summary = self.checked_body(&mut record, main, turn_prefix);
        }
        record.tokens_after = self.correction.context(
            self.tokens_without_summary
                + record.summary_tokens(self.encoding, &self.summary_prefix),
        );
        record
    }

    fn set_target(&self, record: &mut CompactionRecord) {
        match &self.target {
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
    }

    /// The summary body: the main summary, a split turn's prefix, and what
    /// the retention check found missing, in `<preserved>`. Sets `recall`.
    fn checked_body(
        &self,
        record: &mut CompactionRecord,
        main: Option<&WrittenSummary>,
        turn_prefix: Option<&WrittenSummary>,
    ) -> String {
        let mut body = main.map(|o| o.text.trim().to_string()).unwrap_or_default();
        if let Some(prefix) = turn_prefix {
            body.push_str(&format!(
                "\n\n<turn-prefix>\n{}\n</turn-prefix>",
                prefix.text.trim()
            ));
        }
        // Checked against what the model will see: body plus sections.
        let sections = if self.strategy == Strategy::Incremental {
            String::new()
        } else {
            record.file_sections().render()
        };
        let outcome = retention::check(
            &format!("{body}\n{sections}"),
            self.kept_messages.iter().map(|m| m.as_ref()),
            &self.required,
        );
        record.recall = (outcome.recall * 1000.0).round() / 1000.0;
        if let Some(preserved) = outcome.preserved_section() {
            body.push_str("\n\n");
            body.push_str(&preserved);
        }
        body
    }
}

/// Degraded reasons and provider usage of the summaries, summed.
fn note_summarizers(record: &mut CompactionRecord, outputs: [Option<&WrittenSummary>; 2]) {
    let reasons: Vec<String> = outputs
        .iter()
        .flatten()
        .filter_map(|o| o.degraded.clone())
        .collect();
    if !reasons.is_empty() {
        record.degraded = true;
        record.degraded_reason = Some(reasons.join("; "));
    }
    for output in outputs.into_iter().flatten() {
        Usage::accumulate(&mut record.usage, output.usage);
    }
}

/// A call with no result at the end of the summarized part gets the
/// synthetic note too: its turn was cut off by the compaction.
fn close_trailing_calls(messages: &mut Vec<Counted>) {
    let mut tracker = CallTracker::default();
    for counted in messages.iter() {
        tracker.observe(&counted.message);
    }
    let open = tracker.open_calls().to_vec();
    messages.extend(
        open.iter()
            .map(|(id, name)| Counted::from(synthetic_result(id, name))),
    );
}
