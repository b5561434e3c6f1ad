//! Compacts a transcript through compactd's library, the way `compactd
//! compact` (one compaction at a cut) and `compactd replay` (automatic
//! compactions under a small window) do.

use compactd::compaction::Strategy;
use compactd::config::Config;
use compactd::conversation::Message;
use compactd::files::{disk, FileTools};
use compactd::import::{self, Imported};
use compactd::session::{PlanOptions, Session, Trigger};
use compactd::store::LogEntry;
use compactd::summarize::driver::{self, DriverOutput, DriverSettings};
use compactd::summarize::{self, Summarizer};

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

fn configure(session: &mut Session, config: &Config) {
    session.files.workspace = disk::workspace(Vec::new());
    session.files.max_listed_files = config.max_listed_files;
}

fn prefix(config: &Config) -> String {
    config.summary_prefix.clone().unwrap_or_else(|| {
        compactd::compaction::DEFAULT_SUMMARY_PREFIX
            .trim_end()
            .to_string()
    })
}

/// The transcript's estimated tokens, as `compactd compact` would count it.
pub fn tokens(imported: &Imported, config: &Config) -> u64 {
    imported
        .session("quality", prefix(config))
        .estimated_tokens()
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
    let mut session = imported.session("quality", prefix(config));
    configure(&mut session, config);
    let summarizer = summarize::from_config(&config.summarizer);
    let started = std::time::Instant::now();
    let before = session.estimated_tokens();
    compact(&mut session, config, keep, summarizer.as_ref(), max_input).await?;
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
    let mut session = Session::new(
        "chain".into(),
        imported.settings.model.clone(),
        Some(window),
        imported.settings.system_prompt.clone(),
        prefix(config),
    );
    configure(&mut session, config);
    let summarizer = summarize::from_config(&config.summarizer);
    let started = std::time::Instant::now();
    let (mut compactions, mut summarized, mut before) = (0, 0, 0);
    for entry in &imported.entries {
        match entry {
            LogEntry::Message { message } => session.push(vec![Message {
                usage: None,
                ..message.clone()
            }]),
            LogEntry::File(event) => session.apply_file_event(event),
            LogEntry::Pin { text } => session.add_pin(text.clone()),
            LogEntry::Settings(s) if s.model.is_some() => session.set_model(s.model.clone()),
            _ => {}
        }
        let tokens = session.estimated_tokens();
        if tokens < at {
            continue;
        }
        if let Ok(n) = compact(&mut session, config, keep, summarizer.as_ref(), None).await {
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

/// Plans, summarizes and applies one checkpoint compaction; the number of
/// messages it summarized.
async fn compact(
    session: &mut Session,
    config: &Config,
    keep: u64,
    summarizer: &dyn Summarizer,
    max_input: Option<u64>,
) -> Result<usize, Skip> {
    let options = PlanOptions::from_config(config, Strategy::Checkpoint, keep, None);
    let job = session.plan(&options, session.estimated_tokens())?;
    let input_tokens: u64 = [&job.input, &job.turn_prefix]
        .into_iter()
        .flatten()
        .map(|i| i.tokens.iter().sum::<u64>())
        .sum();
    if let Some(max) = max_input.filter(|max| input_tokens > *max) {
        return Err(format!(
            "{input_tokens} tokens to summarize, over the {max} this summarizer is given"
        ));
    }
    let settings = DriverSettings::from_config(config, session.encoding());
    let mut outputs: [Option<DriverOutput>; 2] = [None, None];
    for (output, input) in outputs.iter_mut().zip([&job.input, &job.turn_prefix]) {
        if let Some(input) = input {
            *output = Some(driver::summarize(summarizer, input, settings, &|_| {}).await);
        }
    }
    let [main, turn_prefix] = outputs;
    let record = session.record_compaction(
        &job,
        main.as_ref(),
        turn_prefix.as_ref(),
        Trigger::Manual,
        0,
        0,
    );
    session.apply_compaction(record);
    Ok(job.messages_summarized)
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
