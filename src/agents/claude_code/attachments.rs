//! What Claude Code puts in a request besides the messages: its
//! attachments (a file changed on disk, the plan-mode instructions, a
//! reminder of its tasks, the files it re-attaches after compacting),
//! merged into the user turn they follow and kept there. 2.1.330 writes
//! each as an `attachment` line, with the text it sent (`rendered`) when
//! that is text; the versions before it wrote none, and the one large kind
//! that recurs, the plan-mode instructions, is estimated from the rule
//! those versions follow (`PlanMode`).

use serde_json::Value;

/// Kinds of attachment 2.1.330 sends the model nothing of (its renderer
/// returns no content for them): its own bookkeeping, or hook outcomes
/// shown only to the person. A line of one of them counts for nothing.
const SENDS_NOTHING: &[&str] = &[
    "already_read_file",
    "advisor_stripped",
    "async_hook_response_batch",
    "attention_budget",
    "autocheckpointing",
    "background_task_status",
    "batching_reminder_sent",
    "command_permissions",
    "compaction_reminder",
    "context_efficiency",
    "context_tip",
    "credential_org",
    "current_session_memory",
    "deferred_tools_record",
    "edited_image_file",
    "goal_status",
    "goals",
    "hook_cancelled",
    "hook_deferred_tool",
    "hook_error_during_execution",
    "hook_non_blocking_error",
    "hook_permission_decision",
    "hook_system_message",
    "max_turns_reached",
    "message_pdf_reads",
    "project_doc_reads",
    "prompt_as_file",
    "prompt_render_point",
    "prompt_snapshot",
    "secondary_reminder_sent",
    "session_cron_carry",
    "structured_output",
    "task_progress",
    "thinking_drop",
    "thinking_reminder",
    "thinking_stripped",
    "todo",
    "tool_offer_record",
    "tool_results_cut",
    "ultramemory",
    "verify_plan_reminder",
    "whole_texts_withdrawn",
    "withheld_memory",
];

/// What an `attachment` line put before the model in the conversation, as
/// text; empty when it sent nothing there. 2.1.330 writes the text it sent (`rendered`, when it is
/// text) and none for a kind it sends nothing of; for a line without it
/// (an earlier version that wrote some, in-house builds), the values of
/// the attachment (a file's content, a plan, a task's subject) stand for it.
pub(super) fn sent_text(line: &Value, writes_rendered: bool) -> String {
    let mut text = String::new();
    // Rendered into the system part (the model's name, the date): in every
    // request, which the calibrated overhead holds.
    if line.get("renderedRole").and_then(Value::as_str) == Some("system") {
        return text;
    }
    if let Some(rendered) = line.get("rendered").and_then(Value::as_array) {
        for part in rendered {
            values(part.get("content").unwrap_or(&Value::Null), &mut text);
        }
        return text;
    }
    let Some(attachment) = line.get("attachment") else {
        return text;
    };
    let kind = attachment.get("type").and_then(Value::as_str).unwrap_or("");
    // A transcript that writes `rendered` writes it for every kind sent
    // as text: without it, the kind sent nothing (or only an image, which
    // no line of it holds either).
    if !writes_rendered && !SENDS_NOTHING.contains(&kind) {
        values(attachment, &mut text);
    }
    text
}

/// The string values of an attachment, not its kind.
pub(super) fn values(value: &Value, text: &mut String) {
    match value {
        Value::String(s) => {
            text.push_str(s);
            text.push('\n');
        }
        Value::Array(items) => items.iter().for_each(|v| values(v, text)),
        Value::Object(fields) => fields
            .iter()
            .filter(|(key, _)| key.as_str() != "type")
            .for_each(|(_, v)| values(v, text)),
        _ => {}
    }
}

/// A Claude Code version as numbers.
pub(super) type Version = (u32, u32, u32);

/// The first version that writes its attachments (`attachment` lines):
/// from here on they are read, not estimated.
const WRITES_ATTACHMENTS: Version = (2, 1, 97);
/// The first version that waits five responses' worth of assistant
/// messages between two plan-mode reminders (before it: every request).
const GAP: Version = (2, 0, 56);
/// The first version whose gap counts the person's prompts instead.
const GAP_IN_PROMPTS: Version = (2, 1, 84);
/// Messages (or prompts) between two reminders, and every how many
/// reminders one is the full text rather than the short one.
const TURNS_BETWEEN: usize = 5;
const FULL_EVERY: usize = 5;

/// The plan-mode reminder's size in o200k tokens for the main agent
/// (full, short), measured by rendering each version's own template
/// (a 60-character plan path; npm `@anthropic-ai/claude-code`, 2.0.51 to
/// 2.1.100): it grew with the versions. `None`: no reminder before 2.0.51.
fn reminder_tokens(version: Version) -> Option<(u64, u64)> {
    let sizes = [
        ((2, 1, 33), (982, 80)),
        ((2, 1, 30), (949, 80)),
        ((2, 1, 8), (905, 80)),
        ((2, 1, 7), (929, 80)),
        ((2, 0, 77), (886, 57)),
        ((2, 0, 56), (815, 815)),
        ((2, 0, 54), (802, 802)),
        ((2, 0, 51), (704, 704)),
    ];
    sizes
        .iter()
        .find(|(from, _)| version >= *from)
        .map(|(_, size)| *size)
}

/// The plan-mode instructions Claude Code attaches to its requests while
/// plan mode is on, which versions before 2.1.97 wrote nowhere: a full
/// reminder when plan mode starts, then again once five assistant
/// messages (from 2.1.84: five prompts) came since the last one, every
/// fifth of them full and the others short (from 2.0.77). Plan mode shows
/// in the transcript as `EnterPlanMode`'s result, an approved
/// `ExitPlanMode`, and from 2.1.18 a prompt's `permissionMode`.
#[derive(Debug, Clone, Default)]
pub(super) struct PlanMode {
    version: Option<Version>,
    on: bool,
    /// Assistant messages (or prompts) since the latest reminder; `None`
    /// before the first.
    since: Option<usize>,
    /// Reminders since plan mode was last left.
    reminders: usize,
}

impl PlanMode {
    pub(super) fn version(&mut self, version: Version) {
        self.version = Some(version);
    }

    /// A tool's result: entering plan mode, or leaving it approved (a
    /// rejected `ExitPlanMode` leaves it on).
    pub(super) fn result(&mut self, tool: Option<&str>, is_error: bool) {
        match (tool, is_error) {
            (Some("EnterPlanMode"), false) => self.on = true,
            (Some("ExitPlanMode"), false) => self.leave(),
            _ => {}
        }
    }

    /// A prompt the person typed, with the mode it states (from 2.1.18).
    pub(super) fn prompt(&mut self, mode: Option<&str>) {
        match mode {
            Some("plan") => self.on = true,
            Some(_) if self.on => self.leave(),
            _ => {}
        }
        if self.counts_prompts() {
            self.since = self.since.map(|n| n + 1);
        }
    }

    /// One assistant message (a line of a response) that is not only
    /// thinking.
    pub(super) fn assistant_message(&mut self) {
        if !self.counts_prompts() {
            self.since = self.since.map(|n| n + 1);
        }
    }

    /// A request is about to be sent: the tokens of the reminder it
    /// carries, if its rule attaches one.
    pub(super) fn request(&mut self) -> Option<u64> {
        let version = self.version?;
        if !self.on || version >= WRITES_ATTACHMENTS {
            return None;
        }
        let (full, short) = reminder_tokens(version)?;
        let due = version < GAP || self.since.is_none_or(|n| n >= TURNS_BETWEEN);
        if !due {
            return None;
        }
        let tokens = if self.reminders.is_multiple_of(FULL_EVERY) {
            full
        } else {
            short
        };
        self.reminders += 1;
        self.since = Some(0);
        Some(tokens)
    }

    fn leave(&mut self) {
        self.on = false;
        self.reminders = 0;
    }

    fn counts_prompts(&self) -> bool {
        self.version.is_some_and(|v| v >= GAP_IN_PROMPTS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// 2.0.76 (gap of five messages, always the full text) and 2.1.11
    /// (the full text every fifth reminder): a reminder on entering plan
    /// mode, none until five assistant messages came, none after an
    /// approved exit, and a rejected exit leaves plan mode on.
    #[test]
    fn plan_mode_reminders_follow_the_versions_rule() {
        let mut old = PlanMode::default();
        old.version((2, 0, 76));
        assert_eq!(old.request(), None, "not in plan mode");
        old.result(Some("EnterPlanMode"), false);
        assert_eq!(old.request(), Some(815));
        for _ in 0..4 {
            old.assistant_message();
        }
        assert_eq!(old.request(), None, "four messages since");
        old.assistant_message();
        assert_eq!(old.request(), Some(815), "five: the full text again");
        old.result(Some("ExitPlanMode"), true);
        (0..5).for_each(|_| old.assistant_message());
        assert_eq!(old.request(), Some(815), "rejected: still planning");
        old.result(Some("ExitPlanMode"), false);
        (0..5).for_each(|_| old.assistant_message());
        assert_eq!(old.request(), None, "approved: plan mode is over");

        let mut newer = PlanMode::default();
        newer.version((2, 1, 11));
        newer.prompt(Some("plan"));
        let mut sizes = Vec::new();
        for _ in 0..6 {
            sizes.extend(newer.request());
            (0..5).for_each(|_| newer.assistant_message());
        }
        assert_eq!(sizes, [905, 80, 80, 80, 80, 905]);
        // From 2.1.97 the reminders are written: nothing is estimated.
        let mut written = PlanMode::default();
        written.version((2, 1, 97));
        written.result(Some("EnterPlanMode"), false);
        assert_eq!(written.request(), None);
    }

    #[test]
    fn the_rendered_text_is_what_a_line_sent() {
        let rendered = json!({"type": "attachment", "attachment": {"type": "date", "date": "2026-11-22"},
            "rendered": [{"content": "<system-reminder>\nToday's date is 2026-11-22.\n</system-reminder>"}]});
        let text = sent_text(&rendered, true);
        assert!(
            text.starts_with("<system-reminder>\nToday's date"),
            "{text}"
        );
        // Without it, where the transcript writes it: nothing was sent.
        let bare = json!({"type": "attachment", "attachment": {"type": "session_context", "context": {"cwd": "/w"}}});
        assert_eq!(sent_text(&bare, true), "");
        // Where it writes none: the values, unless the kind sends nothing.
        assert_eq!(sent_text(&bare, false), "/w\n");
        let nothing = json!({"type": "attachment", "attachment": {"type": "hook_system_message", "content": "lint passed"}});
        assert_eq!(sent_text(&nothing, false), "");
    }
}
