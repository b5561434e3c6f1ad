//! The core's side of the summarizer boundary: what a compaction asks a
//! summarizer for, and the summary it gets back. Pure; `crate::summarize`
//! implements the other side and imports these types.

use std::sync::Arc;

use super::clip_middle;
use crate::conversation::{Message, MessageBody, Usage};
use crate::tokens::{self, Encoding};

/// What a summarizer is asked to summarize.
#[derive(Debug, Clone)]
pub struct SummaryRequest {
    /// The summary of the previous compaction, to preserve and update.
    pub previous_summary: Option<String>,
    /// The messages being replaced, in order, interrupted calls closed
    /// (shared with the session: a compaction copies no message).
    pub messages: Vec<Arc<Message>>,
    /// Summaries of consecutive parts of one conversation, oldest first,
    /// to merge into one (set, with no messages, in merge rounds).
    pub partial_summaries: Vec<String>,
    /// The messages kept verbatim after those being replaced (shared). Not
    /// summarized: the built-in digest reads them only so that it does not
    /// call open what they show settled (a failure retried there with
    /// success). LLM summarizers do not send them.
    pub later: Vec<Arc<Message>>,
    /// When `previous_summary` is an agent's own, the messages it replaced
    /// (shared). Not summarized again: the built-in digest takes from them
    /// only what an agent's summary tends to drop (the task, the rules, an
    /// approved plan). LLM summarizers do not send them.
    pub earlier: Vec<Arc<Message>>,
    /// Custom instructions from the client to steer the summary.
    pub instructions: Option<String>,
    /// Tool outputs are clipped to this many characters (head and tail).
    pub max_tool_output_chars: usize,
    /// Replaces an LLM summarizer's default prompt for a first summary.
    pub compact_prompt: Option<String>,
    /// Replaces an LLM summarizer's default prompt for updating one.
    pub update_prompt: Option<String>,
}

/// A summarizer request with what chunking needs to know about it.
#[derive(Debug, Clone)]
pub struct SummaryInput {
    pub request: SummaryRequest,
    /// Estimated tokens of each message as the summarizer will see it.
    pub tokens: Vec<u64>,
    /// Where turns start (user messages).
    pub turn_start: Vec<bool>,
    /// Where a chunk may start (user or assistant messages).
    pub cut_point: Vec<bool>,
}

impl SummaryInput {
    pub fn new(request: SummaryRequest, encoding: Encoding) -> SummaryInput {
        let unknown = vec![None; request.messages.len()];
        SummaryInput::with_counts(request, unknown, encoding)
    }

    /// With the counts already known for some messages (`known[i]`, the
    /// message as it is, in `encoding`): only messages the summarizer sees
    /// clipped, and those without a count, are counted.
    pub fn with_counts(
        request: SummaryRequest,
        known: Vec<Option<u64>>,
        encoding: Encoding,
    ) -> SummaryInput {
        let max = request.max_tool_output_chars;
        let tokens = request
            .messages
            .iter()
            .zip(known)
            .map(|(m, known)| match known {
                Some(count) if !is_clipped(m, max) => count,
                _ => tokens::count_message(encoding, &clipped(m, max)),
            })
            .collect();
        let turn_start = request
            .messages
            .iter()
            .map(|m| matches!(m.body, MessageBody::User { .. }))
            .collect();
        let cut_point = request.messages.iter().map(|m| m.is_cut_point()).collect();
        SummaryInput {
            request,
            tokens,
            turn_start,
            cut_point,
        }
    }
}

/// One summary as the summarizer (after its fallback ladder) wrote it.
#[derive(Debug, Clone, PartialEq)]
pub struct WrittenSummary {
    pub text: String,
    /// Which summarizer wrote it.
    pub summarizer: String,
    pub usage: Option<Usage>,
    pub chunks: u32,
    /// Set when a lower rung of the ladder wrote the summary: why.
    pub degraded: Option<String>,
}

/// The summaries a compaction job needs: its main input's, and a split
/// turn's prefix's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JobSummaries {
    pub main: Option<WrittenSummary>,
    pub turn_prefix: Option<WrittenSummary>,
}

/// The summarizer sees the message clipped (see `clipped`).
pub fn is_clipped(message: &Message, max_chars: usize) -> bool {
    let long = |text: &str| text.len() > max_chars && text.chars().count() > max_chars;
    match &message.body {
        MessageBody::Tool { content, .. } => long(content),
        MessageBody::Assistant { tool_calls, .. } => tool_calls
            .iter()
            .any(|call| long(&call.arguments.to_string())),
        _ => false,
    }
}

/// The message as a summarizer prompt shows it: tool outputs and call
/// arguments clipped, so chunk sizes are not overrated.
pub fn clipped(message: &Message, max_chars: usize) -> Message {
    match &message.body {
        MessageBody::Tool { content, .. } if content.chars().count() > max_chars => {
            with_text(message, &clip_middle(content, max_chars))
        }
        MessageBody::Assistant { tool_calls, .. } if !tool_calls.is_empty() => {
            let mut out = message.clone();
            if let MessageBody::Assistant { tool_calls, .. } = &mut out.body {
                for call in tool_calls {
                    let text = call.arguments.to_string();
                    if text.chars().count() > max_chars {
                        call.arguments =
                            serde_json::Value::String(clip_middle(&text, max_chars).into_owned());
                    }
                }
            }
            out
        }
        _ => message.clone(),
    }
}

/// The message with its text replaced.
pub fn with_text(message: &Message, text: &str) -> Message {
    let mut out = message.clone();
    out.content_mut().set_text(text.to_string());
    out
}
