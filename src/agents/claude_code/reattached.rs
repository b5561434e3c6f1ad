//! What Claude Code re-attaches after compacting when its transcript does
//! not say: the files it read or wrote last, read again into the first
//! request after the summary. From 2.1.330's code: the five files most
//! recently read or written (`readFileState` by time; the plan file and
//! memory files such as `CLAUDE.md` left out), each with a limit of 5,000
//! tokens (a larger one is attached as a bare reference, "Referenced file
//! …"), within 50,000 tokens in all, and the task list. 2.1.330 writes
//! what it attached as `attachment` lines, which the reader counts
//! instead; the versions before it wrote nothing, and their first prompt
//! after a compaction held 2k–21k tokens no line shows. This estimate
//! stands in for those lines: each file as the transcript last showed it
//! (a read's content as it was read, from its first line; an edit's
//! `originalFile` with the edit made; a write's content), in the form the
//! Read tool gives it (numbered lines).
//!
//! A read of part of a file counts as that part, not as the whole file
//! (2.1.330 reads the whole file again, but writes its own lines): on the
//! ten compactions of Claude Code 2.0.76–2.1.37 in the licensed sessions,
//! the part as read left the first turn after them 5.3% off on average
//! (one over 10%), the part scaled to the file's `totalLines` 8.1% (three).
//!
//! The plan file of plan mode is not one of the five: 2.1.7 attaches it
//! apart, whole, whenever it exists (`plan_file_reference`); on the two
//! compactions of a 2.1.7 session with a plan, the first turn after them
//! went from −7.1% and −4.8% to −4.5% and −2.2%.
//!
//! Pure: the reader feeds it each line's `toolUseResult`, and asks for
//! the estimate when a compaction is placed.

use std::collections::VecDeque;

use serde_json::Value;

/// How many of the files touched last are attached again.
const FILES: usize = 5;
/// A file larger than this (Claude's tokens) is attached as a reference.
const FILE_TOKENS: usize = 5_000;
/// The largest file attached whole, in characters: about 3.3 characters a
/// Claude token in code (o200k's ~4 characters a token, and Claude's
/// tokenizer counting these sessions 1.2 × o200k).
const FILE_CHARS: usize = FILE_TOKENS * 10 / 3;
/// Claude Code's budget for all of them (its estimate: 4 characters a
/// token).
const BUDGET_CHARS: usize = 50_000 * 4;

/// A file as the transcript last showed it.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    /// Its content and the number of its first line, numbered as the Read
    /// tool gives it only when a compaction needs it (most files read are
    /// never attached again); `None` when it is too large to be attached
    /// whole.
    text: Option<(String, usize)>,
}

/// The files touched last, newest first.
#[derive(Debug, Clone, Default)]
pub(super) struct Reattached {
    recent: VecDeque<Seen>,
    /// The task list as the last `TodoWrite` left it.
    todos: Option<String>,
    /// The plan file as the transcript last showed it: Claude Code attaches
    /// it whole after compacting whenever it exists (2.1.7's
    /// `plan_file_reference`), apart from the five files.
    plan: Option<String>,
}

impl Reattached {
    /// A user line's `toolUseResult`: a read, an edit or a write.
    pub(super) fn result(&mut self, result: &Value) {
        let Some((path, text)) = seen(result) else {
            return;
        };
        if is_plan(&path) {
            // Its content is kept up to a file's limit, as a file's is;
            // a larger plan leaves the estimate without it.
            self.plan = text.map(|(text, _)| text);
            return;
        }
        if left_out(&path) {
            return;
        }
        self.recent.retain(|s| s.path != path);
        self.recent.push_front(Seen { path, text });
        self.recent.truncate(FILES);
    }

    /// A `TodoWrite` call's input: the list Claude Code attaches again.
    pub(super) fn todos(&mut self, input: &Value) {
        self.todos = input.get("todos").map(Value::to_string);
    }

    /// What the first request after a compaction holds besides the
    /// summary, as text to count.
    pub(super) fn estimate(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut spent = 0;
        for seen in &self.recent {
            match seen
                .text
                .as_ref()
                .map(|(text, first)| numbered(text, *first))
            {
                Some(text) if spent + text.len() <= BUDGET_CHARS => {
                    spent += text.len();
                    out.push(format!("{}\n{text}", seen.path));
                }
                Some(_) => {}
                None => out.push(format!("Referenced file {}", seen.path)),
            }
        }
        out.extend(self.plan.clone());
        out.extend(self.todos.clone());
        out
    }
}

/// The file a result shows and its content as it would be attached.
fn seen(result: &Value) -> Option<(String, Option<(String, usize)>)> {
    let str_of = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
    if let Some(file) = result
        .get("file")
        .filter(|_| str_of(result, "type").as_deref() == Some("text"))
    {
        let path = str_of(file, "filePath")?;
        let content = file.get("content").and_then(Value::as_str)?;
        let first = file.get("startLine").and_then(Value::as_u64).unwrap_or(1) as usize;
        return Some((path, attachable(content, first)));
    }
    let path = str_of(result, "filePath")?;
    if let Some(original) = result.get("originalFile").and_then(Value::as_str) {
        let old = result
            .get("oldString")
            .and_then(Value::as_str)
            .unwrap_or("");
        let new = result
            .get("newString")
            .and_then(Value::as_str)
            .unwrap_or("");
        let edited_length = match old.is_empty() || !original.contains(old) {
            true => original.len(),
            false => original.len() - old.len() + new.len(),
        };
        if edited_length > FILE_CHARS {
            return Some((path, None));
        }
        let edited = if old.is_empty() {
            original.to_string()
        } else {
            original.replacen(old, new, 1)
        };
        return Some((path, attachable(&edited, 1)));
    }
    let content = result.get("content").and_then(Value::as_str)?;
    Some((path, attachable(content, 1)))
}

/// `content` from line `first`, kept to be numbered when a compaction
/// attaches it; `None` when it is too large to be attached.
fn attachable(content: &str, first: usize) -> Option<(String, usize)> {
    (content.len() <= FILE_CHARS).then(|| (content.to_string(), first))
}

/// `content` numbered from line `first` as the Read tool gives it.
fn numbered(content: &str, first: usize) -> String {
    use std::fmt::Write;
    let mut text = String::with_capacity(content.len() + content.len() / 4);
    for (n, line) in content.lines().enumerate() {
        let _ = writeln!(text, "{:>6}\t{line}", first.max(1) + n);
    }
    text
}

/// Memory files, which Claude Code attaches otherwise (or not at all).
fn left_out(path: &str) -> bool {
    let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
    matches!(name, "CLAUDE.md" | "CLAUDE.local.md")
}

/// The plan file of plan mode, `~/.claude/plans/<slug>.md`.
fn is_plan(path: &str) -> bool {
    path.contains("/.claude/plans/")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(path: &str, content: &str, lines: u64, total: u64) -> Value {
        json!({"type": "text", "file": {"filePath": path, "content": content, "numLines": lines, "startLine": 1, "totalLines": total}})
    }

    /// The five files touched last, newest first, each as the Read tool
    /// would give it whole; a file read twice counts once, where it was
    /// read last; memory and plan files are left out.
    #[test]
    fn the_five_files_touched_last_are_attached_again() {
        let mut files = Reattached::default();
        for name in ["a", "b", "c", "d", "e", "f", "b"] {
            files.result(&read(&format!("/w/{name}.rs"), "fn x() {}\n", 1, 1));
        }
        files.result(&read("/w/CLAUDE.md", "rules\n", 1, 1));
        files.result(&read("/home/u/.claude/plans/p.md", "plan\n", 1, 1));
        let estimate = files.estimate();
        let paths: Vec<&str> = estimate.iter().map(|t| t.lines().next().unwrap()).collect();
        assert_eq!(
            paths,
            ["/w/b.rs", "/w/f.rs", "/w/e.rs", "/w/d.rs", "/w/c.rs", "plan"]
        );
        assert_eq!(estimate[0], "/w/b.rs\n     1\tfn x() {}\n");
        // The plan comes apart, whole and once, after the files.
        assert_eq!(estimate[5..], ["plan\n".to_string()]);
    }

    /// A file read in part is attached as it was read, numbered from its
    /// first line; one too large for the Read tool's 5,000 tokens is a
    /// bare reference.
    #[test]
    fn a_partly_read_file_counts_as_read_and_a_large_one_as_a_reference() {
        let mut files = Reattached::default();
        let part = "    let x = compute(y);\n".repeat(20);
        files.result(&json!({"type": "text", "file": {"filePath": "/w/small.rs", "content": part, "numLines": 20, "startLine": 41, "totalLines": 100}}));
        files.result(&read("/w/large.rs", &part.repeat(40), 800, 2_000));
        let estimate = files.estimate();
        assert_eq!(estimate[0], "Referenced file /w/large.rs");
        let small = &estimate[1];
        assert_eq!(small.lines().count(), 21, "the path and the 20 lines read");
        assert!(small.contains("    41\t    let x"), "{small}");
        assert!(small.contains("    60\t"), "{small}");
    }

    /// An edit's file is its original with the edit made; a write's is
    /// what it wrote; the task list comes last.
    #[test]
    fn edits_writes_and_the_task_list() {
        let mut files = Reattached::default();
        files.result(&json!({"filePath": "/w/e.rs", "oldString": "old", "newString": "new", "originalFile": "a old b\n"}));
        files.result(&json!({"type": "create", "filePath": "/w/n.rs", "content": "made\n"}));
        files.todos(&json!({"todos": [{"content": "ship it", "status": "pending"}]}));
        let estimate = files.estimate();
        assert_eq!(estimate[0], "/w/n.rs\n     1\tmade\n");
        assert_eq!(estimate[1], "/w/e.rs\n     1\ta new b\n");
        assert!(estimate[2].contains("ship it"));
        assert!(Reattached::default().estimate().is_empty());
    }
}
