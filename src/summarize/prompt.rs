//! The prompt an LLM summarizer sends, built from a `SummaryRequest`, and
//! the check that a reply is not just the instructions echoed back. Pure.
//! The wording lives in `prompts/*.md`.

use super::SummaryRequest;
use crate::compaction::clip_middle;
use crate::conversation::request::strip_ansi;
use crate::conversation::{short_id, MessageBody};

pub const SYSTEM: &str = include_str!("prompts/system.md");
pub const SUMMARIZE: &str = include_str!("prompts/summarize.md");
pub const UPDATE: &str = include_str!("prompts/update.md");
pub const MERGE: &str = include_str!("prompts/merge.md");

/// A system prompt and one user message.
#[derive(Debug, Clone, PartialEq)]
pub struct Prompt {
    pub system: String,
    pub user: String,
}

/// The prompt for `request`. The system prompt says what a summary is for
/// and how it looks (`compactPrompt` replaces it for a first summary,
/// `updatePrompt` when updating one). The user message holds the previous
/// summary (if any), the partial summaries to merge (if any), the
/// transcript inside `<conversation>`, the task, and the client's
/// instructions last, where a model weighs them most.
pub fn build(request: &SummaryRequest) -> Prompt {
    let previous = request
        .previous_summary
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty());
    let custom = if previous.is_some() {
        request.update_prompt.as_deref()
    } else {
        request.compact_prompt.as_deref()
    };
    let system = custom
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .unwrap_or(SYSTEM.trim());
    let mut user = String::new();
    if let Some(previous) = previous {
        user.push_str("<previous-summary>\n");
        user.push_str(previous);
        user.push_str("\n</previous-summary>\n\n");
    }
    for (i, partial) in request.partial_summaries.iter().enumerate() {
        user.push_str(&format!("<summary part=\"{}\">\n", i + 1));
        user.push_str(partial.trim());
        user.push_str("\n</summary>\n\n");
    }
    if !request.messages.is_empty() || request.partial_summaries.is_empty() {
        user.push_str("<conversation>\n");
        user.push_str(&transcript(request));
        user.push_str("</conversation>\n\n");
    }
    let task = if previous.is_some() {
        UPDATE
    } else if !request.partial_summaries.is_empty() {
        MERGE
    } else {
        SUMMARIZE
    };
    user.push_str(task.trim());
    if let Some(instructions) = request
        .instructions
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        user.push_str("\n\nAdditional instructions for this summary: ");
        user.push_str(instructions);
    }
    Prompt {
        system: system.to_string(),
        user,
    }
}

/// One block per message. Thinking is left out (it is the model's own
/// working, and a signature means nothing to another model); an image or
/// a document is a line naming it; tool outputs and call arguments are
/// clipped (head and tail kept). A user message and a failed tool result
/// carry their message id (`[user u3]`), so the summary can cite where a
/// request or an error came from and an agent can read it back with
/// `conversation/messages`; other blocks go unlabelled, since a
/// followed agent's ids are long and most blocks are never cited.
fn transcript(request: &SummaryRequest) -> String {
    let clip = |text: &str| clip_middle(text, request.max_tool_output_chars).into_owned();
    let mut out = String::new();
    for message in &request.messages {
        let named = message.named_parts();
        let content = if named.is_empty() {
            std::borrow::Cow::Borrowed(message.text())
        } else {
            std::borrow::Cow::Owned(
                format!("{}\n{}", message.text(), named.join("\n"))
                    .trim()
                    .to_string(),
            )
        };
        match &message.body {
            MessageBody::System { .. } => block(&mut out, "system", &content),
            MessageBody::User { .. } => block(
                &mut out,
                &format!("user {}", short_id(&message.id)),
                &content,
            ),
            MessageBody::Assistant { tool_calls, .. } => {
                if !content.trim().is_empty() {
                    block(&mut out, "assistant", &content);
                }
                for call in tool_calls {
                    let arguments = clip(&call.arguments.to_string());
                    block(&mut out, &format!("tool call {}", call.name), &arguments);
                }
            }
            MessageBody::Tool {
                tool_name,
                is_error,
                ..
            } => {
                let label = match (tool_name, is_error) {
                    (Some(name), true) => format!("tool error {name} {}", short_id(&message.id)),
                    (Some(name), false) => format!("tool result {name}"),
                    (None, true) => format!("tool error {}", short_id(&message.id)),
                    (None, false) => "tool result".to_string(),
                };
                block(&mut out, &label, &clip(&content));
            }
        }
    }
    out
}

/// One labelled block; terminal escapes (colours, cursor moves in tool
/// output) are removed, since a model reads them as noise.
fn block(out: &mut String, label: &str, text: &str) {
    out.push('[');
    out.push_str(label);
    out.push_str("]: ");
    out.push_str(strip_ansi(text).trim());
    out.push('\n');
}

/// The reply repeats our instructions or the prompt's framing instead of
/// summarizing (small models do this).
pub fn echoes_instructions(summary: &str, prompt: &Prompt) -> bool {
    let summary = normalize(summary);
    if [
        "<conversation>",
        "</conversation>",
        "<previous-summary>",
        "<summary part=",
    ]
    .iter()
    .any(|tag| summary.contains(tag))
    {
        return true;
    }
    let instructions = format!(
        "{}\n{SYSTEM}\n{SUMMARIZE}\n{UPDATE}\n{MERGE}",
        prompt.system
    );
    instructions
        .split(['.', '\n', ':'])
        .map(normalize)
        .filter(|sentence| sentence.len() >= 40)
        .any(|sentence| summary.contains(&sentence))
}

fn normalize(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::{Message, ToolCall};
    use serde_json::json;

    fn request(previous: Option<&str>, instructions: Option<&str>) -> SummaryRequest {
        let long_output = format!("{}MIDDLE{}", "a".repeat(3000), "z".repeat(3000));
        SummaryRequest {
            previous_summary: previous.map(str::to_string),
            messages: vec![
                Message::user("u1", "Fix the parser"),
                Message::assistant(
                    "a1",
                    "Reading it.",
                    vec![ToolCall {
                        id: "c1".into(),
                        name: "read".into(),
                        arguments: json!({"path": "src/parse.rs"}),
                    }],
                ),
                Message::tool_result("t1", "c1", long_output, false),
            ]
            .into_iter()
            .map(Into::into)
            .collect(),
            partial_summaries: Vec::new(),
            later: Vec::new(),
            earlier: Vec::new(),
            instructions: instructions.map(str::to_string),
            max_tool_output_chars: 300,
            compact_prompt: None,
            update_prompt: None,
        }
    }

    #[test]
    fn a_first_summary_has_the_transcript_and_clipped_tool_output() {
        let prompt = build(&request(None, None));
        assert_eq!(prompt.system, SYSTEM.trim());
        assert!(prompt.user.starts_with("<conversation>\n[user u1]: Fix the parser\n[assistant]: Reading it.\n[tool call read]: {\"path\":\"src/parse.rs\"}\n[tool result]: aaa"), "{}", prompt.user);
        assert!(!prompt.user.contains("MIDDLE"), "tool output clipped");
        assert!(prompt.user.contains("characters omitted"));
        assert!(prompt.user.ends_with(SUMMARIZE.trim()));
        assert!(!prompt.user.contains("<previous-summary>"));
    }

    #[test]
    fn an_update_carries_the_previous_summary_and_instructions_come_last() {
        let prompt = build(&request(Some("## Goal\n- parser"), Some("focus on tests")));
        assert!(prompt.user.starts_with(
            "<previous-summary>\n## Goal\n- parser\n</previous-summary>\n\n<conversation>\n"
        ));
        assert!(prompt.user.contains(UPDATE.trim()));
        assert!(prompt
            .user
            .ends_with("Additional instructions for this summary: focus on tests"));
    }

    #[test]
    fn merge_rounds_list_the_partial_summaries_in_order() {
        let request = SummaryRequest {
            messages: Vec::new(),
            partial_summaries: vec!["## Goal\n- one".into(), "## Goal\n- two".into()],
            ..request(None, None)
        };
        let prompt = build(&request);
        assert_eq!(
            prompt.user,
            format!(
                "<summary part=\"1\">\n## Goal\n- one\n</summary>\n\n<summary part=\"2\">\n## Goal\n- two\n</summary>\n\n{}",
                MERGE.trim()
            )
        );
    }

    #[test]
    fn custom_prompts_replace_the_system_prompt() {
        let custom = |previous: Option<&str>| {
            build(&SummaryRequest {
                compact_prompt: Some("FIRST".into()),
                update_prompt: Some("UPDATE".into()),
                ..request(previous, None)
            })
            .system
        };
        assert_eq!(custom(None), "FIRST");
        assert_eq!(custom(Some("old")), "UPDATE");
    }

    #[test]
    fn terminal_escapes_do_not_reach_the_model() {
        let request = SummaryRequest {
            messages: vec![
                Message::user("u1", "\u{1b}[1mbold\u{1b}[22m request").into(),
                Message::tool_result("t1", "c1", "\u{1b}[31merror\u{1b}[39m: failed", true).into(),
            ],
            ..request(None, None)
        };
        let prompt = build(&request);
        assert!(
            prompt.user.contains("[user u1]: bold request\n"),
            "{}",
            prompt.user
        );
        assert!(
            prompt.user.contains("[tool error t1]: error: failed\n"),
            "{}",
            prompt.user
        );
        assert!(!prompt.user.contains('\u{1b}'));
    }

    #[test]
    fn echoes_are_told_from_summaries() {
        let prompt = build(&request(None, None));
        assert!(echoes_instructions(
            "You write the summary that replaces the older part of a conversation between a user and an AI coding assistant.",
            &prompt
        ));
        assert!(echoes_instructions(
            "<conversation>\n[user u1]: Fix the parser",
            &prompt
        ));
        assert!(!echoes_instructions(
            "## Goal\nFix the parser in src/parse.rs.\n## Next step\nAdd a test.",
            &prompt
        ));
    }
}
