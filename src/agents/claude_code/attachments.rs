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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
