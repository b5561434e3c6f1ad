//! A compaction for every caller (`conversation/compact`, auto-compaction,
//! overflow recovery, `compactd compact` and `replay`), one pipeline:
//!
//! 1. `plan` against the meter (cheap: it shares the session's messages);
//! 2. `write`: prepare the summarizer inputs, summarize, record (the
//!    retention check), the parts whose cost grows with what is
//!    summarized, on blocking threads;
//! 3. `settle`: conclude what the summaries mean for the session and act
//!    on it through its `Target` (log first, then memory).
//!
//! `compact` runs the three in a row (the transcript commands); the server
//! runs `plan` and `settle` on its state owner and `write` in a task of its
//! own, with progress and cancellation passed in, nothing copied.

use std::sync::atomic::{AtomicU32, Ordering};

use super::meter;
use super::{EngineError, EngineResult, OpenSession};
use crate::compaction::retention::Required;
use crate::compaction::summary::{JobSummaries, SummaryInput};
use crate::compaction::{
    self, CompactionJob, CompactionRecord, JobTarget, PlanOptions, PlannedJob,
};
use crate::compaction::{Strategy, Trigger};
use crate::config::Config;
use crate::conversation::Message;
use crate::session::Session;
use crate::store::LogEntry;
use crate::summarize::driver::{self, DriverSettings};
use crate::summarize::{self, Progress, ProgressSink, Summarizer};
use crate::tokens::Encoding;

/// The options the configuration gives, for one strategy and tail.
pub fn plan_options(
    config: &Config,
    strategy: Strategy,
    keep_recent_tokens: u64,
    instructions: Option<String>,
) -> PlanOptions {
    PlanOptions {
        strategy,
        keep_recent_tokens,
        keep_recent_messages: config.keep_recent_messages,
        retention_window: config.retention_window,
        prune_protect_tokens: config.prune_protect_tokens,
        prune_minimum_tokens: config.prune_minimum_tokens,
        instructions,
        max_tool_output_chars: config.max_tool_output_chars,
        compact_prompt: config.compact_prompt.clone(),
        update_prompt: config.update_prompt.clone(),
    }
}

/// What the summarizer is told: the client's instructions, and for a
/// handoff the goal it writes for first (a handoff needs one).
pub fn instructions(
    strategy: Strategy,
    goal: Option<&str>,
    instructions: Option<String>,
) -> EngineResult<Option<String>> {
    if strategy != Strategy::Handoff {
        return Ok(instructions);
    }
    match goal.map(str::trim).filter(|g| !g.is_empty()) {
        Some(goal) => Ok(Some(compaction::handoff_instructions(
            goal,
            instructions.as_deref(),
        ))),
        None => Err(EngineError::Invalid(
            "invalid params at `goal`: the handoff strategy needs a goal".into(),
        )),
    }
}

/// Nothing to compact: why, and the meter's reading (which stays).
#[derive(Debug, Clone, PartialEq)]
pub struct NotPlanned {
    pub reason: String,
    pub tokens_before: u64,
}

/// Plans a compaction of the session as it stands; `tokensBefore` is the
/// meter's reading. Cheap: the job shares the session's messages, and its
/// summarizer inputs are built by `PlannedJob::prepare`, which the server
/// runs off the state owner.
pub fn plan(
    config: &Config,
    session: &Session,
    strategy: Strategy,
    keep_recent_tokens: u64,
    instructions: Option<String>,
) -> Result<PlannedJob, NotPlanned> {
    let tokens_before = meter::meter(config, session).context_tokens;
    let options = plan_options(config, strategy, keep_recent_tokens, instructions);
    session
        .plan(&options, tokens_before)
        .map_err(|reason| NotPlanned {
            reason,
            tokens_before,
        })
}

/// The tail an overflow recovery keeps: the most (full, half, then
/// nothing) that still leaves something to summarize and, with the
/// overhead every request carries, room under the auto-compaction limit;
/// when no tail leaves room, the least that can be planned.
pub fn overflow_keep(config: &Config, session: &Session) -> u64 {
    let full = config.keep_recent_tokens;
    let limit = meter::auto_compact_at(config, meter::context_window(config, session));
    let planned: Vec<(u64, u64)> = [full, full / 2, 0]
        .into_iter()
        .filter_map(|keep| {
            let options = plan_options(config, Strategy::Checkpoint, keep, None);
            let job = session.plan(&options, 0).ok()?;
            Some((keep, job.job.context_without_summary()))
        })
        .collect();
    planned
        .iter()
        .find(|(_, after)| *after < limit)
        .or(planned.last())
        .map_or(0, |(keep, _)| *keep)
}

/// The configured summarizer, with its fallback ladder and limits: writes
/// the summaries a job needs.
pub struct JobSummarizer {
    summarizer: Box<dyn Summarizer>,
    settings: DriverSettings,
    /// `summarizer.recount`: the provider to ask, and where kept images'
    /// data is.
    recount: Option<(crate::config::SummarizerConfig, crate::store::Blobs)>,
}

impl JobSummarizer {
    /// For a conversation counted in `encoding`.
    pub fn new(config: &Config, encoding: Encoding) -> JobSummarizer {
        JobSummarizer {
            summarizer: summarize::from_config(&config.summarizer),
            settings: DriverSettings::from_config(config, encoding),
            recount: config.summarizer.recount.then(|| {
                let blobs = crate::store::Blobs::in_data_dir(&config.sessions_dir());
                (config.summarizer.clone(), blobs)
            }),
        }
    }

    /// Asks the provider what the compacted history costs (a checkpoint's
    /// summary and kept tail, with the system prompt and tools), into the
    /// record: its count, or why there is none.
    async fn recount(&self, job: &CompactionJob, record: &mut CompactionRecord) {
        let Some((config, blobs)) = &self.recount else {
            return;
        };
        if job.strategy != Strategy::Checkpoint {
            record.recount_note = Some("a recount covers checkpoint compactions".into());
            return;
        }
        let mut messages = vec![record.view_message(&job.summary_prefix)];
        messages.extend(job.kept_messages.iter().map(|m| Message::clone(m)));
        super::blobs::restore_data(blobs, &mut messages);
        let counted = summarize::recount::recount(
            config,
            job.model.as_deref(),
            job.system_prompt.as_deref(),
            &job.tool_definitions,
            &messages,
        )
        .await;
        match counted {
            Ok(tokens) => record.provider_tokens_after = Some(tokens),
            Err(why) => record.recount_note = Some(why),
        }
    }

    /// Writes the main summary and a split turn's prefix; never fails (the
    /// ladder ends with the offline summarizer). Progress is one rising
    /// sequence over both (see `RisingProgress`).
    pub async fn run(&self, job: &CompactionJob, progress: ProgressSink<'_>) -> JobSummaries {
        let mut summaries = JobSummaries::default();
        let weight = |input: &Option<SummaryInput>| {
            input
                .as_ref()
                .map(|i| i.tokens.iter().sum::<u64>().max(1))
                .unwrap_or(0)
        };
        let (main, prefix) = (weight(&job.input), weight(&job.turn_prefix));
        let rising = RisingProgress::new(progress);
        let mut start = 0.0;
        for (output, input, weight) in [
            (&mut summaries.main, &job.input, main),
            (&mut summaries.turn_prefix, &job.turn_prefix, prefix),
        ] {
            if let Some(input) = input {
                let span = 100.0 * weight as f64 / (main + prefix) as f64;
                let part = |p: Progress| rising.report(start, span, p);
                let summarizer = self.summarizer.as_ref();
                *output = Some(driver::summarize(summarizer, input, self.settings, &part).await);
                start += span;
            }
        }
        summaries
    }
}

/// One rising sequence of percentages over a job's parts. The driver
/// reports each summary from 0 to 100 (and starts over when it chunks
/// smaller or falls down the ladder); a job with a split turn writes two.
/// Each part gets its share of 0–100 by its input's size, and a report
/// never goes below one already made.
pub struct RisingProgress<'a> {
    sink: ProgressSink<'a>,
    highest: AtomicU32,
}

impl<'a> RisingProgress<'a> {
    pub fn new(sink: ProgressSink<'a>) -> RisingProgress<'a> {
        RisingProgress {
            sink,
            highest: AtomicU32::new(0),
        }
    }

    /// Reports `progress` of a part that spans `span` percent from `start`.
    pub fn report(&self, start: f64, span: f64, progress: Progress) {
        let percentage = progress.percentage.map(|p| {
            let scaled = (start + f64::from(p.min(100)) * span / 100.0).floor() as u32;
            let scaled = scaled.min(100);
            self.highest.fetch_max(scaled, Ordering::SeqCst).max(scaled)
        });
        (self.sink)(Progress {
            message: progress.message,
            percentage,
        });
    }
}

/// What a job's summaries mean for the session.
#[derive(Debug, Clone, PartialEq)]
enum Conclusion {
    /// Apply the record: the history gets smaller.
    Apply(CompactionRecord),
    /// The compacted history would not be smaller; nothing changes.
    NotSmaller {
        record: CompactionRecord,
        reason: String,
    },
    /// A handoff: a new session starts with the summary; this one is
    /// unchanged.
    Handoff(CompactionRecord),
}

/// The record of a job whose summaries are written (`CompactionJob::record`,
/// with its retention check, whose cost grows with what was summarized: the
/// server makes it off the state owner).
fn record(
    job: &CompactionJob,
    summaries: &JobSummaries,
    trigger: Trigger,
    duration_ms: u64,
) -> CompactionRecord {
    job.record(summaries, trigger, super::now_ms(), duration_ms)
}

/// Decides what a finished job's record does. A job planned before
/// another compaction was applied is stale and changes nothing.
fn conclude(
    session: &Session,
    job: &CompactionJob,
    record: CompactionRecord,
) -> EngineResult<Conclusion> {
    if job.generation != session.compactions().len() {
        return Err(EngineError::Failed(
            "compaction superseded by another one, history unchanged".into(),
        ));
    }
    if job.target == JobTarget::Handoff {
        return Ok(Conclusion::Handoff(record));
    }
    if record.tokens_after >= record.tokens_before {
        // A summary larger than what it replaces would only cost context.
        let reason = format!(
            "not applied: the compacted history would not be smaller ({} → {} tokens)",
            record.tokens_before, record.tokens_after
        );
        return Ok(Conclusion::NotSmaller { record, reason });
    }
    Ok(Conclusion::Apply(record))
}

/// What a compaction is asked to do (the caller's part of the plan).
#[derive(Debug, Clone)]
pub struct Request {
    pub strategy: Strategy,
    pub keep_recent_tokens: u64,
    pub instructions: Option<String>,
    pub trigger: Trigger,
}

/// A job whose summaries are written and recorded: step 2's result.
#[derive(Debug)]
pub struct Written {
    pub job: CompactionJob,
    pub record: CompactionRecord,
}

/// Where a compaction's record goes: the session it was planned on, and
/// how a record becomes part of it.
pub trait Target {
    fn session(&self) -> &Session;
    /// Makes the record the session's (logged first where there is a log).
    fn apply(&mut self, record: CompactionRecord) -> EngineResult<()>;
}

/// A session with its log: the record is logged and synced, then applied.
impl Target for OpenSession {
    fn session(&self) -> &Session {
        &self.session
    }
    fn apply(&mut self, record: CompactionRecord) -> EngineResult<()> {
        apply(self, record)
    }
}

/// A session in memory only (the transcript commands, which write a log of
/// their own when asked).
impl Target for Session {
    fn session(&self) -> &Session {
        self
    }
    fn apply(&mut self, record: CompactionRecord) -> EngineResult<()> {
        self.apply_compaction(record);
        Ok(())
    }
}

/// What a compaction did.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The record is the session's now: the history got smaller.
    Applied(CompactionRecord),
    /// The compacted history would not have been smaller; nothing changed.
    NotSmaller {
        record: CompactionRecord,
        reason: String,
    },
    /// A handoff: the summary starts a new session, which the caller
    /// creates where its sessions live; this one is unchanged.
    Handoff(CompactionRecord),
}

/// Step 2: the summarizer inputs prepared (on a blocking thread), the
/// summaries written with `progress`, the record made (on a blocking
/// thread: its retention check grows with what was summarized). Dropping
/// the future cancels it; a panic becomes the error.
pub async fn write(
    planned: PlannedJob,
    summarizer: &JobSummarizer,
    trigger: Trigger,
    progress: ProgressSink<'_>,
) -> Result<Written, String> {
    let started = std::time::Instant::now();
    let job = tokio::task::spawn_blocking(move || planned.prepare())
        .await
        .map_err(|e| format!("preparing the compaction failed: {e}"))?;
    let summaries = summarizer.run(&job, progress).await;
    let duration_ms = started.elapsed().as_millis() as u64;
    let mut written = tokio::task::spawn_blocking(move || {
        let record = record(&job, &summaries, trigger, duration_ms);
        Written { job, record }
    })
    .await
    .map_err(|e| format!("recording the compaction failed: {e}"))?;
    summarizer.recount(&written.job, &mut written.record).await;
    Ok(written)
}

/// A settled job: what it did, and the job (what it summarized, kept and
/// pruned, for reports).
#[derive(Debug)]
pub struct Settled {
    pub outcome: Outcome,
    pub job: CompactionJob,
}

/// Step 3: what the written job means for the session, carried out: the
/// record applied through `target`, or why not.
pub fn settle(written: Written, target: &mut dyn Target) -> EngineResult<Settled> {
    let Written { job, record } = written;
    let outcome = match conclude(target.session(), &job, record)? {
        Conclusion::Apply(record) => {
            target.apply(record.clone())?;
            Outcome::Applied(record)
        }
        Conclusion::NotSmaller { record, reason } => Outcome::NotSmaller { record, reason },
        Conclusion::Handoff(record) => Outcome::Handoff(record),
    };
    Ok(Settled { outcome, job })
}

/// The whole pipeline in a row: plan, write, settle. `Err(NotPlanned)`:
/// nothing to compact.
pub async fn compact(
    config: &Config,
    target: &mut dyn Target,
    request: Request,
    progress: ProgressSink<'_>,
) -> EngineResult<Result<Settled, NotPlanned>> {
    let planned = match plan(
        config,
        target.session(),
        request.strategy,
        request.keep_recent_tokens,
        request.instructions,
    ) {
        Ok(planned) => planned,
        Err(not) => return Ok(Err(not)),
    };
    let summarizer = JobSummarizer::new(config, planned.job.encoding);
    let written = write(planned, &summarizer, request.trigger, progress)
        .await
        .map_err(EngineError::Failed)?;
    settle(written, target).map(Ok)
}

/// Applies a compaction: logged and synced first, then applied.
fn apply(open: &mut OpenSession, record: CompactionRecord) -> EngineResult<()> {
    open.check_writable()?;
    open.log
        .append(&[LogEntry::Compaction(Box::new(record.clone()))], true)
        .map_err(|e| {
            EngineError::Failed(format!(
                "could not record the compaction, history unchanged: {e}"
            ))
        })?;
    open.session.apply_compaction(record);
    Ok(())
}

/// The tokens a handoff's new session starts with, as the provider would
/// count them: the source's calibration applies (the same agent sends the
/// same system prompt and tools).
pub fn handoff_tokens(source: &Session, fresh: &Session) -> u64 {
    source.correction().context(fresh.estimated_tokens())
}

/// A dry run: the plan, and the tokens after it with the summary's size
/// estimated as a tenth of what it replaces (at most the reserve), plus
/// the file sections, as the provider would count them (overhead
/// included, like the meter).
#[derive(Debug, Clone)]
pub struct Preview {
    pub job: CompactionJob,
    pub estimated_tokens_after: u64,
}

pub fn preview(
    config: &Config,
    session: &Session,
    strategy: Strategy,
    keep_recent_tokens: u64,
) -> Result<Preview, NotPlanned> {
    let job = plan(config, session, strategy, keep_recent_tokens, None)?.prepare();
    let summarized_tokens: u64 = job
        .input
        .iter()
        .chain(job.turn_prefix.iter())
        .flat_map(|i| i.tokens.iter())
        .sum();
    let summary_estimate = if strategy == Strategy::Prune {
        0
    } else {
        (summarized_tokens / 10).min(config.reserve_tokens.max(1))
            + Encoding::O200k.count(&job.files.render())
    };
    Ok(Preview {
        estimated_tokens_after: job
            .correction
            .context(job.tokens_without_summary + summary_estimate),
        job,
    })
}

/// One line per item the retention check looks for.
pub fn describe_required(required: &Required) -> String {
    let (label, text) = match required {
        Required::Path(t) => ("modified file", t),
        Required::LatestRequest(t) => ("latest request", t),
        Required::Rule(t) => ("rule", t),
        Required::Verbatim(t) => ("verbatim", t),
    };
    let short: String = text.chars().take(120).collect();
    format!("{label}: {short}")
}
