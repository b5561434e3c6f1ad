//! What `compactd statusline` keeps of a Claude Code transcript between
//! two renders, so each render reads only what the transcript gained: where
//! reading stopped, the reader's state (a response still being written, a
//! slash command whose fate shows in the next line), the figures the status
//! line shows, and the tool calls waiting for their results. It holds no
//! messages and counts no tokens: every figure is Claude Code's own, but
//! for the one right after a compaction, which the engine works out
//! (`after_compaction`).

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
    /// Right after the agent compacted (no usage since): the follow meter
    /// of the transcript as it was at `offset`, worked out by the engine
    /// (`engine::follow::transcript_meter`), which counts what the agent's
    /// own figure leaves out.
    #[serde(default)]
    pub after_compaction: Option<AfterCompaction>,
    reader: transcript::Reader,
    out: Emitter,
    calls: PendingCalls,
}

/// The follow meter right after a compaction, for the transcript up to
/// `offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AfterCompaction {
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
}

impl TranscriptStatus {
    pub fn new(path: &Path) -> TranscriptStatus {
        TranscriptStatus {
            tail: Tail::new(path),
            figures: Figures::default(),
            after_compaction: None,
            reader: transcript::Reader::default(),
            out: Emitter::new(transcript::FORMAT),
            calls: PendingCalls::default(),
        }
    }

    /// Whether the meter right after a compaction is needed and not worked
    /// out for the transcript as it is now.
    pub fn needs_meter_after_compaction(&self) -> bool {
        self.figures.usage_context.is_none()
            && self.figures.compacted_to.is_some()
            && self.after_compaction.map(|a| a.offset) != Some(self.tail.offset())
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
            Event::Message { message, .. } | Event::Amend(message) => {
                self.message(&message, calls, tools, workspace)
            }
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
            // The follow meter counts it (`after_compaction`).
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
