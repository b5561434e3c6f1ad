//! What Claude Code attaches, writing nothing of it, to the request after
//! each prompt when it runs under the SDK (its VS Code extension, the
//! Agent SDK): the files it edited, as though someone else had changed
//! them. Read from 2.0.37–2.1.84's code (a helper compared 2.0.37, 2.0.42,
//! 2.0.76, 2.1.11, 2.1.14 and 2.1.50–2.1.84): on every prompt the SDK
//! rebuilds the record of the files it has seen from the conversation
//! (`readFileState`, the ten set last), taking only the results of reads
//! of a whole file (no `offset`, no `limit`; the result's text, its line
//! numbers and reminders taken out) and the content of writes, each as of
//! its result's time. An edit made since is not in that record, so the
//! file looks changed on disk and the request gets an `edited_text_file`
//! note: "Note: <file> was modified, either by the user or by a linter…"
//! and the changed hunks (8 lines of context, the new text only, numbered
//! from each hunk's first line) — on every prompt until the file is read
//! or written again. The terminal's interactive mode keeps its record
//! between prompts and never does this; 2.1.88 reads an edited file again
//! into the record (2.1.85–2.1.87 were not looked at).
//!
//! 2.0.37 and 2.0.42 noted an edited file once, not at every prompt
//! (`REBUILT_EACH_PROMPT`).
//!
//! On a 2.1.11 session in VS Code whose plan file was written, then
//! edited, each prompt's request held 2,387–2,525 tokens more than its
//! messages; the note for the plan file counts 2,113–2,342 in o200k.
//!
//! A transcript shows the SDK in its prompts: the extension writes what
//! the person typed as a list of text blocks, the terminal as a string.
//!
//! Pure: the reader feeds it the calls, results and prompts.

use std::collections::{HashMap, VecDeque};

use serde_json::Value;

use crate::conversation::request::without_blocks;

/// Files the rebuilt record holds: the ones set last.
const RECORDED: usize = 10;
/// Lines of context around a change.
const CONTEXT: usize = 8;
/// The versions with the rule (2.0.37 is the oldest looked at).
const SINCE: (u32, u32, u32) = (2, 0, 37);
const UNTIL: (u32, u32, u32) = (2, 1, 84);
/// The first version seen to rebuild the record at every prompt, so that
/// an edited file is noted again and again (2.1.11: the same note at each
/// of four prompts); 2.0.37 and 2.0.42 noted a file once after it was
/// edited (the record the note's read refreshed was kept), as their
/// sessions' usage shows. 2.0.43–2.1.10 were not told apart: taken as the
/// 2.0 ones.
const REBUILT_EACH_PROMPT: (u32, u32, u32) = (2, 1, 0);
/// Changes to lines beyond this many (after the common start and end)
/// are taken as one: the note then shows every new line between them.
const MAX_CHANGES: usize = 1_000;

#[derive(Debug, Clone, Default)]
pub(super) struct EditedFiles {
    /// Prompts come as lists of text blocks: the SDK.
    sdk: bool,
    version: Option<(u32, u32, u32)>,
    /// Calls whose result sets the record: a whole file's read (its path),
    /// a write (its path and content), by call id.
    calls: HashMap<String, Recorded>,
    /// The record, oldest first.
    files: VecDeque<Tracked>,
    /// The latest time a line was written at (ms since the epoch).
    latest_ms: Option<u64>,
}

#[derive(Debug, Clone)]
enum Recorded {
    Read(String),
    Write(String, String),
}

#[derive(Debug, Clone)]
struct Tracked {
    path: String,
    /// The content the record holds.
    recorded: String,
    /// The content after the edits made since, when there were some.
    edited: Option<String>,
    /// The note of the two, once worked out: a file noted at every
    /// prompt is diffed once, not at each.
    note: Option<Option<String>>,
}

impl EditedFiles {
    pub(super) fn version(&mut self, version: (u32, u32, u32)) {
        self.version = Some(version);
    }

    /// A line of the conversation, written at `at_ms`.
    pub(super) fn seen(&mut self, at_ms: Option<u64>) {
        self.latest_ms = self.latest_ms.max(at_ms);
    }

    /// A prompt the person typed, written as a list of text blocks.
    pub(super) fn typed_as_blocks(&mut self) {
        self.sdk = true;
    }

    /// A response's content: the calls whose results set the record.
    pub(super) fn calls(&mut self, message: &Value) {
        let blocks = message.get("content").and_then(Value::as_array);
        for block in blocks.into_iter().flatten() {
            let field = |key: &str| block.pointer(key).and_then(Value::as_str);
            let (Some(id), Some(path)) = (field("/id"), field("/input/file_path")) else {
                continue;
            };
            let input = &block["input"];
            let recorded = match field("/name") {
                Some("Read") if input.get("offset").is_none() && input.get("limit").is_none() => {
                    Recorded::Read(path.to_string())
                }
                Some("Write") => match field("/input/content") {
                    Some(content) if !content.is_empty() => {
                        Recorded::Write(path.to_string(), content.to_string())
                    }
                    _ => continue,
                },
                _ => continue,
            };
            self.calls.insert(id.to_string(), recorded);
        }
    }

    /// A `tool_result` block, and its line's `toolUseResult`.
    pub(super) fn result(&mut self, block: &Value, result: Option<&Value>) {
        if block.get("is_error").and_then(Value::as_bool) == Some(true) {
            return;
        }
        let call_id = block
            .get("tool_use_id")
            .and_then(Value::as_str)
            .unwrap_or("");
        let text = block.get("content").and_then(Value::as_str);
        match self.calls.remove(call_id) {
            Some(Recorded::Read(path)) => {
                if let Some(text) = text {
                    self.record(path, read_content(text));
                }
            }
            Some(Recorded::Write(path, content)) => self.record(path, content),
            None => {
                if let Some(result) = result {
                    self.edit(result);
                }
            }
        }
    }

    fn record(&mut self, path: String, recorded: String) {
        self.files.retain(|t| t.path != path);
        self.files.push_back(Tracked {
            path,
            recorded,
            edited: None,
            note: None,
        });
        while self.files.len() > RECORDED {
            self.files.pop_front();
        }
    }

    /// An edit's `toolUseResult` (`Edit`'s, `MultiEdit`'s): the file as it
    /// left it.
    fn edit(&mut self, result: &Value) {
        let Some(path) = result.get("filePath").and_then(Value::as_str) else {
            return;
        };
        let Some(tracked) = self.files.iter_mut().find(|t| t.path == path) else {
            return;
        };
        let original = result
            .get("originalFile")
            .or_else(|| result.get("originalFileContents"))
            .and_then(Value::as_str)
            .or(tracked.edited.as_deref())
            .unwrap_or(&tracked.recorded)
            .to_string();
        let edits = match result.get("edits").and_then(Value::as_array) {
            Some(edits) => edits.iter().collect(),
            None => vec![result],
        };
        let mut text = original;
        for edit in edits {
            let field = |a: &str, b: &str| {
                (edit.get(a).or_else(|| edit.get(b)))
                    .and_then(Value::as_str)
                    .unwrap_or("")
            };
            let (old, new) = (
                field("oldString", "old_string"),
                field("newString", "new_string"),
            );
            let all = (edit.get("replaceAll").or_else(|| edit.get("replace_all")))
                .and_then(Value::as_bool)
                == Some(true);
            text = match (old.is_empty(), all) {
                (true, _) => text,
                (false, true) => text.replace(old, new),
                (false, false) => text.replacen(old, new, 1),
            };
        }
        tracked.edited = Some(text);
        tracked.note = None;
    }

    /// The agent compacted: the record is rebuilt from what follows.
    pub(super) fn compacted(&mut self) {
        self.files.clear();
        self.calls.clear();
    }

    /// The notes the request after a prompt written at `at_ms` carries,
    /// one per file edited since the record took it; none for a prompt
    /// written again with its old time (a resumed history copied into the
    /// file), which was no request.
    pub(super) fn prompt(&mut self, at_ms: Option<u64>) -> Vec<String> {
        let applies = self.version.is_some_and(|v| (SINCE..=UNTIL).contains(&v));
        let again = at_ms.is_some_and(|at| self.latest_ms.is_some_and(|latest| at < latest));
        if !self.sdk || !applies || again {
            return Vec::new();
        }
        let notes = (self.files.iter_mut())
            .filter_map(|t| {
                let now = t.edited.as_deref()?;
                let (path, recorded) = (&t.path, &t.recorded);
                t.note
                    .get_or_insert_with(|| note(path, recorded, now))
                    .clone()
            })
            .collect();
        if self.version.is_some_and(|v| v < REBUILT_EACH_PROMPT) {
            // The note's own read of the file stays in the record.
            for tracked in &mut self.files {
                if let Some(now) = tracked.edited.take() {
                    tracked.recorded = now;
                    tracked.note = None;
                }
            }
        }
        notes
    }
}

/// A read's result as the record holds it: reminders and line numbers
/// (`     1→`) taken out, trimmed.
fn read_content(text: &str) -> String {
    let without = without_blocks(text, &["system-reminder"]);
    let lines: Vec<&str> = without.split('\n').map(unnumbered).collect();
    lines.join("\n").trim().to_string()
}

/// A line of the Read tool's output without its number.
fn unnumbered(line: &str) -> &str {
    let digits = line.trim_start();
    let after = digits.trim_start_matches(|c: char| c.is_ascii_digit());
    match after.strip_prefix('→') {
        Some(text) if after.len() < digits.len() => text,
        _ => line,
    }
}

/// The note for a file whose record says `recorded` and which now holds
/// `now`; `None` when nothing changed.
fn note(path: &str, recorded: &str, now: &str) -> Option<String> {
    let snippet = snippet(recorded, now)?;
    Some(format!(
        "<system-reminder>\nNote: {path} was modified, either by the user or by a linter. This change was intentional, so make sure to take it into account as you proceed (ie. don't revert it unless the user asks you to). Don't tell the user this, since they are already aware. Here are the relevant changes (shown with line numbers):\n{snippet}\n</system-reminder>"
    ))
}

/// The changed hunks of `new` against `old`: each hunk's lines of the new
/// text (context and added), numbered from the hunk's first old line,
/// hunks joined by `...`.
fn snippet(old: &str, new: &str) -> Option<String> {
    let old: Vec<&str> = old.split('\n').collect();
    let new: Vec<&str> = new.split('\n').collect();
    let ops = script(&old, &new);
    let changes: Vec<usize> = (ops.iter().enumerate())
        .filter(|(_, op)| !matches!(op, Op::Same(..)))
        .map(|(i, _)| i)
        .collect();
    let (&first, &last) = (changes.first()?, changes.last()?);
    let mut hunks: Vec<(usize, usize)> = Vec::new();
    let mut start = first;
    let mut end = first;
    for &at in &changes[1..] {
        if at - end > 2 * CONTEXT {
            hunks.push((start, end));
            start = at;
        }
        end = at;
    }
    debug_assert_eq!(end, last);
    hunks.push((start, end));
    let shown: Vec<String> = hunks
        .into_iter()
        .map(|(start, end)| {
            let from = start.saturating_sub(CONTEXT);
            let to = (end + CONTEXT).min(ops.len() - 1);
            let first_line = ops[from].old_line() + 1;
            let lines = ops[from..=to].iter().filter_map(|op| op.new_text(&new));
            let numbered: Vec<String> = lines
                .enumerate()
                .map(|(n, line)| format!("{:>6}→{line}", first_line + n))
                .collect();
            numbered.join("\n")
        })
        .collect();
    Some(shown.join("\n...\n"))
}

/// A step of the edit script: a line kept (its old and new index), one
/// removed (old index, and where the old text stands), one added (new
/// index, and where the old text stands).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Same(usize, usize),
    Removed(usize),
    Added(usize, usize),
}

impl Op {
    fn old_line(self) -> usize {
        match self {
            Op::Same(old, _) | Op::Removed(old) | Op::Added(_, old) => old,
        }
    }

    fn new_text<'a>(self, new: &[&'a str]) -> Option<&'a str> {
        match self {
            Op::Same(_, n) | Op::Added(n, _) => Some(new[n]),
            Op::Removed(_) => None,
        }
    }
}

/// The shortest edit script from `old` to `new` (Myers), after their
/// common start and end; past `MAX_CHANGES` the middle is taken as
/// removed and added whole.
fn script(old: &[&str], new: &[&str]) -> Vec<Op> {
    let head = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let tail = (old[head..].iter().rev())
        .zip(new[head..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let (a, b) = (&old[head..old.len() - tail], &new[head..new.len() - tail]);
    let mut ops: Vec<Op> = (0..head).map(|i| Op::Same(i, i)).collect();
    let middle = myers(a, b).unwrap_or_else(|| {
        let removed = (0..a.len()).map(Op::Removed);
        removed
            .chain((0..b.len()).map(|j| Op::Added(j, a.len())))
            .collect()
    });
    ops.extend(middle.into_iter().map(|op| match op {
        Op::Same(i, j) => Op::Same(head + i, head + j),
        Op::Removed(i) => Op::Removed(head + i),
        Op::Added(j, at) => Op::Added(head + j, head + at),
    }));
    let (old_end, new_end) = (old.len() - tail, new.len() - tail);
    ops.extend((0..tail).map(|k| Op::Same(old_end + k, new_end + k)));
    ops
}

/// Myers's greedy walk, each round's frontier kept to walk back; `None`
/// past `MAX_CHANGES`.
fn myers(a: &[&str], b: &[&str]) -> Option<Vec<Op>> {
    let (n, m) = (a.len() as isize, b.len() as isize);
    let max = n + m;
    let offset = max + 1;
    let mut v = vec![0isize; 2 * offset as usize + 1];
    let mut trace: Vec<Vec<isize>> = Vec::new();
    let at = |k: isize| (offset + k) as usize;
    let mut rounds = 0;
    'walk: for d in 0..=max {
        if d as usize > MAX_CHANGES {
            return None;
        }
        trace.push(v[at(-d)..=at(d)].to_vec());
        for k in (-d..=d).step_by(2) {
            let down = k == -d || (k != d && v[at(k - 1)] < v[at(k + 1)]);
            let mut x = if down { v[at(k + 1)] } else { v[at(k - 1)] + 1 };
            let mut y = x - k;
            while x < n && y < m && a[x as usize] == b[y as usize] {
                x += 1;
                y += 1;
            }
            v[at(k)] = x;
            if x >= n && y >= m {
                rounds = d;
                break 'walk;
            }
        }
    }
    let mut ops = Vec::new();
    let (mut x, mut y) = (n, m);
    for d in (1..=rounds).rev() {
        let frontier = &trace[d as usize];
        let get = |k: isize| frontier[(k + d) as usize];
        let k = x - y;
        let down = k == -d || (k != d && get(k - 1) < get(k + 1));
        let previous_k = if down { k + 1 } else { k - 1 };
        let previous_x = get(previous_k);
        let previous_y = previous_x - previous_k;
        while x > previous_x && y > previous_y {
            x -= 1;
            y -= 1;
            ops.push(Op::Same(x as usize, y as usize));
        }
        if down {
            y -= 1;
            ops.push(Op::Added(y as usize, x as usize));
        } else {
            x -= 1;
            ops.push(Op::Removed(x as usize));
        }
    }
    while x > 0 && y > 0 {
        x -= 1;
        y -= 1;
        ops.push(Op::Same(x as usize, y as usize));
    }
    ops.reverse();
    Some(ops)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lines(range: std::ops::Range<usize>) -> String {
        range
            .map(|n| format!("line {n}"))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The script rebuilds the new text from the old, and keeps the
    /// lines both share.
    #[test]
    fn the_edit_script_turns_the_old_text_into_the_new() {
        let cases = [
            ("a\nb\nc\nd", "a\nx\nc\nd\ne"),
            ("", "a\nb"),
            ("a\nb", ""),
            ("a\nb\nc", "c\nb\na"),
            ("same", "same"),
        ];
        for (old, new) in cases {
            let (old, new): (Vec<&str>, Vec<&str>) =
                (old.split('\n').collect(), new.split('\n').collect());
            let ops = script(&old, &new);
            let rebuilt: Vec<&str> = ops.iter().filter_map(|op| op.new_text(&new)).collect();
            assert_eq!(rebuilt, new);
            let kept: Vec<&str> = (ops.iter())
                .filter_map(|op| match op {
                    Op::Same(i, j) => {
                        assert_eq!(old[*i], new[*j]);
                        Some(old[*i])
                    }
                    _ => None,
                })
                .collect();
            let removed = ops.iter().filter(|op| matches!(op, Op::Removed(_))).count();
            assert_eq!(kept.len() + removed, old.len(), "{ops:?}");
        }
        // Two lines changed of "a b c": one kept.
        let ops = script(&["a", "b", "c"], &["x", "b", "y"]);
        assert_eq!(
            ops.iter().filter(|op| matches!(op, Op::Same(..))).count(),
            1
        );
    }

    /// A change shows with 8 lines of context, numbered from the hunk's
    /// first line; changes far apart are two hunks, near ones one.
    #[test]
    fn the_note_shows_each_change_with_its_context() {
        let old = lines(1..101);
        let new = old.replace("line 20\n", "line twenty\n");
        let shown = snippet(&old, &new).unwrap();
        let first = shown.lines().next().unwrap();
        assert_eq!(first, "    12→line 12");
        assert!(shown.contains("    20→line twenty"), "{shown}");
        assert_eq!(shown.lines().count(), 17, "{shown}");
        let both = new.replace("line 80\n", "line eighty\n");
        let shown = snippet(&old, &both).unwrap();
        assert_eq!(shown.matches("\n...\n").count(), 1, "{shown}");
        let near = new.replace("line 30\n", "line thirty\n");
        assert_eq!(snippet(&old, &near).unwrap().matches("...").count(), 0);
        assert_eq!(snippet(&old, &old), None);
    }

    fn read(id: &str, path: &str) -> Value {
        json!({"content": [{"type": "tool_use", "id": id, "name": "Read", "input": {"file_path": path}}]})
    }

    fn block(id: &str, text: &str) -> Value {
        json!({"type": "tool_result", "tool_use_id": id, "content": text})
    }

    fn edit(path: &str, original: &str, old: &str, new: &str) -> Value {
        json!({"filePath": path, "originalFile": original, "oldString": old, "newString": new, "replaceAll": false})
    }

    /// Under the SDK, a file read whole then edited is noted at every
    /// prompt until it is read again; a part read, another version, the
    /// terminal, or a compaction, note nothing.
    #[test]
    fn an_edited_file_is_noted_at_each_prompt_under_the_sdk() {
        let mut files = EditedFiles::default();
        files.version((2, 1, 11));
        let content = lines(1..41);
        let numbered: String = (content.lines().enumerate())
            .map(|(n, l)| format!("{:>6}→{l}\n", n + 1))
            .collect();
        files.calls(&read("r1", "/p/a.md"));
        // The Read tool's reminder rides on its result; the record leaves it out.
        let reminder =
            "\n<system-reminder>\nWhenever you read a file, consider…\n</system-reminder>\n";
        files.result(&block("r1", &format!("{numbered}{reminder}")), None);
        let edited = edit("/p/a.md", &content, "line 5", "line five");
        files.result(&block("e1", "done"), Some(&edited));
        assert!(
            files.prompt(None).is_empty(),
            "the terminal keeps its record"
        );
        files.typed_as_blocks();
        let notes = files.prompt(None);
        assert_eq!(notes.len(), 1);
        assert!(
            notes[0].contains("Note: /p/a.md was modified"),
            "{}",
            notes[0]
        );
        assert!(notes[0].contains("     5→line five"), "{}", notes[0]);
        assert!(
            !notes[0].contains("...") && !notes[0].contains("consider"),
            "{}",
            notes[0]
        );
        assert_eq!(files.prompt(None), notes, "again at the next prompt");
        // An edit since: the note shows both changes.
        let once = content.replace("line 5", "line five");
        let twice = edit("/p/a.md", &once, "line 9", "line nine");
        files.result(&block("e2", "done"), Some(&twice));
        let both = files.prompt(None);
        assert!(
            both.len() == 1
                && both[0].contains("     9→line nine")
                && both[0].contains("line five"),
            "{both:?}"
        );
        let mut older = files.clone();
        older.version((2, 0, 42));
        assert_eq!(older.prompt(None).len(), 1);
        assert!(older.prompt(None).is_empty(), "2.0 notes an edit once");
        let mut other = files.clone();
        other.version((2, 1, 88));
        assert!(
            other.prompt(None).is_empty(),
            "2.1.88 reads an edited file again"
        );
        files.seen(Some(2_000));
        assert!(
            files.prompt(Some(1_000)).is_empty(),
            "a prompt written again"
        );
        assert_eq!(files.prompt(Some(2_000)).len(), 1);
        let mut compacted = files.clone();
        compacted.compacted();
        assert!(compacted.prompt(None).is_empty());
        files.calls(
            &json!({"content": [{"type": "tool_use", "id": "r2", "name": "Read",
            "input": {"file_path": "/p/a.md", "offset": 1, "limit": 10}}]}),
        );
        files.result(&block("r2", "     1→line 1"), None);
        assert_eq!(files.prompt(None).len(), 1, "a part read leaves the record");
        files.calls(&read("r3", "/p/a.md"));
        files.result(&block("r3", &numbered.replace("line 5", "line five")), None);
        assert!(files.prompt(None).is_empty(), "read again whole");
    }
}
