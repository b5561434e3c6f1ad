//! Compaction: planning each strategy over the view (`plan.rs`), the job
//! from plan to log record (`job.rs`, `record.rs`), the summarizer's input
//! and output types (`summary.rs`), chunking, the retention check,
//! triggers and the circuit breaker, the overflow classifier and the file
//! sections. Pure: no I/O, no clock; the engine calls a summarizer between
//! planning and recording.

pub(crate) mod chunk;
pub(crate) mod file_sections;
pub(crate) mod job;

pub(crate) mod plan;
pub(crate) mod record;
pub(crate) mod retention;
pub(crate) mod summary;
pub(crate) mod trigger;

pub use file_sections::{FileMarks, FileSections};
pub use job::{CompactionJob, JobTarget, PlanOptions, PlannedJob};
pub use record::{CompactionRecord, Trigger};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::conversation::{repair_for_model, Message};

/// The default text that introduces a summary in the compacted history.
pub const DEFAULT_SUMMARY_PREFIX: &str = include_str!("prompts/summary_prefix.md");
/// The text that opens the first message of a session made by `handoff`.
pub const HANDOFF_PREFIX: &str = include_str!("prompts/handoff_prefix.md");

/// How a compaction shrinks the history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Strategy {
    /// Summarize everything before the cut, keep the recent tail verbatim.
    #[default]
    Checkpoint,
    /// Replace the earliest run of assistant and tool messages outside the
    /// retention window with one assistant summary message.
    Incremental,
    /// No summarizer: replace old tool outputs with a placeholder.
    Prune,
    /// Write a fresh first message for a new session that carries only
    /// what a given goal needs.
    Handoff,
}

impl Strategy {
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::Checkpoint => "checkpoint",
            Strategy::Incremental => "incremental",
            Strategy::Prune => "prune",
            Strategy::Handoff => "handoff",
        }
    }
}

/// Chooses the cut so that at least `keep_recent_tokens` of the newest
/// messages, and at least `keep_recent_messages` of them, stay verbatim
/// (whichever keeps more), cutting only where `cut_points` allows (before
/// a user or assistant message, so that no tool result is separated from
/// its call). 0 and 0 keep nothing. `None` when nothing would be
/// summarized.
pub fn find_cut_at(
    tokens: &[u64],
    cut_points: &[bool],
    keep_recent_tokens: u64,
    keep_recent_messages: usize,
) -> Option<usize> {
    debug_assert_eq!(tokens.len(), cut_points.len());
    if tokens.is_empty() {
        return None;
    }
    let by_messages = tokens.len().checked_sub(keep_recent_messages)?;
    if keep_recent_tokens == 0 {
        return (0..=by_messages)
            .rev()
            .find(|&i| i == tokens.len() || cut_points[i])
            .filter(|&c| c > 0);
    }
    // The newest index at which the kept tail reaches the budget.
    let mut kept = 0u64;
    let mut target = None;
    for i in (0..tokens.len()).rev() {
        kept += tokens[i];
        if kept >= keep_recent_tokens {
            target = Some(i.min(by_messages));
            break;
        }
    }
    // Walk back to the nearest valid cut point, keeping a little more.
    let cut = (0..=target?).rev().find(|&i| cut_points[i])?;
    (cut > 0).then_some(cut)
}

/// The LLM-facing history: the system prompt, then the view (summary
/// messages included), with interrupted tool calls closed.
pub fn rebuild_history(system_prompt: Option<&str>, view: Vec<Message>) -> Vec<Message> {
    let mut out = Vec::with_capacity(view.len() + 1);
    if let Some(prompt) = system_prompt {
        out.push(Message::system("system", prompt));
    }
    out.extend(repair_for_model(view));
    out
}

/// What a handoff's summarizer is told, before the client's instructions;
/// `{goal}` stands for the goal.
pub const HANDOFF_GOAL: &str = include_str!("prompts/handoff_goal.md");

/// The instructions for a handoff: write for `goal`, then the client's own.
pub fn handoff_instructions(goal: &str, instructions: Option<&str>) -> String {
    format!(
        "{}{}",
        HANDOFF_GOAL.trim_end().replace("{goal}", goal),
        instructions.map(|i| format!("\n\n{i}")).unwrap_or_default()
    )
}

/// The first message of the session a handoff starts.
pub fn handoff_message(summary: &str) -> Message {
    Message::user(
        "handoff",
        format!("{}\n\n{}", HANDOFF_PREFIX.trim_end(), summary),
    )
}

/// Clips a tool output for the summarizer input, keeping head and tail.
/// The result never exceeds `max_chars` characters, so clipping twice
/// changes nothing.
pub fn clip_middle(text: &str, max_chars: usize) -> std::borrow::Cow<'_, str> {
    let count = text.chars().count();
    if count <= max_chars || max_chars < 64 {
        return text.into();
    }
    let marker = |omitted: usize| format!("\n[… {omitted} characters omitted …]\n");
    // The marker's length depends on the omitted count; bound it by the
    // count's digits, which can only be larger.
    let budget = max_chars - marker(count).chars().count();
    let head_len = budget * 2 / 3;
    let tail_len = budget - head_len;
    let head: String = text.chars().take(head_len).collect();
    let tail: String = text.chars().skip(count - tail_len).collect();
    format!("{head}{}{tail}", marker(count - head_len - tail_len)).into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::{validate_history, ToolCall};
    use serde_json::json;

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "bash".into(),
            arguments: json!({"command": "ls"}),
        }
    }

    /// One `check()` per behaviour: a history written as a compact string,
    /// `u` user, `a` assistant, `A` assistant with one call, `t` its result,
    /// each message 10 tokens.
    fn check(shape: &str, keep: u64, expected_cut: Option<usize>) {
        let chars: Vec<char> = shape.chars().collect();
        let mut messages = Vec::new();
        let mut pending: Vec<String> = Vec::new();
        for (i, c) in chars.iter().enumerate() {
            let id = format!("m{i}");
            messages.push(match c {
                'u' => Message::user(id, "hi"),
                'a' => Message::assistant(id, "ok", vec![]),
                'A' => {
                    // One call per tool result that follows.
                    let results = chars[i + 1..].iter().take_while(|c| **c == 't').count();
                    pending = (0..results).map(|j| format!("c{i}-{j}")).collect();
                    Message::assistant(id, "", pending.iter().map(|c| call(c)).collect())
                }
                't' => Message::tool_result(id, pending.remove(0), "out", false),
                _ => unreachable!(),
            });
        }
        let tokens = vec![10; messages.len()];
        let cut_points: Vec<bool> = messages.iter().map(Message::is_cut_point).collect();
        let got = find_cut_at(&tokens, &cut_points, keep, 0);
        assert_eq!(got, expected_cut, "shape {shape} keep {keep}");
        if let Some(cut) = got {
            if cut < messages.len() {
                assert!(
                    messages[cut].is_cut_point(),
                    "cut at a tool result in {shape}"
                );
            }
            let kept = rebuild_history(None, messages[cut..].to_vec());
            assert!(validate_history(&kept, true).is_ok(), "{shape}");
        }
    }

    #[test]
    fn cut_points() {
        check("uaua", 100, None); // everything fits
        check("uaua", 20, Some(2));
        check("uaua", 15, Some(2)); // walks back to keep at least the budget
        check("uAttua", 30, Some(1)); // target is a tool result: walk back to its call
        check("uAttta", 20, Some(1)); // tail starts in tool results: keep their call
        check("Attt", 10, None); // the only cut point is the start
        check("uaua", 0, Some(4)); // keep nothing
        check("uAtuAtAt", 25, Some(4));
    }

    /// `keepRecentMessages` keeps at least that many, whatever the tokens.
    #[test]
    fn a_message_count_keeps_at_least_that_many() {
        let points = |shape: &str| -> Vec<bool> { shape.chars().map(|c| c != 't').collect() };
        let tokens = vec![10; 6];
        // Tokens alone would keep 2; four messages are kept.
        assert_eq!(find_cut_at(&tokens, &points("uauaua"), 20, 4), Some(2));
        // Tokens keep more than the count: tokens decide.
        assert_eq!(find_cut_at(&tokens, &points("uauaua"), 50, 1), Some(1));
        // Walks back to a cut point: never starts at a tool result.
        assert_eq!(find_cut_at(&tokens, &points("uAttua"), 0, 4), Some(1));
        // More than there are: nothing to compact.
        assert_eq!(find_cut_at(&tokens, &points("uauaua"), 0, 6), None);
        assert_eq!(find_cut_at(&tokens, &points("uauaua"), 0, 0), Some(6));
    }

    #[test]
    fn clip_keeps_head_and_tail() {
        let text = "a".repeat(100) + &"b".repeat(100);
        let clipped = clip_middle(&text, 100);
        assert!(clipped.starts_with(&"a".repeat(40)), "{clipped}");
        assert!(clipped.ends_with(&"b".repeat(20)), "{clipped}");
        assert!(clipped.contains("characters omitted"));
        assert!(clipped.chars().count() <= 100);
        assert_eq!(clip_middle(&clipped, 100), clipped, "idempotent");
        assert_eq!(clip_middle("short", 100), "short");
    }
}
