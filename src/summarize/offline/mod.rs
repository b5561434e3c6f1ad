//! The built-in summarizer: deterministic, no network. It cannot
//! understand the conversation, so it extracts what an agent needs to
//! carry on, section by section (see `digest.rs`): the task and the later
//! requests that changed it, the user's rules, what each turn achieved,
//! decisions and findings, what happened to each file, the commands and how
//! they ended, the errors still open, the current state and the next step.
//! A later compaction reads the previous summary back and merges into it.
//! The result fits `summarizer.maxTokens`, `DEFAULT_BUDGET` and half of
//! what it replaces: the least important entries go first, never the
//! task, the rules, the files or the open errors.

mod digest;
mod extract;
mod plans;
mod results;
pub mod wording;

use std::time::Duration;

use super::{BoxFuture, ProgressSink, SummarizeError, Summarizer, SummaryOutput, SummaryRequest};
use crate::conversation::MessageBody;
use crate::tokens::Encoding;
use digest::Digest;

/// The most tokens an offline summary takes unless `summarizer.maxTokens`
/// is smaller: enough for a long session's digest, small next to the
/// 20,000 tokens a compaction keeps verbatim.
pub const DEFAULT_BUDGET: u64 = 3000;

/// The smallest budget the input size sets (`maxTokens` may set less).
const MIN_BUDGET: u64 = 120;

/// Progress and decision entries kept before the budget decides (newest
/// first), so that a long chain of compactions does not grow without end.
const PROGRESS_KEPT: usize = 30;
const DECISIONS_KEPT: usize = 8;

#[derive(Debug, Clone, Copy, Default)]
pub struct OfflineSummarizer {
    /// `summarizer.maxTokens`: the summary never takes more (where the
    /// sections that always stay allow it).
    pub max_tokens: Option<u64>,
}

impl OfflineSummarizer {
    /// The summary of `request`, as the summarizer named `name` reports it.
    fn output(&self, request: &SummaryRequest, name: &str) -> SummaryOutput {
        SummaryOutput {
            text: summarize_offline_within(request, self.max_tokens),
            summarizer: name.into(),
            usage: None,
            chunks: 1,
        }
    }
}

impl Summarizer for OfflineSummarizer {
    fn name(&self) -> &str {
        "offline"
    }

    fn summarize<'a>(
        &'a self,
        request: SummaryRequest,
        _progress: ProgressSink<'a>,
    ) -> BoxFuture<'a, Result<SummaryOutput, SummarizeError>> {
        Box::pin(async move { Ok(self.output(&request, "offline")) })
    }
}

/// The offline summarizer behind a pacing delay per call: lets protocol
/// tests observe a compaction that is still running, and cancel it.
pub struct PacedSummarizer {
    pub delay: Duration,
}

impl Summarizer for PacedSummarizer {
    fn name(&self) -> &str {
        "test"
    }

    fn summarize<'a>(
        &'a self,
        request: SummaryRequest,
        _progress: ProgressSink<'a>,
    ) -> BoxFuture<'a, Result<SummaryOutput, SummarizeError>> {
        Box::pin(async move {
            tokio::time::sleep(self.delay).await;
            Ok(OfflineSummarizer::default().output(&request, "test"))
        })
    }
}

/// Writes (or updates) the summary within `DEFAULT_BUDGET` tokens (and
/// half of what it replaces).
#[cfg(test)]
pub fn summarize_offline(request: &SummaryRequest) -> String {
    summarize_offline_within(request, None)
}

/// Writes (or updates) the summary within `max_tokens` (and at most
/// `DEFAULT_BUDGET`, and half of what it replaces) tokens.
pub fn summarize_offline_within(request: &SummaryRequest, max_tokens: Option<u64>) -> String {
    let (summaries, messages) = input_tokens(request);
    digest_of_request(request).render(budget(max_tokens, summaries, messages))
}

/// The digest of a whole session within `tokens` (at most
/// `DEFAULT_BUDGET`), however short the session: what an agent's hook
/// hands over is bounded by the hook's output, not by what it replaces, so
/// a short session keeps every request and rule it has. That bound is in
/// characters, so the tokens are estimated from them (`tokens::estimate`):
/// the same record in a hook, which loads no vocabulary, and in the server.
pub fn digest_within(request: &SummaryRequest, tokens: u64) -> String {
    digest_of_request(request).render_by(tokens.min(DEFAULT_BUDGET), crate::tokens::estimate)
}

/// The previous summary and the partial ones read back, the messages
/// merged in.
fn digest_of_request(request: &SummaryRequest) -> Digest {
    let mut digest = request
        .previous_summary
        .as_deref()
        .map(Digest::parse)
        .unwrap_or_default();
    for partial in &request.partial_summaries {
        digest.absorb(Digest::parse(partial));
    }
    if !request.earlier.is_empty() {
        digest.recover(extract::digest_of(&request.earlier));
    }
    if !request.messages.is_empty() {
        digest.absorb(extract::digest_of(&request.messages));
    }
    if !request.later.is_empty() {
        digest.settle_by(&extract::digest_of(&request.later));
    }
    digest.focus = request
        .instructions
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| wording::clip(&sentences_of_lines(s), 320));
    digest.keep_newest_logs(PROGRESS_KEPT, DECISIONS_KEPT);
    digest
}

/// Lines as one text, a line that ends without punctuation closed with a
/// full stop: "…whose goal is: write the notes" and "Carry over …" would
/// otherwise run together.
fn sentences_of_lines(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        out.push_str(line);
        let last = i + 1 == lines.len();
        if !last && !line.ends_with(['.', ':', '!', '?', ';', ',']) {
            out.push('.');
        }
        if !last {
            out.push(' ');
        }
    }
    out
}

/// Tokens of what the summary replaces: the summaries it updates, and the
/// messages.
fn input_tokens(request: &SummaryRequest) -> (u64, u64) {
    let count = |text: &str| Encoding::O200k.count(text);
    let messages = request
        .messages
        .iter()
        .map(|m| {
            let calls: u64 = match &m.body {
                MessageBody::Assistant { tool_calls, .. } => tool_calls
                    .iter()
                    .map(|c| count(&c.arguments.to_string()))
                    .sum(),
                _ => 0,
            };
            count(m.text()) + calls
        })
        .sum();
    let summaries = request
        .previous_summary
        .iter()
        .chain(&request.partial_summaries)
        .map(|s| count(s))
        .sum();
    (summaries, messages)
}

/// Merges summaries of consecutive parts, oldest first, into one.
pub fn merge_summaries(partials: &[String]) -> String {
    let mut digest = Digest::default();
    for partial in partials {
        digest.absorb(Digest::parse(partial));
    }
    digest.render(DEFAULT_BUDGET)
}

/// The summary's budget: `maxTokens`, at most `DEFAULT_BUDGET`; and what
/// it updates plus half of the messages it replaces (a summary of a few
/// short messages must not outgrow them), though never below
/// `MIN_BUDGET`.
fn budget(max_tokens: Option<u64>, summaries: u64, messages: u64) -> u64 {
    max_tokens
        .unwrap_or(DEFAULT_BUDGET)
        .min(DEFAULT_BUDGET)
        .min((summaries + messages / 2).max(MIN_BUDGET))
}

#[cfg(test)]
mod tests;
