//! From tool calls to file operations: a mapping from tool name and
//! argument fields to an operation (configurable as `fileTools`, with
//! defaults for the common agents), and the bookkeeping that holds a call
//! until its result says whether it succeeded.

use std::collections::{BTreeMap, HashMap};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ledger::FileOp;
use crate::conversation::{Message, Role, ToolCall};

/// What a tool does to the file its arguments name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ToolOperation {
    Read,
    Modify,
    Create,
    Delete,
    /// The argument holds a Codex `apply_patch` body; each file section
    /// of the patch is an operation.
    Patch,
    /// The operation depends on a sub-command argument (`commandField`),
    /// mapped by `commands`.
    Command,
}

/// How one tool's calls become file operations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FileToolRule {
    pub operation: ToolOperation,
    /// The argument holding the path (for `patch`: the patch text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_field: Option<String>,
    /// Arguments that may hold the path, tried in order after `pathField`.
    /// For `patch`, a call whose arguments are a bare string is the patch.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub path_fields: Vec<String>,
    /// `command` only: the argument naming the sub-command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_field: Option<String>,
    /// `command` only: the operation of each sub-command; others do nothing.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub commands: BTreeMap<String, FileOp>,
}

impl FileToolRule {
    fn simple(operation: ToolOperation, fields: &[&str]) -> FileToolRule {
        FileToolRule {
            operation,
            path_field: None,
            path_fields: fields.iter().map(|f| f.to_string()).collect(),
            command_field: None,
            commands: BTreeMap::new(),
        }
    }

    fn fields(&self) -> impl Iterator<Item = &str> {
        self.path_field
            .iter()
            .chain(self.path_fields.iter())
            .map(String::as_str)
    }

    /// The operations of one call, with paths as the call wrote them.
    pub fn ops(&self, arguments: &serde_json::Value) -> Vec<(FileOp, String)> {
        let field = || {
            self.fields()
                .find_map(|f| arguments.get(f).and_then(|v| v.as_str()))
                .map(str::to_string)
        };
        let single = |op: FileOp| field().map(|p| vec![(op, p)]).unwrap_or_default();
        match self.operation {
            ToolOperation::Read => single(FileOp::Read),
            ToolOperation::Modify => single(FileOp::Modify),
            ToolOperation::Create => single(FileOp::Create),
            ToolOperation::Delete => single(FileOp::Delete),
            ToolOperation::Patch => field()
                .or_else(|| arguments.as_str().map(str::to_string))
                .map(|patch| patch_ops(&patch))
                .unwrap_or_default(),
            ToolOperation::Command => {
                let command = self
                    .command_field
                    .as_deref()
                    .and_then(|f| arguments.get(f))
                    .and_then(|v| v.as_str());
                match command.and_then(|c| self.commands.get(c)) {
                    Some(op) => single(*op),
                    None => Vec::new(),
                }
            }
        }
    }
}

/// The effective mapping: shipped defaults, then the configured entries
/// (a `null` entry switches a default off).
#[derive(Debug, Clone, PartialEq)]
pub struct FileTools {
    rules: HashMap<String, FileToolRule>,
}

impl Default for FileTools {
    fn default() -> FileTools {
        FileTools::new(&BTreeMap::new())
    }
}

impl FileTools {
    pub fn new(overrides: &BTreeMap<String, Option<FileToolRule>>) -> FileTools {
        let mut rules = default_rules();
        for (name, rule) in overrides {
            match rule {
                Some(rule) => rules.insert(name.clone(), rule.clone()),
                None => rules.remove(name),
            };
        }
        FileTools { rules }
    }

    /// The file operations of one call, paths as written in the call.
    pub fn ops(&self, call: &ToolCall) -> Vec<(FileOp, String)> {
        self.rules
            .get(&call.name)
            .map(|rule| rule.ops(&call.arguments))
            .unwrap_or_default()
    }
}

/// pi (`read`/`edit`/`write` with `path`), Claude Code (`Read`, `Edit`,
/// `MultiEdit`, `Write` with `file_path`, `NotebookEdit` with
/// `notebook_path`), OpenAI-style function tools and Anthropic's text
/// editor tool (with its `command`), Codex `apply_patch`.
fn default_rules() -> HashMap<String, FileToolRule> {
    use ToolOperation::*;
    const ANY_PATH: &[&str] = &["path", "file_path", "filePath"];
    let mut rules = HashMap::new();
    for (names, operation, fields) in [
        // pi's (`path`) and opencode's (`filePath`).
        (&["read"][..], Read, &["path", "filePath"][..]),
        (&["edit", "write"], Modify, &["path", "filePath"]),
        (&["Read"], Read, &["file_path"]),
        (&["Edit", "MultiEdit", "Write"], Modify, &["file_path"]),
        (&["NotebookEdit"], Modify, &["notebook_path"]),
        (&["read_file", "view_file"], Read, ANY_PATH),
        (&["write_file", "edit_file"], Modify, ANY_PATH),
        (&["create_file"], Create, ANY_PATH),
        (&["delete_file"], Delete, ANY_PATH),
        // Codex's (`input`, `patch`) and opencode's (`patchText`).
        (&["apply_patch"], Patch, &["input", "patch", "patchText"]),
    ] {
        for name in names {
            rules.insert(name.to_string(), FileToolRule::simple(operation, fields));
        }
    }
    let editor = FileToolRule {
        operation: Command,
        path_field: Some("path".into()),
        path_fields: Vec::new(),
        command_field: Some("command".into()),
        commands: [
            ("view", FileOp::Read),
            ("create", FileOp::Create),
            ("str_replace", FileOp::Modify),
            ("insert", FileOp::Modify),
            ("undo_edit", FileOp::Modify),
        ]
        .into_iter()
        .map(|(c, op)| (c.to_string(), op))
        .collect(),
    };
    rules.insert("str_replace_based_edit_tool".into(), editor.clone());
    rules.insert("str_replace_editor".into(), editor);
    rules
}

/// The operations of a Codex `apply_patch` body: `*** Add File:` creates,
/// `*** Update File:` modifies, `*** Delete File:` deletes, and an update
/// followed by `*** Move to:` deletes the old path and creates the new one.
pub fn patch_ops(patch: &str) -> Vec<(FileOp, String)> {
    let mut ops: Vec<(FileOp, String)> = Vec::new();
    for line in patch.lines() {
        let marker = |m: &str| {
            line.strip_prefix(m)
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(str::to_string)
        };
        if let Some(path) = marker("*** Add File: ") {
            ops.push((FileOp::Create, path));
        } else if let Some(path) = marker("*** Update File: ") {
            ops.push((FileOp::Modify, path));
        } else if let Some(path) = marker("*** Delete File: ") {
            ops.push((FileOp::Delete, path));
        } else if let Some(to) = marker("*** Move to: ") {
            if let Some(last) = ops.last_mut().filter(|(op, _)| *op == FileOp::Modify) {
                last.0 = FileOp::Delete;
            }
            ops.push((FileOp::Create, to));
        }
    }
    ops
}

/// A call whose result said it succeeded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SucceededCall {
    pub call: ToolCall,
    /// The assistant message that made the call.
    pub message_id: String,
}

/// Calls waiting for their result. A call counts only once a result that
/// is not an error answers it; a call still unanswered when the
/// conversation moves on (a new user or assistant message) was
/// interrupted and never counts, as the model is told for such calls.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PendingCalls {
    waiting: Vec<SucceededCall>,
}

impl PendingCalls {
    /// Takes in the next message; returns the calls it completed.
    pub fn observe(&mut self, message: &Message) -> Vec<SucceededCall> {
        match message.role() {
            Role::System => Vec::new(),
            Role::User => {
                self.waiting.clear();
                Vec::new()
            }
            Role::Assistant => {
                self.waiting = message
                    .tool_calls()
                    .iter()
                    .map(|call| SucceededCall {
                        call: call.clone(),
                        message_id: message.id.clone(),
                    })
                    .collect();
                Vec::new()
            }
            Role::Tool => {
                let answered = message.answers().unwrap_or_default();
                let Some(index) = self.waiting.iter().position(|w| w.call.id == answered) else {
                    return Vec::new();
                };
                let call = self.waiting.remove(index);
                if message.is_error_result() {
                    Vec::new()
                } else {
                    vec![call]
                }
            }
        }
    }

    /// The calls still waiting for a result.
    pub fn waiting(&self) -> impl Iterator<Item = &ToolCall> {
        self.waiting.iter().map(|w| &w.call)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(name: &str, args: serde_json::Value) -> ToolCall {
        ToolCall {
            id: "c".into(),
            name: name.into(),
            arguments: args,
        }
    }

    #[test]
    fn shipped_mappings() {
        let tools = FileTools::default();
        let ops = |name: &str, args| tools.ops(&call(name, args));
        assert_eq!(
            ops("read", json!({"path": "a"})),
            [(FileOp::Read, "a".into())]
        );
        assert_eq!(
            ops("MultiEdit", json!({"file_path": "/b"})),
            [(FileOp::Modify, "/b".into())]
        );
        assert_eq!(
            ops("NotebookEdit", json!({"notebook_path": "n.ipynb"})),
            [(FileOp::Modify, "n.ipynb".into())]
        );
        assert_eq!(
            ops(
                "str_replace_based_edit_tool",
                json!({"command": "view", "path": "v"})
            ),
            [(FileOp::Read, "v".into())]
        );
        assert_eq!(
            ops(
                "str_replace_based_edit_tool",
                json!({"command": "create", "path": "v"})
            ),
            [(FileOp::Create, "v".into())]
        );
        assert!(ops("str_replace_based_edit_tool", json!({"path": "v"})).is_empty());
        assert!(ops("bash", json!({"command": "rm -rf /"})).is_empty());
        assert!(
            ops("Read", json!({"path": "wrong-field"})).is_empty(),
            "Read names its path file_path"
        );
    }

    #[test]
    fn patches_add_update_move_and_delete() {
        let patch = "*** Begin Patch\n*** Add File: new.rs\n+x\n*** Update File: up.rs\n@@\n-a\n+b\n*** Update File: old.rs\n*** Move to: moved.rs\n*** Delete File: gone.rs\n*** End Patch";
        let expected = vec![
            (FileOp::Create, "new.rs".to_string()),
            (FileOp::Modify, "up.rs".into()),
            (FileOp::Delete, "old.rs".into()),
            (FileOp::Create, "moved.rs".into()),
            (FileOp::Delete, "gone.rs".into()),
        ];
        assert_eq!(patch_ops(patch), expected);
        let tools = FileTools::default();
        assert_eq!(
            tools.ops(&call("apply_patch", json!({"input": patch}))),
            expected
        );
        assert_eq!(tools.ops(&call("apply_patch", json!(patch))), expected);
    }

    #[test]
    fn configured_rules_add_replace_and_remove() {
        let overrides: BTreeMap<String, Option<FileToolRule>> = serde_json::from_value(json!({
            "open_doc": {"operation": "read", "pathField": "uri"},
            "read": {"operation": "read", "pathFields": ["file"]},
            "Write": null
        }))
        .unwrap();
        let tools = FileTools::new(&overrides);
        assert_eq!(
            tools.ops(&call("open_doc", json!({"uri": "x"}))),
            [(FileOp::Read, "x".into())]
        );
        assert!(tools.ops(&call("read", json!({"path": "x"}))).is_empty());
        assert_eq!(
            tools.ops(&call("read", json!({"file": "y"}))),
            [(FileOp::Read, "y".into())]
        );
        assert!(tools
            .ops(&call("Write", json!({"file_path": "z"})))
            .is_empty());
        assert!(
            serde_json::from_value::<FileToolRule>(json!({"operation": "read", "paths": []}))
                .is_err()
        );
    }

    #[test]
    fn only_successful_results_complete_calls() {
        let mut pending = PendingCalls::default();
        let a = |id: &str| ToolCall {
            id: id.into(),
            name: "edit".into(),
            arguments: json!({"path": id}),
        };
        assert!(pending
            .observe(&Message::assistant(
                "m1",
                "",
                vec![a("ok"), a("bad"), a("lost")]
            ))
            .is_empty());
        let done = pending.observe(&Message::tool_result("t1", "ok", "", false));
        assert_eq!(done.len(), 1);
        assert_eq!(done[0].message_id, "m1");
        assert!(pending
            .observe(&Message::tool_result("t2", "bad", "", true))
            .is_empty());
        assert_eq!(pending.waiting().count(), 1);
        pending.observe(&Message::user("u", "moving on"));
        assert!(
            pending
                .observe(&Message::tool_result("t3", "lost", "", false))
                .is_empty(),
            "a result after the turn moved on answers nothing"
        );
    }
}
