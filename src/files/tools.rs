//! From tool calls to file operations: a mapping from tool name and
//! argument fields to an operation (configurable as `fileTools`, with
//! defaults for the common agents), what a shell tool's command does to
//! files when it plainly says so, and the bookkeeping that holds a call
//! until its result says whether it succeeded.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

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
    /// Shell tools without a rule: their commands are read (`shell_ops`).
    shells: HashSet<String>,
}

/// The shell tools of the common agents (Codex's `exec_command`, `shell`,
/// `local_shell`; Claude Code's `Bash`; pi's and opencode's `bash`; Gemini
/// CLI's `run_shell_command`). A configured entry of the same name replaces
/// or removes the reading.
const SHELL_TOOLS: [&str; 8] = [
    "exec_command",
    "shell",
    "shell_command",
    "local_shell",
    "container.exec",
    "Bash",
    "bash",
    "run_shell_command",
];

impl Default for FileTools {
    fn default() -> FileTools {
        FileTools::new(&BTreeMap::new())
    }
}

impl FileTools {
    pub fn new(overrides: &BTreeMap<String, Option<FileToolRule>>) -> FileTools {
        let mut rules = default_rules();
        let mut shells: HashSet<String> = SHELL_TOOLS.iter().map(|s| s.to_string()).collect();
        for (name, rule) in overrides {
            shells.remove(name);
            match rule {
                Some(rule) => rules.insert(name.clone(), rule.clone()),
                None => rules.remove(name),
            };
        }
        FileTools { rules, shells }
    }

    /// The file operations of one call, paths as written in the call
    /// (a shell command's relative paths joined to its working directory).
    pub fn ops(&self, call: &ToolCall) -> Vec<(FileOp, String)> {
        match self.rules.get(&call.name) {
            Some(rule) => rule.ops(&call.arguments),
            None if self.shells.contains(&call.name) => shell_ops(&call.arguments),
            None => Vec::new(),
        }
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
        (&["write_file", "edit_file", "replace"], Modify, ANY_PATH),
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

/// What a shell command plainly does to files: an `apply_patch` (a
/// heredoc or a quoted argument, maybe after `cd DIR &&`, or the argv
/// `["apply_patch", PATCH]`) makes its patch's operations; a plain `cat`,
/// `sed -n 'Np'`, `head`, `tail` or `nl` of explicit paths, maybe piped
/// into more of them, reads those paths. Anything else (lists, other
/// pipes, redirections, globs, variables, substitutions) does nothing
/// here. Relative paths are joined to the `workdir` argument when there
/// is one (else the workspace resolves them).
pub fn shell_ops(arguments: &serde_json::Value) -> Vec<(FileOp, String)> {
    let workdir = ["workdir", "working_directory", "dir_path"]
        .iter()
        .find_map(|f| arguments.get(*f).and_then(|v| v.as_str()));
    let Some(command) = shell_command(arguments) else {
        return Vec::new();
    };
    let (dir, ops) = match command {
        ShellCommand::Patch(patch) => (None, patch_ops(&patch)),
        ShellCommand::Script(script) => {
            let (dir, rest) = after_cd(&script);
            let ops = match patch_text(rest) {
                Some(patch) => patch_ops(&patch),
                None => read_ops(rest),
            };
            (dir, ops)
        }
    };
    let base = match (workdir, dir.as_deref()) {
        (Some(w), Some(d)) => Some(Path::new(w).join(d)),
        (w, d) => w.or(d).map(Path::new).map(Path::to_path_buf),
    };
    ops.into_iter()
        .map(|(op, path)| match &base {
            Some(base) if !path.starts_with('~') => (op, base.join(&path).display().to_string()),
            _ => (op, path),
        })
        .collect()
}

/// Whether a shell tool call's arguments run an `apply_patch`.
pub fn runs_patch(arguments: &serde_json::Value) -> bool {
    match shell_command(arguments) {
        Some(ShellCommand::Patch(_)) => true,
        Some(ShellCommand::Script(script)) => patch_text(after_cd(&script).1).is_some(),
        None => false,
    }
}

enum ShellCommand {
    /// A script for the shell.
    Script(String),
    /// The argv `["apply_patch", PATCH]`.
    Patch(String),
}

/// The command of a shell tool: `cmd` or `command`, a string or an argv
/// (`["bash", "-lc", SCRIPT]` is its script).
fn shell_command(arguments: &serde_json::Value) -> Option<ShellCommand> {
    let value = ["cmd", "command"].iter().find_map(|f| arguments.get(*f))?;
    if let Some(script) = value.as_str() {
        return Some(ShellCommand::Script(script.to_string()));
    }
    let argv: Vec<&str> = value
        .as_array()?
        .iter()
        .map(|v| v.as_str())
        .collect::<Option<_>>()?;
    match argv.as_slice() {
        ["apply_patch" | "applypatch", patch] => Some(ShellCommand::Patch(patch.to_string())),
        [shell, "-c" | "-lc", script]
            if matches!(
                shell.rsplit('/').next(),
                Some("bash" | "sh" | "zsh" | "dash")
            ) =>
        {
            Some(ShellCommand::Script(script.to_string()))
        }
        _ => None,
    }
}

/// `cd DIR && REST` → `(Some(DIR), REST)`; otherwise the script as it is.
fn after_cd(script: &str) -> (Option<String>, &str) {
    let script = script.trim_start();
    let Some((cd, rest)) = script.split_once("&&") else {
        return (None, script);
    };
    match pipeline(cd).as_deref() {
        Some([words]) if words.len() == 2 && words[0] == "cd" => {
            (Some(words[1].clone()), rest.trim_start())
        }
        _ => (None, script),
    }
}

/// The patch of an `apply_patch <<'EOF' … EOF` (or `<<EOF`, `<<"EOF"`)
/// or `apply_patch '…'`/`"…"` script.
fn patch_text(script: &str) -> Option<String> {
    let rest = script.trim_start();
    let rest = rest
        .strip_prefix("apply_patch")
        .or_else(|| rest.strip_prefix("applypatch"))?;
    if !rest.starts_with([' ', '\t']) {
        return None;
    }
    let rest = rest.trim_start();
    if let Some(heredoc) = rest.strip_prefix("<<") {
        let (first, body) = heredoc.split_once('\n')?;
        let delimiter = first.split_whitespace().next()?;
        let delimiter = delimiter.trim_start_matches('-').trim_matches(['\'', '"']);
        if delimiter.is_empty() {
            return None;
        }
        let lines: Vec<&str> = body
            .lines()
            .take_while(|l| l.trim_start_matches('\t').trim_end() != delimiter)
            .collect();
        return Some(lines.join("\n"));
    }
    let quote = rest.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let mut patch = String::new();
    let mut chars = rest[1..].chars();
    while let Some(c) = chars.next() {
        match c {
            c if c == quote => return Some(patch),
            '\\' if quote == '"' => match chars.next()? {
                e @ ('"' | '\\' | '$' | '`') => patch.push(e),
                e => patch.extend(['\\', e]),
            },
            c => patch.push(c),
        }
    }
    None
}

/// The reads of a plain pipeline whose first command reads explicit paths
/// and whose later commands only filter what it printed.
fn read_ops(script: &str) -> Vec<(FileOp, String)> {
    let Some(stages) = pipeline(script) else {
        return Vec::new();
    };
    let paths = read_paths(&stages[0]).unwrap_or_default();
    let filters = stages[1..]
        .iter()
        .all(|stage| read_paths(stage).is_some_and(|p| p.is_empty()));
    if !filters {
        return Vec::new();
    }
    paths.into_iter().map(|p| (FileOp::Read, p)).collect()
}

/// The words of each command of a plain pipeline (`a 'b c' | d`), quotes
/// taken off; `None` for anything else a shell would do more with: lists,
/// redirections, variables, substitutions, globs, braces, comments.
fn pipeline(script: &str) -> Option<Vec<Vec<String>>> {
    let mut stages: Vec<Vec<String>> = vec![Vec::new()];
    let mut word: Option<String> = None;
    let mut chars = script.trim().chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => w.push(c),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '"' => break,
                        '$' | '`' | '\\' => return None,
                        c => w.push(c),
                    }
                }
            }
            '\\' => word.get_or_insert_with(String::new).push(chars.next()?),
            ' ' | '\t' => stages.last_mut()?.extend(word.take()),
            '|' => {
                stages.last_mut()?.extend(word.take());
                if stages.last()?.is_empty() {
                    return None;
                }
                stages.push(Vec::new());
            }
            c if "&;<>()`$*?[]{}~!#\n\r".contains(c) => return None,
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    stages.last_mut()?.extend(word);
    (!stages.last()?.is_empty()).then_some(stages)
}

/// The paths one reading command (`cat`, `head`, `tail`, `nl`, `sed -n`
/// with a print script) reads, none when it reads its input; `None` for
/// any other command or option (`sed -i` edits).
fn read_paths(words: &[String]) -> Option<Vec<String>> {
    let (program, args) = words.split_first()?;
    let valued: &[&str] = match program.as_str() {
        "cat" | "sed" => &[],
        "head" | "tail" => &["-n", "-c"],
        "nl" => &["-b", "-d", "-f", "-h", "-i", "-l", "-n", "-s", "-v", "-w"],
        _ => return None,
    };
    let sed = program == "sed";
    let (mut quiet, mut script) = (false, false);
    let mut paths = Vec::new();
    let mut options = true;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let arg = arg.as_str();
        if options && arg == "--" {
            options = false;
        } else if options && arg.len() > 1 && arg.starts_with('-') {
            match arg {
                "-n" | "--quiet" | "--silent" if sed => quiet = true,
                "-e" if sed && prints_only(args.next()?) => script = true,
                "-E" | "-r" | "-u" | "-s" if sed => {}
                _ if sed => return None,
                _ if valued.contains(&arg) => {
                    args.next()?;
                }
                _ => {}
            }
        } else if sed && !script {
            if !prints_only(arg) {
                return None;
            }
            script = true;
        } else if arg != "-" {
            paths.push(arg.to_string());
        }
    }
    (!sed || (quiet && script)).then_some(paths)
}

/// A `sed` script that only prints lines (`1,80p`, `$p`, `10q`).
fn prints_only(script: &str) -> bool {
    script.contains('p')
        && script
            .chars()
            .all(|c| c.is_ascii_digit() || ",$pq; ".contains(c))
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

    /// 0.169's `exec_command` edits with a heredoc `apply_patch`.
    #[test]
    fn an_apply_patch_in_a_shell_command_makes_its_operations() {
        let tools = FileTools::default();
        let patch = "*** Begin Patch\n*** Add File: new.rs\n+x\n*** Update File: up.rs\n@@\n-a\n+b\n*** Update File: old.rs\n*** Move to: moved.rs\n*** Delete File: gone.rs\n*** End Patch";
        let heredoc = format!("apply_patch <<'PATCH'\n{patch}\nPATCH\n");
        let at = |dir: &str| {
            vec![
                (FileOp::Create, format!("{dir}new.rs")),
                (FileOp::Modify, format!("{dir}up.rs")),
                (FileOp::Delete, format!("{dir}old.rs")),
                (FileOp::Create, format!("{dir}moved.rs")),
                (FileOp::Delete, format!("{dir}gone.rs")),
            ]
        };
        let ops = |name: &str, args| tools.ops(&call(name, args));
        assert_eq!(
            ops("exec_command", json!({"cmd": heredoc, "workdir": "/w"})),
            at("/w/")
        );
        assert_eq!(ops("exec_command", json!({"cmd": heredoc})), at(""));
        assert_eq!(ops("Bash", json!({"command": heredoc})), at(""));
        let unquoted = format!("apply_patch <<EOF\n{patch}\nEOF");
        assert_eq!(ops("bash", json!({"command": unquoted})), at(""));
        let cd = format!("cd src && {heredoc}");
        assert_eq!(
            ops("exec_command", json!({"cmd": cd, "workdir": "/w"})),
            at("/w/src/")
        );
        let quoted = format!("apply_patch \"{}\"", patch.replace('"', "\\\""));
        assert_eq!(ops("exec_command", json!({"cmd": quoted})), at(""));
        assert_eq!(
            ops(
                "shell",
                json!({"command": ["apply_patch", patch], "workdir": "/w"})
            ),
            at("/w/")
        );
        assert_eq!(
            ops("shell", json!({"command": ["bash", "-lc", heredoc]})),
            at("")
        );
        assert!(runs_patch(&json!({"cmd": heredoc})));
        assert!(!runs_patch(&json!({"cmd": "cat a.txt"})));
        assert!(
            ops(
                "exec_command",
                json!({"cmd": format!("echo apply_patch <<'PATCH'\n{patch}\nPATCH")})
            )
            .is_empty(),
            "only apply_patch itself patches"
        );
        assert!(ops("unknown_tool", json!({"cmd": heredoc})).is_empty());
    }

    #[test]
    fn a_plain_read_in_a_shell_command_reads_its_paths() {
        let tools = FileTools::default();
        let ops = |cmd: &str| tools.ops(&call("exec_command", json!({"cmd": cmd})));
        let read = |paths: &[&str]| -> Vec<(FileOp, String)> {
            paths
                .iter()
                .map(|p| (FileOp::Read, p.to_string()))
                .collect()
        };
        assert_eq!(ops("cat a.txt"), read(&["a.txt"]));
        assert_eq!(ops("cat -n a.txt 'b c.txt'"), read(&["a.txt", "b c.txt"]));
        assert_eq!(ops("sed -n '1,80p' src/b.py"), read(&["src/b.py"]));
        assert_eq!(ops("sed -n -e '$p' x y"), read(&["x", "y"]));
        assert_eq!(ops("head -n 20 a.rs"), read(&["a.rs"]));
        assert_eq!(ops("tail -n +10 a.rs"), read(&["a.rs"]));
        assert_eq!(ops("nl -ba a.rs | sed -n '1,120p'"), read(&["a.rs"]));
        assert_eq!(ops("cat -- -odd"), read(&["-odd"]));
        assert_eq!(
            tools.ops(&call(
                "exec_command",
                json!({"cmd": "cat a.txt", "workdir": "/w/sub"})
            )),
            read(&["/w/sub/a.txt"])
        );
        assert_eq!(
            tools.ops(&call("Bash", json!({"command": "head /etc/hosts"}))),
            read(&["/etc/hosts"])
        );
        for nothing in [
            "echo hi | cat a.txt",
            "git show HEAD:a.txt | cat",
            "cat a.txt | python3 -",
            "cat a.txt | tee b.txt",
            "cat src/*.rs",
            "cat a.txt > b.txt",
            "cat a.txt 2>/dev/null",
            "cat $FILE",
            "cat \"$(ls)\"",
            "cat a.txt; rm a.txt",
            "cat a.txt && rm b.txt",
            "sed -i 's/a/b/' a.txt",
            "sed 's/a/b/' a.txt",
            "sed -n 'w out' a.txt",
            "cat",
            "rg fn src/lib.rs",
            "ls -la",
        ] {
            assert!(ops(nothing).is_empty(), "{nothing}: {:?}", ops(nothing));
        }
    }

    #[test]
    fn a_configured_entry_replaces_or_removes_a_shell_reading() {
        let overrides: BTreeMap<String, Option<FileToolRule>> = serde_json::from_value(
            json!({"exec_command": null, "Bash": {"operation": "read", "pathField": "file"}}),
        )
        .unwrap();
        let tools = FileTools::new(&overrides);
        assert!(tools
            .ops(&call("exec_command", json!({"cmd": "cat a"})))
            .is_empty());
        assert!(tools
            .ops(&call("Bash", json!({"command": "cat a"})))
            .is_empty());
        assert_eq!(
            tools.ops(&call("bash", json!({"command": "cat a"}))),
            [(FileOp::Read, "a".into())]
        );
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
