//! Planning each strategy over the LLM view. Pure: the view goes in, the
//! indices to summarize, replace or prune come out.

use std::ops::Range;
use std::sync::Arc;

use crate::conversation::{Message, Role};

/// What a view entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// A message as appended.
    Message,
    /// A tool result whose output was pruned.
    Pruned,
    /// The summary of the latest checkpoint (always first when present).
    CheckpointSummary,
    /// An assistant message standing for a run replaced by `incremental`.
    IncrementalSummary,
}

/// One entry of the LLM view, as the model sees it. The message is shared
/// with the session, so a view costs no copy of the conversation.
#[derive(Debug, Clone)]
pub struct ViewEntry {
    pub message: Arc<Message>,
    /// What the entry costs in the view: the message, plus the synthetic
    /// results that close its calls when they were interrupted.
    pub tokens: u64,
    /// The message alone.
    pub message_tokens: u64,
    pub kind: EntryKind,
}

impl ViewEntry {
    fn is_raw(&self) -> bool {
        matches!(self.kind, EntryKind::Message | EntryKind::Pruned)
    }

    /// History may be cut before this entry.
    pub fn is_cut_point(&self) -> bool {
        match self.kind {
            EntryKind::CheckpointSummary => false,
            EntryKind::IncrementalSummary => true,
            EntryKind::Message | EntryKind::Pruned => self.message.is_cut_point(),
        }
    }
}

/// A checkpoint: entries before `cut` are summarized, the rest kept. When
/// the cut falls inside a turn, `turn_start` is where that turn began: the
/// turn's prefix `[turn_start, cut)` gets a summary of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckpointPlan {
    pub cut: usize,
    pub turn_start: Option<usize>,
}

/// Plans a checkpoint keeping at least `keep_recent_tokens` of the newest
/// entries and at least `keep_recent_messages` of them (0 and 0 keep
/// nothing).
pub fn plan_checkpoint(
    view: &[ViewEntry],
    keep_recent_tokens: u64,
    keep_recent_messages: usize,
) -> Option<CheckpointPlan> {
    let first = view
        .iter()
        .position(|e| e.kind != EntryKind::CheckpointSummary)?;
    let tokens: Vec<u64> = view.iter().map(|e| e.tokens).collect();
    let cut_points: Vec<bool> = view.iter().map(ViewEntry::is_cut_point).collect();
    let cut = super::find_cut_at(
        &tokens,
        &cut_points,
        keep_recent_tokens,
        keep_recent_messages,
    )?;
    if cut <= first {
        return None;
    }
    let turn_start = if cut < view.len() && view[cut].message.role() == Role::Assistant {
        (first..cut)
            .rev()
            .find(|&i| view[i].is_raw() && view[i].message.role() == Role::User)
            .filter(|&start| start > first)
    } else {
        None
    };
    Some(CheckpointPlan { cut, turn_start })
}

/// The earliest run of consecutive assistant and tool messages (at least
/// two) that lies outside the newest `retention` entries.
pub fn plan_incremental(view: &[ViewEntry], retention: usize) -> Option<Range<usize>> {
    let limit = view.len().checked_sub(retention)?;
    let in_run =
        |e: &ViewEntry| e.is_raw() && matches!(e.message.role(), Role::Assistant | Role::Tool);
    let mut i = 0;
    while i < limit {
        if !(in_run(&view[i]) && view[i].message.role() == Role::Assistant) {
            i += 1;
            continue;
        }
        let start = i;
        let mut end = start;
        while end < view.len() && in_run(&view[end]) {
            end += 1;
        }
        if end > limit {
            // Shrink to an assistant boundary outside the window, so the
            // run never ends between a call and its results.
            end = (start + 1..=limit)
                .rev()
                .find(|&j| j == view.len() || view[j].message.role() == Role::Assistant)
                .unwrap_or(start);
        }
        if end - start >= 2 {
            return Some(start..end);
        }
        i = end.max(start + 1);
    }
    None
}

/// Tool results whose outputs `prune` replaces, and the tokens that frees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrunePlan {
    pub indices: Vec<usize>,
    pub freed: u64,
}

/// Protects the newest `protect` tokens of tool output and the newest
/// `protect_messages` entries, and prunes the older outputs, but only when
/// that frees at least `minimum` tokens. `placeholder_tokens` is what a
/// pruned result still costs.
pub fn plan_prune(
    view: &[ViewEntry],
    placeholder_tokens: u64,
    protect: u64,
    protect_messages: usize,
    minimum: u64,
) -> Option<PrunePlan> {
    let mut protected = 0u64;
    let mut indices = Vec::new();
    let mut freed = 0u64;
    let newest = view.len().saturating_sub(protect_messages);
    for (i, entry) in view.iter().enumerate().rev() {
        if entry.kind != EntryKind::Message || entry.message.role() != Role::Tool || i >= newest {
            continue;
        }
        if protected < protect {
            protected += entry.tokens;
            continue;
        }
        if entry.tokens > placeholder_tokens {
            indices.push(i);
            freed += entry.tokens - placeholder_tokens;
        }
    }
    indices.reverse();
    (freed >= minimum && !indices.is_empty()).then_some(PrunePlan { indices, freed })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::ToolCall;
    use serde_json::json;

    /// A view from a shape: `S` checkpoint summary, `I` incremental
    /// summary, `u` user, `a` assistant, `A` assistant calling the tool
    /// results `t` that follow it, `p` a pruned result. Every entry weighs
    /// `weight` tokens.
    fn view(shape: &str, weight: u64) -> Vec<ViewEntry> {
        let chars: Vec<char> = shape.chars().collect();
        let mut out = Vec::new();
        let mut pending: Vec<String> = Vec::new();
        for (i, c) in chars.iter().enumerate() {
            let id = format!("m{i}");
            let (message, kind) = match c {
                'S' => (Message::user(id, "summary"), EntryKind::CheckpointSummary),
                'I' => (
                    Message::assistant(id, "summary", vec![]),
                    EntryKind::IncrementalSummary,
                ),
                'u' => (Message::user(id, "hi"), EntryKind::Message),
                'a' => (Message::assistant(id, "ok", vec![]), EntryKind::Message),
                'A' => {
                    let n = chars[i + 1..]
                        .iter()
                        .take_while(|c| matches!(c, 't' | 'p'))
                        .count();
                    pending = (0..n).map(|j| format!("c{i}-{j}")).collect();
                    let calls = pending
                        .iter()
                        .map(|c| ToolCall {
                            id: c.clone(),
                            name: "bash".into(),
                            arguments: json!({}),
                        })
                        .collect();
                    (Message::assistant(id, "", calls), EntryKind::Message)
                }
                't' => (
                    Message::tool_result(id, pending.remove(0), "out", false),
                    EntryKind::Message,
                ),
                'p' => (
                    Message::tool_result(id, pending.remove(0), "[pruned]", false),
                    EntryKind::Pruned,
                ),
                _ => unreachable!(),
            };
            out.push(ViewEntry {
                message: Arc::new(message),
                tokens: weight,
                message_tokens: weight,
                kind,
            });
        }
        out
    }

    #[test]
    fn checkpoint_cuts() {
        let check = |shape: &str, keep: u64, expected: Option<(usize, Option<usize>)>| {
            let got = plan_checkpoint(&view(shape, 10), keep, 0).map(|p| (p.cut, p.turn_start));
            assert_eq!(got, expected, "{shape} keep {keep}");
        };
        check("uaua", 100, None);
        check("uaua", 20, Some((2, None)));
        check("Suaua", 20, Some((3, None)));
        check("Sua", 20, None); // only the summary would be summarized
        check("uAttua", 30, Some((1, None))); // walks back to the call; no user message after the start
        check("uauAtttt", 30, Some((3, Some(2)))); // split turn: summarize [0,2), prefix [2,3)
        check("uaIua", 30, Some((2, None))); // an incremental summary is a cut point
        check("uaua", 0, Some((4, None)));
    }

    #[test]
    fn incremental_replaces_only_the_earliest_run() {
        let check = |shape: &str, retention: usize, expected: Option<Range<usize>>| {
            assert_eq!(
                plan_incremental(&view(shape, 10), retention),
                expected,
                "{shape} retention {retention}"
            );
        };
        check("uAttauAtau", 2, Some(1..5));
        check("uIuAtau", 2, Some(3..5)); // a summary is not part of a run
        check("uauAtau", 2, Some(3..5)); // a lone assistant message is not worth a summary
        check("uAtt", 2, None); // the run reaches into the window and cannot shrink
        check("uAtAtAt", 2, Some(1..5)); // shrunk to the assistant boundary before the window
        check("ua", 6, None);
    }

    #[test]
    fn prune_thresholds() {
        // 12 tool results of 10k tokens each (weight applies to all entries).
        let shape = "u".to_string() + &"At".repeat(12);
        let v = view(&shape, 10_000);
        let plan = plan_prune(&v, 100, 40_000, 0, 20_000).unwrap();
        // The newest four results (40,000 tokens) are protected.
        assert_eq!(plan.indices.len(), 8);
        assert_eq!(plan.indices, vec![2, 4, 6, 8, 10, 12, 14, 16]);
        assert_eq!(plan.freed, 8 * 9_900);
        // Freeing less than the minimum does nothing.
        let small = view(&("u".to_string() + &"At".repeat(6)), 10_000);
        assert_eq!(
            plan_prune(&small, 100, 40_000, 0, 20_000).map(|p| p.freed),
            None,
            "2 × 9,900 < 20,000"
        );
        let just = view(&("u".to_string() + &"At".repeat(7)), 10_000);
        assert_eq!(
            plan_prune(&just, 100, 40_000, 0, 20_000).map(|p| p.freed),
            Some(29_700)
        );
        // Already pruned results are not pruned again.
        assert_eq!(plan_prune(&view("uApApApAp", 10_000), 100, 0, 0, 0), None);
    }
}
