//! The built-in summarizer: deterministic, no network. It cannot
//! understand the conversation, so it extracts what a reader needs to carry
//! on: the user's requests, one line per tool call, errors, decisions, the
//! current state and the next step. A later compaction merges its sections
//! into the previous summary instead of starting over.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use super::{BoxFuture, ProgressSink, SummarizeError, Summarizer, SummaryOutput, SummaryRequest};
use crate::compaction::clip_middle;
use crate::conversation::{Message, MessageBody, ToolCall};

pub struct OfflineSummarizer;

impl Summarizer for OfflineSummarizer {
    fn name(&self) -> &str {
        "offline"
    }

    fn summarize<'a>(
        &'a self,
        request: SummaryRequest,
        _progress: ProgressSink<'a>,
    ) -> BoxFuture<'a, Result<SummaryOutput, SummarizeError>> {
        Box::pin(async move {
            Ok(SummaryOutput {
                text: summarize_offline(&request),
                summarizer: "offline".into(),
                usage: None,
                chunks: 1,
            })
        })
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
            Ok(SummaryOutput {
                text: summarize_offline(&request),
                summarizer: "test".into(),
                usage: None,
                chunks: 1,
            })
        })
    }
}

const GOALS: &str = "Goals and requests";
const PROGRESS: &str = "Progress";
const ERRORS: &str = "Errors seen";
const DECISIONS: &str = "Decisions";
const STATE: &str = "Current state";
const NEXT: &str = "Next step";
const FOCUS: &str = "Focus requested for this summary";

/// Sections in order, with how many entries each keeps (newest win).
const SECTIONS: [(&str, usize); 7] = [
    (GOALS, 24),
    (PROGRESS, 120),
    (ERRORS, 24),
    (DECISIONS, 24),
    (STATE, 1),
    (NEXT, 1),
    (FOCUS, 1),
];

/// Characters kept of each user request, and of the current state.
const REQUEST_CHARS: usize = 320;
/// Characters of the latest request repeated under the next step.
const NEXT_CHARS: usize = 160;
const LINE_CHARS: usize = 160;

/// Writes (or updates) the structured summary.
pub fn summarize_offline(request: &SummaryRequest) -> String {
    let mut doc = request
        .previous_summary
        .as_deref()
        .map(Doc::parse)
        .unwrap_or_default();
    for partial in &request.partial_summaries {
        doc.merge(Doc::parse(partial));
    }
    let mut fresh = Doc::default();
    let results = results_by_call(&request.messages);
    let mut last_user: Option<&str> = None;
    let mut last_assistant: Option<&str> = None;
    for message in &request.messages {
        match &message.body {
            MessageBody::User { content } if !content.trim().is_empty() => {
                fresh.push(GOALS, quote(content, REQUEST_CHARS));
                last_user = Some(content);
            }
            MessageBody::Assistant {
                content,
                tool_calls,
                ..
            } => {
                if !content.trim().is_empty() {
                    last_assistant = Some(content);
                    for sentence in decision_sentences(content) {
                        fresh.push(DECISIONS, sentence);
                    }
                }
                for call in tool_calls {
                    let outcome = results
                        .get(call.id.as_str())
                        .copied()
                        .filter(|m| !m.is_synthetic_result());
                    fresh.push(PROGRESS, progress_line(call, outcome));
                    if let Some(result) = outcome.filter(|m| m.is_error_result()) {
                        let first =
                            first_line(&clip_middle(result.text(), request.max_tool_output_chars));
                        fresh.push(
                            ERRORS,
                            format!("`{}`: {}", call.name, truncate(&first, LINE_CHARS)),
                        );
                    }
                }
            }
            _ => {}
        }
    }
    if let Some(text) = last_assistant {
        fresh.replace(STATE, truncate(&collapse(text), REQUEST_CHARS));
    }
    if let Some(text) = last_user {
        fresh.replace(
            NEXT,
            format!(
                "Continue with the latest request: {}",
                quote(text, NEXT_CHARS)
            ),
        );
    }
    if let Some(instructions) = request
        .instructions
        .as_deref()
        .filter(|s| !s.trim().is_empty())
    {
        fresh.replace(FOCUS, truncate(&collapse(instructions), REQUEST_CHARS));
    }
    doc.merge(fresh);
    doc.render()
}

/// Merges summaries of consecutive parts, oldest first, into one.
pub fn merge_summaries(partials: &[String]) -> String {
    let mut doc = Doc::default();
    for partial in partials {
        doc.merge(Doc::parse(partial));
    }
    doc.render()
}

/// The first result for each call.
fn results_by_call(messages: &[Arc<Message>]) -> HashMap<&str, &Message> {
    let mut results = HashMap::new();
    for message in messages {
        if let Some(id) = message.answers() {
            results.entry(id).or_insert(message.as_ref());
        }
    }
    results
}

fn progress_line(call: &ToolCall, outcome: Option<&Message>) -> String {
    let status = match outcome {
        None => "no result".to_string(),
        Some(m) if m.is_error_result() => "error".to_string(),
        Some(_) => "ok".to_string(),
    };
    match key_argument(call) {
        Some(arg) => format!(
            "`{}` {} → {}",
            call.name,
            truncate(&collapse(&arg), 100),
            status
        ),
        None => format!("`{}` → {}", call.name, status),
    }
}

/// The argument that best says what a call did.
fn key_argument(call: &ToolCall) -> Option<String> {
    const KEYS: [&str; 10] = [
        "path",
        "file_path",
        "notebook_path",
        "filePath",
        "command",
        "cmd",
        "pattern",
        "query",
        "url",
        "input",
    ];
    let args = call.arguments.as_object()?;
    KEYS.iter()
        .find_map(|k| args.get(*k))
        .or_else(|| args.values().find(|v| v.is_string()))
        .map(|v| match v {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        })
}

/// Sentences where the assistant states a choice.
fn decision_sentences(text: &str) -> Vec<String> {
    const MARKERS: [&str; 8] = [
        "decided",
        "decision",
        "instead",
        "i'll use",
        "i will use",
        "we'll use",
        "chose",
        "going with",
    ];
    text.split(['.', '\n'])
        .map(str::trim)
        .filter(|s| s.len() > 12)
        .filter(|s| {
            let lower = s.to_lowercase();
            MARKERS.iter().any(|m| lower.contains(m))
        })
        .take(3)
        .map(|s| truncate(&collapse(s), LINE_CHARS))
        .collect()
}

fn quote(text: &str, max: usize) -> String {
    format!("\"{}\"", truncate(&collapse(text), max))
}

fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn first_line(text: &str) -> String {
    text.lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
        .to_string()
}

fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let cut: String = text.chars().take(max).collect();
    format!("{cut}…")
}

/// A summary as titled lists of entries.
#[derive(Debug, Default)]
struct Doc {
    sections: Vec<(String, Vec<String>)>,
}

impl Doc {
    fn parse(text: &str) -> Doc {
        let mut doc = Doc::default();
        let mut current: Option<String> = None;
        for line in text.lines() {
            if let Some(title) = line.strip_prefix("## ") {
                current = Some(title.trim().to_string());
                continue;
            }
            // The file sections are appended after the summary and rebuilt
            // every time; stop before them.
            if line.starts_with("<read-files>") || line.starts_with("<modified-files>") {
                break;
            }
            if let (Some(title), Some(entry)) = (&current, line.strip_prefix("- ")) {
                if !entry.starts_with("… (") {
                    doc.push(title, entry.to_string());
                }
            }
        }
        doc
    }

    fn section(&mut self, title: &str) -> &mut Vec<String> {
        if let Some(i) = self.sections.iter().position(|(t, _)| t == title) {
            return &mut self.sections[i].1;
        }
        self.sections.push((title.to_string(), Vec::new()));
        &mut self.sections.last_mut().expect("just pushed").1
    }

    fn push(&mut self, title: &str, entry: String) {
        self.section(title).push(entry);
    }

    fn replace(&mut self, title: &str, entry: String) {
        *self.section(title) = vec![entry];
    }

    fn merge(&mut self, newer: Doc) {
        for (title, entries) in newer.sections {
            let cap = cap_of(&title);
            if cap == 1 {
                if let Some(last) = entries.into_iter().last() {
                    self.replace(&title, last);
                }
            } else {
                let section = self.section(&title);
                for entry in entries {
                    // Repeated requests ("continue") need not repeat.
                    if section.last() != Some(&entry) {
                        section.push(entry);
                    }
                }
            }
        }
    }

    fn render(&self) -> String {
        let mut out = String::new();
        for (title, cap) in SECTIONS {
            let Some((_, entries)) = self.sections.iter().find(|(t, _)| t == title) else {
                continue;
            };
            if entries.is_empty() {
                continue;
            }
            out.push_str(&format!("## {title}\n"));
            let skip = entries.len().saturating_sub(cap);
            if skip > 0 {
                out.push_str(&format!("- … ({skip} earlier entries omitted)\n"));
            }
            for entry in &entries[skip..] {
                out.push_str(&format!("- {entry}\n"));
            }
            out.push('\n');
        }
        if out.is_empty() {
            out.push_str("## Current state\n- Nothing of note happened in the compacted part.\n");
        }
        out.trim_end().to_string()
    }
}

fn cap_of(title: &str) -> usize {
    SECTIONS
        .iter()
        .find(|(t, _)| *t == title)
        .map(|(_, cap)| *cap)
        .unwrap_or(24)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(messages: Vec<Message>, previous: Option<String>) -> SummaryRequest {
        SummaryRequest {
            previous_summary: previous,
            messages: messages.into_iter().map(Into::into).collect(),
            partial_summaries: Vec::new(),
            instructions: None,
            max_tool_output_chars: 2000,
            compact_prompt: None,
            update_prompt: None,
        }
    }

    #[test]
    fn writes_every_section_and_is_deterministic() {
        let messages = vec![
            Message::user("u1", "Fix the parser.\nIt breaks on empty input."),
            Message::assistant(
                "a1",
                "I decided to rewrite the tokenizer instead of patching it.",
                vec![
                    ToolCall {
                        id: "c1".into(),
                        name: "read".into(),
                        arguments: json!({"path": "src/parse.rs"}),
                    },
                    ToolCall {
                        id: "c2".into(),
                        name: "bash".into(),
                        arguments: json!({"command": "cargo test"}),
                    },
                    ToolCall {
                        id: "c3".into(),
                        name: "edit".into(),
                        arguments: json!({"path": "src/lex.rs"}),
                    },
                ],
            ),
            Message::tool_result("t1", "c1", "fn parse() {}", false),
            Message::tool_result("t2", "c2", "\nerror[E0308]: mismatched types\n more", true),
            Message::user("u2", "Now add a test."),
        ];
        let text = summarize_offline(&request(messages.clone(), None));
        assert_eq!(text, summarize_offline(&request(messages, None)));
        for needle in [
            "## Goals and requests\n- \"Fix the parser. It breaks on empty input.\"\n- \"Now add a test.\"",
            "- `read` src/parse.rs → ok",
            "- `bash` cargo test → error",
            "- `edit` src/lex.rs → no result",
            "## Errors seen\n- `bash`: error[E0308]: mismatched types",
            "## Decisions\n- I decided to rewrite the tokenizer instead of patching it",
            "## Next step\n- Continue with the latest request: \"Now add a test.\"",
        ] {
            assert!(text.contains(needle), "missing {needle:?} in\n{text}");
        }
    }

    #[test]
    fn updates_the_previous_summary() {
        let first = summarize_offline(&request(vec![Message::user("u1", "Task one")], None));
        let second = summarize_offline(&request(
            vec![Message::user("u2", "Task two")],
            Some(first + "\n\n<read-files>\na.rs\n</read-files>"),
        ));
        assert!(
            second.contains("- \"Task one\"\n- \"Task two\""),
            "{second}"
        );
        assert!(second.contains("Continue with the latest request: \"Task two\""));
        assert!(
            !second.contains("Task one\"\n\n## Next"),
            "next step replaced"
        );
        assert!(
            !second.contains("<read-files>"),
            "file sections are rebuilt, not merged"
        );
    }
}
