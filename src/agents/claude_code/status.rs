//! What `compactd statusline` keeps of a Claude Code transcript between
//! two renders, so each render reads only what the transcript gained: where
//! reading stopped, the reader's state (a response still being written, a
//! slash command whose fate shows in the next line), the figures the status
//! line shows, and the tool calls waiting for their results. It holds no
//! messages and counts no tokens: every figure is Claude Code's own, but
//! for the context when the transcript holds more than its latest usage
//! counted (messages after it, or a compaction since), which the follow
//! meter works out (`follow_meter`), so the status line and a follow of
//! the session show one figure.

use std::collections::BTreeSet;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::transcript;
use crate::conversation::{Message, MessageBody, Role};
use crate::files::{FileTools, PendingCalls, Workspace};
use crate::transcript::tail::{Step, Tail};
use crate::transcript::{Emitter, Event, Line, Reader};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TranscriptStatus {
    pub tail: Tail,
    pub figures: Figures,
    /// When the latest usage does not cover the transcript (messages came
    /// after it, or the agent compacted since): the follow meter of the
    /// transcript as it was at `offset`, worked out by the engine
    /// (`engine::follow::transcript_meter`), the one function every meter
    /// of a followed session comes from.
    #[serde(default)]
    pub follow_meter: Option<FollowMeter>,
    reader: transcript::Reader,
    out: Emitter,
    calls: PendingCalls,
}

/// The follow meter for the transcript up to `offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FollowMeter {
    pub offset: u64,
    pub context_tokens: u64,
}

/// The transcript's figures as Claude Code recorded them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Figures {
    /// The context the latest response's usage reports (input, cache and
    /// output), unless Claude Code compacted after it.
    pub usage_context: Option<u64>,
    /// Claude Code's count right after its latest compaction
    /// (`postTokens`), while no usage has come since.
    pub compacted_to: Option<u64>,
    pub compactions: usize,
    pub model: Option<String>,
    /// The window a `cost-state` line states.
    pub stated_window: Option<u64>,
    /// The most output a request asks for (`api-request` lines).
    pub max_output: Option<u64>,
    /// Files the transcript's successful tool calls modified, created or
    /// deleted.
    pub changed_files: BTreeSet<PathBuf>,
    /// Messages came after the latest usage (tool results, a prompt): the
    /// usage no longer counts all the next request holds.
    #[serde(default)]
    pub after_usage: bool,
}

impl TranscriptStatus {
    pub fn new(path: &Path) -> TranscriptStatus {
        TranscriptStatus {
            tail: Tail::new(path),
            figures: Figures::default(),
            follow_meter: None,
            reader: transcript::Reader::default(),
            out: Emitter::new(transcript::FORMAT),
            calls: PendingCalls::default(),
        }
    }

    /// Whether the latest usage leaves out part of the transcript (messages
    /// after it, a compaction since) and the follow meter is not worked out
    /// for the transcript as it is now. Before any usage and any compaction
    /// (a session's start) nothing is shown, as Claude Code shows nothing.
    pub fn needs_follow_meter(&self) -> bool {
        let figures = &self.figures;
        let uncounted = match figures.usage_context {
            Some(_) => figures.after_usage,
            None => figures.compactions > 0,
        };
        uncounted && self.follow_meter.map(|m| m.offset) != Some(self.tail.offset())
    }

    /// The follow meter, when it is worked out for the transcript as it
    /// is now.
    pub fn current_follow_meter(&self) -> Option<u64> {
        self.follow_meter
            .filter(|m| m.offset == self.tail.offset())
            .map(|m| m.context_tokens)
    }

    /// Reads what the transcript gained since the last update; one that
    /// changed underneath is read again from its start.
    pub fn update(&mut self, tools: &FileTools, workspace: &Workspace) -> io::Result<()> {
        if self.step(tools, workspace)? == Step::Read {
            return Ok(());
        }
        *self = TranscriptStatus::new(self.tail.path());
        self.step(tools, workspace).map(drop)
    }

    fn step(&mut self, tools: &FileTools, workspace: &Workspace) -> io::Result<Step> {
        let TranscriptStatus {
            tail,
            figures,
            reader,
            out,
            calls,
            ..
        } = self;
        tail.step(|line: Line| {
            if let Some(value) = out.readable(&line) {
                reader.line(line.number, value, out);
            }
            for event in out.drain() {
                figures.apply(event, calls, tools, workspace);
            }
        })
    }
}

impl Figures {
    fn apply(
        &mut self,
        event: Event,
        calls: &mut PendingCalls,
        tools: &FileTools,
        workspace: &Workspace,
    ) {
        match event {
            Event::Message { message, .. } => {
                // A new message after the usage (a later response brings
                // its own, below).
                self.after_usage = self.usage_context.is_some();
                self.message(&message, calls, tools, workspace)
            }
            Event::Amend(message) => self.message(&message, calls, tools, workspace),
            Event::Settings(settings) | Event::Facts(settings) => {
                self.model = settings.model.or(self.model.take());
                self.stated_window = settings.context_window.or(self.stated_window);
            }
            Event::Compaction(compaction) => {
                self.usage_context = None;
                self.compacted_to = compaction.tokens_after;
                self.compactions += 1;
            }
            Event::MaxOutputTokens(tokens) => self.max_output = Some(tokens),
            // Added to the next request: the usage no longer covers it.
            Event::AttachedMidway(_) => self.after_usage = self.usage_context.is_some(),
            // The follow meter counts them (`follow_meter`).
            Event::Attached(_) | Event::Cleared(_) | Event::Restart => {}
        }
    }

    fn message(
        &mut self,
        message: &Message,
        calls: &mut PendingCalls,
        tools: &FileTools,
        workspace: &Workspace,
    ) {
        if let (Role::Assistant, Some(usage)) = (message.role(), message.usage) {
            self.usage_context = Some(usage.context_tokens());
            self.compacted_to = None;
            self.after_usage = false;
        }
        if let MessageBody::Assistant { model: Some(m), .. } = &message.body {
            self.model = Some(m.clone());
        }
        for done in calls.observe(message) {
            for (op, raw) in tools.ops(&done.call) {
                if let Some(path) = workspace.resolve(&raw).filter(|_| op.is_modification()) {
                    self.changed_files.insert(path);
                }
            }
        }
    }
}
