//! From messages to a digest: the requests, the user's rules, what each
//! turn achieved, decisions and findings, what happened to each file, the
//! commands and how they ended, the errors no later success answered, and
//! where the conversation stands.

use std::collections::HashMap;
use std::sync::Arc;

use super::digest::{CommandNote, Digest, FileNote, Latest, OpenError, Outcome, CHANGE_FAILED};
use super::wording::{clip, error_line, typed_part};
use crate::conversation::request::{collapse, request_text, strip_ansi};
use crate::conversation::rules::{rules_in, sentences};
use crate::conversation::{Message, MessageBody, ToolCall};
use crate::files::{FileOp, FileTools};

/// Characters of an outcome, of a line the summary quotes.
const OUTCOME_CHARS: usize = 200;
const LINE_CHARS: usize = 160;
const STATE_CHARS: usize = 200;
const TASK_CHARS: usize = 2000;
const LONG_TASK_CHARS: usize = 200;

/// The digest of `messages` alone (no previous summary).
pub(super) fn digest_of(messages: &[Arc<Message>]) -> Digest {
    let results: HashMap<&str, &Message> = messages
        .iter()
        .map(Arc::as_ref)
        .filter(|m| !m.is_synthetic_result())
        .filter_map(|m| m.answers().map(|id| (id, m)))
        .collect();
    let tools = FileTools::default();
    let mut digest = Digest::default();
    let mut requests: Vec<String> = Vec::new();
    let mut turn = Turn::default();
    for message in messages.iter().map(Arc::as_ref) {
        match &message.body {
            MessageBody::User { content } => {
                let Some(request) = request_text(content) else {
                    continue;
                };
                close_turn(&mut digest, std::mem::take(&mut turn));
                for rule in rules_in(content) {
                    if !digest.rules.contains(&rule) {
                        digest.rules.push(rule);
                    }
                }
                digest.decisions.extend(user_decisions(&request));
                requests.push(request);
            }
            MessageBody::Assistant {
                content,
                tool_calls,
                ..
            } => {
                let content = strip_ansi(content);
                let said = !content.trim().is_empty();
                if said {
                    digest.decisions.extend(decisions(&content));
                    turn.text = Some(content.into_owned());
                }
                for call in tool_calls {
                    let result = results.get(call.id.as_str()).copied();
                    note_call(&mut digest, &tools, call, result);
                }
                turn.worked |= !tool_calls.is_empty();
                turn.answered = said && tool_calls.is_empty();
            }
            _ => {}
        }
    }
    // A turn that ended with an answer is where things stand: its outcome
    // under Progress says it. A turn still under way has a state instead.
    let answered = turn.answered;
    if !answered {
        digest.state = turn.text.as_deref().and_then(state);
    }
    close_turn(&mut digest, turn);
    digest.latest = requests.last().map(|latest| Latest {
        request: latest.clone(),
        answered,
    });
    let mut requests = requests.into_iter();
    digest.task = requests.next().map(|task| task_text(&task));
    for request in requests {
        digest.add_request(request);
    }
    digest
}

/// The turn under way: its last assistant text, whether that text ended
/// it (no tool call after it), whether it used any tool.
#[derive(Debug, Default)]
struct Turn {
    text: Option<String>,
    answered: bool,
    worked: bool,
}

/// The first request as the task entry holds it: word for word (the
/// retention check looks for it so), unless it is longer than
/// `TASK_CHARS`, when the opening of what the person typed stands for it
/// (and the retention check preserves it word for word if it is the
/// session's task).
pub(super) fn task_text(request: &str) -> String {
    if request.chars().count() <= TASK_CHARS {
        request.to_string()
    } else {
        clip(&typed_part(request), LONG_TASK_CHARS)
    }
}

/// A turn ended: what its last assistant text says was achieved. Only a
/// turn that did some work (used a tool) and ended with an answer counts:
/// an interrupted one ends mid-work, and a conversational answer is not
/// progress.
fn close_turn(digest: &mut Digest, turn: Turn) {
    if !(turn.answered && turn.worked) {
        return;
    }
    if let Some(outcome) = turn.text.as_deref().and_then(outcome) {
        if digest.progress.last() != Some(&outcome) {
            digest.progress.push(outcome);
        }
    }
}

/// One tool call and its result, into files, commands, tools and errors.
fn note_call(digest: &mut Digest, tools: &FileTools, call: &ToolCall, result: Option<&Message>) {
    let outcome = match result {
        None => Outcome::NoResult,
        Some(m) if m.is_error_result() => Outcome::Failed(error_line(m.text())),
        Some(_) => Outcome::Ok,
    };
    let ops = file_ops(tools, call);
    for (op, path) in ops.iter().filter(|(op, _)| op.is_modification()) {
        note_file(digest, &call.name, *op, path, &outcome);
    }
    if ops.iter().any(|(op, _)| op.is_modification()) {
        return;
    }
    if !ops.is_empty() {
        // A read the file sections list.
        count(&mut digest.tools, &call.name);
        return;
    }
    if let Some(command) = shell_command(call) {
        // Not every agent marks a failing test run as an error.
        let outcome = match (&outcome, result) {
            (Outcome::Ok, Some(m)) if runs_tests(&command_core(command)) => {
                failed_tests(m.text()).map_or(Outcome::Ok, Outcome::Failed)
            }
            _ => outcome,
        };
        note_command(digest, command, &outcome);
        return;
    }
    count(&mut digest.tools, &call.name);
    if let (Some(path), Outcome::Ok) = (read_elsewhere(call), &outcome) {
        if !digest.also_read.contains(&path) {
            digest.also_read.push(path);
        }
    }
    settle(digest, call.name.clone(), &outcome);
}

/// The file a reading tool the shipped mapping does not know (SWE-agent's
/// `open`, for one) opened.
fn read_elsewhere(call: &ToolCall) -> Option<String> {
    let name = call.name.to_lowercase();
    if !["open", "view", "read", "show", "cat"]
        .iter()
        .any(|w| name.contains(w))
    {
        return None;
    }
    ["path", "file_path", "filePath", "filename", "file"]
        .iter()
        .find_map(|f| call.arguments.get(*f).and_then(|v| v.as_str()))
        .map(str::to_string)
}

fn count(list: &mut Vec<(String, u32)>, name: &str) {
    match list.iter_mut().find(|(n, _)| n == name) {
        Some((_, n)) => *n += 1,
        None => list.push((name.to_string(), 1)),
    }
}

/// A failure opens an error under `key`; a success closes those before it.
fn settle(digest: &mut Digest, key: String, outcome: &Outcome) {
    match outcome {
        Outcome::Failed(line) => {
            digest.errors.retain(|e| e.key != key);
            digest.errors.push(OpenError {
                key,
                line: line.clone(),
            });
        }
        Outcome::Ok => {
            digest.errors.retain(|e| e.key != key);
            if !digest.succeeded.contains(&key) {
                digest.succeeded.push(key);
            }
        }
        Outcome::NoResult => {}
    }
}

/// The file operations of a call: the shipped tool mapping, else a tool
/// whose name says it writes, creates or deletes and whose arguments name
/// a file (SWE-agent's `create`, for one).
fn file_ops(tools: &FileTools, call: &ToolCall) -> Vec<(FileOp, String)> {
    let ops = tools.ops(call);
    if !ops.is_empty() {
        return ops;
    }
    let name = call.name.to_lowercase();
    let op = if name.contains("delete") || name.contains("remove") {
        FileOp::Delete
    } else if name.contains("create") {
        FileOp::Create
    } else if ["write", "edit", "insert", "replace", "patch"]
        .iter()
        .any(|w| name.contains(w))
    {
        FileOp::Modify
    } else {
        return Vec::new();
    };
    [
        "path",
        "file_path",
        "filePath",
        "filename",
        "file",
        "notebook_path",
    ]
    .iter()
    .find_map(|f| call.arguments.get(*f).and_then(|v| v.as_str()))
    .map(|path| vec![(op, path.to_string())])
    .unwrap_or_default()
}

fn note_file(digest: &mut Digest, tool: &str, op: FileOp, path: &str, outcome: &Outcome) {
    let mut note = FileNote {
        path: path.to_string(),
        ..FileNote::default()
    };
    match outcome {
        Outcome::Ok => {
            match op {
                FileOp::Create => note.created = true,
                FileOp::Delete => note.deleted = true,
                _ if tool.to_lowercase().contains("write") => note.writes = 1,
                _ => note.edits = 1,
            }
            // A success after a failed change answers it.
            if let Some(old) = digest.files.iter_mut().find(|f| f.path == path) {
                old.status = None;
            }
        }
        Outcome::Failed(line) => note.status = Some(format!("{CHANGE_FAILED}: {line}")),
        Outcome::NoResult => return,
    }
    digest.add_file(note);
    settle(digest, path.to_string(), outcome);
}

/// The command of a shell tool call.
fn shell_command(call: &ToolCall) -> Option<&str> {
    const SHELLS: [&str; 9] = [
        "bash",
        "shell",
        "sh",
        "terminal",
        "run_shell_command",
        "exec_command",
        "execute_command",
        "run_command",
        "local_shell",
    ];
    let command = ["command", "cmd"]
        .iter()
        .find_map(|k| call.arguments.get(*k).and_then(|v| v.as_str()))?;
    let named = SHELLS.contains(&call.name.to_lowercase().as_str());
    (named || (command.contains(' ') && call.arguments.get("path").is_none())).then_some(command)
}

fn note_command(digest: &mut Digest, command: &str, outcome: &Outcome) {
    let command = strip_ansi(command);
    let core = command_core(&command);
    if let Some(name) = read_only(&core) {
        count(&mut digest.looked, name);
        return;
    }
    if *outcome == Outcome::Ok {
        mark_deleted(digest, &core);
    }
    note_runs_on_files(digest, &command, &core, outcome);
    let (failures, first_error) = match outcome {
        Outcome::Failed(line) => (1, Some(line.clone())),
        _ => (0, None),
    };
    digest.add_command(CommandNote {
        command: clip(&core, 80),
        runs: 1,
        failures,
        first_error,
        last: outcome.clone(),
    });
    settle(digest, clip(&core, 80), outcome);
}

/// A command without the `cd … &&` in front, the pipeline behind and the
/// redirections of its output. A script of several lines shows its first
/// command (or the comment that opens it) and how many lines follow.
fn command_core(command: &str) -> String {
    let lines: Vec<&str> = command
        .lines()
        .map(str::trim)
        // A bare `cd` only says where the rest runs.
        .filter(|l| !l.is_empty() && (!l.starts_with("cd ") || l.contains("&&")))
        .collect();
    match lines.as_slice() {
        [] => single_command(command),
        [one] => single_command(one),
        [first, rest @ ..] => format!("{} (+{} lines)", single_command(first), rest.len()),
    }
}

fn single_command(command: &str) -> String {
    let mut rest = command.trim();
    while let Some((_, after)) = rest.strip_prefix("cd ").and_then(|r| r.split_once("&&")) {
        rest = after.trim();
    }
    let rest = rest.split(" | ").next().unwrap_or(rest);
    let rest = rest
        .replace("2>&1", "")
        .replace("2>/dev/null", "")
        .replace(">/dev/null", "");
    collapse(&rest)
}

/// The name a command counts under when it only looks around.
fn read_only(core: &str) -> Option<&str> {
    const LOOKING: [&str; 17] = [
        "grep", "rg", "find", "ls", "cat", "head", "tail", "wc", "pwd", "echo", "which", "tree",
        "file", "stat", "du", "less", "diff",
    ];
    let mut words = core.split_whitespace();
    let first = words.next()?;
    if LOOKING.contains(&first) {
        return Some(first);
    }
    let second = words.next().unwrap_or("");
    match (first, second) {
        ("git", "status" | "diff" | "log" | "show") => Some("git (read-only)"),
        ("sed", _) if core.contains(" -n ") && !core.contains(" -i") => Some("sed"),
        _ => None,
    }
}

/// `rm` marks the files it names as deleted.
fn mark_deleted(digest: &mut Digest, core: &str) {
    let Some(args) = core.strip_prefix("rm ") else {
        return;
    };
    for arg in args.split_whitespace().filter(|a| !a.starts_with('-')) {
        for file in digest.files.iter_mut() {
            if file.path == arg || file.path.ends_with(&format!("/{arg}")) {
                file.deleted = true;
            }
        }
    }
}

/// A test run that names a changed file says how that file last fared.
fn note_runs_on_files(digest: &mut Digest, command: &str, core: &str, outcome: &Outcome) {
    if !runs_tests(core) {
        return;
    }
    let status = match outcome {
        Outcome::Ok => format!("last test `{}`: ok", clip(core, 60)),
        Outcome::Failed(line) => format!("last test `{}` failed: {line}", clip(core, 60)),
        Outcome::NoResult => return,
    };
    for file in digest.files.iter_mut() {
        let name = file.path.rsplit('/').next().unwrap_or(&file.path);
        if name.len() >= 5 && command.contains(name) && !core.starts_with("rm ") {
            file.status = Some(status.clone());
        }
    }
}

/// A command that runs tests: a test runner, or a script named like a
/// test.
fn runs_tests(core: &str) -> bool {
    const RUNNERS: [&str; 11] = [
        "test", "tests", "pytest", "vitest", "jest", "mocha", "tox", "unittest", "rspec", "ctest",
        "nextest",
    ];
    const INTERPRETERS: [&str; 8] = [
        "node", "npx", "tsx", "python", "python3", "deno", "bun", "ruby",
    ];
    let words: Vec<&str> = core.split_whitespace().collect();
    let named_test = |w: &&str| {
        let name = w.rsplit('/').next().unwrap_or(w);
        name.contains("test") || name.contains("spec")
    };
    words.iter().any(|w| RUNNERS.contains(w))
        || (words.first().is_some_and(|w| INTERPRETERS.contains(w))
            && words.iter().skip(1).any(named_test))
}

/// The line of a test run's output that reports failing tests (cargo's
/// "test … FAILED", "test result: FAILED", a tally such as "2 failed"),
/// for runs no tool marked as an error.
fn failed_tests(output: &str) -> Option<String> {
    let output = strip_ansi(output);
    let line = output.lines().map(str::trim).find(|line| {
        let words: Vec<&str> = line.split_whitespace().collect();
        words.contains(&"FAILED")
            || words.windows(2).any(|w| {
                w[1].trim_matches(|c: char| !c.is_alphanumeric()) == "failed"
                    && w[0].parse::<u32>().is_ok_and(|n| n > 0)
            })
    })?;
    Some(clip(line, LINE_CHARS))
}

/// Sentences of assistant prose: headings, tables, code and bold-only
/// lines left out, emphasis marks removed; each with whether it came from
/// a list item.
fn prose(text: &str) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut in_code = false;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("```") {
            in_code = !in_code;
            continue;
        }
        let bold_only = trimmed.starts_with("**")
            && trimmed.ends_with("**")
            && trimmed.matches("**").count() == 2;
        if in_code || trimmed.starts_with('#') || trimmed.starts_with('|') || bold_only {
            continue;
        }
        let item = trimmed.starts_with("- ")
            || trimmed.starts_with("* ")
            || trimmed
                .split_once(". ")
                .is_some_and(|(n, _)| n.chars().all(|c| c.is_ascii_digit()) && !n.is_empty());
        for sentence in sentences(trimmed) {
            let sentence = without_interjection(&sentence.replace("**", "").replace("__", ""));
            if !sentence.trim().is_empty() {
                out.push((sentence.trim().to_string(), item));
            }
        }
    }
    out
}

/// Interjections ("Perfect!", "Done.", "WHAT. THE. FUCK.", "Good
/// point.") and lead-ins that only announce ("Let me check:").
fn is_filler(sentence: &str) -> bool {
    let lower = sentence.to_lowercase();
    sentence.split_whitespace().count() <= 3
        || [
            "let me ",
            "let's ",
            "now let me ",
            "now let's ",
            "i'll ",
            "i will ",
            "first, let me ",
            "good point",
            "you're right",
            "you are right",
        ]
        .iter()
        .any(|p| lower.starts_with(p))
}

/// A sentence without the interjection it opens with ("Hmm, looks like
/// …" reads "Looks like …").
fn without_interjection(sentence: &str) -> String {
    const INTERJECTIONS: [&str; 11] = [
        "hmm",
        "good",
        "great",
        "perfect",
        "excellent",
        "ah",
        "oh",
        "ok",
        "okay",
        "right",
        "alright",
    ];
    let Some((head, rest)) = sentence.split_once([',', '!']) else {
        return sentence.to_string();
    };
    if !INTERJECTIONS.contains(&head.trim().to_lowercase().as_str()) || rest.trim().is_empty() {
        return sentence.to_string();
    }
    let rest = rest.trim_start();
    let mut chars = rest.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Verbs that open a sentence saying what was done.
const ACHIEVED: [&str; 44] = [
    "added",
    "fixed",
    "created",
    "updated",
    "changed",
    "removed",
    "ported",
    "implemented",
    "converted",
    "restored",
    "made",
    "simplified",
    "replaced",
    "moved",
    "renamed",
    "deleted",
    "refactored",
    "wrote",
    "built",
    "set",
    "switched",
    "extracted",
    "copied",
    "reverted",
    "adjusted",
    "committed",
    "installed",
    "migrated",
    "merged",
    "enabled",
    "disabled",
    "documented",
    "corrected",
    "cleaned",
    "improved",
    "split",
    "unified",
    "exposed",
    "opened",
    "ran",
    "verified",
    "released",
    "published",
    "bumped",
];

fn says_achieved(sentence: &str) -> bool {
    let lower = sentence.to_lowercase();
    let first = lower.split_whitespace().next().unwrap_or("");
    ACHIEVED.contains(&first.trim_matches(|c: char| !c.is_alphanumeric()))
        || [
            "i've ",
            "i have ",
            "we've ",
            "we have ",
            "now ",
            "all tests pass",
            "everything ",
        ]
        .iter()
        .any(|p| lower.starts_with(p))
        || lower.contains(" now ")
}

/// What a turn's last assistant text says was achieved: its first sentence
/// saying so, else its first statement; a lead-in ending with ":" takes the
/// first item of its list along.
fn outcome(text: &str) -> Option<String> {
    let sentences: Vec<(String, bool)> = prose(text)
        .into_iter()
        .filter(|(s, _)| !is_filler(s))
        .take(12)
        .collect();
    let chosen = sentences
        .iter()
        .position(|(s, _)| says_achieved(s))
        .or((!sentences.is_empty()).then_some(0))?;
    let mut line = sentences[chosen].0.clone();
    if line.ends_with(':') {
        match sentences.get(chosen + 1) {
            Some((next, true)) => line = format!("{line} {next}"),
            _ => {
                line.pop();
                line.push('.');
            }
        }
    }
    Some(finished(&line, OUTCOME_CHARS))
}

/// A sentence clipped, ending in a full stop rather than a colon.
fn finished(sentence: &str, chars: usize) -> String {
    let mut line = clip(sentence, chars);
    if line.ends_with(':') {
        line.pop();
        line.push('.');
    }
    line
}

/// Where a turn under way stands: the opening of its last assistant text.
fn state(text: &str) -> Option<String> {
    let sentences: Vec<String> = prose(text)
        .into_iter()
        .map(|(s, _)| s)
        .filter(|s| s.split_whitespace().count() > 1)
        .take(3)
        .collect();
    (!sentences.is_empty()).then(|| finished(&sentences.join(" "), STATE_CHARS))
}

/// Openings of assistant sentences that state a decision or a finding.
const DECIDES: [&str; 19] = [
    "the fix is ",
    "the fix: ",
    "the root cause ",
    "root cause: ",
    "the problem is ",
    "the issue is ",
    "the solution is ",
    "the approach is ",
    "approach: ",
    "decision: ",
    "i decided ",
    "we decided ",
    "i chose ",
    "we chose ",
    "i'll use ",
    "i will use ",
    "i'll go with ",
    "we'll go with ",
    "going with ",
];

fn decisions(text: &str) -> Vec<String> {
    prose(text)
        .into_iter()
        .map(|(s, _)| s)
        .filter(|s| {
            let lower = s.to_lowercase();
            DECIDES.iter().any(|d| lower.starts_with(d))
                && s.split_whitespace().count() >= 6
                && !s.ends_with(':')
                && !s.ends_with('?')
        })
        .map(|s| clip(&s, OUTCOME_CHARS))
        .collect()
}

/// The person's own choices ("ok, fine, let's do vite").
fn user_decisions(request: &str) -> Vec<String> {
    const CHOOSES: [&str; 6] = [
        "let's do ",
        "let's use ",
        "let's go with ",
        "let's keep ",
        "let's stick with ",
        "let's switch to ",
    ];
    sentences(&typed_part(request))
        .into_iter()
        .filter(|s| {
            let lower = s.to_lowercase();
            CHOOSES.iter().any(|c| lower.contains(c)) && s.split_whitespace().count() <= 20
        })
        .map(|s| format!("User: \"{}\"", clip(s, OUTCOME_CHARS)))
        .collect()
}
