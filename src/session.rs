//! One conversation's state: every message ever appended, the compactions
//! applied to it, and the LLM view derived from both. Pure: the server
//! persists each change to the session log before applying it here.

use std::collections::HashSet;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::compaction::{self, FileSections};
use crate::conversation::{repair_for_model, Message, MessageBody, Role};
use crate::summarize::SummaryRequest;
use crate::tokens::{self, CountedTurn, Encoding, Meter};

/// Why a compaction ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Trigger {
    Manual,
    Threshold,
    Overflow,
}

/// A compaction as the session log records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompactionRecord {
    pub id: String,
    /// The summary body, without the file sections.
    pub summary: String,
    /// The first message kept verbatim, if any was.
    pub first_kept_message_id: Option<String>,
    /// The newest message the summary replaces; the view starts after it.
    pub last_summarized_message_id: String,
    pub messages_summarized: usize,
    pub tokens_before: u64,
    pub tokens_after: u64,
    pub read_files: Vec<String>,
    pub modified_files: Vec<String>,
    pub trigger: Trigger,
    pub summarizer: String,
    #[serde(default)]
    pub chunks: u32,
    /// Milliseconds since the Unix epoch.
    pub created_at: u64,
    pub duration_ms: u64,
}

impl CompactionRecord {
    pub fn file_sections(&self) -> FileSections {
        FileSections {
            read: self.read_files.clone(),
            modified: self.modified_files.clone(),
        }
    }

    /// The summary as the model sees it: body plus file sections.
    pub fn full_summary(&self) -> String {
        format!(
            "{}\n{}",
            self.summary.trim_end(),
            self.file_sections().render()
        )
        .trim_end()
        .to_string()
    }
}

#[derive(Debug, Clone)]
struct Counted {
    message: Message,
    tokens: u64,
    /// How many compactions had been applied when it was appended; usage
    /// from an older generation describes a context that no longer exists.
    generation: usize,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum AppendError {
    #[error("messages[{index}].id: `{id}` is already used in this session")]
    DuplicateId { index: usize, id: String },
}

#[derive(Debug, Clone)]
pub struct Session {
    pub id: String,
    pub model: Option<String>,
    pub context_window: Option<u64>,
    pub system_prompt: Option<String>,
    encoding: Encoding,
    messages: Vec<Counted>,
    ids: HashSet<String>,
    compactions: Vec<CompactionRecord>,
    view_start: usize,
    summary: Option<(Message, u64)>,
    system_tokens: u64,
    summary_prefix: String,
}

/// Everything a summarizer job needs, captured from the session so the job
/// can run without it.
#[derive(Debug, Clone)]
pub struct CompactionJob {
    pub request: SummaryRequest,
    pub first_kept_message_id: Option<String>,
    pub last_summarized_message_id: String,
    pub messages_summarized: usize,
    pub files: FileSections,
    pub tokens_before: u64,
    /// Estimated tokens of the kept messages (the summary adds to it).
    pub kept_tokens: u64,
    /// Number of compactions when the job was planned; a job planned
    /// against an older generation is stale and must not be applied.
    pub generation: usize,
}

impl Session {
    pub fn new(
        id: String,
        model: Option<String>,
        context_window: Option<u64>,
        system_prompt: Option<String>,
        summary_prefix: String,
    ) -> Session {
        let encoding = Encoding::for_model(model.as_deref());
        let mut session = Session {
            id,
            model,
            context_window,
            system_prompt: None,
            encoding,
            messages: Vec::new(),
            ids: HashSet::new(),
            compactions: Vec::new(),
            view_start: 0,
            summary: None,
            system_tokens: 0,
            summary_prefix,
        };
        session.set_system_prompt(system_prompt);
        session
    }

    pub fn set_system_prompt(&mut self, prompt: Option<String>) {
        self.system_tokens = prompt
            .as_deref()
            .map(|p| tokens::count_message(self.encoding, &Message::system("system", p)))
            .unwrap_or(0);
        self.system_prompt = prompt;
    }

    pub fn set_model(&mut self, model: Option<String>) {
        if model == self.model {
            return;
        }
        self.model = model;
        let encoding = Encoding::for_model(self.model.as_deref());
        if encoding != self.encoding {
            self.encoding = encoding;
            for counted in &mut self.messages {
                counted.tokens = tokens::count_message(encoding, &counted.message);
            }
            let prompt = self.system_prompt.take();
            self.set_system_prompt(prompt);
            self.refresh_summary();
        }
    }

    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    pub fn message_count(&self) -> usize {
        self.messages.len()
    }

    pub fn compactions(&self) -> &[CompactionRecord] {
        &self.compactions
    }

    pub fn last_compaction(&self) -> Option<&CompactionRecord> {
        self.compactions.last()
    }

    /// Gives every message an id and rejects ids already used. Does not
    /// change the session: the caller persists, then calls `push`.
    pub fn assign_ids(&self, messages: &mut [Message]) -> Result<(), AppendError> {
        let mut fresh: HashSet<&str> = HashSet::new();
        let mut next = self.messages.len() + 1;
        let mut auto_ids: Vec<(usize, String)> = Vec::new();
        for (index, message) in messages.iter().enumerate() {
            if message.id.is_empty() {
                continue;
            }
            if self.ids.contains(&message.id) || !fresh.insert(message.id.as_str()) {
                return Err(AppendError::DuplicateId {
                    index,
                    id: message.id.clone(),
                });
            }
        }
        for (index, message) in messages.iter().enumerate() {
            if message.id.is_empty() {
                let id = loop {
                    let candidate = format!("m{next}");
                    next += 1;
                    if !self.ids.contains(&candidate) && !fresh.contains(candidate.as_str()) {
                        break candidate;
                    }
                };
                auto_ids.push((index, id));
            }
        }
        for (index, id) in auto_ids {
            messages[index].id = id;
        }
        Ok(())
    }

    /// Adds messages that already have unique ids (see `assign_ids`).
    pub fn push(&mut self, messages: Vec<Message>) {
        let generation = self.compactions.len();
        for message in messages {
            let tokens = tokens::count_message(self.encoding, &message);
            self.ids.insert(message.id.clone());
            self.messages.push(Counted {
                message,
                tokens,
                generation,
            });
        }
    }

    /// Messages of the current view (after the latest compaction), raw.
    pub fn view_messages(&self) -> impl Iterator<Item = &Message> {
        self.messages[self.view_start..].iter().map(|c| &c.message)
    }

    /// All messages ever appended, compacted or not.
    pub fn all_messages(&self) -> impl Iterator<Item = &Message> {
        self.messages.iter().map(|c| &c.message)
    }

    /// The LLM-facing history.
    pub fn history(&self) -> Vec<Message> {
        let kept: Vec<Message> = self.view_messages().cloned().collect();
        compaction::rebuild_history(
            self.system_prompt.as_deref(),
            self.summary.as_ref().map(|(m, _)| m.clone()),
            &kept,
        )
    }

    fn fixed_tokens(&self) -> u64 {
        self.system_tokens + self.summary.as_ref().map(|(_, t)| *t).unwrap_or(0)
    }

    /// Our own estimate of the whole view, ignoring provider usage.
    pub fn estimated_tokens(&self) -> u64 {
        self.fixed_tokens()
            + self.messages[self.view_start..]
                .iter()
                .map(|c| c.tokens)
                .sum::<u64>()
    }

    pub fn meter(&self, context_window: u64, auto_compact_at: u64) -> Meter {
        let generation = self.compactions.len();
        let turns: Vec<CountedTurn> = self.messages[self.view_start..]
            .iter()
            .map(|c| CountedTurn {
                tokens: c.tokens,
                reported_context: self.current_usage(c, generation),
            })
            .collect();
        tokens::meter(self.fixed_tokens(), &turns, context_window, auto_compact_at)
    }

    /// Usage that still describes this view: reported after the latest
    /// compaction, by the session's model.
    fn current_usage(&self, counted: &Counted, generation: usize) -> Option<u64> {
        if counted.generation != generation || counted.message.role() != Role::Assistant {
            return None;
        }
        let usage = counted.message.usage?;
        if let (
            MessageBody::Assistant {
                model: Some(reported),
                ..
            },
            Some(ours),
        ) = (&counted.message.body, &self.model)
        {
            if !same_model(reported, ours) {
                return None;
            }
        }
        let context = usage.context_tokens();
        (context > 0).then_some(context)
    }

    /// Plans a checkpoint compaction that keeps `keep_recent_tokens` of the
    /// newest messages. `None` when there is nothing to summarize.
    pub fn plan_compaction(
        &self,
        keep_recent_tokens: u64,
        tokens_before: u64,
        instructions: Option<String>,
        max_tool_output_chars: usize,
    ) -> Option<CompactionJob> {
        let view = &self.messages[self.view_start..];
        let messages: Vec<Message> = view.iter().map(|c| c.message.clone()).collect();
        let counts: Vec<u64> = view.iter().map(|c| c.tokens).collect();
        let cut = compaction::find_cut(&messages, &counts, keep_recent_tokens)?.cut;
        let summarized = &messages[..cut];
        let previous_files = self
            .last_compaction()
            .map(CompactionRecord::file_sections)
            .unwrap_or_default();
        // The sections describe the whole session so far, kept part
        // included, so the model sees every file it touched in one place.
        let files = FileSections::accumulate(&previous_files, &messages);
        let mut to_summarize = repair_for_model(summarized.to_vec());
        close_trailing_calls(&mut to_summarize);
        Some(CompactionJob {
            request: SummaryRequest {
                previous_summary: self.last_compaction().map(|c| c.summary.clone()),
                messages: to_summarize,
                instructions,
                max_tool_output_chars,
            },
            first_kept_message_id: messages.get(cut).map(|m| m.id.clone()),
            last_summarized_message_id: summarized.last().expect("cut > 0").id.clone(),
            messages_summarized: cut,
            files,
            tokens_before,
            kept_tokens: self.system_tokens + counts[cut..].iter().sum::<u64>(),
            generation: self.compactions.len(),
        })
    }

    /// The log record for a finished job; `tokens_after` is our estimate of
    /// the view once it is applied.
    pub fn record_compaction(
        &self,
        job: &CompactionJob,
        output: &crate::summarize::SummaryOutput,
        trigger: Trigger,
        created_at: u64,
        duration_ms: u64,
    ) -> CompactionRecord {
        let mut record = CompactionRecord {
            id: uuid::Uuid::new_v4().simple().to_string()[..12].to_string(),
            summary: output.text.clone(),
            first_kept_message_id: job.first_kept_message_id.clone(),
            last_summarized_message_id: job.last_summarized_message_id.clone(),
            messages_summarized: job.messages_summarized,
            tokens_before: job.tokens_before,
            tokens_after: 0,
            read_files: job.files.read.clone(),
            modified_files: job.files.modified.clone(),
            trigger,
            summarizer: output.summarizer.clone(),
            chunks: output.chunks,
            created_at,
            duration_ms,
        };
        record.tokens_after = job.kept_tokens + self.summary_tokens(&record);
        record
    }

    /// Tokens the summary message of `record` will take.
    pub fn summary_tokens(&self, record: &CompactionRecord) -> u64 {
        let message =
            compaction::summary_message(&record.id, &self.summary_prefix, &record.full_summary());
        tokens::count_message(self.encoding, &message)
    }

    /// Applies a compaction (new or replayed from the log).
    pub fn apply_compaction(&mut self, record: CompactionRecord) {
        let last = self
            .messages
            .iter()
            .position(|c| c.message.id == record.last_summarized_message_id);
        if let Some(index) = last {
            self.view_start = index + 1;
        }
        self.compactions.push(record);
        self.refresh_summary();
    }

    fn refresh_summary(&mut self) {
        self.summary = self.compactions.last().map(|record| {
            let message = compaction::summary_message(
                &record.id,
                &self.summary_prefix,
                &record.full_summary(),
            );
            let tokens = tokens::count_message(self.encoding, &message);
            (message, tokens)
        });
    }
}

/// A call with no result at the end of the summarized part gets the
/// synthetic note too: its turn was cut off by the compaction.
fn close_trailing_calls(messages: &mut Vec<Message>) {
    let answered: HashSet<String> = messages
        .iter()
        .filter_map(|m| m.answers().map(str::to_string))
        .collect();
    let Some(last_caller) = messages.iter().rposition(|m| !m.tool_calls().is_empty()) else {
        return;
    };
    let missing: Vec<(String, String)> = messages[last_caller]
        .tool_calls()
        .iter()
        .filter(|c| !answered.contains(&c.id))
        .map(|c| (c.id.clone(), c.name.clone()))
        .collect();
    for (id, name) in missing {
        messages.push(Message {
            id: format!("{}{id}", crate::conversation::SYNTHETIC_RESULT_PREFIX),
            body: MessageBody::Tool {
                tool_call_id: id,
                tool_name: Some(name),
                content: crate::conversation::NO_RESULT_NOTE.into(),
                is_error: true,
            },
            usage: None,
        });
    }
}

fn same_model(a: &str, b: &str) -> bool {
    let strip = |m: &str| m.rsplit('/').next().unwrap_or(m).to_ascii_lowercase();
    strip(a) == strip(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::Usage;

    fn session() -> Session {
        Session::new(
            "s".into(),
            Some("gpt-4o".into()),
            None,
            Some("be brief".into()),
            "PREFIX".into(),
        )
    }

    #[test]
    fn ids_are_assigned_and_duplicates_rejected() {
        let mut s = session();
        let mut batch = vec![
            Message::user("", "a"),
            Message::user("x", "b"),
            Message::user("", "c"),
        ];
        s.assign_ids(&mut batch).unwrap();
        let ids: Vec<_> = batch.iter().map(|m| m.id.clone()).collect();
        assert_eq!(ids, ["m1", "x", "m2"]);
        s.push(batch);
        let mut again = vec![Message::user("x", "dup")];
        assert_eq!(
            s.assign_ids(&mut again),
            Err(AppendError::DuplicateId {
                index: 0,
                id: "x".into()
            })
        );
    }

    #[test]
    fn stale_usage_is_ignored_after_compaction() {
        let mut s = session();
        let mut a = Message::assistant("a1", "done", vec![]);
        a.usage = Some(Usage {
            input: 1000,
            output: 10,
            ..Usage::default()
        });
        s.push(vec![
            Message::user("u1", "go"),
            a,
            Message::user("u2", "more"),
            Message::assistant("a2", "ok", vec![]),
        ]);
        let before = s.meter(10_000, 9_000);
        assert_eq!(before.source, tokens::MeterSource::Usage);
        assert!(before.context_tokens > 1010);
        let job = s
            .plan_compaction(1, before.context_tokens, None, 2000)
            .unwrap();
        assert_eq!(job.last_summarized_message_id, "u2");
        assert_eq!(job.first_kept_message_id.as_deref(), Some("a2"));
        assert_eq!(job.messages_summarized, 3);
        s.apply_compaction(CompactionRecord {
            id: "c1".into(),
            summary: "sum".into(),
            first_kept_message_id: Some("a2".into()),
            last_summarized_message_id: "u2".into(),
            messages_summarized: 3,
            tokens_before: before.context_tokens,
            tokens_after: 0,
            read_files: vec![],
            modified_files: vec![],
            trigger: Trigger::Manual,
            summarizer: "offline".into(),
            chunks: 1,
            created_at: 0,
            duration_ms: 0,
        });
        let after = s.meter(10_000, 9_000);
        assert_eq!(
            after.source,
            tokens::MeterSource::Estimate,
            "usage from before the compaction is stale"
        );
        let history = s.history();
        assert_eq!(history[0].role(), Role::System);
        assert_eq!(history[1].id, "summary-c1");
        assert!(history[1].text().starts_with("PREFIX"));
        assert_eq!(history[2].id, "a2");
        assert_eq!(history.len(), 3);
    }

    #[test]
    fn usage_from_another_model_is_ignored() {
        let mut s = session();
        let mut a = Message::assistant("a1", "done", vec![]);
        a.usage = Some(Usage {
            input: 5000,
            ..Usage::default()
        });
        if let MessageBody::Assistant { model, .. } = &mut a.body {
            *model = Some("claude-sonnet-4-5".into());
        }
        s.push(vec![Message::user("u1", "go"), a]);
        assert_eq!(s.meter(10_000, 9_000).source, tokens::MeterSource::Estimate);
    }
}
