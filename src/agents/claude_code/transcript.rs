//! Claude Code `~/.claude/projects/<project>/<session>.jsonl`, read one
//! line at a time (a batch import and a followed transcript alike). One API
//! response is written as several `assistant` lines that share
//! `message.id` (one content block each), sometimes with tool results in
//! between: they merge into one message, which stays open to later lines
//! until another response or a new prompt starts. A `compact_boundary` system line and the `isCompactSummary`
//! user message after it are a compaction: they become a compaction record
//! whose kept part starts at the boundary's preserved segment, so the view
//! starts where Claude Code's did after `/compact`. Slash commands, their
//! output, caveats and harness text are not requests (see `meta`). A
//! message the user typed while the agent worked and that the model read
//! mid-turn (a `queued_command` attachment, or a queued message taken
//! from the queue with no prompt line) is a prompt; one sent as a prompt
//! of its own is read from that prompt's line. Lines that are not
//! conversation (`summary`, `file-history-snapshot`, other
//! `queue-operation` and `attachment` lines, `cost-state`, …) are skipped
//! and counted. Subagent transcripts live in `<session>/subagents/*.jsonl`
//! and import on their own.

use std::collections::{BTreeSet, HashMap, HashSet};

use super::edited_files::EditedFiles;
use super::idle_clearing::IdleClearing;
use super::reattached::Reattached;
use super::resume::Resume;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::attachments::{self, Version};
use super::meta::{self, UserText};
use crate::compaction::record::CLEARED;
use crate::compaction::Trigger;
use crate::conversation::request::INTERRUPTION;
use crate::conversation::{Message, MessageBody, Part, ToolCall, Usage};
use crate::store::SessionSettings;
use crate::transcript::parts::{content_of, part_of, Dialect};
use crate::transcript::{content_text, Emitter, ForeignCompaction, Format, Imported, Line};

/// Line types Claude Code writes for itself; none is conversation.
const BOOKKEEPING: [&str; 15] = [
    "summary",
    "file-history-snapshot",
    "file-history-delta",
    "permission-mode",
    "queue-operation",
    "attachment",
    "progress",
    "atis-latch",
    "api-request",
    "api-request-shape",
    "api-request-blob",
    "last-prompt",
    "cost-state",
    "tools-used",
    "mode",
];

/// Its transcript format.
pub const FORMAT: Format = Format::named(super::home::NAME);

/// Whether a JSON line is one of its transcripts', from its shape.
pub(crate) fn classify(value: &Value) -> bool {
    let Some(object) = value.as_object() else {
        return false;
    };
    let kind = object.get("type").and_then(Value::as_str).unwrap_or("");
    if matches!(kind, "file-history-snapshot" | "queue-operation") {
        return true;
    }
    let has = |key: &str| object.contains_key(key);
    let kinds = [
        "user",
        "assistant",
        "system",
        "summary",
        "attachment",
        "progress",
    ];
    kinds.contains(&kind)
        && (has("uuid") || has("sessionId") || has("leafUuid") || has("messageId"))
}

pub(crate) fn import(lines: &[Line]) -> Imported {
    crate::transcript::read_all(&mut Reader::default(), FORMAT, lines)
}

/// What to do with sidechain (subagent) turns: a subagent's own file holds
/// only them, while in a main session file they belong to another context.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
enum Sidechains {
    /// No main turn yet: a sidechain turn, and every line after it, wait
    /// until a main turn shows this is a main file, or the file ends.
    #[default]
    Undecided,
    Waiting(Vec<(usize, Value)>),
    Skip,
    Keep,
}

/// A `compact_boundary` line waiting for its summary message.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Boundary {
    line: usize,
    trigger: Trigger,
    tokens_before: u64,
    tokens_after: Option<u64>,
    /// The first message Claude Code kept verbatim (its preserved segment).
    first_kept_uuid: Option<String>,
    #[serde(default)]
    created_at: Option<u64>,
    #[serde(default)]
    duration_ms: Option<u64>,
}

/// A slash command whose next turn tells whether Claude Code ran it itself
/// (its output follows) or it expands into a prompt.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Command {
    line: usize,
    uuid: Option<String>,
    text: String,
}

/// Claude Code's transcript, one line at a time.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Reader {
    sidechains: Sidechains,
    /// The response being written: its `message.id` and message position.
    /// Its lines merge until another response starts.
    response: Option<(String, usize)>,
    /// tool_use id → tool name, to name the results.
    tool_names: HashMap<String, String>,
    /// A line's uuid → the id of the message it became (or was merged
    /// into), for preserved segments. Not kept by the status line's cache,
    /// which needs no message ids.
    #[serde(skip)]
    uuids: HashMap<String, String>,
    boundary: Option<Boundary>,
    command: Option<Command>,
    /// A slash command message whose expanded prompt (an `isMeta` line)
    /// may follow.
    open_command: Option<usize>,
    /// The images of the user line being read, for the prompt it holds.
    #[serde(skip)]
    images: Vec<Part>,
    /// Messages typed while the agent worked (`queue-operation`
    /// `enqueue`), not yet sent or read by the model.
    #[serde(default)]
    queued: Vec<String>,
    /// The queued message made a prompt last, until the next response:
    /// the same message written again (an attachment and the queue's
    /// `remove`, in either order) is not a second request.
    #[serde(default)]
    delivered: Option<String>,
    /// The kinds of attachment written before the first message (the
    /// model's name, the date, the skill listing): in every request, so
    /// the calibrated overhead holds them, also when they are re-attached
    /// after a compaction.
    #[serde(default)]
    prelude: BTreeSet<String>,
    /// Its `attachment` lines carry the text they sent (`rendered`,
    /// 2.1.330): a line without it sent nothing.
    #[serde(default)]
    writes_rendered: bool,
    /// What the trim Claude Code makes after the person was away needs.
    /// Not kept by the status line's cache, which counts no messages.
    #[serde(skip)]
    idle: IdleClearing,
    /// What a resume leaves out of the requests. Not kept by the status
    /// line's cache either.
    #[serde(skip)]
    resume: Resume,
    /// The `message.id` of every response read, to tell one written again.
    #[serde(skip)]
    responses: HashSet<String>,
    /// The response being written is one written again.
    #[serde(skip)]
    copied: bool,
    /// The files it would attach again after compacting. Not kept by the
    /// status line's cache either.
    #[serde(skip)]
    reattached: Reattached,
    /// What the latest compaction re-attached, by that estimate, until a
    /// line shows whether Claude Code wrote it itself (2.1.330 does, as
    /// `attachment` lines, which are counted instead).
    #[serde(skip)]
    reattaching: Option<Vec<String>>,
    /// The plan-mode instructions a version that writes no attachment
    /// attaches, by its rule. Not kept by the status line's cache either.
    #[serde(skip)]
    plan_mode: attachments::PlanMode,
    /// The files the SDK's record says changed. Not kept by the status
    /// line's cache either.
    #[serde(skip)]
    edited: EditedFiles,
    /// The version of the latest line that states one.
    #[serde(skip)]
    version: Option<Version>,
}

impl crate::transcript::Reader for Reader {
    fn line(&mut self, number: usize, entry: &Value, out: &mut Emitter) {
        let turn = matches!(
            entry.get("type").and_then(Value::as_str),
            Some("user" | "assistant")
        );
        let sidechain = entry.get("isSidechain").and_then(Value::as_bool) == Some(true);
        let decided = matches!(self.sidechains, Sidechains::Skip | Sidechains::Keep);
        if decided || !turn && matches!(self.sidechains, Sidechains::Undecided) {
            self.entry(number, entry, out);
        } else if turn && !sidechain {
            // A main turn: this is a main file, and its sidechains are not.
            let waiting = match std::mem::replace(&mut self.sidechains, Sidechains::Skip) {
                Sidechains::Waiting(waiting) => waiting,
                _ => Vec::new(),
            };
            for (n, waiting_entry) in waiting {
                self.entry(n, &waiting_entry, out);
            }
            self.entry(number, entry, out);
        } else if let Sidechains::Waiting(waiting) = &mut self.sidechains {
            waiting.push((number, entry.clone()));
        } else {
            self.sidechains = Sidechains::Waiting(vec![(number, entry.clone())]);
        }
    }

    fn finish(&mut self, out: &mut Emitter) {
        if let Sidechains::Waiting(waiting) =
            std::mem::replace(&mut self.sidechains, Sidechains::Keep)
        {
            for (number, entry) in waiting {
                self.entry(number, &entry, out);
            }
        }
        if let Some(command) = self.command.take() {
            self.emit_command(command, out);
        }
        self.drop_boundary_without_summary(out);
        // A transcript that ends right after a compaction gives no
        // estimate: a follow of it could not know yet whether Claude Code
        // writes what it attached, and both must read the same.
    }
}

impl Reader {
    fn entry(&mut self, number: usize, entry: &Value, out: &mut Emitter) {
        let kind = entry.get("type").and_then(Value::as_str).unwrap_or("");
        let version = entry.get("version").and_then(Value::as_str);
        if let Some(version) = version.and_then(super::idle_clearing::parse_version) {
            self.idle.version(version);
            self.plan_mode.version(version);
            self.edited.version(version);
            self.version = Some(version);
        }
        let sidechain = entry.get("isSidechain").and_then(Value::as_bool) == Some(true);
        let skip_sidechain = sidechain && matches!(self.sidechains, Sidechains::Skip);
        if matches!(kind, "user" | "assistant") && !sidechain {
            self.edited
                .seen(crate::transcript::time::timestamp_ms(entry));
        }
        let flag = |key: &str| entry.get(key).and_then(Value::as_bool) == Some(true);
        if matches!(kind, "user" | "assistant") && !skip_sidechain {
            self.resolve_command(kind, entry, out);
        }
        if matches!(kind, "user" | "assistant") && !skip_sidechain && !flag("isCompactSummary") {
            self.reattached_by_estimate(out);
            if let Some(result) = entry.get("toolUseResult") {
                self.reattached.result(result);
            }
        }
        if !sidechain {
            if let Some(lost) = self.resume.resumed(entry) {
                out.cleared(lost);
            }
        }
        self.entry_of_kind(kind, number, entry, skip_sidechain, out);
        if !sidechain {
            self.resume.line(entry);
        }
    }

    fn entry_of_kind(
        &mut self,
        kind: &str,
        number: usize,
        entry: &Value,
        skip_sidechain: bool,
        out: &mut Emitter,
    ) {
        let flag = |key: &str| entry.get(key).and_then(Value::as_bool) == Some(true);
        match kind {
            "user" | "assistant" if skip_sidechain => {
                out.skip(number, "sidechain (subagent) lines")
            }
            "user" if flag("isCompactSummary") => self.compact_summary(number, entry, out),
            "user" if self.starts_over(entry, out) => {
                self.clear(number, entry, out);
                self.user_line(number, entry, out);
            }
            "user" => {
                self.drop_boundary_without_summary(out);
                self.user_line(number, entry, out);
            }
            "assistant" => {
                self.drop_boundary_without_summary(out);
                self.end_command(out);
                self.delivered = None;
                self.assistant_line(number, entry, out);
            }
            "queue-operation" => self.queue_operation(number, entry, out),
            "attachment" => match queued_prompt(entry) {
                Some(prompt) => self.queued_read(number, entry, prompt, out),
                None => {
                    self.attachment(entry, out);
                    out.skip_line_type(number, kind, &BOOKKEEPING)
                }
            },
            "system" => match entry.get("subtype").and_then(Value::as_str) {
                Some("compact_boundary") => self.boundary = Some(boundary(number, entry)),
                Some(subtype) => out.skip(number, &format!("system {subtype} lines")),
                None => out.skip(number, "system lines (hook and status output)"),
            },
            other => {
                stated_limits(other, entry, out);
                out.skip_line_type(number, other, &BOOKKEEPING)
            }
        }
    }

    /// An attachment that is no prompt: before the first message, a kind
    /// every request carries; after a compaction, what Claude Code
    /// re-attached (the files read last, the plan, the task list); after
    /// a message, what it added to the next request (a file changed on
    /// disk, a reminder). Neither shows in a message.
    fn attachment(&mut self, entry: &Value, out: &mut Emitter) {
        let Some(attachment) = entry.get("attachment") else {
            return;
        };
        self.writes_rendered |= entry.get("rendered").is_some();
        let kind = attachment.get("type").and_then(Value::as_str).unwrap_or("");
        if !out.has_messages() {
            self.prelude.insert(kind.to_string());
        } else if !self.prelude.contains(kind) {
            // Claude Code wrote what it attached: no estimate stands in.
            self.reattaching = None;
            out.attached(attachments::sent_text(entry, self.writes_rendered));
        }
    }

    /// The queue of messages typed while the agent worked. Claude Code
    /// 2.0 `dequeue`s one to send it as a prompt (its user line follows,
    /// read as any prompt); 2.1 folds one into the running turn and
    /// `remove`s it, writing a `queued_command` attachment (read there)
    /// and no user line; `popAll` hands the queue back to the input box
    /// to edit, unsent. A message still queued when the file ends never
    /// reached the model.
    fn queue_operation(&mut self, number: usize, entry: &Value, out: &mut Emitter) {
        let text = typed_prompt(entry.get("content"));
        let position = |queued: &[String]| match &text {
            Some(text) => queued.iter().position(|q| q == text),
            None => (!queued.is_empty()).then_some(0),
        };
        match entry.get("operation").and_then(Value::as_str) {
            Some("enqueue") => self.queued.extend(text),
            Some("dequeue") => {
                if let Some(at) = position(&self.queued) {
                    self.queued.remove(at);
                }
            }
            Some("remove") => {
                // Read by the model mid-turn: a prompt, unless its
                // attachment came first and made it one.
                if let Some(at) = position(&self.queued) {
                    let prompt = self.queued.remove(at);
                    return self.queued_read(number, entry, prompt, out);
                }
            }
            Some("popAll") => self.queued.clear(),
            _ => {}
        }
        out.skip(number, "queue-operation lines");
    }

    /// A queued message the model read mid-turn: a prompt, once.
    fn queued_read(&mut self, number: usize, entry: &Value, prompt: String, out: &mut Emitter) {
        if let Some(at) = self.queued.iter().position(|q| *q == prompt) {
            self.queued.remove(at);
        }
        if self.delivered.as_ref() == Some(&prompt) {
            return out.skip(number, "queued messages written twice");
        }
        self.delivered = Some(prompt.clone());
        let uuid = entry.get("uuid").and_then(Value::as_str);
        if let Some(position) = self.user_text(number, uuid, UserText::Prompt(prompt), out) {
            self.remember(entry, position, out);
        }
    }

    fn remember(&mut self, entry: &Value, position: usize, out: &Emitter) {
        if let (Some(uuid), Some(id)) = (
            entry.get("uuid").and_then(Value::as_str),
            out.first_id_from(position),
        ) {
            self.uuids.entry(uuid.to_string()).or_insert(id);
        }
    }

    /// The summary after a boundary: the compaction, with Claude Code's own
    /// summary and figures.
    fn compact_summary(&mut self, number: usize, entry: &Value, out: &mut Emitter) {
        self.end_command(out);
        let summary = content_text(entry.pointer("/message/content"));
        let boundary = self.boundary.take();
        if !out.has_messages() {
            // A session continued from another file: nothing here to
            // summarize, so the summary is simply what the model saw first.
            let uuid = entry.get("uuid").and_then(Value::as_str);
            let position = out.message(number, uuid, Message::user("", summary), false);
            self.remember(entry, position, out);
            return;
        }
        let first_kept = boundary
            .as_ref()
            .and_then(|b| b.first_kept_uuid.as_ref())
            .and_then(|uuid| self.uuids.get(uuid))
            .cloned();
        self.response = None;
        self.idle.compacted();
        self.resume.compacted();
        self.edited.compacted();
        out.compaction(ForeignCompaction {
            summary,
            first_kept,
            tokens_before: boundary.as_ref().map_or(0, |b| b.tokens_before),
            tokens_after: boundary.as_ref().and_then(|b| b.tokens_after),
            read_files: Vec::new(),
            modified_files: Vec::new(),
            // Without a boundary (older versions) the trigger is unknown.
            trigger: boundary.as_ref().map_or(Trigger::Threshold, |b| b.trigger),
            line: boundary.as_ref().map_or(number, |b| b.line),
            created_at: boundary.as_ref().and_then(|b| b.created_at),
            duration_ms: boundary.as_ref().and_then(|b| b.duration_ms),
            cleared: false,
        });
        self.reattaching = Some(self.reattached.estimate());
    }

    /// What the latest compaction re-attached, by estimate, when no
    /// `attachment` line came between it and this one.
    fn reattached_by_estimate(&mut self, out: &mut Emitter) {
        for text in self.reattaching.take().into_iter().flatten() {
            out.attached(text);
        }
    }

    /// A prompt with no parent after the conversation began (and not the
    /// summary after a boundary): a new conversation in the same file, as
    /// an older Claude Code wrote after `/clear`. The provider's next
    /// usage shows it: the prompt starts from the system prompt again.
    fn starts_over(&self, entry: &Value, out: &Emitter) -> bool {
        entry.get("parentUuid").is_some_and(Value::is_null)
            && self.boundary.is_none()
            && out.has_messages()
    }

    /// Everything before `entry` leaves the context: a compaction that
    /// keeps nothing and says so.
    fn clear(&mut self, number: usize, entry: &Value, out: &mut Emitter) {
        self.end_command(out);
        self.response = None;
        self.idle.compacted();
        self.resume.compacted();
        self.edited.compacted();
        out.compaction(ForeignCompaction {
            summary: CLEARED.to_string(),
            first_kept: None,
            tokens_before: 0,
            tokens_after: None,
            read_files: Vec::new(),
            modified_files: Vec::new(),
            trigger: Trigger::Manual,
            line: number,
            created_at: crate::transcript::time::timestamp_ms(entry),
            duration_ms: None,
            cleared: true,
        });
    }

    fn drop_boundary_without_summary(&mut self, out: &mut Emitter) {
        if let Some(boundary) = self.boundary.take() {
            out.skip(
                boundary.line,
                "compact boundaries without a summary message",
            );
        }
    }

    fn user_line(&mut self, number: usize, entry: &Value, out: &mut Emitter) {
        let uuid = entry.get("uuid").and_then(Value::as_str);
        let content = entry.pointer("/message/content");
        self.images.clear();
        let (results, text) = match content {
            Some(Value::Array(blocks)) => {
                let (results, rest): (Vec<&Value>, Vec<&Value>) = blocks
                    .iter()
                    .partition(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"));
                // Images pasted into a prompt are kept as parts, before it.
                let (images, texts): (Vec<&Value>, Vec<&Value>) = rest
                    .into_iter()
                    .partition(|b| part_of(b, Dialect::Anthropic).is_some());
                self.images = images
                    .iter()
                    .filter_map(|b| part_of(b, Dialect::Anthropic))
                    .collect();
                let text = (!texts.is_empty() || !self.images.is_empty()).then(|| {
                    content_text(Some(&Value::Array(texts.into_iter().cloned().collect())))
                });
                (results, text)
            }
            _ => (Vec::new(), Some(content_text(content))),
        };
        if results.is_empty() {
            // A request the person started (a prompt, a command): the
            // first after a long absence clears old results.
            let at = crate::transcript::time::timestamp_ms(entry);
            if let Some(cleared) = self.idle.prompt(at) {
                out.cleared(cleared);
            }
        }
        // One line may carry several results: only the first keeps the uuid.
        let mut preferred = uuid;
        for result in &results {
            self.end_command(out);
            self.edited.result(result, entry.get("toolUseResult"));
            let position = self.tool_result(number, preferred.take(), result, out);
            self.remember(entry, position, out);
            if let (Some(uuid), Some(id)) = (uuid, out.first_id_from(position)) {
                self.resume.result(uuid, id);
            }
        }
        if let Some(text) = text {
            let is_meta = entry.get("isMeta").and_then(Value::as_bool) == Some(true);
            let text = match meta::classify(&text, is_meta) {
                // An image pasted without words is still a prompt.
                UserText::Harness if !self.images.is_empty() && text.trim().is_empty() => {
                    UserText::Prompt(String::new())
                }
                text => text,
            };
            if !results.is_empty() && text == UserText::Harness {
                return; // a reminder riding on tool results: the line was used
            }
            // The marker of an interruption ends the request cut short:
            // the next request is the next prompt's, which carries what
            // the prompt attaches (a session whose plan file was edited
            // showed one note there, not two).
            let is_prompt = matches!(&text, UserText::Prompt(p) if !p.starts_with(INTERRUPTION));
            if let UserText::Prompt(prompt) = &text {
                let mode = entry.get("permissionMode").and_then(Value::as_str);
                self.plan_mode.prompt(mode);
                // A queued message sent as this prompt, or read already.
                self.queued.retain(|q| q != prompt);
                if self.delivered.as_ref() == Some(prompt) {
                    return out.skip(number, "queued messages written twice");
                }
            }
            if let Some(position) = self.user_text(number, preferred, text, out) {
                self.remember(entry, position, out);
            }
            if is_prompt {
                self.prompted(entry, out);
            }
        }
    }

    /// What the request after a prompt attached besides it: under the
    /// SDK, which writes a prompt as text blocks, the files its record
    /// says changed (`edited_files`).
    fn prompted(&mut self, entry: &Value, out: &mut Emitter) {
        let content = entry.pointer("/message/content");
        // The terminal writes a prompt with an image as blocks too.
        let typed_text = |block: &Value| block.get("type").and_then(Value::as_str) == Some("text");
        if let Some(Value::Array(blocks)) = content {
            if blocks.iter().all(typed_text) {
                self.edited.typed_as_blocks();
            }
        }
        let at = crate::transcript::time::timestamp_ms(entry);
        for note in self.edited.prompt(at) {
            out.attached(note);
        }
    }

    fn tool_result(
        &mut self,
        number: usize,
        id: Option<&str>,
        result: &Value,
        out: &mut Emitter,
    ) -> usize {
        let call_id = result
            .get("tool_use_id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let tool_name = self.tool_names.remove(&call_id);
        let content = content_of(result.get("content"), Dialect::Anthropic);
        let chars = content.as_str().chars().count() as u64;
        let name = tool_name.clone();
        let is_error = result.get("is_error").and_then(Value::as_bool) == Some(true);
        self.plan_mode.result(name.as_deref(), is_error);
        let message = Message {
            id: String::new(),
            body: MessageBody::Tool {
                tool_name,
                tool_call_id: call_id,
                content,
                is_error,
            },
            usage: None,
            extra: Default::default(),
        };
        let position = out.message(number, id, message, false);
        if let Some(id) = out.first_id_from(position) {
            self.idle.result(id, name.as_deref(), chars);
        }
        position
    }

    /// Prompts become user messages; a slash command that expands into a
    /// prompt becomes one user message (`/init` and what it expands to);
    /// local commands, their output and harness text are skipped. Returns
    /// the message the text became part of.
    fn user_text(
        &mut self,
        number: usize,
        id: Option<&str>,
        text: UserText,
        out: &mut Emitter,
    ) -> Option<usize> {
        let open_command = self.open_command.take();
        if let (Some(position), false) = (open_command, matches!(text, UserText::Meta(_))) {
            out.close(position);
        }
        match text {
            UserText::Prompt(prompt) => {
                // A new request: the previous response is complete.
                self.end_response(out);
                let mut message = Message::user("", "");
                for image in std::mem::take(&mut self.images) {
                    message.content_mut().push(image);
                }
                message.content_mut().push_text(&prompt);
                Some(out.message(number, id, message, false))
            }
            UserText::Command(text) => {
                // Whether Claude Code runs it itself shows in the next turn.
                self.command = Some(Command {
                    line: number,
                    uuid: id.map(str::to_string),
                    text,
                });
                None
            }
            UserText::Meta(expansion) => {
                let Some(position) = open_command else {
                    out.skip(number, "isMeta messages (harness text, not requests)");
                    return None;
                };
                if let Some(MessageBody::User { content }) =
                    out.message_mut(position).map(|m| &mut m.body)
                {
                    // The model reads the expansion; the digest must not
                    // take its template's "Don't …" lines for the user's.
                    content.append_line(&format!("\n{}", command_expansion(&expansion)));
                }
                self.open_command = Some(position);
                Some(position)
            }
            UserText::CommandOutput => {
                out.skip(number, "local command output");
                None
            }
            UserText::Caveat => {
                out.skip(number, "local-command caveats (isMeta)");
                None
            }
            UserText::Harness => {
                out.skip(number, "system reminders and hook output (not requests)");
                None
            }
        }
    }

    /// A command waiting for the next turn: its output (a command Claude
    /// Code ran itself, `/model`, `/compact`, `/context`) means it was no
    /// request; anything else means it was one.
    fn resolve_command(&mut self, kind: &str, entry: &Value, out: &mut Emitter) {
        let Some(command) = self.command.take() else {
            return;
        };
        let text = content_text(entry.pointer("/message/content"));
        if kind == "user" && meta::classify(&text, false) == UserText::CommandOutput {
            out.skip_because(
                command.line,
                "local slash commands (run by Claude Code, not requests)",
                command.text,
            );
        } else {
            self.emit_command(command, out);
        }
    }

    fn emit_command(&mut self, command: Command, out: &mut Emitter) {
        let message = Message::user("", command.text);
        let position = out.message(command.line, command.uuid.as_deref(), message, true);
        if let (Some(uuid), Some(id)) = (command.uuid, out.first_id_from(position)) {
            self.uuids.entry(uuid).or_insert(id);
        }
        self.open_command = Some(position);
    }

    fn end_command(&mut self, out: &mut Emitter) {
        if let Some(position) = self.open_command.take() {
            out.close(position);
        }
    }

    fn end_response(&mut self, out: &mut Emitter) {
        if let Some((_, position)) = self.response.take() {
            out.close(position);
        }
    }

    /// One line of a response: a new assistant message, or more of the one
    /// being written (same `message.id`).
    fn assistant_line(&mut self, number: usize, entry: &Value, out: &mut Emitter) {
        self.idle
            .response(crate::transcript::time::timestamp_ms(entry));
        let message = entry.get("message").unwrap_or(&Value::Null);
        let api_id = message.get("id").and_then(Value::as_str);
        let model = message
            .get("model")
            .and_then(Value::as_str)
            .filter(|m| *m != "<synthetic>");
        if let Some(model) = model {
            out.settings(SessionSettings {
                model: Some(model.to_string()),
                ..SessionSettings::default()
            });
        }
        let position = match (&self.response, api_id) {
            (Some((open, position)), Some(id)) if open == id => {
                let position = *position;
                if let Some(target) = out.message_mut(position) {
                    fill(target, message, &mut self.tool_names, self.version);
                    if self.copied {
                        target.usage = None;
                    }
                }
                self.task_list(message);
                position
            }
            _ => {
                self.end_response(out);
                let mut response = Message::assistant("", "", Vec::new());
                if let MessageBody::Assistant { model: m, .. } = &mut response.body {
                    *m = message
                        .get("model")
                        .and_then(Value::as_str)
                        .map(str::to_string);
                }
                fill(&mut response, message, &mut self.tool_names, self.version);
                // A response written again (a resumed history copied into
                // the file): its usage is of a request made before the
                // resume, not of the one the copy leads to.
                self.copied = api_id.is_some_and(|id| !self.responses.insert(id.to_string()));
                if self.copied {
                    response.usage = None;
                } else if let Some(tokens) = self.plan_mode.request() {
                    // What the request this response answers attached.
                    out.attached_estimate(tokens);
                }
                self.task_list(message);
                let uuid = entry.get("uuid").and_then(Value::as_str);
                let position = out.message(number, uuid, response, api_id.is_some());
                self.response = api_id.map(|id| (id.to_string(), position));
                position
            }
        };
        if !thinking_only(message) {
            self.plan_mode.assistant_message();
        }
        self.edited.calls(message);
        self.remember(entry, position, out);
    }
}

/// A line of a response that holds only thinking.
fn thinking_only(message: &Value) -> bool {
    let blocks = message.get("content").and_then(Value::as_array);
    blocks.is_some_and(|blocks| {
        blocks.iter().all(|b| {
            matches!(
                b.get("type").and_then(Value::as_str),
                Some("thinking" | "redacted_thinking")
            )
        })
    })
}

impl Reader {
    /// A `TodoWrite` call sets the task list Claude Code attaches again
    /// after compacting.
    fn task_list(&mut self, message: &Value) {
        let blocks = message.get("content").and_then(Value::as_array);
        for block in blocks.into_iter().flatten() {
            if block.get("name").and_then(Value::as_str) == Some("TodoWrite") {
                if let Some(input) = block.get("input") {
                    self.reattached.todos(input);
                }
            }
        }
    }
}

/// The prompt a `queued_command` attachment holds: a message the person
/// typed while the agent worked, folded into the running turn. Queued
/// text the harness wrote (`isMeta`, an origin other than the person, a
/// task notification) is not theirs.
fn queued_prompt(entry: &Value) -> Option<String> {
    let attachment = entry.get("attachment")?;
    let field = |key: &str| attachment.get(key).and_then(Value::as_str);
    let meta = [attachment, entry]
        .iter()
        .any(|v| v.get("isMeta").and_then(Value::as_bool) == Some(true));
    let by_person = attachment
        .pointer("/origin/kind")
        .and_then(Value::as_str)
        .is_none_or(|kind| kind == "human");
    let prompt_mode = field("commandMode").is_none_or(|mode| mode == "prompt");
    let queued = field("type") == Some("queued_command");
    (queued && prompt_mode && by_person && !meta)
        .then(|| typed_prompt(attachment.get("prompt")))
        .flatten()
}

/// Queued text (a string or content blocks) as a prompt's text, the way
/// a user line's is read; `None` when it is no prompt.
fn typed_prompt(content: Option<&Value>) -> Option<String> {
    match meta::classify(&content_text(content), false) {
        UserText::Prompt(prompt) if !prompt.is_empty() => Some(prompt),
        _ => None,
    }
}

/// What bookkeeping lines state about the session: the context window
/// (2.1.x `cost-state`, per model) and the most output a request may ask
/// for (`api-request` params, `cost-state`), which decides where Claude
/// Code compacts.
fn stated_limits(kind: &str, entry: &Value, out: &mut Emitter) {
    match kind {
        "cost-state" => {
            let Some(usage) = entry.get("modelUsage").and_then(Value::as_object) else {
                return;
            };
            let model = out.model().map(str::to_string);
            let stated = match &model {
                Some(model) => usage.get(model),
                None if usage.len() == 1 => usage.values().next(),
                None => None,
            };
            let n = |key: &str| stated.and_then(|u| u.get(key)).and_then(Value::as_u64);
            if let Some(window) = n("contextWindow") {
                out.facts(SessionSettings {
                    context_window: Some(window),
                    ..SessionSettings::default()
                });
            }
            if let Some(max) = n("maxOutputTokens") {
                out.max_output_tokens(max);
            }
        }
        "api-request" => {
            if let Some(max) = entry.pointer("/params/max_tokens").and_then(Value::as_u64) {
                out.max_output_tokens(max);
            }
        }
        _ => {}
    }
}

fn boundary(number: usize, entry: &Value) -> Boundary {
    let metadata = entry.get("compactMetadata").unwrap_or(&Value::Null);
    let trigger = match metadata.get("trigger").and_then(Value::as_str) {
        Some("manual") => Trigger::Manual,
        _ => Trigger::Threshold,
    };
    let first_kept_uuid = metadata
        .pointer("/preservedSegment/headUuid")
        .or_else(|| metadata.pointer("/preservedMessages/uuids/0"))
        .and_then(Value::as_str)
        .map(str::to_string);
    Boundary {
        line: number,
        trigger,
        tokens_before: metadata
            .get("preTokens")
            .and_then(Value::as_u64)
            .unwrap_or(0),
        tokens_after: metadata.get("postTokens").and_then(Value::as_u64),
        first_kept_uuid,
        created_at: crate::transcript::time::timestamp_ms(entry),
        duration_ms: metadata.get("durationMs").and_then(Value::as_u64),
    }
}

/// Adds one line's content blocks and usage to its response.
fn fill(
    target: &mut Message,
    message: &Value,
    names: &mut HashMap<String, String>,
    version: Option<Version>,
) {
    if let Some(usage) = message.get("usage").and_then(usage_from) {
        // Every line of a response repeats the usage; the last is final.
        target.usage = Some(usage);
    }
    fill_blocks(target, message, names);
    estimate_placeholder_output(target, version);
}

/// An output figure below this is a streamed reply's placeholder.
const PLACEHOLDER_OUTPUT: u64 = 10;

/// Claude Code 2.0.76 writes a placeholder (1–8) as the output of every
/// line of most replies of hundreds of tokens (126 of 184 in one session),
/// and the meter, which adds the latest usage's output to its prompt,
/// would miss the reply in the next request. Such a figure is replaced
/// with Claude Code's own estimate of the reply (4 characters a token) of
/// what goes back: its text and its calls' input as sent
/// (`sent_input_chars`); a reply that short counts about the same either
/// way.
fn estimate_placeholder_output(target: &mut Message, version: Option<Version>) {
    if target.usage.is_none_or(|u| u.output >= PLACEHOLDER_OUTPUT) {
        return;
    }
    let calls: usize = (target.tool_calls().iter())
        .map(|c| c.name.len() + sent_input_chars(c, version))
        .sum();
    let chars = target.text().chars().count() + calls;
    if let Some(usage) = target.usage.as_mut() {
        usage.output = usage.output.max(chars.div_ceil(4) as u64);
    }
}

/// The first version that takes `ExitPlanMode`'s plan out of its input
/// before each request (the transcript and hooks keep it), and the first
/// that takes its `planFilePath` out too (read from 2.0.54's and 2.1.78's
/// code). 2.1 puts the plan file's text into the input itself: the model
/// never wrote it, and no request holds it.
const PLAN_LEFT_OUT: Version = (2, 0, 54);
const PLAN_PATH_LEFT_OUT: Version = (2, 1, 78);

/// The characters of a call's input as Claude Code sends it back.
fn sent_input_chars(call: &ToolCall, version: Option<Version>) -> usize {
    let left_out: &[&str] = match version {
        Some(v) if call.name == "ExitPlanMode" && v >= PLAN_PATH_LEFT_OUT => {
            &["plan", "planFilePath"]
        }
        Some(v) if call.name == "ExitPlanMode" && v >= PLAN_LEFT_OUT => &["plan"],
        _ => &[],
    };
    match &call.arguments {
        Value::Object(fields) if left_out.iter().any(|f| fields.contains_key(*f)) => {
            let sent = (fields.iter())
                .filter(|(key, _)| !left_out.contains(&key.as_str()))
                .map(|(key, value)| (key.clone(), value.clone()));
            Value::Object(sent.collect()).to_string().len()
        }
        arguments => arguments.to_string().len(),
    }
}

fn fill_blocks(target: &mut Message, message: &Value, names: &mut HashMap<String, String>) {
    let MessageBody::Assistant {
        content,
        tool_calls,
        ..
    } = &mut target.body
    else {
        return;
    };
    let blocks = message.get("content").and_then(Value::as_array);
    for block in blocks.into_iter().flatten() {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                content.append_line(block.get("text").and_then(Value::as_str).unwrap_or(""))
            }
            Some("thinking" | "redacted_thinking") => {
                // Kept with its signature: Anthropic wants it back as is.
                let part = part_of(block, Dialect::Anthropic);
                let repeated = |p: &Part| content.part_list().is_some_and(|l| l.contains(p));
                if let Some(part) = part.filter(|p| !repeated(p)) {
                    content.push(part);
                }
            }
            Some("tool_use") => {
                let id = block.get("id").and_then(Value::as_str).unwrap_or("");
                if tool_calls.iter().any(|c| c.id == id) {
                    continue; // a repeated line
                }
                let name = block.get("name").and_then(Value::as_str).unwrap_or("");
                names.insert(id.to_string(), name.to_string());
                tool_calls.push(ToolCall {
                    id: id.to_string(),
                    name: name.to_string(),
                    arguments: block.get("input").cloned().unwrap_or(Value::Null),
                });
            }
            _ => {}
        }
    }
}

fn usage_from(usage: &Value) -> Option<Usage> {
    let n = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
    let usage = Usage {
        input: n("input_tokens"),
        output: n("output_tokens"),
        cache_read: n("cache_read_input_tokens"),
        cache_write: n("cache_creation_input_tokens"),
    };
    (usage != Usage::default()).then_some(usage)
}

/// `<dir>/<session>/subagents/*.jsonl` beside `<dir>/<session>.jsonl`.
pub fn subagent_files(session_file: &Path) -> Vec<PathBuf> {
    let dir = session_file.with_extension("").join("subagents");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    files
}

/// What a slash command or skill expands to, marked as the client's text
/// (`conversation::request::COMMAND_EXPANSION`).
fn command_expansion(text: &str) -> String {
    let tag = crate::conversation::request::COMMAND_EXPANSION;
    format!("<{tag}>\n{text}\n</{tag}>")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::parse;

    #[test]
    fn split_responses_merge_before_pairing() {
        let text = [
            r#"{"type":"summary","summary":"x","leafUuid":"l"}"#,
            r#"{"type":"user","uuid":"u1","sessionId":"s","message":{"role":"user","content":"go"}}"#,
            r#"{"type":"assistant","uuid":"a1","sessionId":"s","message":{"id":"msg_1","role":"assistant","model":"claude-x","content":[{"type":"thinking","thinking":"hmm"}],"usage":{"input_tokens":3,"cache_read_input_tokens":100,"cache_creation_input_tokens":20,"output_tokens":1}}}"#,
            r#"{"type":"assistant","uuid":"a2","sessionId":"s","message":{"id":"msg_1","role":"assistant","model":"claude-x","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"a.rs"}}],"usage":{"input_tokens":3,"cache_read_input_tokens":100,"cache_creation_input_tokens":20,"output_tokens":19}}}"#,
            r#"{"type":"user","uuid":"u2","sessionId":"s","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"fn a(){}"}]}}"#,
            r#"{"type":"assistant","uuid":"a3","sessionId":"s","message":{"id":"msg_1","role":"assistant","model":"claude-x","content":[{"type":"tool_use","id":"t2","name":"Bash","input":{"command":"ls"}}]}}"#,
            r#"{"type":"user","uuid":"u3","sessionId":"s","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":"a.rs"}],"is_error":true},{"type":"text","text":"and then?"}]}}"#,
            r#"{"type":"user","uuid":"u5","sessionId":"s","isSidechain":true,"message":{"role":"user","content":"Warmup"}}"#,
            r#"{"type":"file-history-snapshot","messageId":"m","snapshot":{}}"#,
        ]
        .join("\n");
        let imported = parse(text.as_bytes(), None).unwrap();
        assert_eq!(imported.format, FORMAT);
        assert_eq!(imported.settings.model.as_deref(), Some("claude-x"));
        let messages: Vec<&Message> = imported.messages().collect();
        let roles: Vec<&str> = messages.iter().map(|m| m.role().as_str()).collect();
        assert_eq!(roles, ["user", "assistant", "tool", "tool", "user"]);
        assert_eq!(
            messages[1].tool_calls().len(),
            2,
            "three lines, one response"
        );
        assert_eq!(messages[1].usage.unwrap().output, 19, "the last usage wins");
        assert_eq!(messages[1].usage.unwrap().context_tokens(), 142);
        assert!(messages[3].is_error_result());
        assert_eq!(messages[4].text(), "and then?");
        let pairing = crate::conversation::tool_pairing(messages.iter().copied());
        assert_eq!((pairing.paired, pairing.orphan_results.len()), (2, 0));
        assert_eq!(
            imported.skipped.reasons(),
            [
                "summary lines: 1 (first at line 1)",
                "sidechain (subagent) lines: 1 (first at line 8)",
                "file-history-snapshot lines: 1 (first at line 9)"
            ]
        );
    }

    /// Claude Code 2.0.76's placeholder output (1–8 on every line of a
    /// reply) stands for Claude Code's estimate of the reply, so the meter
    /// does not miss it in the next request; a real figure stays.
    #[test]
    fn a_placeholder_output_is_the_reply_estimated() {
        let reply = |output: u64| {
            format!(
                r#"{{"type":"assistant","uuid":"a1","sessionId":"s","message":{{"id":"msg_1","role":"assistant","model":"claude-x","content":[{{"type":"text","text":"{}"}}],"usage":{{"input_tokens":3,"cache_read_input_tokens":100,"output_tokens":{output}}}}}}}"#,
                "word ".repeat(80)
            )
        };
        let output = |line: String| {
            let text = [r#"{"type":"user","uuid":"u1","sessionId":"s","message":{"role":"user","content":"go"}}"#.to_string(), line].join("\n");
            let imported = parse(text.as_bytes(), None).unwrap();
            let messages: Vec<&Message> = imported.messages().collect();
            messages[1].usage.unwrap().output
        };
        assert_eq!(output(reply(4)), 100, "400 characters, 4 a token");
        assert_eq!(output(reply(150)), 150);
        // From 2.0.54 `ExitPlanMode`'s plan goes back in no request (from
        // 2.1.78 nor its path): the estimate leaves them out.
        let exit = |version: &str| {
            let input = serde_json::json!({"plan": "- a step of the plan\n".repeat(200), "planFilePath": "/p/plan.md"});
            serde_json::json!({"type": "assistant", "uuid": "a1", "sessionId": "s", "version": version,
                "message": {"id": "msg_1", "role": "assistant", "model": "claude-x", "usage": {"input_tokens": 3, "output_tokens": 1},
                    "content": [{"type": "tool_use", "id": "t1", "name": "ExitPlanMode", "input": input}]}})
            .to_string()
        };
        let with_plan = output(exit("2.0.53"));
        assert!(with_plan > 1_000, "{with_plan}");
        let path = r#"{"planFilePath":"/p/plan.md"}"#.len() as u64;
        assert_eq!(output(exit("2.1.11")), (12 + path).div_ceil(4));
        assert_eq!(output(exit("2.1.78")), (12 + 2u64).div_ceil(4));
    }

    /// A resumed history written again into the file carries the usage of
    /// the requests before the resume: it counts for nothing.
    #[test]
    fn a_response_written_again_brings_no_usage() {
        let prompt = |uuid: &str| {
            format!(
                r#"{{"type":"user","uuid":"{uuid}","parentUuid":null,"sessionId":"s","message":{{"role":"user","content":"go"}}}}"#
            )
        };
        let reply = |uuid: &str, parent: &str| {
            format!(
                r#"{{"type":"assistant","uuid":"{uuid}","parentUuid":"{parent}","sessionId":"s","message":{{"id":"msg_1","role":"assistant","model":"claude-x","content":[{{"type":"text","text":"done"}}],"usage":{{"input_tokens":3,"cache_read_input_tokens":900,"output_tokens":20}}}}}}"#
            )
        };
        let text = [
            prompt("u1"),
            reply("a1", "u1"),
            prompt("u2"),
            reply("a2", "u2"),
        ]
        .join("\n");
        let imported = parse(text.as_bytes(), None).unwrap();
        let usages: Vec<Option<Usage>> = imported
            .messages()
            .filter(|m| m.role() == crate::conversation::Role::Assistant)
            .map(|m| m.usage)
            .collect();
        assert_eq!(usages.len(), 2);
        assert!(usages[0].is_some() && usages[1].is_none(), "{usages:?}");
    }

    fn lines(lines: &[&str]) -> Imported {
        parse(lines.join("\n").as_bytes(), Some(FORMAT)).unwrap()
    }

    fn first_compaction(imported: &Imported) -> &crate::compaction::CompactionRecord {
        imported
            .entries
            .iter()
            .find_map(|e| match e {
                crate::store::LogEntry::Compaction(record) => Some(&**record),
                _ => None,
            })
            .expect("a compaction")
    }

    /// The compaction figures; the view is checked through the binary
    /// (tests/it/import.rs) on a real session.
    #[test]
    fn a_boundary_and_its_summary_are_a_compaction() {
        let imported = lines(&[
            r#"{"type":"user","uuid":"u1","sessionId":"s","message":{"role":"user","content":"go"}}"#,
            r#"{"type":"assistant","uuid":"a1","sessionId":"s","message":{"id":"msg_1","role":"assistant","model":"claude-x","content":[{"type":"text","text":"done"}]}}"#,
            r#"{"type":"user","uuid":"u2","sessionId":"s","message":{"role":"user","content":"and tests"}}"#,
            r#"{"type":"assistant","uuid":"a2","sessionId":"s","message":{"id":"msg_2","role":"assistant","model":"claude-x","content":[{"type":"text","text":"next"}]}}"#,
            r#"{"type":"system","subtype":"compact_boundary","uuid":"b","parentUuid":null,"logicalParentUuid":"a2","sessionId":"s","content":"Conversation compacted","compactMetadata":{"trigger":"auto","preTokens":150000,"preservedSegment":{"headUuid":"u2","anchorUuid":"c","tailUuid":"a2"}}}"#,
            r#"{"type":"user","uuid":"c","parentUuid":"b","sessionId":"s","isCompactSummary":true,"isVisibleInTranscriptOnly":true,"message":{"role":"user","content":"This session is being continued. Summary: went."}}"#,
            r#"{"type":"user","uuid":"u3","sessionId":"s","message":{"role":"user","content":"more"}}"#,
            r#"{"type":"cost-state","sessionId":"s","modelUsage":{"claude-x":{"inputTokens":9,"contextWindow":1000000}}}"#,
        ]);
        assert_eq!(imported.settings.context_window, Some(1_000_000));
        assert_eq!(imported.compaction_count(), 1);
        let record = first_compaction(&imported);
        assert_eq!(
            record.summary,
            "This session is being continued. Summary: went."
        );
        assert_eq!(record.trigger, Trigger::Threshold, "auto");
        assert_eq!(record.tokens_before, 150_000);
        assert_eq!(record.first_kept_message_id.as_deref(), Some("u2"));
        assert_eq!(record.messages_summarized, 2);
        assert_eq!(imported.message_count(), 5, "the summary is not a message");
        assert_eq!(
            imported.skipped.reasons(),
            ["cost-state lines: 1 (first at line 8)"]
        );
    }

    /// What Claude Code re-attaches after compacting (a file read last)
    /// is in its next request but in no message: the compaction counts it
    /// (`unseen_tokens`, in `tokens_after`). A kind of attachment written
    /// before the first message (the model's name) is in every request,
    /// which the calibrated overhead already holds; one after a message is
    /// the provider's next usage's to count.
    #[test]
    fn what_claude_code_re_attaches_after_compacting_counts_with_the_compaction() {
        let file = "fn parse(input: &str) -> Result<Ast, Error> { todo!() }\n".repeat(40);
        let attached = |kind: &str, text: &str| {
            serde_json::json!({"type": "attachment", "sessionId": "s", "attachment": {"type": kind, "filename": "/w/parser.rs", "content": {"type": "text", "file": {"filePath": "/w/parser.rs", "content": text}}}}).to_string()
        };
        let model = r#"{"type":"attachment","sessionId":"s","attachment":{"type":"model","text":"You are powered by the model named Opus. Its knowledge cutoff is June 2026."}}"#;
        let head = [
            model.to_string(),
            r#"{"type":"user","uuid":"u1","sessionId":"s","message":{"role":"user","content":"go"}}"#.to_string(),
            r#"{"type":"assistant","uuid":"a1","sessionId":"s","message":{"id":"msg_1","role":"assistant","model":"claude-x","content":[{"type":"text","text":"done"}]}}"#.to_string(),
            r#"{"type":"system","subtype":"compact_boundary","uuid":"b","sessionId":"s","compactMetadata":{"trigger":"manual","preTokens":900}}"#.to_string(),
            r#"{"type":"user","uuid":"c","sessionId":"s","isCompactSummary":true,"message":{"role":"user","content":"Summary: went."}}"#.to_string(),
        ];
        let import = |tail: &[String]| {
            let all: Vec<&str> = head.iter().chain(tail).map(String::as_str).collect();
            let imported = lines(&all);
            first_compaction(&imported).clone()
        };
        let bare = import(&[]);
        assert_eq!(bare.unseen_tokens, None);
        let with_file = import(&[attached("file", &file), model.to_string()]);
        let counted = crate::tokens::Encoding::O200k.count(&file);
        let unseen = with_file.unseen_tokens.expect("the file is counted");
        assert!(
            unseen >= counted && unseen < counted + 20,
            "{unseen} for a file of {counted} tokens, the model's note not counted again"
        );
        assert_eq!(with_file.tokens_after, bare.tokens_after + unseen);
        // After the next message it is not the compaction's.
        let later = import(&[
            r#"{"type":"user","uuid":"u2","sessionId":"s","message":{"role":"user","content":"next"}}"#.to_string(),
            attached("file", &file),
        ]);
        assert_eq!(later.unseen_tokens, None);
    }

    /// Under the SDK, the note of a file edited since its whole read goes
    /// with the request after a prompt; the marker of an interruption is
    /// no prompt, so the prompt after it carries one note, not two.
    #[test]
    fn the_prompt_after_an_interruption_carries_the_sdks_note_once() {
        let content: String = (1..=40).map(|n| format!("line {n}\n")).collect();
        let numbered: String = (content.lines().enumerate())
            .map(|(n, l)| format!("{:>6}→{l}\n", n + 1))
            .collect();
        let line = |value: serde_json::Value| value.to_string();
        let user = |n: u32, content: serde_json::Value, result: Option<serde_json::Value>| {
            let mut value = serde_json::json!({"type": "user", "uuid": format!("u{n}"), "sessionId": "s", "version": "2.1.11",
                "timestamp": format!("2026-01-21T16:{n:02}:00Z"), "message": {"role": "user", "content": content}});
            if let Some(result) = result {
                value["toolUseResult"] = result;
            }
            line(value)
        };
        let call = |n: u32, name: &str, input: serde_json::Value| {
            line(
                serde_json::json!({"type": "assistant", "uuid": format!("a{n}"), "sessionId": "s", "version": "2.1.11",
                "timestamp": format!("2026-01-21T16:{n:02}:00Z"),
                "message": {"id": format!("msg_{n}"), "role": "assistant", "model": "claude-x",
                    "content": [{"type": "tool_use", "id": format!("t{n}"), "name": name, "input": input}]}}),
            )
        };
        let result = |n: u32, text: &str| serde_json::json!([{"type": "tool_result", "tool_use_id": format!("t{n}"), "content": text}]);
        let typed = |text: &str| serde_json::json!([{"type": "text", "text": text}]);
        let edited = serde_json::json!({"filePath": "/w/a.md", "originalFile": content,
            "oldString": "line 5", "newString": "line five", "replaceAll": false});
        let transcript = [
            user(0, typed("plan it"), None),
            call(1, "Read", serde_json::json!({"file_path": "/w/a.md"})),
            user(2, result(1, &numbered), None),
            call(
                3,
                "Edit",
                serde_json::json!({"file_path": "/w/a.md", "old_string": "line 5", "new_string": "line five"}),
            ),
            user(4, result(3, "done"), Some(edited)),
            call(5, "ExitPlanMode", serde_json::json!({})),
            user(6, result(5, "User chose to stay in plan mode"), None),
            user(7, typed("[Request interrupted by user for tool use]"), None),
            user(8, typed("name it publish"), None),
        ];
        let imported = lines(&transcript.iter().map(String::as_str).collect::<Vec<_>>());
        use crate::store::LogEntry;
        let after_each: Vec<usize> =
            imported
                .entries
                .iter()
                .fold(Vec::new(), |mut counts, entry| {
                    match entry {
                        LogEntry::Message { .. } => counts.push(0),
                        LogEntry::Attached { .. } => *counts.last_mut().unwrap() += 1,
                        _ => {}
                    }
                    counts
                });
        // The prompt, the read, its result, the edit, its result, the
        // call, its result, the marker, the prompt.
        assert_eq!(after_each, [0, 0, 0, 0, 0, 0, 0, 0, 1]);
    }

    /// What Claude Code attaches after a message and writes as an
    /// `attachment` line (a file changed on disk, a reminder) is in every
    /// request from there: the import logs it after the message it
    /// follows (`LogEntry::Attached`). One it renders into the system part
    /// (the model's name) is in every request already, and a kind it sends
    /// nothing of is not logged.
    #[test]
    fn what_claude_code_attaches_after_a_message_is_carried_with_its_place() {
        let snippet = "42\tlet parsed = parse(input)?;\n".repeat(30);
        // 2.1.330 writes the text it sent, for a kind that sends any.
        let attachment = |kind: &str, sent: bool| {
            let mut line = serde_json::json!({"type": "attachment", "sessionId": "s", "attachment": {"type": kind, "filename": "/w/parser.rs", "snippet": snippet}});
            if sent {
                line["rendered"] = serde_json::json!([{"content": snippet}]);
                line["renderedRole"] = serde_json::json!("user");
            }
            line.to_string()
        };
        let model = r#"{"type":"attachment","sessionId":"s","attachment":{"type":"model","text":"You are powered by the model named Opus."},"rendered":[{"content":"<system-reminder>You are powered by the model named Opus.</system-reminder>"}],"renderedRole":"system"}"#;
        let imported = lines(&[
            r#"{"type":"user","uuid":"u1","sessionId":"s","message":{"role":"user","content":"go"}}"#,
            model,
            r#"{"type":"assistant","uuid":"a1","sessionId":"s","message":{"id":"msg_1","role":"assistant","model":"claude-x","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"make fmt"}}]}}"#,
            r#"{"type":"user","uuid":"r1","sessionId":"s","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}}"#,
            &attachment("edited_text_file", true),
            model,
            &attachment("hook_system_message", false),
            r#"{"type":"assistant","uuid":"a2","sessionId":"s","message":{"id":"msg_2","role":"assistant","model":"claude-x","content":[{"type":"text","text":"formatted"}]}}"#,
        ]);
        use crate::store::LogEntry;
        let kinds: Vec<&str> = imported
            .entries
            .iter()
            .map(|e| match e {
                LogEntry::Message { message, .. } => message.role().as_str(),
                LogEntry::Attached { .. } => "attached",
                _ => "other",
            })
            .collect();
        assert_eq!(
            kinds,
            ["user", "assistant", "tool", "attached", "assistant"],
            "after the tool result"
        );
        let tokens = imported.entries.iter().find_map(|e| match e {
            LogEntry::Attached { tokens } => Some(*tokens),
            _ => None,
        });
        let counted = crate::tokens::Encoding::O200k.count(&snippet);
        assert!(
            tokens.is_some_and(|t| t >= counted && t < counted + 20),
            "{tokens:?} for a snippet of {counted}"
        );
    }

    /// A version that writes no line of what it re-attached after
    /// compacting: the files the transcript showed last stand in for it,
    /// counted with the compaction once the next message shows no
    /// `attachment` line came; where one came, it is counted instead.
    #[test]
    fn files_touched_last_count_with_a_compaction_no_attachment_line_follows() {
        let file = "fn parse(input: &str) -> Result<Ast, Error> { todo!() }\n".repeat(40);
        let head = [
            r#"{"type":"user","uuid":"u1","sessionId":"s","message":{"role":"user","content":"go"}}"#.to_string(),
            serde_json::json!({"type":"assistant","uuid":"a1","sessionId":"s","message":{"id":"msg_1","role":"assistant","model":"claude-x","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/w/parser.rs"}}]}}).to_string(),
            serde_json::json!({"type":"user","uuid":"r1","sessionId":"s","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"(numbered)"}]},"toolUseResult":{"type":"text","file":{"filePath":"/w/parser.rs","content":file,"numLines":40,"startLine":1,"totalLines":40}}}).to_string(),
            r#"{"type":"system","subtype":"compact_boundary","uuid":"b","sessionId":"s","compactMetadata":{"trigger":"manual","preTokens":900}}"#.to_string(),
            r#"{"type":"user","uuid":"c","sessionId":"s","isCompactSummary":true,"message":{"role":"user","content":"Summary: went."}}"#.to_string(),
        ];
        let next = r#"{"type":"user","uuid":"u2","sessionId":"s","message":{"role":"user","content":"next"}}"#.to_string();
        let import = |tail: &[String]| {
            let all: Vec<&str> = head.iter().chain(tail).map(String::as_str).collect();
            first_compaction(&lines(&all)).unseen_tokens
        };
        let counted = crate::tokens::Encoding::O200k.count(&file);
        let estimated = import(std::slice::from_ref(&next)).expect("the file is estimated");
        assert!(
            estimated > counted && estimated < counted * 2,
            "{estimated} for a file of {counted} tokens, numbered"
        );
        assert_eq!(import(&[]), None, "not before the next message shows it");
        let written = serde_json::json!({"type": "attachment", "sessionId": "s", "attachment": {"type": "plan_file_reference", "planContent": "the plan"}}).to_string();
        let with_line = import(&[written, next]).expect("the line is counted");
        assert!(with_line < 10, "{with_line}: the line, not the estimate");
    }

    /// Back after 65 minutes away, Claude Code's next request no longer
    /// holds the results of all but its 12 newest tool calls, and writes
    /// nothing of it: the import records the trim as the agent's `prune`,
    /// and the context it counts drops by about what those results held.
    #[test]
    fn a_trim_claude_code_made_without_a_trace_is_recorded_and_counted() {
        let output = "line of a file read by the agent\n".repeat(200);
        let at = |minute: u64| {
            format!(
                "2026-11-20T{:02}:{:02}:00.000Z",
                8 + minute / 60,
                minute % 60
            )
        };
        let mut transcript = vec![
            serde_json::json!({"type": "user", "uuid": "u0", "version": "2.1.330", "timestamp": at(0), "message": {"role": "user", "content": "read them all"}}).to_string(),
        ];
        for n in 0..30 {
            transcript.push(serde_json::json!({"type": "assistant", "uuid": format!("a{n}"), "version": "2.1.330", "timestamp": at(1), "message": {"id": format!("msg_{n}"), "role": "assistant", "model": "claude-x", "content": [{"type": "tool_use", "id": format!("t{n}"), "name": "Read", "input": {"file_path": format!("/w/f{n}.rs")}}]}}).to_string());
            transcript.push(serde_json::json!({"type": "user", "uuid": format!("r{n}"), "version": "2.1.330", "timestamp": at(1), "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("t{n}"), "content": output}]}}).to_string());
        }
        transcript.push(serde_json::json!({"type": "assistant", "uuid": "done", "version": "2.1.330", "timestamp": at(2), "message": {"id": "msg_done", "role": "assistant", "model": "claude-x", "content": [{"type": "text", "text": "Read all 30."}]}}).to_string());
        let soon = serde_json::json!({"type": "user", "uuid": "u1", "version": "2.1.330", "timestamp": at(60), "message": {"role": "user", "content": "and now?"}}).to_string();
        let later = serde_json::json!({"type": "user", "uuid": "u1", "version": "2.1.330", "timestamp": at(70), "message": {"role": "user", "content": "and now?"}}).to_string();
        let import = |last: &str| {
            let all: Vec<&str> = transcript
                .iter()
                .map(String::as_str)
                .chain([last])
                .collect();
            lines(&all)
        };
        assert_eq!(
            import(&soon).compaction_count(),
            0,
            "58 minutes away: nothing cleared"
        );
        let imported = import(&later);
        assert_eq!(imported.compaction_count(), 1);
        let record = first_compaction(&imported);
        assert_eq!(record.strategy, crate::compaction::Strategy::Prune);
        assert!(record.is_agents());
        assert_eq!(record.pruned_message_ids.len(), 18, "all but the 12 newest");
        let one = crate::tokens::Encoding::O200k.count(&output);
        let saved = record.tokens_before - record.tokens_after;
        assert!(
            saved > 17 * one && saved < 18 * one,
            "saved {saved}: 18 results of {one} tokens, each leaving a placeholder"
        );
    }

    /// An older Claude Code wrote the conversation after `/clear` into the
    /// same file, from a new root: the context starts over there (the
    /// provider's next prompt is the system prompt and the new request).
    #[test]
    fn a_new_root_after_the_conversation_is_a_clear() {
        let imported = lines(&[
            r#"{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","message":{"role":"user","content":"go. Never push to main."}}"#,
            r#"{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s","message":{"id":"msg_1","role":"assistant","model":"claude-x","content":[{"type":"text","text":"done"}],"usage":{"input_tokens":10,"cache_read_input_tokens":86000,"output_tokens":5}}}"#,
            r#"{"type":"summary","summary":"Went","leafUuid":"a1"}"#,
            r#"{"type":"user","uuid":"u2","parentUuid":null,"sessionId":"s","message":{"role":"user","content":"plan the next thing"}}"#,
            r#"{"type":"assistant","uuid":"a2","parentUuid":"u2","sessionId":"s","message":{"id":"msg_2","role":"assistant","model":"claude-x","content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":10,"cache_read_input_tokens":20000,"output_tokens":5}}}"#,
        ]);
        assert_eq!(imported.compaction_count(), 1);
        let record = first_compaction(&imported);
        assert_eq!(record.summary, CLEARED);
        assert_eq!(record.trigger, Trigger::Manual);
        assert_eq!(record.first_kept_message_id, None);
        assert_eq!(
            record.messages_summarized, 2,
            "the whole first conversation"
        );
        assert!(
            record.retained_rules.is_empty(),
            "{:?}",
            record.retained_rules
        );
        assert_eq!(imported.message_count(), 4, "every message is kept");
        // The first line of a file has no parent either: no clear there.
        let imported = lines(&[
            r#"{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","message":{"role":"user","content":"go"}}"#,
            r#"{"type":"user","uuid":"u2","parentUuid":"u1","sessionId":"s","message":{"role":"user","content":"and more"}}"#,
        ]);
        assert_eq!(imported.compaction_count(), 0);
    }

    #[test]
    fn a_boundary_without_preserved_messages_summarizes_everything_before_it() {
        let imported = lines(&[
            r#"{"type":"user","uuid":"u1","sessionId":"s","message":{"role":"user","content":"go"}}"#,
            r#"{"type":"system","subtype":"compact_boundary","uuid":"b","sessionId":"s","compactMetadata":{"trigger":"manual","preTokens":900}}"#,
            r#"{"type":"user","uuid":"c","sessionId":"s","isCompactSummary":true,"message":{"role":"user","content":[{"type":"text","text":"Summary"}]}}"#,
            r#"{"type":"system","subtype":"compact_boundary","uuid":"b2","sessionId":"s","compactMetadata":{"trigger":"manual","preTokens":1000}}"#,
            r#"{"type":"user","uuid":"u2","sessionId":"s","message":{"role":"user","content":"go on"}}"#,
        ]);
        let records: Vec<_> = imported
            .entries
            .iter()
            .filter_map(|e| match e {
                crate::store::LogEntry::Compaction(record) => Some(record),
                _ => None,
            })
            .collect();
        assert_eq!(records.len(), 1);
        assert_eq!(records[0].trigger, Trigger::Manual);
        assert_eq!(records[0].first_kept_message_id, None);
        assert_eq!(records[0].summary, "Summary");
        assert_eq!(
            imported.skipped.reasons(),
            ["compact boundaries without a summary message: 1 (first at line 4)"]
        );
        // A file that starts with a summary continues another session: the
        // summary is its first message.
        let continued = lines(&[
            r#"{"type":"user","uuid":"c","sessionId":"s","isCompactSummary":true,"message":{"role":"user","content":"Summary"}}"#,
            r#"{"type":"user","uuid":"u2","sessionId":"s","message":{"role":"user","content":"go on"}}"#,
        ]);
        assert_eq!(continued.compaction_count(), 0);
        assert_eq!(continued.messages().next().unwrap().text(), "Summary");
    }

    /// Real lines: the deep-manifest session's `/model` (caveat, command,
    /// output) and JSSoundRecorder's `/init` (command, expanded prompt).
    #[test]
    fn slash_commands_and_harness_text_are_not_requests() {
        let imported = lines(&[
            r#"{"type":"user","uuid":"c1","sessionId":"s","isMeta":true,"message":{"role":"user","content":"Caveat: The messages below were generated by the user while running local commands. DO NOT respond to these messages or otherwise consider them in your response unless the user explicitly asks you to."}}"#,
            r#"{"type":"user","uuid":"c2","sessionId":"s","message":{"role":"user","content":"<command-name>/model</command-name>\n            <command-message>model</command-message>\n            <command-args></command-args>"}}"#,
            r#"{"type":"user","uuid":"c3","sessionId":"s","message":{"role":"user","content":"<local-command-stdout>Set model to \u001b[1mopus (claude-opus-4-5-20251101)\u001b[22m</local-command-stdout>"}}"#,
            r#"{"type":"user","uuid":"i1","sessionId":"s","message":{"role":"user","content":"<command-message>init is analyzing your codebase…</command-message>\n<command-name>/init</command-name>"}}"#,
            r#"{"type":"user","uuid":"i2","sessionId":"s","isMeta":true,"message":{"role":"user","content":[{"type":"text","text":"Please analyze this codebase and create a CLAUDE.md file."}]}}"#,
            r#"{"type":"assistant","uuid":"a1","sessionId":"s","message":{"id":"msg_1","role":"assistant","model":"claude-x","content":[{"type":"text","text":"Created CLAUDE.md"}]}}"#,
            r#"{"type":"user","uuid":"r1","sessionId":"s","message":{"role":"user","content":[{"type":"text","text":"<system-reminder>\nThe TodoWrite tool hasn't been used recently.\n</system-reminder>"},{"type":"text","text":"now fix the build"}]}}"#,
            r#"{"type":"user","uuid":"r2","sessionId":"s","message":{"role":"user","content":"<system-reminder>\nnothing else\n</system-reminder>"}}"#,
        ]);
        let texts: Vec<&str> = imported.messages().map(Message::text).collect();
        assert_eq!(
            texts,
            [
                "/init\n\n<command-expansion>\nPlease analyze this codebase and create a CLAUDE.md file.\n</command-expansion>",
                "Created CLAUDE.md",
                "now fix the build"
            ]
        );
        assert_eq!(
            imported.skipped.reasons(),
            [
                "local-command caveats (isMeta): 1 (first at line 1)",
                "local slash commands (run by Claude Code, not requests): 1 (first at line 2: /model)",
                "local command output: 1 (first at line 3)",
                "system reminders and hook output (not requests): 1 (first at line 8)"
            ]
        );
    }
    /// Claude Code 2.0.42 (the JSSoundRecorder session): a message typed
    /// while the agent worked is queued, dequeued and sent as a prompt of
    /// its own, whose line is the one read.
    #[test]
    fn a_queued_message_sent_as_a_prompt_is_read_once() {
        let imported = lines(&[
            r#"{"type":"user","uuid":"u1","sessionId":"s","message":{"role":"user","content":"Set up a dev server"}}"#,
            r#"{"type":"assistant","uuid":"a1","sessionId":"s","message":{"id":"msg_1","role":"assistant","model":"claude-x","content":[{"type":"text","text":"Node or Python?"}]}}"#,
            r#"{"type":"queue-operation","operation":"enqueue","timestamp":"2025-11-18T00:02:15.264Z","content":[{"type":"text","text":"ok, fine, let's do vite"}],"sessionId":"s"}"#,
            r#"{"type":"queue-operation","operation":"dequeue","timestamp":"2025-11-18T00:02:15.265Z","sessionId":"s"}"#,
            r#"{"type":"user","uuid":"u2","sessionId":"s","message":{"role":"user","content":[{"type":"text","text":"ok, fine, let's do vite"}]}}"#,
        ]);
        let texts: Vec<&str> = imported.messages().map(Message::text).collect();
        assert_eq!(
            texts,
            [
                "Set up a dev server",
                "Node or Python?",
                "ok, fine, let's do vite"
            ]
        );
        assert_eq!(
            imported.skipped.reasons(),
            ["queue-operation lines: 2 (first at line 3)"]
        );
    }

    /// Claude Code 2.1 folds a message typed while the agent works into the
    /// running turn: a `queued_command` attachment and a `remove`, no user
    /// line. The shared transcripts (2.0.x) hold none, so these lines are
    /// built from what NOTES.md and public readers of 2.1 transcripts
    /// describe: `attachment.{type, commandMode, origin.kind, prompt}`.
    #[test]
    fn a_queued_message_the_model_read_mid_turn_is_a_prompt() {
        let call = r#"{"type":"assistant","uuid":"a1","sessionId":"s","message":{"id":"msg_1","role":"assistant","model":"claude-x","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"npm test"}}]}}"#;
        let result = r#"{"type":"user","uuid":"r1","sessionId":"s","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}}"#;
        let enqueue = r#"{"type":"queue-operation","operation":"enqueue","sessionId":"s","content":"also run the linter before you commit"}"#;
        let attachment = r#"{"type":"attachment","uuid":"q1","sessionId":"s","attachment":{"type":"queued_command","commandMode":"prompt","origin":{"kind":"human"},"prompt":"also run the linter before you commit"}}"#;
        let remove = r#"{"type":"queue-operation","operation":"remove","sessionId":"s","content":"also run the linter before you commit"}"#;
        let next = r#"{"type":"assistant","uuid":"a2","sessionId":"s","message":{"id":"msg_2","role":"assistant","model":"claude-x","content":[{"type":"text","text":"Tests pass; linting next."}]}}"#;
        let start = r#"{"type":"user","uuid":"u1","sessionId":"s","message":{"role":"user","content":"Run the tests"}}"#;
        let expected = [
            "Run the tests",
            "",
            "ok",
            "also run the linter before you commit",
            "Tests pass; linting next.",
        ];
        // The attachment before the `remove`, after it, or missing.
        for order in [
            [start, call, enqueue, result, attachment, remove, next],
            [start, call, enqueue, result, remove, attachment, next],
            [start, call, enqueue, result, remove, next, ""],
        ] {
            let order: Vec<&str> = order.into_iter().filter(|l| !l.is_empty()).collect();
            let imported = lines(&order);
            let texts: Vec<&str> = imported.messages().map(Message::text).collect();
            assert_eq!(texts, expected, "{order:?}");
            assert_eq!(imported.messages().nth(3).unwrap().role().as_str(), "user");
        }
        // Taken back to edit, still queued at the end, or not the
        // person's: no prompt.
        let imported = lines(&[
            start,
            enqueue,
            r#"{"type":"queue-operation","operation":"popAll","sessionId":"s"}"#,
            r#"{"type":"attachment","uuid":"q2","sessionId":"s","attachment":{"type":"queued_command","commandMode":"task-notification","prompt":"<task-notification><status>completed</status></task-notification>"}}"#,
            r#"{"type":"attachment","uuid":"q3","sessionId":"s","attachment":{"type":"queued_command","commandMode":"prompt","origin":{"kind":"peer"},"prompt":"a message from another session"}}"#,
            r#"{"type":"queue-operation","operation":"enqueue","sessionId":"s","content":"and deploy it"}"#,
        ]);
        let texts: Vec<&str> = imported.messages().map(Message::text).collect();
        assert_eq!(texts, ["Run the tests"]);
    }
}
