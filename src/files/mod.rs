//! File tracking: which files a session read and modified, from tool calls,
//! editors (LSP), explicit notifications and the file watcher.
//!
//! `ledger` and `tools` are pure; `disk` (content hashes) and `watch` (the
//! only filesystem watcher) are the I/O edges the server calls.

pub mod disk;
pub(crate) mod ledger;
pub(crate) mod tools;
pub(crate) mod watch;

pub use ledger::{
    path_from_uri, FileEvent, FileLedger, FileOp, FileRecord, FileStatus, Origin, Position, Range,
    Workspace,
};
pub use tools::{FileToolRule, FileTools, PendingCalls, ToolOperation};

use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::compaction::FileSections;
use crate::conversation::Message;
use watch::DiskChange;

/// How a ledger file changed on disk, as reported to the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ChangeKind {
    Changed,
    Created,
    Deleted,
    Renamed,
}

/// The files side of one session: its ledger, the tool calls waiting for a
/// result, and how its paths are resolved and shown.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionFileLedger {
    pub ledger: FileLedger,
    calls: PendingCalls,
    pub workspace: Workspace,
    pub max_listed_files: usize,
}

impl Default for SessionFileLedger {
    fn default() -> SessionFileLedger {
        SessionFileLedger {
            ledger: FileLedger::default(),
            calls: PendingCalls::default(),
            workspace: Workspace::default(),
            max_listed_files: DEFAULT_MAX_LISTED_FILES,
        }
    }
}

pub const DEFAULT_MAX_LISTED_FILES: usize = 50;

impl SessionFileLedger {
    pub fn new(workspace: Workspace, max_listed_files: usize) -> SessionFileLedger {
        SessionFileLedger {
            workspace,
            max_listed_files,
            ..SessionFileLedger::default()
        }
    }

    /// Follows the conversation (a message entering the session), so calls
    /// answered in a later append are recognised.
    pub fn observe(&mut self, message: &Message) {
        self.calls.observe(message);
    }

    /// The file events of the tool calls that `messages` (about to be
    /// appended) complete successfully, each with the index of the result
    /// that completed it, without hashes. Pure: the caller persists them
    /// (each after its result, so a branch cut between messages keeps
    /// exactly the events before it), then applies them after `observe`-ing
    /// the messages.
    pub fn tool_events(&self, messages: &[Message], tools: &FileTools) -> Vec<(usize, FileEvent)> {
        let mut calls = self.calls.clone();
        let mut events = Vec::new();
        for (index, message) in messages.iter().enumerate() {
            for done in calls.observe(message) {
                for (op, raw) in tools.ops(&done.call) {
                    let Some(path) = self.workspace.resolve(&raw) else {
                        continue;
                    };
                    let mut event = FileEvent::new(path, op, Origin::Tool);
                    event.message_id = Some(done.message_id.clone());
                    events.push((index, event));
                }
            }
        }
        events
    }

    /// Whether a call still waiting for its result would change `path`:
    /// a change on disk then is most likely that call at work.
    pub fn pending_change(&self, path: &std::path::Path, tools: &FileTools) -> bool {
        self.calls.waiting().any(|call| {
            tools.ops(call).into_iter().any(|(op, raw)| {
                op.is_modification() && self.workspace.resolve(&raw).as_deref() == Some(path)
            })
        })
    }

    /// Whether an event reported by someone watching the disk (an editor's
    /// watcher) tells this session anything new: content it already knows
    /// or a deletion it already saw is not news.
    pub fn is_news(&self, event: &FileEvent) -> bool {
        let Some(record) = self.ledger.get(&event.path) else {
            return true;
        };
        match event.op {
            FileOp::Read => true,
            FileOp::Delete => !record.deleted,
            FileOp::Modify | FileOp::Create => {
                record.deleted
                    || event.content_hash.is_none()
                    || record.known_hash != event.content_hash
            }
        }
    }

    /// Whether an editor change continues an edit already recorded (the
    /// file's last operation is an editor modification): a burst of
    /// keystrokes is one modification, not one per keystroke.
    pub fn continues_edit(&self, event: &FileEvent) -> bool {
        self.ledger.get(&event.path).is_some_and(|record| {
            record.last_op == FileOp::Modify && record.last_origin == Origin::Lsp
        })
    }

    /// What a change seen on disk means for this session: the events to
    /// record and how to report it, or `None` when the file is not in the
    /// ledger or the change is the session's own doing (content it already
    /// knows, or a tool call still running on that file). `hash` is the
    /// content hash of the changed (or renamed-to) path now.
    pub fn disk_events(
        &self,
        change: &DiskChange,
        hash: Option<&str>,
        tools: &FileTools,
    ) -> Option<(Vec<FileEvent>, ChangeKind)> {
        let event = |path: &Path, op: FileOp, hash: Option<&str>| {
            let mut event = FileEvent::new(path.to_path_buf(), op, Origin::Disk);
            event.content_hash = hash.map(str::to_string);
            event
        };
        let changed = |path: &Path| {
            let record = self.ledger.get(path)?;
            let (op, kind) = if record.deleted {
                (FileOp::Create, ChangeKind::Created)
            } else {
                (FileOp::Modify, ChangeKind::Changed)
            };
            let event = event(path, op, hash);
            (self.is_news(&event) && !self.pending_change(path, tools)).then(|| (vec![event], kind))
        };
        match change {
            DiskChange::Changed(path) => changed(path),
            DiskChange::Removed(path) => {
                let event = event(path, FileOp::Delete, None);
                (self.ledger.get(path).is_some()
                    && self.is_news(&event)
                    && !self.pending_change(path, tools))
                .then(|| (vec![event], ChangeKind::Deleted))
            }
            DiskChange::Renamed { from, to } => {
                let gone = event(from, FileOp::Delete, None);
                if self.ledger.get(from).is_some()
                    && self.is_news(&gone)
                    && !self.pending_change(from, tools)
                {
                    Some((
                        vec![gone, event(to, FileOp::Create, hash)],
                        ChangeKind::Renamed,
                    ))
                } else {
                    changed(to)
                }
            }
            // The server turns it into a change per ledger file first.
            DiskChange::Rescan => None,
        }
    }

    pub fn apply(&mut self, event: &FileEvent, generation: usize) {
        self.ledger.apply(event, generation);
    }

    /// The sections a summary lists now.
    pub fn sections(&self) -> FileSections {
        self.ledger.sections(&self.workspace, self.max_listed_files)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::ToolCall;
    use serde_json::json;
    use std::path::PathBuf;

    #[test]
    fn calls_answered_in_a_later_batch_count() {
        let mut files = SessionFileLedger {
            workspace: Workspace::new(vec![PathBuf::from("/w")], None),
            ..SessionFileLedger::default()
        };
        let tools = FileTools::default();
        let first = vec![Message::assistant(
            "a1",
            "",
            vec![ToolCall {
                id: "c1".into(),
                name: "edit".into(),
                arguments: json!({"path": "src/x.rs"}),
            }],
        )];
        assert!(files.tool_events(&first, &tools).is_empty());
        for m in &first {
            files.observe(m);
        }
        assert!(files.pending_change(std::path::Path::new("/w/src/x.rs"), &tools));
        let second = vec![Message::tool_result("t1", "c1", "ok", false)];
        let events: Vec<FileEvent> = files
            .tool_events(&second, &tools)
            .into_iter()
            .map(|(index, event)| {
                assert_eq!(index, 0);
                event
            })
            .collect();
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].path, PathBuf::from("/w/src/x.rs"));
        assert_eq!(events[0].op, FileOp::Modify);
        assert_eq!(events[0].message_id.as_deref(), Some("a1"));
    }

    #[test]
    fn disk_changes_are_news_only_when_someone_else_made_them() {
        let tools = FileTools::default();
        let mut files = SessionFileLedger {
            workspace: Workspace::new(vec![PathBuf::from("/w")], None),
            ..SessionFileLedger::default()
        };
        let mut read = FileEvent::new("/w/a.rs".into(), FileOp::Read, Origin::Tool);
        read.content_hash = Some("h1".into());
        files.apply(&read, 0);
        let changed = DiskChange::Changed("/w/a.rs".into());
        assert_eq!(
            files.disk_events(&changed, Some("h1"), &tools),
            None,
            "same content"
        );
        let (events, kind) = files.disk_events(&changed, Some("h2"), &tools).unwrap();
        assert_eq!(kind, ChangeKind::Changed);
        assert_eq!(
            (events[0].op, events[0].origin),
            (FileOp::Modify, Origin::Disk)
        );
        assert_eq!(
            files.disk_events(
                &DiskChange::Changed("/w/other.rs".into()),
                Some("h"),
                &tools
            ),
            None,
            "not in the ledger"
        );

        // A call still running on the file explains the change.
        files.observe(&Message::assistant(
            "a1",
            "",
            vec![ToolCall {
                id: "c1".into(),
                name: "write".into(),
                arguments: json!({"path": "a.rs"}),
            }],
        ));
        assert_eq!(files.disk_events(&changed, Some("h2"), &tools), None);
        files.observe(&Message::user("u", "next"));

        let renamed = DiskChange::Renamed {
            from: "/w/a.rs".into(),
            to: "/w/b.rs".into(),
        };
        let (events, kind) = files.disk_events(&renamed, Some("h1"), &tools).unwrap();
        assert_eq!(kind, ChangeKind::Renamed);
        let ops: Vec<_> = events.iter().map(|e| (e.path.clone(), e.op)).collect();
        assert_eq!(
            ops,
            [
                (PathBuf::from("/w/a.rs"), FileOp::Delete),
                (PathBuf::from("/w/b.rs"), FileOp::Create)
            ]
        );
        for event in &events {
            files.apply(event, 0);
        }
        let removed = DiskChange::Removed("/w/a.rs".into());
        assert_eq!(
            files.disk_events(&removed, None, &tools),
            None,
            "already gone"
        );
        let back = DiskChange::Changed("/w/a.rs".into());
        assert_eq!(
            files.disk_events(&back, Some("h3"), &tools).unwrap().1,
            ChangeKind::Created
        );
    }
}
