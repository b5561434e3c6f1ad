//! Compacts a transcript through compactd's engine, as `compactd compact`
//! does (import, plan, summarize, conclude, apply): once at a cut, or in a
//! chain of compactions as the transcript is walked under a small window.

use compactd::config::Config;
use compactd::conversation::Message;
use compactd::engine::compaction::{self as engine_compaction, JobSummarizer, Outcome as Settled};
use compactd::engine::{self, SessionEnv};
use compactd::files::{disk, FileTools};
use compactd::import::{self, Imported};
use compactd::protocol::{Strategy, Trigger};
use compactd::session::Session;
use compactd::store::{self, LogEntry};

/// A compacted conversation.
#[derive(Debug)]
pub struct Outcome {
    /// The last compaction's summary as the model sees it (with the
    /// retention check's additions and the file sections).
    pub summary: String,
    /// Everything the model sees afterwards, as text.
    pub context: String,
    pub compactions: usize,
    pub messages_summarized: usize,
    pub tokens_before: u64,
    pub tokens_after: u64,
    pub duration_ms: u64,
}

/// Why a case produced no outcome.
pub type Skip = String;

pub fn import(bytes: &[u8], config: &Config) -> Result<Imported, Skip> {
    let mut imported = import::parse(bytes, None)?;
    imported.track_files(
        &FileTools::new(&config.file_tools),
        &disk::workspace(Vec::new()),
    );
    Ok(imported)
}

fn env(config: &Config) -> SessionEnv {
    SessionEnv::new(config, disk::workspace(Vec::new()))
}

/// The transcript as a session, as `compactd compact` builds it.
fn session(imported: &Imported, config: &Config) -> Session {
    let entries = imported.log_entries("quality", 0);
    engine::create::replay("quality", entries, &env(config))
}

/// The transcript's estimated tokens, as `compactd compact` would count it.
pub fn tokens(imported: &Imported, config: &Config) -> u64 {
    session(imported, config).estimated_tokens()
}

/// One compaction of the whole transcript, keeping `keep` recent tokens.
/// `max_input` skips cases whose summarizer input is larger (for slow
/// summarizers).
pub async fn once(
    imported: &Imported,
    config: &Config,
    keep: u64,
    max_input: Option<u64>,
) -> Result<Outcome, Skip> {
    let mut session = session(imported, config);
    let started = std::time::Instant::now();
    let before = session.estimated_tokens();
    compact(&mut session, config, keep, max_input).await?;
    Ok(outcome(&session, 1, before, started))
}

/// The transcript appended message by message under a `window`-token
/// context; whenever the estimate reaches `at`, a compaction keeps `keep`
/// tokens. Provider usage is dropped, since it describes the original,
/// uncompacted context; compactions the transcript recorded are ignored.
pub async fn chain(
    imported: &Imported,
    config: &Config,
    window: u64,
    at: u64,
    keep: u64,
) -> Result<Outcome, Skip> {
    let header = engine::create::header("chain", 0, imported.settings.clone());
    let mut session = engine::create::replay("chain", vec![header], &env(config));
    session.context_window = Some(window);
    let started = std::time::Instant::now();
    let (mut compactions, mut summarized, mut before) = (0, 0, 0);
    for entry in &imported.entries {
        match entry {
            LogEntry::Message { message, .. } => {
                session.push(vec![Message {
                    usage: None,
                    ..message.clone()
                }]);
            }
            LogEntry::Compaction(_) => {}
            other => {
                store::apply_entry(&mut session, other.clone());
                session.context_window = Some(window);
            }
        }
        let tokens = session.estimated_tokens();
        if tokens < at {
            continue;
        }
        if let Ok(n) = compact(&mut session, config, keep, None).await {
            compactions += 1;
            summarized += n;
            before = before.max(tokens);
        }
    }
    if compactions == 0 {
        return Err(format!(
            "no automatic compaction under a {window}-token window"
        ));
    }
    let mut outcome = outcome(&session, compactions, before, started);
    outcome.messages_summarized = summarized;
    Ok(outcome)
}

/// Plans, summarizes and applies one checkpoint compaction with the
/// engine; the number of messages it summarized.
async fn compact(
    session: &mut Session,
    config: &Config,
    keep: u64,
    max_input: Option<u64>,
) -> Result<usize, Skip> {
    let planned = engine_compaction::plan(config, session, Strategy::Checkpoint, keep, None)
        .map_err(|not| not.reason)?;
    // The input this summarizer would get, before it is asked (a local
    // model's window is small): prepared once more here, a dev tool's cost.
    let input_tokens: u64 = {
        let job = planned.clone().prepare();
        [&job.input, &job.turn_prefix]
            .into_iter()
            .flatten()
            .map(|i| i.tokens.iter().sum::<u64>())
            .sum()
    };
    if let Some(max) = max_input.filter(|max| input_tokens > *max) {
        return Err(format!(
            "{input_tokens} tokens to summarize, over the {max} this summarizer is given"
        ));
    }
    let summarizer = JobSummarizer::new(config, planned.job.encoding);
    let written = engine_compaction::write(planned, &summarizer, Trigger::Manual, &|_| {}).await?;
    let settled = engine_compaction::settle(written, session).map_err(|e| e.to_string())?;
    match settled.outcome {
        Settled::Applied(_) => Ok(settled.job.messages_summarized),
        Settled::NotSmaller { reason, .. } => Err(reason),
        Settled::Handoff(_) => Err("a checkpoint was planned, not a handoff".into()),
    }
}

fn outcome(
    session: &Session,
    compactions: usize,
    before: u64,
    started: std::time::Instant,
) -> Outcome {
    let record = session.last_compaction().expect("compacted");
    let mut context = String::new();
    for message in session.history() {
        context.push_str(message.text());
        if let compactd::conversation::MessageBody::Assistant { tool_calls, .. } = &message.body {
            for call in tool_calls {
                context.push('\n');
                context.push_str(&call.arguments.to_string());
            }
        }
        context.push('\n');
    }
    Outcome {
        summary: record.full_summary(),
        context,
        compactions,
        messages_summarized: record.messages_summarized,
        tokens_before: before,
        tokens_after: session.estimated_tokens(),
        duration_ms: started.elapsed().as_millis() as u64,
    }
}
