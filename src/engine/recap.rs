//! The recap: what compactd knows about a session that an agent's own
//! compaction must not lose — the task, the latest request, the user's
//! rules, the plan, the errors still open, the files read and changed —
//! taken from the transcript, deterministically. The agents' hooks hand
//! it over twice: before the agent compacts, as instructions to its
//! summarizer (`instructions`); after, as context for the model's next
//! request (`context`). `dropped` checks an agent's summary against it the
//! way compactd checks its own (`compaction::retention`).

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::compaction::retention::{self, Required};
use crate::compaction::FileSections;
use crate::conversation::Message;
use crate::session::Session;
use crate::summarize::offline::{digest_within, wording};
use crate::summarize::SummaryRequest;

/// What an agent lets a hook add at most (Claude Code caps hook output at
/// 10,000 characters).
pub const HOOK_LIMIT: usize = 10_000;

/// The digest's budgets tried, largest first, until the context fits
/// (10,000 characters hold about 2,500 tokens), counted as characters/4
/// (`digest_within`): close steps, so the record fills what the hook may
/// print.
const DIGEST_TOKENS: [u64; 10] = [
    2_400, 2_200, 2_000, 1_800, 1_600, 1_400, 1_200, 1_000, 600, 300,
];
/// Files listed per section, tried largest first.
const LISTED: [usize; 4] = [50, 20, 10, 5];

#[derive(Debug, Clone, Default)]
pub struct Recap {
    pub task: Option<String>,
    pub latest_request: Option<String>,
    pub rules: Vec<String>,
    pub files: FileSections,
    /// Every message, for compactd's own digest of the session.
    messages: Vec<Arc<Message>>,
    pub pins: Vec<String>,
}

/// How the context handed after an agent's compaction begins (an agent's
/// module knows its own record in a transcript by it).
pub const CONTEXT_HEAD: &str = "compactd's record of this session before it was compacted (taken from the transcript; the summary may have left some of it out):\n\n";

impl Recap {
    /// The recap of everything the session holds, compacted or not: what
    /// an earlier compaction of the agent's dropped is still known here.
    pub fn of(session: &Session) -> Recap {
        // After a `/clear` the conversation before it is no one's context.
        let messages: Vec<&Message> = session.conversation_messages().map(Arc::as_ref).collect();
        let mut rules: Vec<String> = session
            .conversation_compactions()
            .iter()
            .flat_map(|r| r.retained_rules.iter().cloned())
            .collect();
        for rule in retention::rule_lines(messages.iter().copied()) {
            if !rules.contains(&rule) {
                rules.push(rule);
            }
        }
        Recap {
            task: retention::first_request(messages.iter().copied()),
            latest_request: latest_substantial_request(&messages),
            rules,
            files: session.file_ledger.sections(),
            messages: session.conversation_messages().cloned().collect(),
            pins: session.pins().to_vec(),
        }
    }

    /// The offline digest of the session within `tokens`.
    fn digest(&self, tokens: u64) -> String {
        let request = SummaryRequest {
            previous_summary: None,
            messages: self.messages.clone(),
            partial_summaries: Vec::new(),
            later: Vec::new(),
            earlier: Vec::new(),
            instructions: None,
            max_tool_output_chars: 2_000,
            compact_prompt: None,
            update_prompt: None,
        };
        digest_within(&request, tokens)
    }

    /// The files, at most `listed` per section.
    fn file_sections(&self, listed: usize) -> String {
        let mut files = self.files.clone();
        for (list, omitted) in [
            (&mut files.read, &mut files.marks.omitted_read),
            (&mut files.modified, &mut files.marks.omitted_modified),
        ] {
            if list.len() > listed {
                *omitted += list.len() - listed;
                list.truncate(listed);
            }
        }
        files.render()
    }

    /// What the model should know after the agent compacted: compactd's
    /// digest (task, requests, rules, plan, progress, errors, next step)
    /// and the file sections, within `limit` characters — the digest
    /// shrinks, then the file lists, most important first. With
    /// `recall_tools` (the agent has `compactd mcp`'s tools), it ends by
    /// saying they find what the record leaves out.
    pub fn context(&self, limit: usize, recall_tools: bool) -> String {
        // Where the rest is, for an agent that has compactd's MCP tools.
        const RECALL: &str = "\n\nEvery message before the compaction is kept verbatim: with compactd's MCP tools (search_history, read_messages), search them when a detail is missing.";
        let mut last = String::new();
        for tokens in DIGEST_TOKENS {
            let digest = self.digest(tokens);
            for listed in LISTED {
                let text = format!("{CONTEXT_HEAD}{digest}\n{}", self.file_sections(listed));
                let recall = if recall_tools { RECALL } else { "" };
                let text = format!("{}{recall}", text.trim_end());
                if text.chars().count() <= limit {
                    return text;
                }
                last = text;
            }
        }
        clip_lines(&last, limit)
    }

    /// What the agent's summarizer is asked to keep, before it compacts.
    pub fn instructions(&self, limit: usize) -> String {
        let mut out = String::from(
            "compactd follows this session. Your summary must keep these, word for word where quoted:\n",
        );
        if let Some(task) = &self.task {
            out.push_str(&format!("- The task: \"{}\"\n", clip(task, 600)));
        }
        if let Some(latest) = self
            .latest_request
            .as_ref()
            .filter(|l| Some(*l) != self.task.as_ref())
        {
            out.push_str(&format!(
                "- The latest request: \"{}\"\n",
                clip(latest, 400)
            ));
        }
        if !self.rules.is_empty() {
            out.push_str("- The user's rules, each verbatim:\n");
            for rule in &self.rules {
                out.push_str(&format!("  - \"{}\"\n", clip(rule, 300)));
            }
        }
        for pin in &self.pins {
            out.push_str(&format!("- Keep verbatim: \"{}\"\n", clip(pin, 300)));
        }
        for (what, list) in [
            ("Every file modified", &self.files.modified),
            ("Files read", &self.files.read),
        ] {
            if !list.is_empty() {
                out.push_str(&format!("- {what}, by its path: {}\n", list.join(", ")));
            }
        }
        out.push_str("- The errors still open, and the next step.\n");
        clip_lines(&out, limit)
    }

    /// Everything the hooks of one compaction answer, rendered once: the
    /// instructions and the context within `limit`, and what the
    /// retention check needs.
    pub fn answers(&self, limit: usize) -> Answers {
        Answers {
            instructions: self.instructions(limit),
            // `compactd setup` registers the MCP tools with the hooks.
            context: self.context(limit, true),
            must_keep: MustKeep {
                task: self.task.clone(),
                latest_request: self.latest_request.clone(),
                rules: self.rules.clone(),
                modified: self.files.modified.clone(),
                pins: self.pins.clone(),
            },
        }
    }

    /// What `summary` left out, by kind: "2 of 5 modified files", "1 of 3
    /// rules", "the task", "the latest request". Empty when it kept all.
    pub fn dropped(&self, summary: &str) -> Vec<String> {
        self.answers(HOOK_LIMIT).must_keep.dropped(summary)
    }
}

/// A recap rendered for the hooks of one compaction (`compactd hook`
/// keeps it between them: the hooks after the compaction answer from it).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Answers {
    pub instructions: String,
    pub context: String,
    pub must_keep: MustKeep,
}

/// What an agent's summary must keep, as the retention check looks for it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct MustKeep {
    task: Option<String>,
    latest_request: Option<String>,
    rules: Vec<String>,
    modified: Vec<String>,
    pins: Vec<String>,
}

impl MustKeep {
    fn required(&self) -> Vec<Required> {
        // The latest request is the task in a one-request session: one item.
        let latest = self
            .latest_request
            .clone()
            .filter(|l| Some(l) != self.task.as_ref());
        retention::required(
            &self.modified,
            latest,
            &self.rules,
            self.task.clone(),
            &self.pins,
        )
    }

    /// What `summary` left out, by kind.
    pub fn dropped(&self, summary: &str) -> Vec<String> {
        let required = self.required();
        let outcome = retention::check(summary, std::iter::empty(), &required);
        retention::describe_missing(&required, &outcome.missing)
    }
}

/// The latest request, or when it only says to go on ("Carry on.", "ok,
/// continue") the last one before it that asks for something: that is
/// what the next turn works on, and what a summary must keep.
fn latest_substantial_request(messages: &[&Message]) -> Option<String> {
    let latest = retention::latest_request(messages.iter().copied())?;
    if wording::substantial(&latest) {
        return Some(latest);
    }
    let asked = messages
        .iter()
        .rev()
        .filter_map(|m| retention::latest_request([*m]))
        .find(|r| wording::substantial(r));
    Some(asked.unwrap_or(latest))
}

fn clip(text: &str, chars: usize) -> String {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match text.char_indices().nth(chars) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

/// `text` cut at the last whole line within `limit` characters.
fn clip_lines(text: &str, limit: usize) -> String {
    let mut out = String::new();
    for line in text.lines() {
        if out.chars().count() + line.chars().count() + 1 > limit {
            break;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::ToolCall;
    use serde_json::json;

    fn session() -> Session {
        let mut session = Session::new("s".into(), None, None, None, String::new());
        session.push(vec![
            Message::user("u1", "Port the parser to nom. Never touch Cargo.lock."),
            Message::assistant(
                "a1",
                "",
                vec![ToolCall {
                    id: "c1".into(),
                    name: "edit".into(),
                    arguments: json!({"path": "src/parse.rs"}),
                }],
            ),
            Message::tool_result("t1", "c1", "ok", false),
            Message::user("u2", "Now run the benchmarks please"),
        ]);
        session
    }

    /// A short session: every request fits in what a hook may hand over,
    /// so none is left out for the session's size, and "Carry on." is not
    /// what the next turn works on.
    #[test]
    fn a_short_sessions_later_constraint_and_latest_ask_are_kept() {
        let mut session = Session::new("s".into(), None, None, None, String::new());
        session.push(vec![
            Message::user("u1", "Write a word counter for the notes folder, counting every Markdown file in it and in the folders below it, one row per file."),
            Message::assistant("a1", "Which format should the output take?", vec![]),
            Message::user(
                "u2",
                "Print it as CSV, and the counter must ignore files under drafts/.",
            ),
            Message::assistant("a2", "Working on it.", vec![]),
            Message::user("u3", "Sort the rows by count, largest first, break ties by the file's name in alphabetical order, leave out empty files entirely, put a header row naming each column, and add a total row at the very end."),
            Message::assistant("a3", "Done.", vec![]),
            Message::user("u4", "Carry on."),
        ]);
        let recap = Recap::of(&session);
        let context = recap.context(HOOK_LIMIT, true);
        assert!(
            context.contains("the counter must ignore files under drafts/"),
            "{context}"
        );
        assert!(context.contains("add a total row"), "{context}");
        assert!(!context.contains("earlier request not listed"), "{context}");
        let instructions = recap.instructions(HOOK_LIMIT);
        assert!(
            instructions.contains("The latest request: \"Sort the rows by count"),
            "{instructions}"
        );
    }

    #[test]
    fn a_recap_holds_the_task_rules_and_requests_and_fits() {
        let recap = Recap::of(&session());
        assert_eq!(recap.rules, ["Never touch Cargo.lock."]);
        let context = recap.context(HOOK_LIMIT, true);
        for needle in [
            "Port the parser to nom",
            "Never touch Cargo.lock.",
            "Now run the benchmarks please",
        ] {
            assert!(context.contains(needle), "{needle}: {context}");
        }
        assert!(recap.context(300, true).chars().count() <= 300);
        let instructions = recap.instructions(HOOK_LIMIT);
        assert!(
            instructions.contains("\"Never touch Cargo.lock.\""),
            "{instructions}"
        );
        assert!(instructions.contains("The latest request: \"Now run the benchmarks please\""));
    }

    /// After a `/clear` an older Claude Code wrote into the same file, the
    /// task, the rules and the requests are the new conversation's.
    #[test]
    fn a_recap_after_a_clear_is_of_the_new_conversation() {
        let transcript = [
            r#"{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","message":{"role":"user","content":"Port the parser to nom. Never touch Cargo.lock."}}"#,
            r#"{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s","message":{"id":"m1","role":"assistant","model":"claude-x","content":[{"type":"text","text":"done"}]}}"#,
            r#"{"type":"user","uuid":"u2","parentUuid":null,"sessionId":"s","message":{"role":"user","content":"Write the release notes for v2"}}"#,
        ]
        .join("\n");
        let imported = crate::import::parse(transcript.as_bytes(), None).unwrap();
        let mut session = Session::new("s".into(), None, None, None, String::new());
        for entry in imported.entries {
            match entry {
                crate::store::LogEntry::Message { message, .. } => session.push(vec![message]),
                crate::store::LogEntry::Compaction(record) => {
                    session.apply_compaction(*record);
                    Vec::new()
                }
                _ => Vec::new(),
            };
        }
        let recap = Recap::of(&session);
        assert_eq!(
            recap.task.as_deref(),
            Some("Write the release notes for v2")
        );
        assert!(recap.rules.is_empty(), "{:?}", recap.rules);
        assert!(!recap.context(HOOK_LIMIT, true).contains("nom"));
        assert_eq!(
            session.plan_input().task.as_deref(),
            Some("Write the release notes for v2")
        );
        // The messages before it are still there to search and read.
        assert_eq!(session.all_messages().count(), 3);
    }

    /// The user's words outside plain prompts reach the recap: an answer to
    /// the agent's question, the reason they gave for rejecting a call, a
    /// message typed while the agent worked (a Claude Code 2.1
    /// `queued_command` attachment; see the reader's tests for its shape).
    #[test]
    fn a_recap_holds_answers_rejections_and_messages_typed_mid_turn() {
        let transcript = [
            r#"{"type":"user","uuid":"u1","sessionId":"s","message":{"role":"user","content":"Add a session state field"}}"#,
            // A session of some size: the digest of a few short messages is
            // kept shorter than they are.
            r#"{"type":"assistant","uuid":"a0","sessionId":"s","message":{"id":"m0","role":"assistant","model":"claude-x","content":[{"type":"tool_use","id":"r0","name":"Read","input":{"file_path":"src/state.rs"}}]}}"#,
            &format!(
                r#"{{"type":"user","uuid":"r0","sessionId":"s","message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"r0","content":"{}"}}]}}}}"#,
                "pub struct State { field: u32 }\\n".repeat(400)
            ),
            r#"{"type":"assistant","uuid":"a1","sessionId":"s","message":{"id":"m1","role":"assistant","model":"claude-x","content":[{"type":"tool_use","id":"q1","name":"AskUserQuestion","input":{"questions":[{"question":"How should the state be kept?","options":[{"label":"Derived"},{"label":"Stored"}]}]}}]}}"#,
            r#"{"type":"user","uuid":"r1","sessionId":"s","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"q1","content":"User has answered your questions: \"How should the state be kept?\"=\"store it explicitly, but the change from ACTIVE to IDLE must condense\". You can now continue with the user's answers in mind."}]}}"#,
            r#"{"type":"assistant","uuid":"a2","sessionId":"s","message":{"id":"m2","role":"assistant","model":"claude-x","content":[{"type":"tool_use","id":"b1","name":"Bash","input":{"command":"git push"}}]}}"#,
            r#"{"type":"user","uuid":"r2","sessionId":"s","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"b1","is_error":true,"content":"The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). To tell you how to proceed, the user said:\nrun the migration tests before pushing anything"}]}}"#,
            r#"{"type":"assistant","uuid":"a3","sessionId":"s","message":{"id":"m3","role":"assistant","model":"claude-x","content":[{"type":"tool_use","id":"b2","name":"Bash","input":{"command":"cargo test migration"}}]}}"#,
            r#"{"type":"user","uuid":"r3","sessionId":"s","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"b2","content":"ok"}]}}"#,
            r#"{"type":"attachment","uuid":"q2","sessionId":"s","attachment":{"type":"queued_command","commandMode":"prompt","origin":{"kind":"human"},"prompt":"and add a changelog entry for the new field"}}"#,
        ]
        .join("\n");
        let imported = crate::import::parse(transcript.as_bytes(), None).unwrap();
        let mut session = Session::new("s".into(), None, None, None, String::new());
        session.push(imported.messages().cloned().collect());
        let recap = Recap::of(&session);
        assert_eq!(
            recap.latest_request.as_deref(),
            Some("and add a changelog entry for the new field")
        );
        let context = recap.context(HOOK_LIMIT, true);
        for needle in [
            "store it explicitly, but the change from ACTIVE to IDLE must condense (asked: How should the state be kept?)",
            "run the migration tests before pushing anything",
            "`git push`: rejected by the user",
            "and add a changelog entry for the new field",
        ] {
            assert!(context.contains(needle), "{needle}: {context}");
        }
    }

    #[test]
    fn a_summary_is_checked_against_the_recap() {
        let recap = Recap::of(&session());
        let lossy = "The user wants a parser port.";
        assert_eq!(
            recap.dropped(lossy),
            ["1 of 1 rules", "the task", "the latest request"]
        );
        let full = recap.context(HOOK_LIMIT, true);
        assert!(
            recap.dropped(&full).is_empty(),
            "{:?}",
            recap.dropped(&full)
        );
    }
}
