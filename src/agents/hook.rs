//! What an agent's hook asks of compactd (`compactd hook <agent>`), in
//! compactd's terms: each agent's module reads its own hook input into a
//! `HookCall` and writes compactd's answer in its own shape.

use std::path::PathBuf;

/// The moments of an agent's own compaction compactd takes part in.
#[derive(Debug, Clone, PartialEq)]
pub enum HookEvent {
    /// About to summarize: compactd's answer is added to the agent's
    /// summarization prompt.
    BeforeCompact,
    /// The session goes on after a compaction: compactd's answer is
    /// context for the model's next request.
    AfterCompactContext,
    /// A compaction finished; `summary` is the agent's own, checked against
    /// what compactd knows (`None` when the agent sent none: nothing can be
    /// checked, which is not the same as a summary that kept nothing). The
    /// answer goes to the user.
    AfterCompact { summary: Option<String> },
}

/// The answer to a SessionStart hook in the JSON Claude Code reads (Codex
/// reads the same); any other event's answer is its text.
pub fn answer_in_claude_codes_shape(call: &HookCall, text: &str) -> String {
    match call.event {
        HookEvent::AfterCompactContext => serde_json::json!({"hookSpecificOutput": {
            "hookEventName": "SessionStart",
            "additionalContext": text,
        }})
        .to_string(),
        _ => text.to_string(),
    }
}

/// One hook call: the event, the session's transcript and workspace.
#[derive(Debug, Clone, PartialEq)]
pub struct HookCall {
    pub event: HookEvent,
    pub transcript: PathBuf,
    pub workspace: PathBuf,
}
