//! What a compacted context must still carry, derived from the raw
//! transcript (see `raw.rs`) by rules written here, independently of the
//! summarizer's own extraction.

use std::collections::HashMap;

use serde_json::Value;

use crate::raw::{Event, Raw};

/// Tools that write a file, with the argument naming it, for the agents of
/// the shared transcripts (pi, Claude Code, SWE-agent).
const WRITE_TOOLS: &[(&str, &str)] = &[
    ("edit", "path"),
    ("write", "path"),
    ("Edit", "file_path"),
    ("MultiEdit", "file_path"),
    ("Write", "file_path"),
    ("NotebookEdit", "notebook_path"),
    ("create", "filename"),
];
const READ_TOOLS: &[(&str, &str)] = &[("read", "path"), ("Read", "file_path"), ("open", "path")];

#[derive(Debug, Clone)]
pub struct OpenError {
    /// What a later success must match to close it.
    pub key: String,
    /// The line that says what went wrong.
    pub line: String,
    /// Every line of the output that names an error: the error is carried
    /// when any of them is.
    pub signals: Vec<String>,
}

#[derive(Debug, Default)]
pub struct Probes {
    pub modified: Vec<String>,
    pub read: Vec<String>,
    pub first_task: Option<String>,
    pub latest_request: Option<String>,
    /// Hand-labelled rules the user had stated by the cut.
    pub rules: Vec<String>,
    pub open_errors: Vec<OpenError>,
    pub cwd: Option<String>,
}

pub fn derive(raw: &Raw, labels: &[String]) -> Probes {
    let mut probes = Probes {
        cwd: raw.cwd.clone(),
        ..Probes::default()
    };
    let calls: HashMap<&str, (&str, &Value)> = raw
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Call { id, name, args } => Some((id.as_str(), (name.as_str(), args))),
            _ => None,
        })
        .collect();
    let mut typed = String::new();
    for event in &raw.events {
        match event {
            Event::User { text, meta } => {
                if let Some(request) = request(text, *meta) {
                    typed.push_str(&words(&request));
                    typed.push('\n');
                    probes.first_task.get_or_insert_with(|| request.clone());
                    probes.latest_request = Some(request);
                }
            }
            Event::Result {
                call_id,
                is_error,
                text,
            } => {
                let Some(&(name, args)) = calls.get(call_id.as_str()) else {
                    continue;
                };
                note_result(&mut probes, name, args, *is_error, text);
            }
            _ => {}
        }
    }
    probes.read.retain(|p| !probes.modified.contains(p));
    probes.rules = labels
        .iter()
        .filter(|rule| typed.contains(&words(rule)))
        .cloned()
        .collect();
    probes
}

fn note_result(probes: &mut Probes, name: &str, args: &Value, is_error: bool, text: &str) {
    let key = call_key(name, args);
    if is_error {
        let (line, signals) = error_lines(text);
        probes.open_errors.push(OpenError { key, line, signals });
        return;
    }
    probes.open_errors.retain(|e| e.key != key);
    let path_of = |table: &[(&str, &str)]| {
        table
            .iter()
            .find(|(tool, _)| *tool == name)
            .and_then(|(_, field)| args.get(*field).and_then(Value::as_str))
            .map(str::to_string)
    };
    if let Some(path) = path_of(WRITE_TOOLS) {
        push_new(&mut probes.modified, path);
    } else if let Some(path) = path_of(READ_TOOLS) {
        push_new(&mut probes.read, path);
    }
}

fn push_new(list: &mut Vec<String>, item: String) {
    if !list.contains(&item) {
        list.push(item);
    }
}

/// A shell command without the `cd … &&` in front and the filters behind,
/// cut to its first three words; else the tool and the file it named.
fn call_key(name: &str, args: &Value) -> String {
    if let Some(command) = args.get("command").and_then(Value::as_str) {
        let mut rest = command.trim();
        while let Some(after) = rest.strip_prefix("cd ").and_then(|r| r.split_once("&&")) {
            rest = after.1.trim();
        }
        let core = rest.split(['|', '>', ';']).next().unwrap_or(rest);
        let core = core.replace("2&1", "");
        return core
            .split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ");
    }
    for field in ["path", "file_path", "filename", "notebook_path"] {
        if let Some(path) = args.get(field).and_then(Value::as_str) {
            return format!("{name} {path}");
        }
    }
    name.to_string()
}

/// The line of a failed tool's output that says what went wrong (the
/// first naming an error, else the first), and every line naming one.
fn error_lines(text: &str) -> (String, Vec<String>) {
    const SIGNS: [&str; 12] = [
        "error",
        "failed",
        "failure",
        "exception",
        "not found",
        "no such file",
        "cannot",
        "could not",
        "denied",
        "invalid",
        "panic",
        "traceback",
    ];
    let clean = strip_escapes(text)
        .replace("<tool_use_error>", " ")
        .replace("</tool_use_error>", " ");
    let lines: Vec<&str> = clean
        .lines()
        .map(str::trim)
        // Minified code and data lines say nothing a reader could use.
        .filter(|l| !l.is_empty() && l.chars().count() <= 240)
        .collect();
    let signals: Vec<String> = lines
        .iter()
        .filter(|l| {
            let lower = l.to_lowercase();
            !lower.starts_with("command exited with code")
                && SIGNS.iter().any(|s| lower.contains(s))
        })
        .map(|l| l.chars().take(60).collect())
        .collect();
    let ends: Vec<String> = [lines.first(), lines.last()]
        .into_iter()
        .flatten()
        .map(|l| l.chars().take(60).collect())
        .collect();
    let line = signals
        .first()
        .or(ends.first())
        .cloned()
        .unwrap_or_default();
    // Without a line naming an error, its first or last line stands for it.
    let signals = if signals.is_empty() { ends } else { signals };
    (line, signals)
}

/// What the person asked, with the markup clients wrap around it removed;
/// `None` when the text is not a request (client meta text, a bare slash
/// command, command output, an interruption marker).
pub fn request(text: &str, meta: bool) -> Option<String> {
    if meta {
        return None;
    }
    let mut text = strip_escapes(text);
    for tag in ["ide_opened_file", "ide_selection", "system-reminder"] {
        let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
        while let Some(start) = text.find(&open) {
            let Some(end) = text[start..].find(&close) else {
                break;
            };
            text.replace_range(start..start + end + close.len(), " ");
        }
    }
    let text = text.trim();
    let not_requests = [
        "<command-",
        "<local-command-",
        "Caveat: The messages below",
        "[Request interrupted",
    ];
    let bare_command =
        text.starts_with('/') && !text.contains(char::is_whitespace) && text.len() < 40;
    if text.is_empty() || bare_command || not_requests.iter().any(|p| text.starts_with(p)) {
        return None;
    }
    Some(text.to_string())
}

/// Terminal escape sequences (CSI and OSC) and other control characters
/// removed. (compactd has its own; this one is written again on purpose,
/// like the error-line rule above, so that a bug there cannot hide here.)
pub fn strip_escapes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            if !c.is_control() || c == '\n' || c == '\t' {
                out.push(c);
            }
            continue;
        }
        match chars.next() {
            Some('[') => {
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            Some(']') => {
                while let Some(c) = chars.next() {
                    if c == '\u{7}' || (c == '\u{1b}' && chars.next_if_eq(&'\\').is_some()) {
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// Lower-case words only, one space apart: what "contains" compares, so
/// that quoting, markup and line breaks do not matter.
pub fn words(text: &str) -> String {
    strip_escapes(text)
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The opening of `text` (about `chars` characters, whole words) as
/// `words` gives it: long requests are identified by how they start.
pub fn opening(text: &str, chars: usize) -> String {
    let all = words(text);
    if all.len() <= chars {
        return all;
    }
    let end = all
        .char_indices()
        .nth(chars)
        .map(|(i, _)| i)
        .unwrap_or(all.len());
    let cut = all[..end].rfind(' ').unwrap_or(end);
    all[..cut].to_string()
}
