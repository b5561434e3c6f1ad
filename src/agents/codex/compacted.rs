//! Codex's `compacted` rollout items (`RolloutItem::Compacted` in
//! codex-rs/protocol: `CompactedItem { message, replacement_history? }`).
//! After one, Codex's model sees the replacement history instead of what
//! came before: with `replacement_history` (Codex ≥ 0.6x), exactly those
//! items (re-injected context, the user messages Codex kept, the summary as
//! a user message, or an encrypted `compaction` item from the provider);
//! without it (older rollouts), what Codex rebuilds on resume: the newest
//! user messages up to 20,000 tokens, then `message`. We render that as one
//! summary, in Codex's order, so the imported view holds what the model saw
//! and no message is logged twice. Pure.

use serde_json::Value;

use crate::transcript::content_text;

/// How Codex's own summary message starts (`templates/compact/summary_prefix.md`).
const SUMMARY_PREFIX: &str = "Another language model started to solve this problem";

/// User messages Codex writes itself (`is_contextual_user_message`): not
/// the user's, so never kept as theirs.
const CONTEXTUAL_PREFIXES: [&str; 6] = [
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions for ",
    "<user_shell_command>",
    "<turn_aborted>",
    "<skill>",
];

/// Codex keeps user messages newest first up to this many tokens
/// (`COMPACT_USER_MESSAGE_MAX_TOKENS`), counting four bytes a token.
const KEPT_USER_TOKENS: usize = 20_000;

/// A user message of the user's own, as Codex tells them apart.
pub fn is_users_own(text: &str) -> bool {
    let text = text.trim_start();
    !text.starts_with(SUMMARY_PREFIX) && !CONTEXTUAL_PREFIXES.iter().any(|p| text.starts_with(p))
}

/// What a compaction replaced the history with, as one summary, and the
/// user messages it kept (the next legacy compaction selects from them).
pub struct Replacement {
    pub summary: String,
    pub user_messages: Vec<String>,
}

/// From the item's `replacement_history`, in order.
pub fn from_history(history: &[Value], message: &str) -> Replacement {
    let mut parts = Vec::new();
    let mut user_messages = Vec::new();
    let mut has_summary = false;
    for item in history {
        match item.get("type").and_then(Value::as_str) {
            Some("message") => {
                let role = item.get("role").and_then(Value::as_str).unwrap_or("user");
                let text = content_text(item.get("content"));
                let is_summary =
                    role == "user" && !message.is_empty() && text.trim() == message.trim()
                        || text.trim_start().starts_with(SUMMARY_PREFIX);
                if is_summary {
                    has_summary = true;
                    parts.push(text);
                    continue;
                }
                if role == "user" && is_users_own(&text) {
                    user_messages.push(text.clone());
                }
                parts.push(format!("<{role}_message>\n{text}\n</{role}_message>"));
            }
            Some("compaction" | "compaction_summary") => {
                has_summary = true;
                parts.push(
                    "[the provider's compacted summary: encrypted, not readable here]".into(),
                );
            }
            _ => {} // ghost snapshots and other bookkeeping
        }
    }
    if !has_summary && !message.is_empty() {
        parts.push(message.to_string());
    }
    Replacement {
        summary: parts.join("\n\n"),
        user_messages,
    }
}

/// What older Codex rebuilds without a replacement history: the newest of
/// `user_messages` (oldest first) up to 20,000 tokens, then `message`.
pub fn rebuilt(user_messages: &[String], message: &str) -> Replacement {
    let mut budget = KEPT_USER_TOKENS * 4;
    let mut kept = Vec::new();
    for text in user_messages.iter().rev() {
        if budget == 0 {
            break;
        }
        if text.len() <= budget {
            budget -= text.len();
            kept.push(text.clone());
        } else {
            let cut = (0..=budget)
                .rev()
                .find(|i| text.is_char_boundary(*i))
                .unwrap_or(0);
            kept.push(format!("{}…", &text[..cut]));
            budget = 0;
        }
    }
    kept.reverse();
    let summary = if message.is_empty() {
        "(no summary available)"
    } else {
        message
    };
    let parts: Vec<String> = kept
        .iter()
        .map(|t| format!("<user_message>\n{t}\n</user_message>"))
        .chain(std::iter::once(summary.to_string()))
        .collect();
    Replacement {
        summary: parts.join("\n\n"),
        user_messages: kept,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn message(role: &str, text: &str) -> Value {
        json!({"type": "message", "role": role, "content": [{"type": "input_text", "text": text}]})
    }

    const SUMMARY: &str = "Another language model started to solve this problem and produced a summary of its thinking process.\nProgress: tests next.";

    #[test]
    fn replacement_history_in_codex_order() {
        // The shape Codex 0.169 wrote after a mid-turn compaction.
        let history = [
            message(
                "developer",
                "<skills_instructions>\nSkills\n</skills_instructions>",
            ),
            message(
                "user",
                "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>",
            ),
            message("user", "What does notes.txt say?"),
            message("user", SUMMARY),
            json!({"type": "ghost_snapshot", "ghost_commit": {"id": "abc"}}),
        ];
        let r = from_history(&history, SUMMARY);
        assert_eq!(r.user_messages, ["What does notes.txt say?"]);
        assert_eq!(
            r.summary,
            format!(
                "<developer_message>\n<skills_instructions>\nSkills\n</skills_instructions>\n</developer_message>\n\n<user_message>\n<environment_context>\n  <cwd>/w</cwd>\n</environment_context>\n</user_message>\n\n<user_message>\nWhat does notes.txt say?\n</user_message>\n\n{SUMMARY}"
            )
        );
        // Remote compaction: an empty message and an encrypted item.
        let remote = [
            message("user", "fix it"),
            json!({"type": "compaction", "encrypted_content": "gAAAA"}),
        ];
        let r = from_history(&remote, "");
        assert!(
            r.summary.ends_with("encrypted, not readable here]"),
            "{}",
            r.summary
        );
        assert_eq!(r.user_messages, ["fix it"]);
    }

    #[test]
    fn older_rollouts_keep_the_newest_user_messages_within_budget() {
        let big = "x".repeat(KEPT_USER_TOKENS * 4 - 10);
        let users = vec!["oldest".to_string(), "older".to_string(), big.clone()];
        let r = rebuilt(&users, SUMMARY);
        assert_eq!(r.user_messages, ["oldes…".to_string(), "older".into(), big]);
        assert!(r.summary.ends_with(SUMMARY));
        assert_eq!(rebuilt(&[], "").summary, "(no summary available)");
        assert!(is_users_own("fix the parser"));
        assert!(!is_users_own(
            "<environment_context>\n</environment_context>"
        ));
        assert!(!is_users_own(SUMMARY));
    }
}
