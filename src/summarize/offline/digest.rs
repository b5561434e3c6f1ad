//! The offline summary as data: what it holds, how it reads (Markdown
//! sections of one-line entries), how a later compaction reads it back and
//! merges newer parts into it, and how it shrinks to a token budget by
//! dropping the least important entries first.

use std::collections::BTreeMap;

use crate::compaction::retention::carries_request;
use crate::tokens::Encoding;

/// Characters of the latest request quoted under the next step: more than
/// the 200 by which the retention check knows it.
const NEXT_CHARS: usize = 260;
const CONTINUE: &str = "Continue with the latest request: ";
const ANSWERED: &str = "The latest request ";
const GO_ON: &str = "continue with the messages that follow";
/// The next step when the agent's last answer asked the person something.
/// (The summary ends there; the person's reply may follow it.)
const AWAIT: &str = "Act on the user's reply to the agent's last question, or wait for it: ";

pub(super) const TASK: &str = "Task";
pub(super) const REQUESTS: &str = "Later requests";
pub(super) const RULES: &str = "User rules";
pub(super) const EARLIER: &str = "Earlier summary";
pub(super) const PROGRESS: &str = "Progress";
pub(super) const DECISIONS: &str = "Decisions and findings";
pub(super) const FILES: &str = "Files changed";
pub(super) const COMMANDS: &str = "Commands";
pub(super) const ERRORS: &str = "Errors still open";
pub(super) const PINNED: &str = "Kept verbatim";
pub(super) const PLAN: &str = "Plan";
/// How a request that answered the agent's question names the question,
/// and one typed when refusing a call names the call: the person's words
/// through a tool's result, which an agent's own summary tends to drop.
pub(super) const ASKED: &str = " (asked: ";
pub(super) const REFUSING: &str = " (refusing ";

/// The Plan section's line naming the commit made since its approval.
const COMMITTED_SINCE: &str = "Committed since this plan was approved: ";
pub(super) const SHELL: &str = "User's shell commands";
pub(super) const STATE: &str = "Current state";
pub(super) const NEXT: &str = "Next step";
pub(super) const FOCUS: &str = "Focus";

/// Openings of assistant sentences that state a decision or a finding.
pub(super) const DECIDES: [&str; 19] = [
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

/// What happened to one file.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct FileNote {
    pub path: String,
    pub created: bool,
    pub deleted: bool,
    /// Whole-file writes.
    pub writes: u32,
    pub edits: u32,
    /// The latest failed change or test run that names it, if it was not
    /// followed by a success.
    pub status: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Outcome {
    Ok,
    Failed(String),
    NoResult,
    /// The person refused the call: it did not run.
    Rejected,
}

impl Outcome {
    /// How a command's last run ended, when it did not fail.
    fn said(&self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Rejected => REJECTED,
            Outcome::NoResult | Outcome::Failed(_) => "no result",
        }
    }

    fn from_said(said: &str) -> Option<Outcome> {
        match said {
            "ok" => Some(Outcome::Ok),
            REJECTED => Some(Outcome::Rejected),
            "no result" => Some(Outcome::NoResult),
            _ => None,
        }
    }
}

/// What the summary says of a call the person refused.
pub(super) const REJECTED: &str = "rejected by the user";

/// Runs of one shell command.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct CommandNote {
    pub command: String,
    pub runs: u32,
    pub failures: u32,
    /// What the first failure said.
    pub first_error: Option<String>,
    pub last: Outcome,
}

/// The latest request of the part summarized, and whether the turn it
/// opened ended with an answer.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Latest {
    pub request: String,
    pub answered: bool,
    /// The question the answer ended with, for the person to answer.
    pub asked: Option<String>,
}

/// A failure no later success answered.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct OpenError {
    /// The command, or the tool and the file, that failed.
    pub key: String,
    pub line: String,
    /// Requests the person made, and calls that succeeded, since it
    /// failed: a failure the session went well past was abandoned.
    pub requests_after: usize,
    pub successes_after: usize,
}

impl OpenError {
    pub fn new(key: String, line: String) -> OpenError {
        OpenError {
            key,
            line,
            requests_after: 0,
            successes_after: 0,
        }
    }

    /// The person moved on to other requests and the work went on without
    /// it: not open any more, whatever became of it.
    pub fn passed_over(&self) -> bool {
        self.requests_after >= PASSED_REQUESTS && self.successes_after >= PASSED_SUCCESSES
    }
}

/// How far the session must go past a failure before it no longer counts
/// as open: two requests of the person, five calls that succeeded.
pub(super) const PASSED_REQUESTS: usize = 2;
pub(super) const PASSED_SUCCESSES: usize = 5;

#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Digest {
    /// The first request, as the person wrote it (line breaks kept).
    pub task: Option<String>,
    /// Later requests that say something new, one line each.
    pub requests: Vec<String>,
    pub requests_omitted: usize,
    /// Short follow-ups ("continue", "ok") and questions, counted.
    pub follow_ups: usize,
    pub rules: Vec<String>,
    /// Lines of a previous summary in another format (an LLM's, pi's).
    pub earlier: Vec<String>,
    pub progress: Vec<String>,
    pub progress_omitted: usize,
    pub decisions: Vec<String>,
    pub decisions_omitted: usize,
    pub files: Vec<FileNote>,
    /// Files read by tools the shipped mapping does not know (the file
    /// sections list the others).
    pub also_read: Vec<String>,
    pub commands: Vec<CommandNote>,
    /// Read-only shell commands and other tools, by name, with counts.
    pub looked: Vec<(String, u32)>,
    pub tools: Vec<(String, u32)>,
    /// Commands that ran once, ok, no longer listed by name.
    pub quiet_commands: usize,
    pub errors: Vec<OpenError>,
    /// Keys that succeeded in this part: they close older open errors.
    pub succeeded: Vec<String>,
    pub pinned: Vec<String>,
    /// The approved plan: its title and steps.
    pub plan: Vec<String>,
    /// The commit made since the plan was approved (its short hash).
    pub plan_commit: Option<String>,
    /// The last commit made in this part of the conversation.
    pub last_commit: Option<String>,
    /// The newest task list, each item marked with its state.
    pub todos: Vec<String>,
    /// Commands the person ran in the agent's shell, with what their
    /// output said.
    pub shell: Vec<String>,
    pub state: Option<String>,
    pub latest: Option<Latest>,
    /// The next step of a summary read back (its request is above it).
    pub next: Option<String>,
    pub focus: Option<String>,
    /// Where the task, each request and each open error came from: the id
    /// of the message (`r:<request>`, `e:<error key>`), rendered after the
    /// entry as `[id]` so an agent can read the message back
    /// (`conversation/messages`, `compactd mcp`).
    pub sources: BTreeMap<String, String>,
    /// The message whose tool result is being read (extraction only).
    pub citing: Option<String>,
}

impl Digest {
    /// Adds what a later part of the conversation says. The newer part's
    /// first request is the task only when nothing came before it.
    pub fn absorb(&mut self, newer: Digest) {
        let empty = *self == Digest::default();
        let requests = newer.requests.len() + newer.follow_ups + usize::from(newer.task.is_some());
        match newer.task {
            Some(task) if empty || self.task.is_none() && self.earlier.is_empty() => {
                self.task = Some(task)
            }
            Some(task) => self.add_request(task),
            None => {}
        }
        for request in newer.requests {
            self.add_request(request);
        }
        self.requests_omitted += newer.requests_omitted;
        self.follow_ups += newer.follow_ups;
        extend_unique(&mut self.rules, newer.rules);
        extend_unique(&mut self.pinned, newer.pinned);
        for (entry, id) in newer.sources {
            self.sources.entry(entry).or_insert(id);
        }
        self.earlier.extend(newer.earlier);
        append_log(&mut self.progress, newer.progress);
        self.progress_omitted += newer.progress_omitted;
        for decision in newer.decisions {
            self.add_decision(decision);
        }
        self.decisions_omitted += newer.decisions_omitted;
        if !newer.plan.is_empty() {
            self.plan = newer.plan;
            self.plan_commit = newer.plan_commit;
        } else if !self.plan.is_empty() && newer.last_commit.is_some() {
            self.plan_commit = newer.last_commit.clone();
        }
        self.last_commit = newer.last_commit.or(self.last_commit.take());
        super::plans::merge_tasks(&mut self.todos, newer.todos);
        append_log(&mut self.shell, newer.shell);
        let drop = self.shell.len().saturating_sub(SHELL_KEPT);
        self.shell.drain(..drop);
        for file in newer.files {
            self.add_file(file);
        }
        extend_unique(&mut self.also_read, newer.also_read);
        for command in newer.commands {
            self.add_command(command);
        }
        add_counts(&mut self.looked, newer.looked);
        self.quiet_commands += newer.quiet_commands;
        add_counts(&mut self.tools, newer.tools);
        self.close_errors_done_in(&newer.succeeded);
        // The newer part went well past the older failures.
        if requests >= PASSED_REQUESTS && newer.succeeded.len() >= PASSED_SUCCESSES {
            self.errors.clear();
        }
        for error in newer.errors {
            self.errors.retain(|e| !same_work(&e.key, &error.key));
            self.errors.push(error);
        }
        extend_unique(&mut self.succeeded, newer.succeeded);
        self.state = newer.state.or(self.state.take());
        if newer.latest.is_some() || newer.next.is_some() {
            self.latest = newer.latest;
            self.next = newer.next;
        }
        self.focus = newer.focus;
    }

    /// What an agent's own summary (read back as `earlier` lines) tends to
    /// drop, taken from the messages it replaced (`replaced`, their
    /// digest): the task, the rules, the approved plan and the task list.
    /// The rest of those messages is the agent's summary's to tell.
    pub fn recover(&mut self, replaced: Digest) {
        self.recover_words_through_tools(&replaced);
        if self.task.is_none() {
            if let Some(task) = &replaced.task {
                let key = request_key(task);
                if let Some(id) = replaced.sources.get(&key) {
                    self.sources.entry(key).or_insert_with(|| id.clone());
                }
            }
            self.task = replaced.task;
        }
        for rule in &replaced.rules {
            let key = rule_key(rule);
            if let Some(id) = replaced.sources.get(&key) {
                self.sources.entry(key).or_insert_with(|| id.clone());
            }
        }
        extend_unique(&mut self.rules, replaced.rules.clone());
        if self.plan.is_empty() {
            self.plan = replaced.plan;
            self.plan_commit = replaced.plan_commit;
        }
        if self.todos.is_empty() {
            self.todos = replaced.todos;
        }
    }

    /// The person's words through tools' results (answers to the agent's
    /// questions, replies refusing a call) and the calls refused without a
    /// word, from messages an agent's own summary replaced.
    fn recover_words_through_tools(&mut self, replaced: &Digest) {
        let through_a_tool = |r: &&String| r.contains(ASKED) || r.contains(REFUSING);
        for request in replaced.requests.iter().filter(through_a_tool) {
            if let Some(id) = replaced.sources.get(&request_key(request)) {
                self.sources
                    .entry(request_key(request))
                    .or_insert_with(|| id.clone());
            }
            self.add_request(request.clone());
        }
        let refused = format!("→ {REJECTED}.");
        for line in replaced.progress.iter().filter(|p| p.ends_with(&refused)) {
            if !self.progress.contains(line) {
                self.progress.push(line.clone());
            }
        }
    }

    /// Failures that work which succeeded later (`succeeded`, keys) did
    /// again: a retry that worked answers them.
    fn close_errors_done_in(&mut self, succeeded: &[String]) {
        self.errors
            .retain(|e| !succeeded.iter().any(|k| same_work(k, &e.key)));
    }

    /// What the messages kept verbatim after the summary (`later`, their
    /// digest) show of what this one calls open: a failure retried there
    /// with success, and a change to a file that failed and then worked
    /// there, are not open; nor a failure the session went well past
    /// (counting those messages). The summary itself says nothing of them:
    /// they are read right after it.
    pub fn settle_by(&mut self, later: &Digest) {
        self.close_errors_done_in(&later.succeeded);
        let requests = later.requests.len() + later.follow_ups + usize::from(later.task.is_some());
        for error in &mut self.errors {
            error.requests_after += requests;
            error.successes_after += later.succeeded.len();
        }
        self.errors.retain(|e| !e.passed_over());
        for file in &mut self.files {
            let changed_later = later
                .files
                .iter()
                .any(|f| f.path == file.path && f.status.is_none());
            if changed_later
                && file
                    .status
                    .as_deref()
                    .is_some_and(|s| s.starts_with(CHANGE_FAILED))
            {
                file.status = None;
            }
        }
    }

    /// A request after the task: listed when it says something new (not
    /// the task again, nor a request already listed), else counted as a
    /// follow-up.
    pub fn add_request(&mut self, request: String) {
        if super::wording::substantial(&request) {
            let line = super::wording::request_line(&request);
            if let Some(id) = self.sources.get(&request_key(&request)).cloned() {
                self.sources.entry(request_key(&line)).or_insert(id);
            }
            if !self.requests.contains(&line) && self.task.as_deref() != Some(&request) {
                self.requests.push(line);
            }
        } else {
            self.follow_ups += 1;
        }
    }

    /// A decision or finding; one that answers the same question as an
    /// earlier one ("The issue is A", later "The issue is B") replaces it:
    /// the session moved on from the earlier guess.
    pub fn add_decision(&mut self, decision: String) {
        let question = |d: &str| {
            let lower = d.to_lowercase();
            DECIDES
                .iter()
                .find(|o| lower.starts_with(*o))
                .map(|o| o.trim().trim_end_matches(':').to_string())
        };
        if let Some(asked) = question(&decision) {
            self.decisions
                .retain(|d| question(d).as_deref() != Some(asked.as_str()));
        }
        if self.decisions.last() != Some(&decision) {
            self.decisions.push(decision);
        }
    }

    /// Keeps the newest `progress` outcomes and `decisions`, counting the
    /// rest.
    pub fn keep_newest_logs(&mut self, progress: usize, decisions: usize) {
        keep_newest(&mut self.progress, &mut self.progress_omitted, progress);
        keep_newest(&mut self.decisions, &mut self.decisions_omitted, decisions);
    }

    pub fn add_file(&mut self, note: FileNote) {
        let Some(old) = self.files.iter_mut().find(|f| f.path == note.path) else {
            self.files.push(note);
            return;
        };
        old.created |= note.created && !old.deleted;
        old.deleted = note.deleted || (old.deleted && note.writes + note.edits == 0);
        old.writes += note.writes;
        old.edits += note.edits;
        old.status = note.status.or(old.status.take());
    }

    pub fn add_command(&mut self, note: CommandNote) {
        let Some(old) = self.commands.iter_mut().find(|c| c.command == note.command) else {
            self.commands.push(note);
            return;
        };
        old.runs += note.runs;
        old.failures += note.failures;
        old.first_error = old.first_error.take().or(note.first_error);
        old.last = note.last;
    }
}

/// Shell commands the person ran that the summary keeps (the newest).
const SHELL_KEPT: usize = 6;

/// Two failures or successes are of the same work: the same file or
/// command, or runs of one command family (`git commit -m a` and `git
/// commit --no-gpg-sign -m b`, `pytest tests/a.py` and `pytest`), so a
/// retry that succeeded closes the failure before it.
pub(super) fn same_work(a: &str, b: &str) -> bool {
    a == b || command_family(a).is_some_and(|f| command_family(b) == Some(f))
}

/// A command's program and, for a program of subcommands, the
/// subcommand: `cargo test`, `git commit`, `npm run build`, `pytest`.
/// Variables set in front and runners (`uv run`, `npx`, `python -m`)
/// are skipped. `None` for what is no command (a file path).
pub(super) fn command_family(command: &str) -> Option<String> {
    const RUNNERS: [&str; 10] = [
        "uv run",
        "poetry run",
        "pnpm exec",
        "bundle exec",
        "npx",
        "bunx",
        "python -m",
        "python3 -m",
        "sudo",
        "time",
    ];
    const SUBCOMMANDS: [&str; 14] = [
        "git", "cargo", "npm", "pnpm", "yarn", "go", "uv", "docker", "kubectl", "gh", "bun",
        "deno", "make", "dotnet",
    ];
    let mut rest = command.trim();
    if rest.contains('\n') || (rest.starts_with(['/', '.', '~']) && !rest.contains(' ')) {
        return None;
    }
    loop {
        let before = rest;
        while let Some((word, after)) = rest.split_once(' ') {
            if !word.contains('=') || word.starts_with('-') {
                break;
            }
            rest = after.trim_start();
        }
        for runner in RUNNERS {
            if let Some(after) = rest.strip_prefix(runner).filter(|a| a.starts_with(' ')) {
                rest = after.trim_start();
            }
        }
        if rest == before {
            break;
        }
    }
    let mut words = rest.split_whitespace();
    let program = words.next()?;
    let program = program.rsplit('/').next().unwrap_or(program);
    if !SUBCOMMANDS.contains(&program) {
        return Some(program.to_string());
    }
    let sub: Vec<&str> = words.filter(|w| !w.starts_with('-')).take(2).collect();
    Some(match sub.as_slice() {
        ["run", script, ..] => format!("{program} run {script}"),
        [sub, ..] => format!("{program} {sub}"),
        [] => program.to_string(),
    })
}

fn extend_unique(list: &mut Vec<String>, more: Vec<String>) {
    for item in more {
        if !list.contains(&item) {
            list.push(item);
        }
    }
}

/// Appends, skipping an entry equal to the one before it.
fn append_log(list: &mut Vec<String>, more: Vec<String>) {
    for item in more {
        if list.last() != Some(&item) {
            list.push(item);
        }
    }
}

fn add_counts(list: &mut Vec<(String, u32)>, more: Vec<(String, u32)>) {
    for (name, n) in more {
        match list.iter_mut().find(|(k, _)| *k == name) {
            Some((_, count)) => *count += n,
            None => list.push((name, n)),
        }
    }
}

/// "×N" after a count above one.
fn times(n: u32) -> String {
    if n > 1 {
        format!(" ×{n}")
    } else {
        String::new()
    }
}

/// Quoted text; continuation lines indented so that they stay in the entry.
fn quoted(text: &str) -> String {
    let mut out = String::from("\"");
    for (i, line) in text.lines().filter(|l| !l.trim().is_empty()).enumerate() {
        if i > 0 {
            out.push_str("\n  ");
        }
        // A shell line continuation means nothing in a quote.
        out.push_str(line.trim_end().trim_end_matches('\\').trim_end());
    }
    out.push('"');
    out
}

/// The key of a request (or the task) in `sources`.
pub(super) fn request_key(request: &str) -> String {
    // A long request is keyed by its digest, not a copy of it: a message
    // of one 100 MB line was held once more as its own key.
    const LONG: usize = 4096;
    if request.len() <= LONG {
        return format!("r:{request}");
    }
    use sha2::{Digest as _, Sha256};
    let hash = Sha256::digest(request.as_bytes());
    let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    format!("r#{}:{hex}", request.len())
}

/// The key of a user rule in `sources`.
pub(super) fn rule_key(rule: &str) -> String {
    format!("u:{rule}")
}

/// The key of an open error in `sources`.
pub(super) fn error_key(key: &str) -> String {
    format!("e:{key}")
}

/// An entry and the message id it cites (` [id]` at its end: one word, no
/// spaces), as `cited` writes it.
fn split_citation(entry: &str) -> (String, Option<String>) {
    let cited = entry
        .strip_suffix(']')
        .and_then(|rest| rest.rsplit_once(" ["))
        .filter(|(_, id)| !id.is_empty() && !id.contains(char::is_whitespace) && !id.contains('['));
    match cited {
        Some((text, id)) => (text.to_string(), Some(id.to_string())),
        None => (entry.to_string(), None),
    }
}

fn unquoted(text: &str) -> String {
    let text = text.trim();
    let inner = text
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(text);
    inner.to_string()
}

impl FileNote {
    /// `open`: its failed change is listed under the open errors.
    fn render(&self, open: bool) -> String {
        let mut parts = Vec::new();
        if self.created {
            parts.push("created".to_string());
        }
        if self.writes > 0 {
            parts.push(format!("written{}", times(self.writes)));
        }
        if self.edits > 0 {
            parts.push(format!("edited{}", times(self.edits)));
        }
        if self.deleted {
            parts.push("deleted".to_string());
        }
        match &self.status {
            Some(status) if open && status.starts_with(CHANGE_FAILED) => {
                parts.push(format!("{CHANGE_FAILED}, {STILL_OPEN}"))
            }
            other => parts.extend(other.clone()),
        }
        format!("`{}`: {}", self.path, parts.join("; "))
    }

    fn parse(entry: &str) -> Option<FileNote> {
        let rest = entry.strip_prefix('`')?;
        let (path, rest) = rest.split_once("`: ")?;
        let mut note = FileNote {
            path: path.to_string(),
            ..FileNote::default()
        };
        for part in rest.split("; ") {
            match part {
                "created" => note.created = true,
                "deleted" => note.deleted = true,
                _ if part.starts_with("written") => note.writes = count_of(part),
                _ if part.starts_with("edited") => note.edits = count_of(part),
                _ => note.status = Some(part.to_string()),
            }
        }
        Some(note)
    }
}

/// The N of "word ×N" (1 without it).
fn count_of(part: &str) -> u32 {
    part.rsplit_once('×')
        .and_then(|(_, n)| n.trim().parse().ok())
        .unwrap_or(1)
}

/// How a file's status starts when a change to it failed.
pub(super) const CHANGE_FAILED: &str = "last change failed";
/// A file's status when the person refused the last change to it.
pub(super) const CHANGE_REJECTED: &str = "change rejected by the user";

/// What a failure that is still open says instead of its error line (the
/// line is under "Errors still open").
const STILL_OPEN: &str = "still open";

impl CommandNote {
    /// `open`: its failure is listed under the open errors.
    fn render(&self, open: bool) -> String {
        let status = match (&self.last, self.failures) {
            (last @ (Outcome::Ok | Outcome::NoResult | Outcome::Rejected), 0) => {
                last.said().to_string()
            }
            (Outcome::Failed(_), 1) if open => format!("failed, {STILL_OPEN}"),
            (Outcome::Failed(_), n) if open => format!(
                "failed ×{n} (first: {}), {STILL_OPEN}",
                self.first_error.as_deref().unwrap_or("?")
            ),
            (Outcome::Failed(line), 1) => format!("failed: {line}"),
            (Outcome::Failed(line), n) => format!("failed ×{n}, last: {line}"),
            (last, n) => format!(
                "failed{} (first: {}), then {}",
                times(n),
                self.first_error.as_deref().unwrap_or("?"),
                last.said()
            ),
        };
        format!("`{}`{}: {status}", self.command, times(self.runs))
    }

    fn parse(entry: &str) -> Option<CommandNote> {
        let rest = entry.strip_prefix('`')?;
        let end = [rest.find("`: "), rest.find("` ×")]
            .into_iter()
            .flatten()
            .min()?;
        let (command, rest) = (&rest[..end], &rest[end + 1..]);
        let (runs, status) = rest.split_once(": ")?;
        let mut note = CommandNote {
            command: command.to_string(),
            runs: count_of(runs),
            failures: 0,
            first_error: None,
            last: Outcome::Ok,
        };
        if let Some(last) = Outcome::from_said(status) {
            note.last = last;
        } else if let Some(head) = status.strip_suffix(&format!(", {STILL_OPEN}")) {
            let (count, first) = match head.split_once(" (first: ") {
                Some((count, first)) => (count, first.strip_suffix(')')),
                None => (head, None),
            };
            note.failures = count_of(count);
            note.first_error = first.map(str::to_string);
            // The line itself is under the open errors (see `reopen`).
            note.last = Outcome::Failed(String::new());
        } else if let Some(line) = status.strip_prefix("failed: ") {
            note.failures = 1;
            note.last = Outcome::Failed(line.to_string());
        } else if let Some((head, line)) = status.split_once(", last: ") {
            note.failures = count_of(head);
            note.last = Outcome::Failed(line.to_string());
        } else if let Some(rest) = status.strip_prefix("failed") {
            let (count, rest) = rest.split_once(" (first: ")?;
            let (first, then) = rest.rsplit_once("), then ")?;
            note.failures = count_of(count);
            note.first_error = Some(first.to_string());
            note.last = Outcome::from_said(then).unwrap_or(Outcome::Ok);
        }
        Some(note)
    }
}

fn render_counts(label: &str, counts: &[(String, u32)]) -> Option<String> {
    if counts.is_empty() {
        return None;
    }
    let list: Vec<String> = counts
        .iter()
        .map(|(name, n)| format!("{name}{}", times(*n)))
        .collect();
    Some(format!("{label}: {}", list.join(", ")))
}

fn parse_counts(list: &str) -> Vec<(String, u32)> {
    list.split(", ")
        .map(|item| match item.rsplit_once(" ×") {
            Some((name, n)) => (name.to_string(), n.parse().unwrap_or(1)),
            None => (item.to_string(), 1),
        })
        .collect()
}

/// Titles of the offline summaries written before this format, read back
/// when a session compacted by an older compactd is compacted again.
const LEGACY_REQUESTS: &str = "Goals and requests";
const LEGACY_DECISIONS: &str = "Decisions";
const LEGACY_DROPPED: [&str; 2] = ["Errors seen", "Focus requested for this summary"];

const FOLLOW_UP: &str = "… and 1 short follow-up or question";
const FOLLOW_UPS: &str = "short follow-ups or questions";

/// Commands that ran once without trouble, listed by name (the newest).
const ONE_OFFS_LISTED: usize = 5;

const LOOKED: &str = "Read-only commands";
const ALSO_READ: &str = "Also read";
const TOOLS: &str = "Other tools";

impl Digest {
    /// What to do next: continue the latest request, or (when its turn
    /// ended with an answer) go on from the messages after the summary.
    /// A request already quoted above (by the opening the retention check
    /// looks for) is referred to, not repeated.
    fn next_step(&self) -> Option<String> {
        let Some(latest) = &self.latest else {
            return self.next.clone();
        };
        if let Some(question) = &latest.asked {
            return Some(format!("{AWAIT}\"{question}\""));
        }
        let carried =
            |entry: Option<&String>| entry.is_some_and(|e| carries_request(e, &latest.request));
        let above = if carried(self.task.as_ref()) {
            Some("task")
        } else if carried(self.requests.last()) {
            Some("last request")
        } else {
            None
        };
        // What the person typed, not what they pasted with it.
        let quote =
            || super::wording::clip(&super::wording::typed_part(&latest.request), NEXT_CHARS);
        Some(match (above, latest.answered) {
            (Some(which), false) => format!("Continue with the {which} above."),
            (Some(which), true) => format!("The {which} above was answered; {GO_ON}."),
            (None, false) => format!("{CONTINUE}\"{}\"", quote()),
            (None, true) => format!("{ANSWERED}\"{}\" was answered; {GO_ON}.", quote()),
        })
    }

    /// Every rule, even one the task quotes: a later compaction may
    /// shorten the task, and the rules must outlive it.
    fn listed_rules(&self) -> Vec<String> {
        self.rules
            .iter()
            .map(|r| self.cited(quoted(r), &rule_key(r)))
            .collect()
    }

    fn sections(&self) -> Vec<(&'static str, Vec<String>)> {
        let omitted = |n: usize, what: &str| match n {
            0 => None,
            1 => Some(format!(
                "… 1 earlier {} not listed",
                what.trim_end_matches('s')
            )),
            n => Some(format!("… {n} earlier {what} not listed")),
        };
        let follow_ups = match self.follow_ups {
            0 => None,
            1 => Some(FOLLOW_UP.to_string()),
            n => Some(format!("… and {n} {FOLLOW_UPS}")),
        };
        let mut commands = self.command_lines();
        commands.extend(render_counts(LOOKED, &self.looked));
        commands.extend(render_counts(TOOLS, &self.tools));
        vec![
            (TASK, self.task.iter().map(|t| self.request(t)).collect()),
            (
                REQUESTS,
                omitted(self.requests_omitted, "requests")
                    .into_iter()
                    .chain(self.requests.iter().map(|r| self.request(r)))
                    .chain(follow_ups)
                    .collect(),
            ),
            (RULES, self.listed_rules()),
            (PINNED, self.pinned.iter().map(|p| quoted(p)).collect()),
            (PLAN, self.plan_lines()),
            (SHELL, self.shell.clone()),
            (EARLIER, self.earlier.clone()),
            (
                PROGRESS,
                omitted(self.progress_omitted, "outcomes")
                    .into_iter()
                    .chain(self.progress.iter().cloned())
                    .collect(),
            ),
            (
                DECISIONS,
                omitted(self.decisions_omitted, "decisions")
                    .into_iter()
                    .chain(self.decisions.iter().cloned())
                    .collect(),
            ),
            (
                FILES,
                self.files
                    .iter()
                    .map(|f| f.render(self.errors.iter().any(|e| e.key == f.path)))
                    .chain(
                        (!self.also_read.is_empty())
                            .then(|| format!("{ALSO_READ}: {}", self.also_read.join(", "))),
                    )
                    .collect(),
            ),
            (COMMANDS, commands),
            (ERRORS, self.errors.iter().map(|e| self.error(e)).collect()),
            (STATE, self.state.iter().cloned().collect()),
            (NEXT, self.next_step().into_iter().collect()),
            (FOCUS, self.focus.iter().cloned().collect()),
        ]
    }

    /// Later requests shortened to `chars` (beginning and end kept), each
    /// still citing its message.
    fn clip_requests(&mut self, chars: usize) {
        for i in 0..self.requests.len() {
            let clipped = super::wording::clip_ends(&self.requests[i], chars);
            if clipped == self.requests[i] {
                continue;
            }
            if let Some(id) = self.sources.get(&request_key(&self.requests[i])).cloned() {
                self.sources.insert(request_key(&clipped), id);
            }
            self.requests[i] = clipped;
        }
    }

    /// The approved plan and the task list; a list whose every item is
    /// done is one line saying the work is finished, and the plan it
    /// carried out one line saying so (with the commit made since):
    /// neither is presented as current. A plan still under way says the
    /// commit made since it was approved.
    fn plan_lines(&self) -> Vec<String> {
        let commit = self.plan_commit.as_deref();
        match super::plans::finished(&self.todos) {
            Some(finished) if self.plan.is_empty() => vec![finished],
            Some(finished) => vec![finished, super::plans::carried_out(&self.plan, commit)],
            None => {
                let since = commit
                    .filter(|_| !self.plan.is_empty())
                    .map(|c| format!("{COMMITTED_SINCE}{c}"));
                since
                    .into_iter()
                    .chain(self.plan.iter().cloned())
                    .chain(self.todos.iter().cloned())
                    .collect()
            }
        }
    }

    /// A plan the user approved: the commit made before it is not its.
    pub fn approve_plan(&mut self, steps: Vec<String>) {
        self.plan = steps;
        self.plan_commit = None;
    }

    /// A commit made (its short hash): the approved plan's, when there is
    /// one.
    pub fn note_commit(&mut self, hash: String) {
        if !self.plan.is_empty() {
            self.plan_commit = Some(hash.clone());
        }
        self.last_commit = Some(hash);
    }

    /// `entry` with the id of the message it came from, when known.
    fn cited(&self, entry: String, key: &str) -> String {
        match self.sources.get(key) {
            Some(id) => format!("{entry} [{}]", crate::conversation::short_id(id)),
            None => entry,
        }
    }

    /// A request (or the task), quoted and cited.
    fn request(&self, request: &str) -> String {
        self.cited(quoted(request), &request_key(request))
    }

    /// An open error, cited.
    fn error(&self, error: &OpenError) -> String {
        let entry = format!("`{}`: {}", error.key, error.line);
        self.cited(entry, &error_key(&error.key))
    }

    /// Commands that ran more than once or failed, and the newest few that
    /// ran once without trouble; the other ones only counted.
    fn command_lines(&self) -> Vec<String> {
        let once_ok = |c: &&CommandNote| c.runs == 1 && c.failures == 0 && c.last == Outcome::Ok;
        let quiet = self.commands.iter().filter(once_ok).count();
        let mut skip = quiet.saturating_sub(ONE_OFFS_LISTED);
        let mut lines = Vec::new();
        for command in &self.commands {
            if skip > 0 && once_ok(&command) {
                skip -= 1;
                continue;
            }
            let open = self.errors.iter().any(|e| e.key == command.command);
            lines.push(command.render(open));
        }
        let hidden = quiet.saturating_sub(ONE_OFFS_LISTED) + self.quiet_commands;
        if hidden > 0 {
            lines.push(format!("… {hidden} other commands ran once, ok"));
        }
        lines
    }

    /// The digest as Markdown, every entry in full.
    pub fn render_all(&self) -> String {
        let mut out = String::new();
        for (title, entries) in self.sections() {
            if entries.is_empty() {
                continue;
            }
            out.push_str(&format!("## {title}\n"));
            for entry in entries {
                if title == EARLIER {
                    out.push_str(&format!("  {entry}\n"));
                } else {
                    out.push_str(&format!("- {entry}\n"));
                }
            }
            out.push('\n');
        }
        if out.is_empty() {
            out.push_str(&format!(
                "## {STATE}\n- Nothing of note happened in the compacted part.\n"
            ));
        }
        out.trim_end().to_string()
    }

    /// The digest within `budget` tokens where it can be: the least
    /// important entries go first (see `SHRINK`); the task, the rules, the
    /// files, the open errors and the next step always stay.
    pub fn render(&self, budget: u64) -> String {
        self.render_by(budget, |text| Encoding::O200k.count(text))
    }

    /// `render`, the budget counted by `count`.
    pub fn render_by(&self, budget: u64, count: impl Fn(&str) -> u64) -> String {
        let mut digest = self.clone();
        let mut text = digest.render_all();
        for step in SHRINK {
            if count(&text) <= budget {
                break;
            }
            step(&mut digest);
            text = digest.render_all();
        }
        text
    }

    /// Reads a summary back: ours section by section; the blocks compactd
    /// adds after a summary (`<turn-prefix>`, `<preserved>`, the file
    /// sections); anything else is kept as earlier summary lines.
    pub fn parse(text: &str) -> Digest {
        let mut digest = Digest::default();
        let mut title: Option<String> = None;
        let mut entry: Option<String> = None;
        let mut lines = text.lines().peekable();
        while let Some(line) = lines.next() {
            let block_end = match line.trim() {
                "<turn-prefix>" => Some("</turn-prefix>"),
                "<preserved>" => Some("</preserved>"),
                "<read-files>" => Some("</read-files>"),
                "<modified-files>" => Some("</modified-files>"),
                _ => None,
            };
            if let Some(end) = block_end {
                digest.finish_entry(title.as_deref(), entry.take());
                let inner: Vec<&str> = lines.by_ref().take_while(|l| l.trim() != end).collect();
                match end {
                    "</turn-prefix>" => {
                        let mut prefix = Digest::parse(&inner.join("\n"));
                        prefix.focus = None;
                        digest.absorb(prefix);
                    }
                    "</preserved>" => digest.preserved(&inner),
                    _ => {}
                }
                title = None;
                continue;
            }
            if let Some(heading) = line.strip_prefix("## ") {
                digest.finish_entry(title.as_deref(), entry.take());
                title = Some(heading.trim().to_string());
                if !is_ours(heading.trim()) {
                    digest.earlier.push(line.to_string());
                }
                continue;
            }
            match title.as_deref() {
                Some(t) if is_ours(t) && t != EARLIER => {
                    if let Some(item) = line.strip_prefix("- ") {
                        digest.finish_entry(title.as_deref(), entry.take());
                        entry = Some(item.to_string());
                    } else if let (Some(more), Some(current)) =
                        (line.strip_prefix("  "), entry.as_mut())
                    {
                        current.push('\n');
                        current.push_str(more);
                    } else if !line.trim().is_empty() {
                        digest.finish_entry(title.as_deref(), entry.take());
                        entry = Some(line.trim().to_string());
                    }
                }
                Some(EARLIER) => {
                    if !line.trim().is_empty() {
                        digest
                            .earlier
                            .push(line.strip_prefix("  ").unwrap_or(line).to_string());
                    }
                }
                _ => {
                    if !line.trim().is_empty() {
                        digest.earlier.push(line.to_string());
                    }
                }
            }
        }
        digest.finish_entry(title.as_deref(), entry);
        digest.earlier =
            without_code_blocks(without_scratchpad(std::mem::take(&mut digest.earlier)));
        digest.resolve_next();
        digest.reopen();
        digest
    }

    /// Failures rendered as "still open" take their line back from the
    /// open errors.
    fn reopen(&mut self) {
        let line_of = |key: &str| {
            self.errors
                .iter()
                .find(|e| e.key == key)
                .map(|e| e.line.clone())
        };
        for command in &mut self.commands {
            if command.last == Outcome::Failed(String::new()) {
                let line = line_of(&command.command).unwrap_or_default();
                command.first_error = command.first_error.take().or(Some(line.clone()));
                command.last = Outcome::Failed(line);
            }
        }
        for file in &mut self.files {
            if file.status.as_deref() == Some(&format!("{CHANGE_FAILED}, {STILL_OPEN}")) {
                let line = line_of(&file.path).unwrap_or_default();
                file.status = Some(format!("{CHANGE_FAILED}: {line}"));
            }
        }
    }

    /// A next step read back names its request again, so that it stays
    /// right when this digest merges into another.
    fn resolve_next(&mut self) {
        let Some(next) = &self.next else {
            return;
        };
        let answered = next.ends_with(&format!("{GO_ON}."));
        let request = if next.starts_with("Continue with the task above")
            || next.starts_with("The task above")
        {
            self.task.clone()
        } else if next.contains("last request above") {
            self.requests.last().cloned()
        } else {
            let quoted = next
                .strip_prefix(CONTINUE)
                .or_else(|| next.strip_prefix(ANSWERED))
                .and_then(|rest| rest.strip_prefix('"'))
                .and_then(|rest| rest.rsplit_once('"'));
            quoted.map(|(request, _)| request.to_string())
        };
        if let Some(request) = request {
            self.latest = Some(Latest {
                request,
                answered,
                asked: None,
            });
            self.next = None;
        }
    }

    fn preserved(&mut self, lines: &[&str]) {
        for line in lines {
            if let Some(rule) = line.strip_prefix("[user rule] ") {
                extend_unique(&mut self.rules, vec![rule.trim().to_string()]);
            } else if let Some(text) = line.strip_prefix("[keep verbatim] ") {
                if self.task.is_none() {
                    self.task = Some(text.trim().to_string());
                } else if self.task.as_deref() != Some(text.trim()) {
                    extend_unique(&mut self.pinned, vec![text.trim().to_string()]);
                }
            }
        }
    }

    fn finish_entry(&mut self, title: Option<&str>, entry: Option<String>) {
        let (Some(title), Some(entry)) = (title, entry) else {
            return;
        };
        let entry = self.take_citation(title, entry);
        let omitted = |what: &str| {
            let rest = entry.strip_prefix("… ")?.strip_suffix(" not listed")?;
            let (n, earlier) = rest.split_once(' ')?;
            let noun = earlier.strip_prefix("earlier ")?;
            (noun == what || noun == what.trim_end_matches('s'))
                .then(|| n.parse::<usize>().ok())
                .flatten()
        };
        match title {
            TASK | LEGACY_REQUESTS if self.task.is_none() => self.task = Some(unquoted(&entry)),
            TASK | REQUESTS | LEGACY_REQUESTS => {
                if let Some(n) = omitted("requests") {
                    self.requests_omitted += n;
                } else if entry == FOLLOW_UP {
                    self.follow_ups += 1;
                } else if let Some(n) = entry
                    .strip_prefix("… and ")
                    .and_then(|r| r.strip_suffix(&format!(" {FOLLOW_UPS}")))
                {
                    self.follow_ups += n.parse::<usize>().unwrap_or(0);
                } else {
                    self.requests.push(unquoted(&entry));
                }
            }
            RULES => extend_unique(&mut self.rules, vec![unquoted(&entry)]),
            PLAN if [super::plans::DONE, super::plans::DOING, super::plans::TODO]
                .iter()
                .any(|m| entry.starts_with(m)) =>
            {
                self.todos.push(entry)
            }
            PLAN => match entry.strip_prefix(COMMITTED_SINCE) {
                Some(hash) => self.plan_commit = Some(hash.to_string()),
                None => self.plan.push(entry),
            },
            SHELL => self.shell.push(entry),
            PINNED => extend_unique(&mut self.pinned, vec![unquoted(&entry)]),
            // The old format listed every tool call ("`edit` a.rs → ok").
            PROGRESS if entry.starts_with('`') && entry.contains(" → ") => {}
            PROGRESS => match omitted("outcomes") {
                Some(n) => self.progress_omitted += n,
                None => self.progress.push(entry),
            },
            DECISIONS | LEGACY_DECISIONS => match omitted("decisions") {
                Some(n) => self.decisions_omitted += n,
                None => self.decisions.push(entry),
            },
            FILES => match (FileNote::parse(&entry), entry.strip_prefix(ALSO_READ)) {
                (Some(note), _) => self.add_file(note),
                (None, Some(list)) => extend_unique(
                    &mut self.also_read,
                    list.trim_start_matches(": ")
                        .split(", ")
                        .map(str::to_string)
                        .collect(),
                ),
                (None, None) => self.earlier.push(entry),
            },
            COMMANDS => self.parse_command(entry),
            ERRORS => match entry.strip_prefix('`').and_then(|r| r.split_once("`: ")) {
                Some((key, line)) => self
                    .errors
                    .push(OpenError::new(key.to_string(), line.to_string())),
                None => self.earlier.push(entry),
            },
            STATE => self.state = Some(entry),
            NEXT => self.next = Some(entry),
            _ => {}
        }
    }

    /// An entry read back without its citation, which goes to `sources`.
    fn take_citation(&mut self, title: &str, entry: String) -> String {
        let (entry, cited) = match title {
            TASK | REQUESTS | RULES | ERRORS => split_citation(&entry),
            _ => (entry, None),
        };
        let key = match title {
            ERRORS => entry
                .strip_prefix('`')
                .and_then(|r| r.split_once("`: "))
                .map(|(key, _)| error_key(key)),
            RULES => Some(rule_key(&unquoted(&entry))),
            _ => Some(request_key(&unquoted(&entry))),
        };
        if let (Some(id), Some(key)) = (cited, key) {
            self.sources.entry(key).or_insert(id);
        }
        entry
    }

    fn parse_command(&mut self, entry: String) {
        if let Some(n) = entry
            .strip_prefix("… ")
            .and_then(|r| r.strip_suffix(" other commands ran once, ok"))
        {
            self.quiet_commands += n.parse::<usize>().unwrap_or(0);
        } else if let Some(list) = entry.strip_prefix(&format!("{LOOKED}: ")) {
            add_counts(&mut self.looked, parse_counts(list));
        } else if let Some(list) = entry.strip_prefix(&format!("{TOOLS}: ")) {
            add_counts(&mut self.tools, parse_counts(list));
        } else if let Some(note) = CommandNote::parse(&entry) {
            self.add_command(note);
        } else {
            self.earlier.push(entry);
        }
    }
}

/// An agent's summary without the notes it wrote before writing it (an
/// `<analysis>` block, or "Analysis:" up to "Summary:", which a model is
/// asked to think in and the agent is meant to strip) and without the line
/// that introduces it: neither is what happened.
fn without_scratchpad(lines: Vec<String>) -> Vec<String> {
    const INTRO: &str = "This session is being continued from a previous conversation";
    const OUTRO: &str = "The conversation is summarized below:";
    let mut out = Vec::new();
    let mut skipping: Option<&str> = None;
    let has_summary = lines.iter().any(|l| l.trim() == "Summary:");
    for line in lines {
        let trimmed = line.trim();
        match skipping {
            Some(end) if trimmed == end || (end == "Summary:" && trimmed == "<summary>") => {
                skipping = None;
                continue;
            }
            Some(_) => continue,
            None if trimmed == "<analysis>" => skipping = Some("</analysis>"),
            None if trimmed == "Analysis:" && has_summary => skipping = Some("Summary:"),
            None if trimmed == "<summary>" || trimmed == "</summary>" => {}
            None if trimmed.starts_with(INTRO) => {
                let rest = trimmed.split_once('.').map_or("", |(_, rest)| rest).trim();
                let rest = rest.strip_prefix(OUTRO).unwrap_or(rest).trim();
                if !rest.is_empty() {
                    out.push(rest.to_string());
                }
            }
            None => out.push(line),
        }
    }
    out
}

/// Summary lines with fenced code blocks (directory trees, snippets)
/// reduced to a note of their length: the prose says what they were for.
fn without_code_blocks(lines: Vec<String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut block: Option<usize> = None;
    for line in lines {
        let fence = line.trim_start().starts_with("```");
        match (&mut block, fence) {
            (None, true) => block = Some(0),
            (Some(n), true) => {
                out.push(format!("({n} lines of code left out)"));
                block = None;
            }
            (Some(n), false) => *n += 1,
            (None, false) => out.push(line),
        }
    }
    if let Some(n) = block {
        out.push(format!("({n} lines of code left out)"));
    }
    out
}

/// Titles the offline summarizer writes (an LLM's "## Progress" reads as
/// ours too, entry by entry).
fn is_ours(title: &str) -> bool {
    [
        TASK,
        REQUESTS,
        RULES,
        PINNED,
        PLAN,
        SHELL,
        EARLIER,
        PROGRESS,
        DECISIONS,
        FILES,
        COMMANDS,
        ERRORS,
        STATE,
        NEXT,
        FOCUS,
        LEGACY_REQUESTS,
        LEGACY_DECISIONS,
    ]
    .contains(&title)
        || LEGACY_DROPPED.contains(&title)
}

type Shrink = fn(&mut Digest);

/// How the digest shrinks, least important first. Never touched: the task,
/// the user's rules and pinned text (the retention check would add them
/// back verbatim anyway), the files, the open errors, the next step.
const SHRINK: &[Shrink] = &[
    |d| keep_newest(&mut d.decisions, &mut d.decisions_omitted, 4),
    |d| keep_newest(&mut d.progress, &mut d.progress_omitted, 20),
    |d| {
        // A command the person rejected did not run "ok": it stays listed.
        let quiet = |c: &CommandNote| c.failures == 0 && c.runs == 1 && c.last == Outcome::Ok;
        d.quiet_commands += d.commands.iter().filter(|c| quiet(c)).count();
        d.commands.retain(|c| !quiet(c));
        d.looked.clear();
        d.tools.clear();
    },
    |d| d.clip_requests(120),
    |d| drop_background(&mut d.earlier),
    |d| keep_newest(&mut d.progress, &mut d.progress_omitted, 12),
    |d| shrink_earlier(&mut d.earlier, 30),
    |d| d.clip_requests(80),
    |d| keep_newest(&mut d.decisions, &mut d.decisions_omitted, 0),
    |d| keep_newest(&mut d.progress, &mut d.progress_omitted, 6),
    |d| clip_all(d.state.as_mut_slice(), 160),
    |d| shrink_earlier(&mut d.earlier, 10),
    |d| d.commands.retain(|c| c.failures > 0),
    |d| d.todos.retain(|t| !t.starts_with(super::plans::DONE)),
    |d| d.shell.truncate(3),
    |d| keep_newest(&mut d.requests, &mut d.requests_omitted, 10),
    |d| keep_newest(&mut d.progress, &mut d.progress_omitted, 0),
    |d| d.earlier.clear(),
    |d| d.commands.clear(),
    |d| keep_newest(&mut d.requests, &mut d.requests_omitted, 0),
];

/// Sections of an agent's summary that tell least of where things stand:
/// they go first when it is too long ("2. Key Technical Concepts:").
const BACKGROUND_SECTIONS: [&str; 4] = [
    "concept",
    "files and code",
    "code section",
    "problem solving",
];

/// An agent's summary without its background sections (each a line
/// saying so): they tell least of where things stand.
fn drop_background(earlier: &mut Vec<String>) {
    let is_heading = |line: &String| {
        let t = line.trim();
        let numbered = t
            .split_once(". ")
            .is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
        t.starts_with('#') || numbered && t.trim_end_matches(['*', ' ']).ends_with(':')
    };
    for background in BACKGROUND_SECTIONS {
        let Some(start) = earlier
            .iter()
            .position(|l| is_heading(l) && l.to_lowercase().contains(background))
        else {
            continue;
        };
        let end = earlier[start + 1..]
            .iter()
            .position(is_heading)
            .map_or(earlier.len(), |i| start + 1 + i);
        let left_out = end - start - 1;
        if left_out > 1 {
            earlier.splice(start + 1..end, [format!("  ({left_out} lines left out)")]);
        }
    }
}

/// An agent's summary within `keep` lines, its background sections gone
/// first, then its middle, so what it says last (the user's messages,
/// the pending tasks, the current work, the next step) stays; cutting its
/// end instead lost the latest request.
fn shrink_earlier(earlier: &mut Vec<String>, keep: usize) {
    drop_background(earlier);
    if earlier.len() > keep {
        let head = keep / 3;
        let tail = keep - head - 1;
        let cut = earlier.len() - head - tail;
        earlier.splice(head..head + cut, [format!("({cut} lines left out)")]);
    }
}

fn keep_newest(list: &mut Vec<String>, omitted: &mut usize, keep: usize) {
    let drop = list.len().saturating_sub(keep);
    list.drain(..drop);
    *omitted += drop;
}

fn clip_all(list: &mut [String], chars: usize) {
    for item in list {
        *item = super::wording::clip(item, chars);
    }
}
