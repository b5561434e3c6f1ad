//! The retention check: after summarizing, verify deterministically that
//! the summary plus the kept messages still carry what an agent must not
//! forget, and preserve verbatim whatever is missing.

use crate::conversation::{request, rules};
use crate::conversation::{Message, MessageBody};

/// Something the compacted history must still contain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Required {
    /// A modified file path.
    Path(String),
    /// The latest user request.
    LatestRequest(String),
    /// A user sentence stating a rule (see `rules::states_rule`).
    Rule(String),
    /// Text kept word for word: the first user message (the task) and pins.
    Verbatim(String),
}

impl Required {
    pub fn text(&self) -> &str {
        match self {
            Required::Path(t)
            | Required::LatestRequest(t)
            | Required::Rule(t)
            | Required::Verbatim(t) => t,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct RetentionOutcome {
    /// Share of required items found before anything was preserved (1.0
    /// when nothing was required).
    pub recall: f64,
    pub missing: Vec<Required>,
}

impl RetentionOutcome {
    /// The `<preserved>` block appended to the summary, if anything was
    /// missing.
    pub fn preserved_section(&self) -> Option<String> {
        if self.missing.is_empty() {
            return None;
        }
        let mut out = String::from("<preserved>\n");
        for item in &self.missing {
            let label = match item {
                Required::Path(_) => "modified file",
                Required::LatestRequest(_) => "latest user request",
                Required::Rule(_) => "user rule",
                Required::Verbatim(_) => "keep verbatim",
            };
            out.push_str(&format!("[{label}] {}\n", item.text().trim()));
        }
        out.push_str("</preserved>");
        Some(out)
    }
}

/// The sentences of user messages that state a rule (see
/// `rules::states_rule`), each once, in order.
pub fn rule_lines<'a>(messages: impl IntoIterator<Item = &'a Message>) -> Vec<String> {
    let mut rules = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for message in messages {
        let MessageBody::User { content } = &message.body else {
            continue;
        };
        for rule in rules::rules_in(content) {
            if seen.insert(rule.clone()) {
                rules.push(rule);
            }
        }
    }
    rules
}

/// The task: the first user message that makes a request, as
/// `request::request_text` reads it (a bare `/model` or a command's output is
/// not the task).
pub fn first_request<'a>(messages: impl IntoIterator<Item = &'a Message>) -> Option<String> {
    messages.into_iter().find_map(request_of)
}

/// The latest request among `messages`, oldest first (the caller leaves
/// out summaries: the requests they hold are older).
pub fn latest_request<'a, I>(messages: I) -> Option<String>
where
    I: IntoIterator<Item = &'a Message>,
    I::IntoIter: DoubleEndedIterator,
{
    messages.into_iter().rev().find_map(request_of)
}

fn request_of(message: &Message) -> Option<String> {
    match &message.body {
        MessageBody::User { content } => request::request_text(content),
        _ => None,
    }
}

/// Checks `required` against the summary and the kept messages.
pub fn check<'a>(
    summary: &str,
    kept: impl IntoIterator<Item = &'a Message>,
    required: &[Required],
) -> RetentionOutcome {
    let mut haystack = normalize(summary);
    for message in kept {
        haystack.push('\n');
        haystack.push_str(&normalize(message.text()));
    }
    let mut missing = Vec::new();
    for item in required {
        let needle = match item {
            Required::LatestRequest(t) => request_opening(t),
            other => normalize(other.text()),
        };
        if !needle.is_empty() && !haystack.contains(&needle) {
            missing.push(item.clone());
        }
    }
    let recall = if required.is_empty() {
        1.0
    } else {
        (required.len() - missing.len()) as f64 / required.len() as f64
    };
    RetentionOutcome { recall, missing }
}

/// What must survive a compaction, in the order the check reports it:
/// the modified files, the latest request, the rules, the task, the pins.
pub fn required(
    modified: &[String],
    latest_request: Option<String>,
    rules: &[String],
    task: Option<String>,
    pins: &[String],
) -> Vec<Required> {
    let mut required: Vec<Required> = modified.iter().cloned().map(Required::Path).collect();
    required.extend(latest_request.map(Required::LatestRequest));
    required.extend(rules.iter().cloned().map(Required::Rule));
    required.extend(task.map(Required::Verbatim));
    required.extend(pins.iter().cloned().map(Required::Verbatim));
    required
}

/// What a summary left out, by kind: "2 of 5 modified files", "1 of 3
/// rules", "the task" (the first verbatim item), "the latest request".
pub fn describe_missing(required: &[Required], missing: &[Required]) -> Vec<String> {
    let count = |kind: fn(&Required) -> bool| {
        let total = required.iter().filter(|r| kind(r)).count();
        (missing.iter().filter(|r| kind(r)).count(), total)
    };
    let mut out = Vec::new();
    for (noun, kind) in [
        (
            "modified files",
            (|r: &Required| matches!(r, Required::Path(_))) as fn(&Required) -> bool,
        ),
        ("rules", |r| matches!(r, Required::Rule(_))),
    ] {
        match count(kind) {
            (0, _) => {}
            (n, total) => out.push(format!("{n} of {total} {noun}")),
        }
    }
    let task = required.iter().find(|r| matches!(r, Required::Verbatim(_)));
    if task.is_some_and(|t| missing.contains(t)) {
        out.push("the task".into());
    }
    if missing
        .iter()
        .any(|r| matches!(r, Required::LatestRequest(_)))
    {
        out.push("the latest request".into());
    }
    out
}

/// Whether `text` carries `request` as the retention check looks for a
/// latest request: by its opening.
pub fn carries_request(text: &str, request: &str) -> bool {
    normalize(text).contains(&request_opening(request))
}

/// Long requests: their opening is what identifies them.
fn request_opening(request: &str) -> String {
    normalize(&request.chars().take(200).collect::<String>())
}

/// The words of `text`, quotes and backticks trimmed, one space apart,
/// lowercased. Written word by word into one string: a list of the words
/// cost 16 bytes a word, over three times a long message's text, and the
/// joined and lowercased copies two more. Lowercasing word by word is the
/// same as lowercasing the whole (a final sigma looks no further than the
/// space after its word).
fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (i, word) in text.split_whitespace().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        let word = word.trim_matches(|c: char| c == '"' || c == '`');
        if word.is_ascii() {
            out.extend(word.bytes().map(|b| char::from(b.to_ascii_lowercase())));
        } else {
            out.push_str(&word.to_lowercase());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same as joining the trimmed words and lowercasing the whole,
    /// on text with quotes, empty words and letters beyond ASCII.
    #[test]
    fn normalize_is_the_joined_lowercased_words() {
        let slow = |text: &str| {
            text.split_whitespace()
                .map(|w| w.trim_matches(|c: char| c == '"' || c == '`'))
                .collect::<Vec<_>>()
                .join(" ")
                .to_lowercase()
        };
        for text in [
            "",
            "  Fix  the \"Parser\"  now ",
            "`` \" a\tB\nC",
            "ΟΔΟΣ ΟΔΟΣ. ΣΑΣ Σ ΑΣ\"Σ `ΑΣ` İstanbul ǅemal ẞ",
            "MixED ascii and ÜMLAUTS\u{a0}nbsp\u{2003}em",
        ] {
            assert_eq!(normalize(text), slow(text), "{text:?}");
        }
    }

    #[test]
    fn finds_rules_in_user_lines_only() {
        let messages = vec![
            Message::user("u1", "Fix the bug. Always run the tests first! Mustard is fine.\nDon't touch the lockfile"),
            Message::assistant("a1", "I will never do that.", vec![]),
            Message::user("u2", "You must keep the API stable. Nevertheless carry on."),
        ];
        assert_eq!(
            rule_lines(&messages),
            [
                "Always run the tests first!",
                "Don't touch the lockfile",
                "You must keep the API stable."
            ]
        );
    }

    #[test]
    fn missing_items_are_preserved_and_recall_reported() {
        let summary =
            "## Goals\n- \"Fix the parser\"\n<modified-files>\nsrc/a.rs\n</modified-files>";
        let kept = vec![Message::user("u9", "Now   ADD a test")];
        let required = vec![
            Required::Path("src/a.rs".into()),
            Required::Path("src/b.rs".into()),
            Required::LatestRequest("now add a test".into()),
            Required::Rule("Never push to main.".into()),
        ];
        let outcome = check(summary, &kept, &required);
        assert_eq!(outcome.recall, 0.5);
        assert_eq!(
            outcome.missing,
            vec![
                Required::Path("src/b.rs".into()),
                Required::Rule("Never push to main.".into())
            ]
        );
        let section = outcome.preserved_section().unwrap();
        assert_eq!(
            section,
            "<preserved>\n[modified file] src/b.rs\n[user rule] Never push to main.\n</preserved>"
        );
        assert_eq!(check("x", std::iter::empty(), &[]).recall, 1.0);
    }
}
