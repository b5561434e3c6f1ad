//! From messages to a digest: the requests, the user's rules, what each
//! turn achieved, decisions and findings, what happened to each file, the
//! commands and how they ended, the errors no later success answered, and
//! where the conversation stands.

use std::collections::HashMap;
use std::sync::Arc;

use super::digest::{
    same_work, CommandNote, Digest, FileNote, Latest, OpenError, Outcome, ASKED, CHANGE_FAILED,
    CHANGE_REJECTED, DECIDES, REFUSING, REJECTED,
};
use super::plans;
use super::results;
use super::wording::{clip, clip_ends, error_line, test_failure, typed_part};
use crate::conversation::request::{
    answers, collapse, refusal_in_own_words, rejection, request_text, shell_run, strip_ansi,
    withdraws, without_blocks, Answer, HARNESS_BLOCKS, INTERRUPTION,
};
use crate::conversation::rules::{rules_in, sentences};
use crate::conversation::{Message, MessageBody, ToolCall};
use crate::files::{FileOp, FileTools};

/// Characters of an outcome, of a line the summary quotes.
const OUTCOME_CHARS: usize = 200;
const STATE_CHARS: usize = 200;
/// Where things stand when the session is in plan mode at the cut.
const PLANNING: &str =
    "In plan mode: the agent is planning and edits nothing until the user approves a plan.";
/// A command or a result line in "Last action".
const ACTION_CHARS: usize = 80;
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
    let calls: HashMap<&str, &ToolCall> = messages
        .iter()
        .flat_map(|m| m.tool_calls())
        .map(|call| (call.id.as_str(), call))
        .collect();
    let mut reading = Reading {
        results,
        calls,
        ..Reading::default()
    };
    for message in messages.iter().map(Arc::as_ref) {
        reading.at.clone_from(&message.id);
        match &message.body {
            MessageBody::User { content } => reading.user(content),
            MessageBody::Assistant {
                content,
                tool_calls,
                ..
            } => reading.assistant(content, tool_calls),
            MessageBody::Tool {
                content,
                tool_call_id,
                is_error,
                ..
            } => reading.tool_result(content, tool_call_id, *is_error),
            _ => {}
        }
    }
    reading.finish()
}

/// The digest as the messages are read in order.
#[derive(Default)]
struct Reading<'a> {
    results: HashMap<&'a str, &'a Message>,
    /// The calls by id, for what a result answers.
    calls: HashMap<&'a str, &'a ToolCall>,
    tools: FileTools,
    digest: Digest,
    /// The requests so far, each with whether a turn answered it.
    requests: Vec<(String, bool)>,
    turn: Turn,
    /// A numbered plan the assistant proposed, until the reply to it.
    proposed: Option<String>,
    /// A plan file written in this turn (`plans::plan_file`): what a plan
    /// tool called without its plan presents.
    plan_file: Option<String>,
    /// In plan mode (`plans::plan_mode_after`).
    planning: bool,
    /// The id of the message being read.
    at: String,
}

impl Reading<'_> {
    fn close_turn(&mut self) {
        close_turn(
            &mut self.digest,
            std::mem::take(&mut self.turn),
            &mut self.requests,
        );
    }

    fn user(&mut self, content: &str) {
        if let Some(run) = shell_run(content) {
            note_shell(&mut self.digest, run);
            return;
        }
        let Some(request) = request_text(content) else {
            return;
        };
        let proposal = self.proposed.take();
        self.plan_file = None;
        self.close_turn();
        let digest = &mut self.digest;
        if let Some(plan) = proposal.filter(|_| plans::accepts(&request)) {
            digest.approve_plan(plans::steps(&plan));
        }
        if let Some(rest) = withdraws(&request) {
            // The question before it is gone; what follows the "never
            // mind" is the request.
            if self.requests.len() > 1 {
                self.requests.pop();
            }
            self.requests.extend(rest.map(|rest| (rest, false)));
            return;
        }
        for error in &mut digest.errors {
            error.requests_after += 1;
        }
        self.note_rules(content);
        for decision in user_decisions(&request) {
            self.digest.add_decision(decision);
        }
        self.cite(&request);
        self.requests.push((request, false));
    }

    /// What the person said through a tool's result rather than a prompt:
    /// their answers to the agent's questions, what they typed when they
    /// refused a call. Each is a request of theirs, and may state a rule.
    fn tool_result(&mut self, content: &str, call_id: &str, is_error: bool) {
        let arguments = self.calls.get(call_id).map(|call| &call.arguments);
        if let Some(answers) = answers(arguments, content) {
            for answer in answers {
                self.digest.add_decision(answer_decision(&answer));
                let request = format!("{}{ASKED}{})", answer.answer, answer.question);
                // An option the agent offered is not the person's wording:
                // "Always show CPU + GPU" chosen is no rule of theirs.
                let typed = if answer.offered { "" } else { &answer.answer };
                self.user_words(typed, request);
            }
            return;
        }
        let refused = rejection(content);
        let said = match &refused {
            Some(said) => said.clone(),
            None if is_error => refusal_in_own_words(content),
            None => None,
        };
        // The reply names the call it refused: "use the sessionId from the
        // payload" means little without the edit it answered.
        let label = self.calls.get(call_id).map(|call| refused_label(call));
        match (said, label) {
            (Some(said), Some(label)) => {
                let request = format!("{said}{REFUSING}{label})");
                self.user_words(&said, request);
            }
            (Some(said), None) => self.user_words(&said.clone(), said),
            // Refused without a word: the call is the person's "no".
            (None, Some(label)) if refused.is_some() => {
                let line = format!("{label} → {REJECTED}.");
                if !self.digest.progress.contains(&line) {
                    self.digest.progress.push(line);
                }
            }
            (None, _) => {}
        }
    }

    /// Words of the person's from a tool's result: `said` as they wrote it
    /// (for its rules), `request` as the summary lists it.
    fn user_words(&mut self, said: &str, request: String) {
        self.close_turn();
        self.note_rules(said);
        self.cite(&request);
        self.requests.push((request, false));
    }

    /// The rules `text` states, each cited by the message it came from.
    fn note_rules(&mut self, text: &str) {
        let digest = &mut self.digest;
        for rule in rules_in(text) {
            if !self.at.is_empty() {
                let key = super::digest::rule_key(&rule);
                digest.sources.entry(key).or_insert_with(|| self.at.clone());
            }
            if !digest.rules.contains(&rule) {
                digest.rules.push(rule);
            }
        }
    }

    /// Notes the message a request came from (the first time it is made).
    fn cite(&mut self, request: &str) {
        if !self.at.is_empty() {
            let key = super::digest::request_key(request);
            self.digest
                .sources
                .entry(key)
                .or_insert_with(|| self.at.clone());
        }
    }

    fn assistant(&mut self, content: &str, tool_calls: &[ToolCall]) {
        let content = strip_ansi(content);
        let said = !content.trim().is_empty();
        if said {
            for decision in decisions(&content) {
                self.digest.add_decision(decision);
            }
            if plans::proposes_plan(&content) && tool_calls.is_empty() {
                self.proposed = Some(content.to_string());
            }
            self.turn.text = Some(content.to_string());
            self.turn.after = None;
        }
        for call in tool_calls {
            let result = self.results.get(call.id.as_str()).copied();
            self.turn.after = Some(last_action(&self.tools, call, result));
            if let Some(made) = result.filter(|m| !m.is_error_result()).and_then(|m| {
                let command = shell_command(call).map(|c| command_core(&strip_ansi(c)));
                results::produced(command.as_deref(), &call.name, m.text())
            }) {
                if !self.turn.results.contains(&made) {
                    self.turn.results.push(made);
                }
            }
            let approved = result.map(|m| !m.is_error_result() && rejection(m.text()).is_none());
            if let Some(planning) = plans::plan_mode_after(&call.name, approved) {
                self.planning = planning;
            }
            self.digest.citing = result.map(|m| m.id.clone()).filter(|id| !id.is_empty());
            if let Some(plan) = plans::plan_file(&call.name, &call.arguments) {
                self.plan_file = Some(plan.to_string());
            }
            let presented = self.plan_file.as_deref().unwrap_or(&content);
            if !note_plan(&mut self.digest, call, result, presented) {
                let changed = note_call(&mut self.digest, &self.tools, call, result);
                self.turn.files.extend(changed);
            }
        }
        self.turn.worked |= !tool_calls.is_empty();
        self.turn.answered = said && tool_calls.is_empty();
    }

    /// A turn that ended with an answer is where things stand: its outcome
    /// under Progress says it. A turn still under way has a state instead.
    fn finish(mut self) -> Digest {
        let answered = self.turn.answered;
        let asked = answered
            .then(|| self.turn.text.as_deref().and_then(asked))
            .flatten();
        // Where a turn under way stands: its text and what came after it;
        // and, whatever the turn, plan mode at the cut.
        let planning = self.planning.then(|| PLANNING.to_string());
        let said = (!answered)
            .then(|| self.turn.text.as_deref().and_then(state))
            .flatten();
        let after = (!answered)
            .then(|| {
                self.turn
                    .after
                    .as_ref()
                    .map(|a| format!("Last action: {a}."))
            })
            .flatten();
        let parts: Vec<String> = [planning, said, after].into_iter().flatten().collect();
        self.digest.state = (!parts.is_empty()).then(|| parts.join(" "));
        self.close_turn();
        let mut digest = self.digest;
        digest.citing = None;
        digest.errors.retain(|e| !e.passed_over());
        digest.latest = self.requests.last().map(|(latest, answered)| Latest {
            request: latest.clone(),
            answered: *answered,
            asked,
        });
        let mut requests = self.requests.into_iter().map(|(request, _)| request);
        digest.task = requests.next().map(|task| {
            let text = task_text(&task);
            let key = super::digest::request_key(&task);
            if let Some(id) = digest.sources.get(&key).cloned() {
                digest.sources.insert(super::digest::request_key(&text), id);
            }
            text
        });
        for request in requests {
            digest.add_request(request);
        }
        digest
    }
}

/// A plan tool's plan (once approved) and a todo tool's task list: `true`
/// when the call was one (the Plan section says what it did).
fn note_plan(digest: &mut Digest, call: &ToolCall, result: Option<&Message>, said: &str) -> bool {
    if let Some(list) = plans::task_list(&call.name, &call.arguments) {
        digest.todos = list;
        return true;
    }
    let answer = result.filter(|m| !m.is_error_result()).map(|m| m.text());
    if let Some(answer) = answer {
        if plans::task_change(&call.name, &call.arguments, answer, &mut digest.todos) {
            return true;
        }
    }
    let Some(plan) = plans::presented_plan(&call.name, &call.arguments, said) else {
        return false;
    };
    let approved = result.is_some_and(|m| !m.is_error_result() && rejection(m.text()).is_none());
    if approved {
        digest.approve_plan(plans::steps(&plan));
    }
    true
}

/// A command the person ran in the agent's shell, with the line of its
/// output that matters: what failed, else its last line.
fn note_shell(digest: &mut Digest, run: crate::conversation::request::ShellRun) {
    let line = match (&run.command, run.output.trim()) {
        (None, "") => return,
        (_, "") => "no output".to_string(),
        (_, output) => test_failure(output).unwrap_or_else(|| error_line(output)),
    };
    let entry = match &run.command {
        Some(command) => format!("`{}`: {line}", clip(&collapse(command), 80)),
        None => format!("(output) {line}"),
    };
    match digest.shell.last_mut() {
        // The output of the command just listed.
        Some(last) if run.command.is_none() && last.ends_with(": no output") => {
            *last = format!("{}: {line}", last.trim_end_matches(": no output"));
        }
        _ => digest.shell.push(entry),
    }
}

/// The turn under way: its last assistant text, whether that text ended
/// it (no tool call after it), whether it used any tool.
#[derive(Debug, Default)]
struct Turn {
    text: Option<String>,
    answered: bool,
    worked: bool,
    /// Files the turn changed.
    files: Vec<String>,
    /// The last action after its last text, with what came of it: where
    /// things stand when the turn is cut mid-work.
    after: Option<String>,
    /// What its actions produced.
    results: Vec<results::Produced>,
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
        clip_ends(&typed_part(request), LONG_TASK_CHARS)
    }
}

/// A turn ended: what its last assistant text says was achieved. Only a
/// turn that did some work (used a tool) and ended with an answer counts:
/// an interrupted one ends mid-work, and a conversational answer is not
/// progress.
/// The request the turn answered is marked so.
fn close_turn(digest: &mut Digest, turn: Turn, requests: &mut [(String, bool)]) {
    if let Some((_, answered)) = requests.last_mut() {
        *answered |= turn.answered;
    }
    if !(turn.answered && turn.worked) {
        // A turn cut mid-work or interrupted still produced what it did.
        if let Some(made) = produced_line(&turn.results, "") {
            push_progress(digest, made);
        }
        return;
    }
    let said = turn.text.as_deref().and_then(outcome);
    let outcome = match (said, changed(&turn.files)) {
        // "I have successfully completed the refactoring": say what.
        (Some(line), Some(files)) if vague(&line) => {
            Some(format!("{} (changed {files})", line.trim_end_matches('.')))
        }
        (Some(line), _) => Some(line),
        (None, files) => files.map(|f| format!("Changed {f}.")),
    };
    let outcome = match outcome {
        Some(line) => Some(produced_line(&turn.results, &line).unwrap_or(line)),
        None => produced_line(&turn.results, ""),
    };
    if let Some(outcome) = outcome {
        push_progress(digest, outcome);
    }
}

fn push_progress(digest: &mut Digest, outcome: String) {
    if digest.progress.last() != Some(&outcome) {
        digest.progress.push(outcome);
    }
}

/// A turn's outcome line (`said`, maybe empty) with what its actions
/// produced that it does not already name; `None` when there is nothing
/// to add.
fn produced_line(results: &[results::Produced], said: &str) -> Option<String> {
    let new: Vec<&str> = results
        .iter()
        .filter(|r| !said.contains(&r.key))
        .map(|r| r.line.as_str())
        .collect();
    let kept = &new[new.len().saturating_sub(RESULTS_KEPT)..];
    match (kept.is_empty(), said.is_empty()) {
        (true, _) => None,
        (false, true) => Some(format!("Results: {}.", kept.join("; "))),
        (false, false) => Some(format!(
            "{} (results: {}).",
            said.trim_end_matches('.'),
            kept.join("; ")
        )),
    }
}

/// What a turn's actions produced, the newest, listed at most.
const RESULTS_KEPT: usize = 4;

/// "a.rs, b.rs" (file names, the first five).
fn changed(files: &[String]) -> Option<String> {
    let mut names: Vec<&str> = Vec::new();
    for file in files {
        let name = file.rsplit('/').next().unwrap_or(file);
        if !names.contains(&name) {
            names.push(name);
        }
    }
    match names.len() {
        0 => None,
        n if n > 5 => Some(format!("{} and {} more", names[..5].join(", "), n - 5)),
        _ => Some(names.join(", ")),
    }
}

/// A claim of success that names nothing ("I have successfully completed
/// the comprehensive refactoring"): no file, code, identifier or number.
fn vague(line: &str) -> bool {
    const CLAIMS: [&str; 8] = [
        "success",
        "complete",
        "done",
        "finished",
        "all the changes",
        "the changes",
        "as requested",
        "everything",
    ];
    let lower = line.to_lowercase();
    !names_something(line) && CLAIMS.iter().any(|c| lower.contains(c))
}

/// Text that names a file, code, identifier or number.
fn names_something(text: &str) -> bool {
    text.contains('`')
        || text.split_whitespace().any(|w| {
            let w = w.trim_matches(|c: char| !c.is_alphanumeric());
            w.contains(['.', '_', '/', ':'])
                || w.chars().any(|c| c.is_ascii_digit())
                || w.chars().skip(1).any(char::is_uppercase)
        })
}

/// One tool call and its result, into files, commands, tools and errors;
/// the files it changed. A call the person refused is no failure: it did
/// not run, and the summary says they rejected it.
fn note_call(
    digest: &mut Digest,
    tools: &FileTools,
    call: &ToolCall,
    result: Option<&Message>,
) -> Vec<String> {
    let outcome = call_outcome(call, result);
    let ops = file_ops(tools, call);
    let mut changed = Vec::new();
    for (op, path) in ops.iter().filter(|(op, _)| op.is_modification()) {
        note_file(digest, &call.name, *op, path, &outcome);
        if outcome == Outcome::Ok {
            changed.push(path.clone());
        }
    }
    if !ops.is_empty() {
        if changed.is_empty() && !ops.iter().any(|(op, _)| op.is_modification()) {
            // A read the file sections list.
            count(&mut digest.tools, &call.name);
        }
        return changed;
    }
    if let Some(command) = shell_command(call) {
        // Not every agent marks a failing test run as an error; where one
        // does, the line that names the failing test says most.
        let tests = runs_tests(&command_core(command));
        let outcome = match (&outcome, result) {
            (Outcome::Ok, Some(m)) if tests => {
                test_failure(m.text()).map_or(Outcome::Ok, Outcome::Failed)
            }
            (Outcome::Failed(line), Some(m)) if tests => {
                Outcome::Failed(test_failure(m.text()).unwrap_or(line.clone()))
            }
            _ => outcome,
        };
        if outcome == Outcome::Ok && command_core(command).contains("git commit") {
            if let Some((hash, _)) = result.and_then(|m| results::commit(m.text())) {
                digest.note_commit(hash);
            }
        }
        note_command(digest, command, &outcome);
        return changed;
    }
    count(&mut digest.tools, &call.name);
    if let (Some(path), Outcome::Ok) = (read_elsewhere(call), &outcome) {
        if !digest.also_read.contains(&path) {
            digest.also_read.push(path);
        }
    }
    settle(digest, call.name.clone(), &outcome);
    changed
}

/// What came of a call, by its result.
fn call_outcome(call: &ToolCall, result: Option<&Message>) -> Outcome {
    match result {
        None => Outcome::NoResult,
        Some(m) if rejection(m.text()).is_some() => Outcome::Rejected,
        Some(m) if m.is_error_result() && refusal_in_own_words(m.text()).is_some() => {
            Outcome::Rejected
        }
        // Stopped by the person: it did not finish.
        Some(m) if m.text().contains(INTERRUPTION) => Outcome::NoResult,
        Some(m) if m.is_error_result() && stops_what_had_stopped(call, m.text()) => Outcome::Ok,
        Some(m) if m.is_error_result() => Outcome::Failed(error_line(m.text())),
        Some(_) => Outcome::Ok,
    }
}

/// A call that stops a background shell or process "failed" because it
/// had already stopped (Claude Code's `KillShell`: "Shell … is not
/// running"): what it was for is done, nothing is open.
fn stops_what_had_stopped(call: &ToolCall, output: &str) -> bool {
    let name = call.name.to_lowercase();
    let stops = name.contains("kill") || name.contains("stop");
    let output = output.to_lowercase();
    stops
        && [
            "is not running",
            "no such process",
            "already stopped",
            "already exited",
        ]
        .iter()
        .any(|s| output.contains(s))
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
            digest.errors.retain(|e| !same_work(&e.key, &key));
            if let Some(id) = digest.citing.clone() {
                digest.sources.insert(super::digest::error_key(&key), id);
            }
            digest.errors.push(OpenError::new(key, line.clone()));
        }
        Outcome::Ok => {
            digest.errors.retain(|e| !same_work(&e.key, &key));
            for error in &mut digest.errors {
                error.successes_after += 1;
            }
            if !digest.succeeded.contains(&key) {
                digest.succeeded.push(key);
            }
        }
        Outcome::NoResult | Outcome::Rejected => {}
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
        // The file is as it was; the agent should know it was turned down.
        Outcome::Rejected => note.status = Some(CHANGE_REJECTED.to_string()),
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
        close_parts(digest, &core);
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

/// Each command of a chain that succeeded (`git add . && git commit -m
/// v1`) succeeded: it answers an earlier failure of its own (`git commit
/// -m v1` alone).
fn close_parts(digest: &mut Digest, core: &str) {
    if !core.contains("&&") {
        return;
    }
    for part in core.split("&&").map(str::trim).filter(|p| !p.is_empty()) {
        let part = clip(part, 80);
        digest.errors.retain(|e| !same_work(&e.key, &part));
        if !digest.succeeded.contains(&part) {
            digest.succeeded.push(part);
        }
    }
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
        Outcome::NoResult | Outcome::Rejected => return,
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
    // Openers say the agent is about to tell something, not what: "I see
    // the issue.", "Now I have a complete picture.", "Based on the diff,
    // here's what these methods do." (a longer sentence that opens so
    // usually goes on to say it).
    const OPENERS: [&str; 14] = [
        "i see",
        "i understand",
        "i can see",
        "i can now",
        "now i have",
        "now i can",
        "now i see",
        "now i understand",
        "this is very",
        "this is revealing",
        "this is interesting",
        "interesting",
        "looking at",
        "got it",
    ];
    // What the agent's client said in its place (a usage limit).
    const NOTICES: [&str; 2] = ["you're out of extra usage", "you've hit your limit"];
    let lower = sentence.to_lowercase();
    let words = sentence.split_whitespace().count();
    let opener = words <= 7 && OPENERS.iter().any(|p| lower.starts_with(p));
    let announces = lower.starts_with("here's ")
        || lower.starts_with("here is ")
        || (lower.starts_with("based on ") && lower.contains("here's what"));
    opener
        || announces
        || NOTICES.iter().any(|n| lower.starts_with(n))
        || words <= 3
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

/// A short sentence that names nothing: no code, path, identifier or
/// number, and no verb saying what was done ("The bug is in the design.",
/// "Good catch on both points.").
fn thin(sentence: &str) -> bool {
    let words: Vec<&str> = sentence.split_whitespace().collect();
    let verb = words.first().is_some_and(|w| {
        ACHIEVED.contains(
            &w.to_lowercase()
                .trim_matches(|c: char| !c.is_alphanumeric()),
        )
    });
    words.len() <= 6 && !verb && !names_something(sentence)
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
    // What says what was done and names something, else what names
    // something, else what says what was done: never a sentence that
    // names nothing ("Good catch on both points.", "I think I found it.")
    // when the turn said more.
    let chosen = sentences
        .iter()
        .position(|(s, _)| says_achieved(s) && !thin(s))
        .or_else(|| sentences.iter().position(|(s, _)| !thin(s)))
        .or_else(|| sentences.iter().position(|(s, _)| says_achieved(s)))?;
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

/// The question an answer ends with ("Should I also update the docs?"):
/// the person has it to answer, so it is the next step.
fn asked(text: &str) -> Option<String> {
    let last = prose(text).into_iter().map(|(s, _)| s).next_back()?;
    (last.ends_with('?') && last.split_whitespace().count() >= 3)
        .then(|| clip(&last, ACTION_CHARS * 2))
}

/// A call in a few words: its command (`` `git push` ``), else its tool
/// and what it acts on ("Write public/icon.svg").
fn call_label(call: &ToolCall) -> String {
    match shell_command(call) {
        Some(command) => format!("`{}`", clip(&collapse(&strip_ansi(command)), ACTION_CHARS)),
        None => {
            let target = ["file_path", "path", "url", "pattern", "query", "subject"]
                .iter()
                .find_map(|k| call.arguments.get(*k).and_then(|v| v.as_str()));
            match target {
                Some(target) => format!("{} {}", call.name, clip(target, ACTION_CHARS)),
                None => call.name.clone(),
            }
        }
    }
}

/// A refused call, short enough to follow the person's reply: its
/// command's first line, else its tool and the file's last two path parts
/// (`Edit strategy/common.go`).
fn refused_label(call: &ToolCall) -> String {
    match shell_command(call) {
        Some(command) => {
            let first = strip_ansi(command.lines().next().unwrap_or_default());
            format!("`{}`", clip(first.trim(), 60))
        }
        None => {
            let target = ["file_path", "path", "url", "pattern", "subject"]
                .iter()
                .find_map(|k| call.arguments.get(*k).and_then(|v| v.as_str()));
            match target {
                Some(t) => format!("{} {}", call.name, clip(short_path(t), 60)),
                None => call.name.clone(),
            }
        }
    }
}

/// A path's last two parts (`strategy/common.go`), enough to tell which
/// file in a line about it.
fn short_path(path: &str) -> &str {
    let mut slashes = path.rmatch_indices('/').map(|(i, _)| i);
    match (slashes.next(), slashes.next()) {
        (Some(_), Some(before)) => &path[before + 1..],
        _ => path,
    }
}

/// A call and what came of it, in a line: "`cargo test` → test result:
/// ok. 12 passed", "Edit src/a.rs → failed: …", "`git push` → no result".
fn last_action(tools: &FileTools, call: &ToolCall, result: Option<&Message>) -> String {
    let what = call_label(call);
    let came = match (call_outcome(call, result), result) {
        (Outcome::Rejected, _) => REJECTED.to_string(),
        (Outcome::Failed(line), _) => format!("failed: {line}"),
        (Outcome::NoResult, Some(_)) => "interrupted by the user".to_string(),
        (Outcome::NoResult, None) => "no result".to_string(),
        // An error that means it was done already.
        (Outcome::Ok, Some(m)) if m.is_error_result() => "done".to_string(),
        (Outcome::Ok, m) => {
            let text = strip_ansi(m.map(Message::text).unwrap_or_default());
            let text = without_blocks(&text, &HARNESS_BLOCKS);
            let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
            // A command's last line says how it ended ("PASS", a commit);
            // another tool's result only when it is one line ("Created
            // issue ABC-228"), not a file's contents.
            let command = shell_command(call).map(|c| command_core(&strip_ansi(c)));
            // What a search or a listing printed is no outcome either, and
            // a file tool's "Successfully replaced text" says no more.
            let looked = command.as_deref().is_some_and(|c| read_only(c).is_some())
                || !file_ops(tools, call).is_empty()
                || plans::task_list(&call.name, &call.arguments).is_some();
            match (command, lines.clone().count()) {
                (_, 0) => "done, no output".to_string(),
                (_, _) if looked => "done".to_string(),
                (Some(_), _) => clip(lines.next_back().unwrap_or_default(), ACTION_CHARS),
                (None, 1) => clip(lines.next().unwrap_or_default(), ACTION_CHARS),
                (None, _) => "done".to_string(),
            }
        }
    };
    format!("{what} → {came}")
}

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

/// An answer to the agent's question as a decision: an option the person
/// chose, or what they answered in their own words.
fn answer_decision(answer: &Answer) -> String {
    let how = if answer.offered { "chose" } else { "answered" };
    format!(
        "User {how} \"{}\" ({})",
        clip(&answer.answer, OUTCOME_CHARS),
        clip(&answer.question, OUTCOME_CHARS)
    )
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
