//! Claude Code `~/.claude/projects/<project>/<session>.jsonl`. One API
//! response is written as several `assistant` lines that share
//! `message.id` (one content block each), sometimes with tool results in
//! between: they are merged into one message before results are paired
//! with calls. A `compact_boundary` system line and the `isCompactSummary`
//! user message after it are a compaction: they become a compaction record
//! whose kept part starts at the boundary's preserved segment, so the view
//! starts where Claude Code's did after `/compact`. Slash commands, their
//! output, caveats and harness text are not requests (see `meta`). Lines
//! that are not conversation (`summary`, `file-history-snapshot`,
//! `queue-operation`, `attachment`, `cost-state`, …) are skipped and
//! counted. Subagent transcripts live in `<session>/subagents/*.jsonl` and
//! import on their own.

mod meta;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{
    append_line, content_text, Builder, FirstKept, ForeignCompaction, Format, Imported, Line,
};
use crate::compaction::Trigger;
use crate::conversation::{Message, MessageBody, ToolCall, Usage};
use crate::store::SessionSettings;
use meta::UserText;

/// Line types Claude Code writes for itself; none is conversation.
const BOOKKEEPING: [&str; 13] = [
    "summary",
    "file-history-snapshot",
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

pub(crate) fn import(lines: &[Line]) -> Imported {
    let mut reader = Reader {
        lines,
        builder: Builder::new(Format::ClaudeCode),
        // A subagent's own file holds only sidechain lines; in a main
        // session file they belong to another context and are skipped.
        main_conversation: lines.iter().any(|l| {
            l.value.as_ref().is_ok_and(|v| {
                matches!(
                    v.get("type").and_then(Value::as_str),
                    Some("user" | "assistant")
                ) && v.get("isSidechain").and_then(Value::as_bool) != Some(true)
            })
        }),
        assistants: HashMap::new(),
        tool_names: HashMap::new(),
        items_by_uuid: HashMap::new(),
        boundary: None,
        open_command: None,
    };
    reader.builder.settings(stated_settings(lines));
    for (position, line) in lines.iter().enumerate() {
        if let Some(entry) = reader.builder.readable(line) {
            reader.line(position, line.number, entry);
        }
    }
    reader.drop_boundary_without_summary();
    reader.builder.finish()
}

/// The session's model (the first a response names) and the context window
/// Claude Code itself used for it (`cost-state` lines of 2.1.x), which is
/// preferred over our table.
fn stated_settings(lines: &[Line]) -> SessionSettings {
    let entries = || lines.iter().filter_map(|l| l.value.as_ref().ok());
    let model = entries().find_map(|v| {
        let model = v.pointer("/message/model")?.as_str()?;
        (v.get("type").and_then(Value::as_str) == Some("assistant") && model != "<synthetic>")
            .then(|| model.to_string())
    });
    let context_window = entries()
        .rev()
        .filter(|v| v.get("type").and_then(Value::as_str) == Some("cost-state"))
        .filter_map(|v| v.get("modelUsage")?.as_object())
        .filter_map(|usage| match &model {
            Some(model) => usage.get(model),
            None if usage.len() == 1 => usage.values().next(),
            None => None,
        })
        .find_map(|u| u.get("contextWindow")?.as_u64());
    SessionSettings {
        model,
        context_window,
        ..SessionSettings::default()
    }
}

/// A `compact_boundary` line waiting for its summary message.
struct Boundary {
    line: usize,
    trigger: Trigger,
    tokens_before: u64,
    /// The first message Claude Code kept verbatim (its preserved segment).
    first_kept_uuid: Option<String>,
}

struct Reader<'a> {
    lines: &'a [Line],
    builder: Builder,
    main_conversation: bool,
    /// message.id → item index of the merged assistant message.
    assistants: HashMap<String, usize>,
    /// tool_use id → tool name, to name the results.
    tool_names: HashMap<String, String>,
    /// A line's uuid → the item it became (or was merged into).
    items_by_uuid: HashMap<String, usize>,
    boundary: Option<Boundary>,
    /// A slash command whose expanded prompt (an `isMeta` line) may follow.
    open_command: Option<usize>,
}

impl Reader<'_> {
    fn line(&mut self, position: usize, number: usize, entry: &Value) {
        let kind = entry.get("type").and_then(Value::as_str).unwrap_or("");
        let sidechain = entry.get("isSidechain").and_then(Value::as_bool) == Some(true);
        let flag = |key: &str| entry.get(key).and_then(Value::as_bool) == Some(true);
        match kind {
            "user" | "assistant" if sidechain && self.main_conversation => {
                self.builder.skip(number, "sidechain (subagent) lines")
            }
            "user" if flag("isCompactSummary") => self.compact_summary(number, entry),
            "user" => {
                self.drop_boundary_without_summary();
                self.user_line(position, number, entry);
            }
            "assistant" => {
                self.drop_boundary_without_summary();
                self.open_command = None;
                let index = assistant_line(
                    &mut self.builder,
                    number,
                    entry,
                    &mut self.assistants,
                    &mut self.tool_names,
                );
                self.remember(entry, index);
            }
            "system" => match entry.get("subtype").and_then(Value::as_str) {
                Some("compact_boundary") => self.boundary = Some(boundary(number, entry)),
                Some(subtype) => self
                    .builder
                    .skip(number, &format!("system {subtype} lines")),
                None => self
                    .builder
                    .skip(number, "system lines (hook and status output)"),
            },
            other => self.builder.skip_line_type(number, other, &BOOKKEEPING),
        }
    }

    fn remember(&mut self, entry: &Value, index: usize) {
        if let Some(uuid) = entry.get("uuid").and_then(Value::as_str) {
            self.items_by_uuid.entry(uuid.to_string()).or_insert(index);
        }
    }

    /// The summary after a boundary: the compaction, with Claude Code's own
    /// summary and figures.
    fn compact_summary(&mut self, number: usize, entry: &Value) {
        self.open_command = None;
        let summary = content_text(entry.pointer("/message/content"));
        let boundary = self.boundary.take();
        if !self.builder.has_messages() {
            // A session continued from another file: nothing here to
            // summarize, so the summary is simply what the model saw first.
            let uuid = entry.get("uuid").and_then(Value::as_str);
            let index = self
                .builder
                .message(number, uuid, Message::user("", summary));
            self.remember(entry, index);
            return;
        }
        let first_kept = boundary
            .as_ref()
            .and_then(|b| b.first_kept_uuid.as_ref())
            .and_then(|uuid| self.items_by_uuid.get(uuid))
            .map_or(FirstKept::Nothing, |index| FirstKept::Item(*index));
        self.builder.compaction(ForeignCompaction {
            summary,
            first_kept,
            tokens_before: boundary.as_ref().map_or(0, |b| b.tokens_before),
            read_files: Vec::new(),
            modified_files: Vec::new(),
            // Without a boundary (older versions) the trigger is unknown.
            trigger: boundary.as_ref().map_or(Trigger::Threshold, |b| b.trigger),
            line: boundary.as_ref().map_or(number, |b| b.line),
        });
    }

    fn drop_boundary_without_summary(&mut self) {
        if let Some(boundary) = self.boundary.take() {
            self.builder.skip(
                boundary.line,
                "compact boundaries without a summary message",
            );
        }
    }

    fn user_line(&mut self, position: usize, number: usize, entry: &Value) {
        let uuid = entry.get("uuid").and_then(Value::as_str);
        let content = entry.pointer("/message/content");
        let (results, text) = match content {
            Some(Value::Array(blocks)) => {
                let (results, rest): (Vec<&Value>, Vec<&Value>) = blocks
                    .iter()
                    .partition(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"));
                let text = (!rest.is_empty()).then(|| {
                    content_text(Some(&Value::Array(rest.into_iter().cloned().collect())))
                });
                (results, text)
            }
            _ => (Vec::new(), Some(content_text(content))),
        };
        // One line may carry several results: only the first keeps the uuid.
        let mut preferred = uuid;
        for result in &results {
            self.open_command = None;
            let index = self.tool_result(number, preferred.take(), result);
            self.remember(entry, index);
        }
        if let Some(text) = text {
            let is_meta = entry.get("isMeta").and_then(Value::as_bool) == Some(true);
            let text = meta::classify(&text, is_meta);
            if !results.is_empty() && text == UserText::Harness {
                return; // a reminder riding on tool results: the line was used
            }
            if let Some(index) = self.user_text(position, number, preferred, text) {
                self.remember(entry, index);
            }
        }
    }

    fn tool_result(&mut self, number: usize, id: Option<&str>, result: &Value) -> usize {
        let call_id = result
            .get("tool_use_id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let message = Message {
            id: String::new(),
            body: MessageBody::Tool {
                tool_name: self.tool_names.get(&call_id).cloned(),
                tool_call_id: call_id,
                content: content_text(result.get("content")),
                is_error: result.get("is_error").and_then(Value::as_bool) == Some(true),
            },
            usage: None,
        };
        self.builder.message(number, id, message)
    }

    /// Prompts become user messages; a slash command that expands into a
    /// prompt becomes one user message (`/init` and what it expands to);
    /// local commands, their output and harness text are skipped. Returns
    /// the item the text became part of.
    fn user_text(
        &mut self,
        position: usize,
        number: usize,
        id: Option<&str>,
        text: UserText,
    ) -> Option<usize> {
        let open_command = self.open_command.take();
        match text {
            UserText::Prompt(prompt) => {
                Some(self.builder.message(number, id, Message::user("", prompt)))
            }
            UserText::Command(command) if self.is_local_command(position) => {
                self.builder.skip_because(
                    number,
                    "local slash commands (run by Claude Code, not requests)",
                    command,
                );
                None
            }
            UserText::Command(command) => {
                let index = self.builder.message(number, id, Message::user("", command));
                self.open_command = Some(index);
                Some(index)
            }
            UserText::Meta(expansion) => {
                let Some(index) = open_command else {
                    self.builder
                        .skip(number, "isMeta messages (harness text, not requests)");
                    return None;
                };
                if let Some(MessageBody::User { content }) =
                    self.builder.message_mut(index).map(|m| &mut m.body)
                {
                    content.push_str("\n\n");
                    content.push_str(&expansion);
                }
                self.open_command = Some(index);
                Some(index)
            }
            UserText::CommandOutput => {
                self.builder.skip(number, "local command output");
                None
            }
            UserText::Caveat => {
                self.builder.skip(number, "local-command caveats (isMeta)");
                None
            }
            UserText::Harness => {
                self.builder
                    .skip(number, "system reminders and hook output (not requests)");
                None
            }
        }
    }

    /// A command Claude Code ran itself (`/model`, `/compact`, `/context`):
    /// its output follows as the next user line.
    fn is_local_command(&self, position: usize) -> bool {
        let next_user_line = self.lines[position + 1..].iter().find_map(|l| {
            let v = l.value.as_ref().ok()?;
            (v.get("type").and_then(Value::as_str) == Some("user")).then_some(v)
        });
        next_user_line.is_some_and(|v| {
            let text = content_text(v.pointer("/message/content"));
            meta::classify(&text, false) == UserText::CommandOutput
        })
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
        first_kept_uuid,
    }
}

fn assistant_line(
    builder: &mut Builder,
    line: usize,
    entry: &Value,
    assistants: &mut HashMap<String, usize>,
    names: &mut HashMap<String, String>,
) -> usize {
    let message = entry.get("message").unwrap_or(&Value::Null);
    let blocks = message
        .get("content")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let index = response_index(builder, line, entry, assistants);
    let target = builder.message_mut(index).expect("an assistant item");
    if let Some(usage) = message.get("usage").and_then(usage_from) {
        // Every line of a response repeats the usage; the last is final.
        target.usage = Some(usage);
    }
    let MessageBody::Assistant {
        content,
        thinking,
        tool_calls,
        ..
    } = &mut target.body
    else {
        unreachable!("created as an assistant message");
    };
    for block in &blocks {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => append_line(
                content,
                block.get("text").and_then(Value::as_str).unwrap_or(""),
            ),
            Some("thinking") => {
                let text = thinking.get_or_insert_with(String::new);
                append_line(
                    text,
                    block.get("thinking").and_then(Value::as_str).unwrap_or(""),
                );
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
    index
}

/// The assistant message of this line's API response: the one earlier
/// lines of the same response (same `message.id`) started, or a new one.
fn response_index(
    builder: &mut Builder,
    line: usize,
    entry: &Value,
    assistants: &mut HashMap<String, usize>,
) -> usize {
    let message = entry.get("message").unwrap_or(&Value::Null);
    let api_id = message
        .get("id")
        .and_then(Value::as_str)
        .map(str::to_string);
    if let Some(index) = api_id.as_ref().and_then(|id| assistants.get(id)) {
        return *index;
    }
    let model = message
        .get("model")
        .and_then(Value::as_str)
        .map(str::to_string);
    let mut response = Message::assistant("", "", Vec::new());
    if let MessageBody::Assistant { model: m, .. } = &mut response.body {
        *m = model;
    }
    let index = builder.message(line, entry.get("uuid").and_then(Value::as_str), response);
    if let Some(id) = api_id {
        assistants.insert(id, index);
    }
    index
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

#[cfg(test)]
mod tests {
    use super::super::parse;
    use super::*;

    #[test]
    fn split_responses_merge_before_pairing() {
        let text = [
            r#"{"type":"summary","summary":"x","leafUuid":"l"}"#,
            r#"{"type":"user","uuid":"u1","sessionId":"s","message":{"role":"user","content":"go"}}"#,
            r#"{"type":"assistant","uuid":"a1","sessionId":"s","message":{"id":"msg_1","role":"assistant","model":"claude-x","content":[{"type":"thinking","thinking":"hmm"}],"usage":{"input_tokens":3,"cache_read_input_tokens":100,"cache_creation_input_tokens":20,"output_tokens":1}}}"#,
            r#"{"type":"assistant","uuid":"a2","sessionId":"s","message":{"id":"msg_1","role":"assistant","model":"claude-x","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"a.rs"}}],"usage":{"input_tokens":3,"cache_read_input_tokens":100,"cache_creation_input_tokens":20,"output_tokens":9}}}"#,
            r#"{"type":"user","uuid":"u2","sessionId":"s","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"fn a(){}"}]}}"#,
            r#"{"type":"assistant","uuid":"a3","sessionId":"s","message":{"id":"msg_1","role":"assistant","model":"claude-x","content":[{"type":"tool_use","id":"t2","name":"Bash","input":{"command":"ls"}}]}}"#,
            r#"{"type":"user","uuid":"u3","sessionId":"s","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":"a.rs"}],"is_error":true},{"type":"text","text":"and then?"}]}}"#,
            r#"{"type":"user","uuid":"u5","sessionId":"s","isSidechain":true,"message":{"role":"user","content":"Warmup"}}"#,
            r#"{"type":"file-history-snapshot","messageId":"m","snapshot":{}}"#,
        ]
        .join("\n");
        let imported = parse(text.as_bytes(), None).unwrap();
        assert_eq!(imported.format, Format::ClaudeCode);
        assert_eq!(imported.settings.model.as_deref(), Some("claude-x"));
        let messages: Vec<&Message> = imported.messages().collect();
        let roles: Vec<&str> = messages.iter().map(|m| m.role().as_str()).collect();
        assert_eq!(roles, ["user", "assistant", "tool", "tool", "user"]);
        assert_eq!(
            messages[1].tool_calls().len(),
            2,
            "three lines, one response"
        );
        assert_eq!(messages[1].usage.unwrap().output, 9, "the last usage wins");
        assert_eq!(messages[1].usage.unwrap().context_tokens(), 132);
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

    fn lines(lines: &[&str]) -> Imported {
        parse(lines.join("\n").as_bytes(), Some(Format::ClaudeCode)).unwrap()
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
        let record = imported
            .entries
            .iter()
            .find_map(|e| match e {
                crate::store::LogEntry::Compaction(record) => Some(record),
                _ => None,
            })
            .unwrap();
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
                "/init\n\nPlease analyze this codebase and create a CLAUDE.md file.",
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
}
