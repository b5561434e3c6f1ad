//! Which files a conversation read and modified, from the tool calls it
//! made. Deterministic: the same messages always give the same sections.

use std::collections::{HashMap, HashSet};

use crate::conversation::{Message, ToolCall};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileOp {
    Read,
    Modify,
}

/// The file operations one tool call performs, by the shipped mappings:
/// pi (`read`/`edit`/`write` with `path`), Claude Code (`Read`, `Edit`,
/// `MultiEdit`, `Write`, `NotebookEdit`), OpenAI-style function tools and
/// Codex `apply_patch`.
pub fn ops_of_call(call: &ToolCall) -> Vec<(FileOp, String)> {
    let args = &call.arguments;
    let field = |names: &[&str]| {
        names
            .iter()
            .find_map(|n| args.get(*n).and_then(|v| v.as_str()))
            .map(str::to_string)
    };
    let one = |op: FileOp, names: &[&str]| field(names).map(|p| vec![(op, p)]).unwrap_or_default();
    match call.name.as_str() {
        "read" | "Read" | "read_file" | "view_file" => {
            one(FileOp::Read, &["path", "file_path", "filePath"])
        }
        "edit" | "write" | "Edit" | "MultiEdit" | "Write" | "write_file" | "edit_file"
        | "create_file" => one(FileOp::Modify, &["path", "file_path", "filePath"]),
        "NotebookEdit" => one(FileOp::Modify, &["notebook_path"]),
        "str_replace_based_edit_tool" | "str_replace_editor" => {
            let op = match args.get("command").and_then(|c| c.as_str()) {
                Some("view") => FileOp::Read,
                Some(_) => FileOp::Modify,
                None => return Vec::new(),
            };
            one(op, &["path"])
        }
        "apply_patch" => {
            let patch = args
                .get("input")
                .or_else(|| args.get("patch"))
                .and_then(|v| v.as_str())
                .or_else(|| args.as_str());
            patch
                .map(|p| {
                    patch_paths(p)
                        .into_iter()
                        .map(|path| (FileOp::Modify, path))
                        .collect()
                })
                .unwrap_or_default()
        }
        _ => Vec::new(),
    }
}

/// Paths a Codex `apply_patch` body touches (added, updated, deleted, and
/// the destinations of moves).
pub fn patch_paths(patch: &str) -> Vec<String> {
    const MARKERS: [&str; 4] = [
        "*** Add File: ",
        "*** Update File: ",
        "*** Delete File: ",
        "*** Move to: ",
    ];
    patch
        .lines()
        .filter_map(|line| {
            MARKERS
                .iter()
                .find_map(|m| line.strip_prefix(m))
                .map(|p| p.trim().to_string())
        })
        .filter(|p| !p.is_empty())
        .collect()
}

/// Files read and modified, ordered by last touch, newest first. A
/// modified file is never also listed as read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileSections {
    pub read: Vec<String>,
    pub modified: Vec<String>,
}

impl FileSections {
    /// Folds the operations of `messages` into `previous` (the sections of
    /// the last compaction). Calls whose result is an error do not count as
    /// modifications.
    pub fn accumulate(previous: &FileSections, messages: &[Message]) -> FileSections {
        let failed: HashSet<&str> = messages
            .iter()
            .filter(|m| m.is_error_result())
            .filter_map(|m| m.answers())
            .collect();
        // path -> (last touch, read?, modified?)
        let mut ledger: HashMap<String, (usize, bool, bool)> = HashMap::new();
        // Earlier sections keep their order, below anything new.
        let previous_len = previous.read.len() + previous.modified.len();
        for (rank, path) in previous.modified.iter().rev().enumerate() {
            ledger.insert(path.clone(), (rank, false, true));
        }
        for (rank, path) in previous.read.iter().rev().enumerate() {
            let entry = ledger.entry(path.clone()).or_insert((rank, false, false));
            entry.1 = true;
        }
        let mut touch = previous_len;
        for message in messages {
            for call in message.tool_calls() {
                for (op, path) in ops_of_call(call) {
                    if op == FileOp::Modify && failed.contains(call.id.as_str()) {
                        continue;
                    }
                    touch += 1;
                    let entry = ledger.entry(path).or_insert((touch, false, false));
                    entry.0 = touch;
                    match op {
                        FileOp::Read => entry.1 = true,
                        FileOp::Modify => entry.2 = true,
                    }
                }
            }
        }
        let mut entries: Vec<(String, (usize, bool, bool))> = ledger.into_iter().collect();
        entries.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then_with(|| a.0.cmp(&b.0)));
        let mut sections = FileSections::default();
        for (path, (_, read, modified)) in entries {
            if modified {
                sections.modified.push(path);
            } else if read {
                sections.read.push(path);
            }
        }
        sections
    }

    /// The `<read-files>`/`<modified-files>` blocks appended to a summary.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for (tag, paths) in [
            ("read-files", &self.read),
            ("modified-files", &self.modified),
        ] {
            if paths.is_empty() {
                continue;
            }
            out.push_str(&format!("\n<{tag}>\n"));
            for path in paths {
                out.push_str(path);
                out.push('\n');
            }
            out.push_str(&format!("</{tag}>\n"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(id: &str, name: &str, args: serde_json::Value) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: args,
        }
    }

    #[test]
    fn sections_accumulate_and_modified_wins() {
        let previous = FileSections {
            read: vec!["old-read.rs".into(), "b.rs".into()],
            modified: vec!["old-mod.rs".into()],
        };
        let messages = vec![
            Message::assistant(
                "a1",
                "",
                vec![
                    call("c1", "read", json!({"path": "b.rs"})),
                    call("c2", "Edit", json!({"file_path": "b.rs"})),
                    call("c3", "Write", json!({"file_path": "failed.rs"})),
                    call(
                        "c4",
                        "apply_patch",
                        json!({"input": "*** Begin Patch\n*** Add File: new.rs\n+x\n*** Update File: up.rs\n*** Move to: moved.rs\n*** Delete File: gone.rs\n*** End Patch"}),
                    ),
                ],
            ),
            Message::tool_result("t1", "c1", "..", false),
            Message::tool_result("t2", "c2", "ok", false),
            Message::tool_result("t3", "c3", "denied", true),
            Message::tool_result("t4", "c4", "ok", false),
            Message::assistant(
                "a2",
                "",
                vec![call(
                    "c5",
                    "str_replace_based_edit_tool",
                    json!({"command": "view", "path": "v.rs"}),
                )],
            ),
        ];
        let s = FileSections::accumulate(&previous, &messages);
        assert_eq!(s.read, vec!["v.rs", "old-read.rs"]);
        assert_eq!(
            s.modified,
            vec![
                "gone.rs",
                "moved.rs",
                "up.rs",
                "new.rs",
                "b.rs",
                "old-mod.rs"
            ]
        );
        let rendered = s.render();
        assert!(rendered.contains("<read-files>\nv.rs\nold-read.rs\n</read-files>"));
        assert!(!rendered.contains("failed.rs"));
    }
}
