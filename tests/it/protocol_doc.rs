//! `docs/protocol.md`'s example exchanges, replayed against the binary over
//! its real stdio, so that an example cannot drift from what compactd
//! answers (issue #37).
//!
//! **What an example is.** A fenced block without a language whose lines
//! start with `→ ` (the client sends) or `← ` (the server sends), after a
//! client's name when there are several (`editor → `). A message may go on
//! over the next lines until its brackets close. A line in parentheses is a
//! note for the reader (`(someone edits src/main.rs)`); any other line fails
//! the test.
//!
//! **How a block runs.** On fresh servers in a fresh temporary directory T:
//! HOME is T/home/me, the working directory (so the workspace) is
//! T/home/me/proj, and every `initialize` that names no `dataDir` gets
//! T/data. Each client is its own `compactd` process on that data
//! directory (the unnamed one included); a block marked `serve` runs
//! `compactd serve` and each client is a `compactd connect` to it. A
//! client's first message is preceded by an `initialize` (then
//! `initialized`) the block does not show, unless that message is an
//! `initialize`.
//!
//! **Sending.** A `→` line is sent as written, one frame; one that starts
//! `Content-Length: N  ` is sent as that header and the text after the two
//! spaces (a frame whose length lies); `(no Authorization header) ` sends
//! the message over a WebSocket opened without the token. A `→` line
//! shortened with `…` is sent as the block's next `in full` directive,
//! which the shortened line must read as (`…` standing for any text).
//!
//! **Receiving.** The `←` lines of each client are compared, in order, with
//! the messages that client receives. A notification or server request may
//! arrive without being shown only when the block shows no message of its
//! method at all (a block that shows one `conversation/tokens` shows every
//! one); a response is always shown. At the end of the block every message
//! a client received before the answer to one more request (to an unknown
//! method), or before its output ended, must have been shown the same way.
//! The order across clients is not checked.
//!
//! **Comparing.** As JSON: key order and number formatting (`1.0`, `1`)
//! aside, everything must be equal, with these exceptions only:
//! - `…` in a string stands for any text; as an array element, for any
//!   elements there; as an object member (`{…}`, `,…}`), for any other
//!   members.
//! - The values of `createdAt`, `durationMs`, `modified` (times), `size`
//!   (of a file holding T's path) and `version` only need the type shown.
//! - Values the server generates afresh each run match any value of their
//!   shape: a UUID (a session id), 12 hex digits with a letter and a digit
//!   among them (a compaction id), the number after `pid `. The same value
//!   in the doc stands for the same value wherever the block repeats it.
//! - Paths: `/home/me` and `/tmp/` in what is sent (and in the files the
//!   directives write) are under T, and so is Claude Code's folder of the
//!   workspace (`-home-me-proj`); T (and its Claude Code folder name) is
//!   taken out of what the server sends, and the hash a follow id ends with
//!   (of the transcript's path under T) becomes the hash of the doc's path.
//!   T's name is random, so text whose tokens are counted (a transcript's
//!   tool calls) names files relative to the workspace.
//!
//! To write an example, `PROTOCOL_DOC_TRACE=1` prints every message the
//! replay receives, and `PROTOCOL_DOC_LINE=N` replays only the block whose
//! fence is on line N.
//!
//! **Directives** (HTML comments right above a block, unseen when the
//! Markdown is rendered), one per line, `<!-- replay: … -->`:
//! - `not replayed: REASON`: the block is counted, skipped and listed with
//!   its reason (an external provider, an order that only timing decides);
//!   at most `MAX_NOT_REPLAYED` blocks may be.
//! - `as NAME` names the block; `after NAME` replays the named block
//!   first, on the same servers, checked as its own run checks it.
//! - `initialize {params}`: the unshown `initialize`'s params (merged over
//!   `{"processId":null,"capabilities":{}}`); with it the unshown
//!   `initialize` comes first even when the block starts with one.
//! - `[CLIENT ]→ MESSAGE`: set-up sent before the block, each request's
//!   answer awaited and nothing of it compared.
//! - `in full → MESSAGE`: see Sending.
//! - `file PATH "TEXT"` writes a file and `fifo PATH` makes a FIFO before
//!   the block; `at (NOTE) append PATH "TEXT"` appends to a file when the
//!   block reaches that note.
//! - `serve`: see How a block runs.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, Write};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use futures_util::SinkExt;
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message as WsMessage;

use crate::support::{self, Server};

const DOC: &str = "docs/protocol.md";
/// What `…` stands for as an array element or an object member.
const REST: &str = "\u{1}…";
/// Keys whose values differ from run to run: compared by type. (`size`:
/// a transcript's, which holds the path of T.)
const VARYING_KEYS: [&str; 5] = ["createdAt", "durationMs", "modified", "size", "version"];
/// The most blocks that may be marked `not replayed`.
const MAX_NOT_REPLAYED: usize = 3;
const NO_AUTH: &str = "(no Authorization header) ";
/// How long a block waits for one message before it fails.
const PATIENCE: Duration = Duration::from_secs(30);

#[derive(Debug)]
struct Block {
    /// The line of its opening fence.
    line: usize,
    directives: Vec<Directive>,
    items: Vec<Item>,
}

#[derive(Debug)]
enum Item {
    Send {
        line: usize,
        client: String,
        text: String,
    },
    Expect {
        line: usize,
        client: String,
        text: String,
    },
    Note(String),
}

#[derive(Debug, Clone)]
enum Directive {
    NotReplayed(String),
    As(String),
    After(String),
    Serve,
    Initialize(String),
    Setup {
        client: String,
        text: String,
    },
    InFull(String),
    File {
        path: String,
        text: String,
    },
    Fifo(String),
    At {
        note: String,
        path: String,
        text: String,
    },
}

impl Block {
    fn not_replayed(&self) -> Option<&str> {
        self.directives.iter().find_map(|d| match d {
            Directive::NotReplayed(reason) => Some(reason.as_str()),
            _ => None,
        })
    }

    fn name(&self) -> Option<&str> {
        self.directives.iter().find_map(|d| match d {
            Directive::As(name) => Some(name.as_str()),
            _ => None,
        })
    }

    /// The methods of the messages the block shows a client receive.
    fn shown_methods(&self, client: &str) -> BTreeSet<String> {
        self.items
            .iter()
            .filter_map(|item| match item {
                Item::Expect {
                    client: c, text, ..
                } if c == client => pattern_of(text).ok(),
                _ => None,
            })
            .filter_map(|p| p["method"].as_str().map(str::to_string))
            .collect()
    }
}

// ---------------------------------------------------------------------------
// Reading the doc.

/// `(client, arrow, message)` when `line` is a message line.
fn arrow_line(line: &str) -> Option<(String, char, String)> {
    let line = line.trim_end();
    for arrow in ['→', '←'] {
        let Some(at) = line.find(arrow) else { continue };
        let client = line[..at].trim();
        if !client
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-')
        {
            continue;
        }
        let rest = &line[at + arrow.len_utf8()..];
        let rest = rest.strip_prefix(' ').unwrap_or(rest);
        return Some((client.to_string(), arrow, rest.to_string()));
    }
    None
}

/// How many brackets `text` leaves open, outside strings (`…` aside).
fn open_brackets(text: &str) -> i64 {
    let (mut depth, mut in_string, mut escaped) = (0, false, false);
    for c in text.chars() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' | '[' => depth += 1,
            '}' | ']' => depth -= 1,
            _ => {}
        }
    }
    depth
}

fn directive(text: &str) -> Result<Directive, String> {
    let json_string = |s: &str| -> Result<String, String> {
        serde_json::from_str::<String>(s.trim()).map_err(|e| format!("{e}: {s}"))
    };
    let path_and_text = |s: &str| -> Result<(String, String), String> {
        let (path, text) = s.split_once(' ').ok_or("expected PATH \"TEXT\"")?;
        Ok((path.to_string(), json_string(text)?))
    };
    if let Some(reason) = text.strip_prefix("not replayed: ") {
        return Ok(Directive::NotReplayed(reason.to_string()));
    }
    if let Some(name) = text.strip_prefix("as ") {
        return Ok(Directive::As(name.trim().to_string()));
    }
    if let Some(name) = text.strip_prefix("after ") {
        return Ok(Directive::After(name.trim().to_string()));
    }
    if text == "serve" {
        return Ok(Directive::Serve);
    }
    if let Some(params) = text.strip_prefix("initialize ") {
        return Ok(Directive::Initialize(params.to_string()));
    }
    if let Some(message) = text.strip_prefix("in full → ") {
        return Ok(Directive::InFull(message.to_string()));
    }
    if let Some(rest) = text.strip_prefix("file ") {
        let (path, text) = path_and_text(rest)?;
        return Ok(Directive::File { path, text });
    }
    if let Some(path) = text.strip_prefix("fifo ") {
        return Ok(Directive::Fifo(path.trim().to_string()));
    }
    if let Some(rest) = text.strip_prefix("at ") {
        let (note, rest) = rest
            .split_once(") append ")
            .ok_or("expected at (NOTE) append")?;
        let (path, text) = path_and_text(rest)?;
        let note = format!("{note})");
        return Ok(Directive::At { note, path, text });
    }
    match arrow_line(text) {
        Some((client, '→', text)) => Ok(Directive::Setup { client, text }),
        _ => Err(format!("unknown directive: {text}")),
    }
}

/// The `<!-- replay: … -->` lines right above line index `fence`.
fn directives_above(lines: &[&str], fence: usize) -> Result<Vec<Directive>, String> {
    let mut found = Vec::new();
    let mut at = fence;
    while at > 0 {
        let Some(text) = lines[at - 1].trim().strip_prefix("<!-- replay:") else {
            break;
        };
        let text = text.strip_suffix("-->").ok_or("a directive on one line")?;
        found.push(directive(text.trim()).map_err(|e| format!("{DOC}:{at}: {e}"))?);
        at -= 1;
    }
    found.reverse();
    Ok(found)
}

/// The items of a block's body, `first` being the line number of its first
/// line.
fn items(body: &[&str], first: usize) -> Result<Vec<Item>, String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < body.len() {
        let line = first + i;
        let trimmed = body[i].trim();
        i += 1;
        if trimmed.is_empty() {
            continue;
        }
        if trimmed.starts_with('(') {
            out.push(Item::Note(trimmed.to_string()));
            continue;
        }
        let Some((client, arrow, mut text)) = arrow_line(body[i - 1]) else {
            return Err(format!(
                "{DOC}:{line}: neither a message (→, ←) nor a note in parentheses: {trimmed}"
            ));
        };
        while !text.starts_with("Content-Length:") && open_brackets(&text) > 0 && i < body.len() {
            text.push_str(body[i].trim());
            i += 1;
        }
        out.push(match arrow {
            '→' => Item::Send { line, client, text },
            _ => Item::Expect { line, client, text },
        });
    }
    Ok(out)
}

/// Every example block of the doc.
fn blocks(doc: &str) -> Result<Vec<Block>, String> {
    let lines: Vec<&str> = doc.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(language) = lines[i].strip_prefix("```") else {
            i += 1;
            continue;
        };
        let close = (i + 1..lines.len())
            .find(|&j| lines[j].starts_with("```"))
            .ok_or_else(|| format!("{DOC}:{}: an unclosed block", i + 1))?;
        let body = &lines[i + 1..close];
        if language.trim().is_empty() && body.iter().any(|l| arrow_line(l).is_some()) {
            out.push(Block {
                line: i + 1,
                directives: directives_above(&lines, i)?,
                items: items(body, i + 2)?,
            });
        }
        i = close + 1;
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// Comparing.

/// A `←` line as a JSON pattern: `…` outside strings becomes `REST`.
fn pattern_of(text: &str) -> Result<Value, String> {
    let mut out = String::new();
    let mut stack = Vec::new();
    let (mut in_string, mut escaped) = (false, false);
    for c in text.chars() {
        if in_string {
            out.push(c);
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' | '[' => stack.push(c),
            '}' | ']' => {
                stack.pop();
            }
            '…' => {
                match stack.last() {
                    Some('{') => out.push_str(&format!("{}:null", json!(REST))),
                    Some('[') => out.push_str(&json!(REST).to_string()),
                    _ => return Err(format!("`…` outside an object or array: {text}")),
                }
                continue;
            }
            _ => {}
        }
        out.push(c);
    }
    serde_json::from_str(&out).map_err(|e| format!("not JSON ({e}): {text}"))
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Shape {
    Uuid,
    Hex12,
    Digits,
}

#[derive(Debug, Clone, PartialEq)]
enum Piece {
    Char(char),
    Any,
    Slot(Shape, String),
}

fn is_hex(c: char) -> bool {
    c.is_ascii_digit() || ('a'..='f').contains(&c)
}

impl Shape {
    /// How many characters of `text` from `at` this shape takes.
    fn length_at(self, text: &[char], at: usize) -> Option<usize> {
        let rest = &text[at.min(text.len())..];
        let bounded = |n: usize| !rest.get(n).is_some_and(|c| c.is_ascii_alphanumeric());
        match self {
            Shape::Uuid => {
                let ok = rest.len() >= 36
                    && rest[..36].iter().enumerate().all(|(i, &c)| {
                        if [8, 13, 18, 23].contains(&i) {
                            c == '-'
                        } else {
                            is_hex(c)
                        }
                    });
                (ok && bounded(36)).then_some(36)
            }
            Shape::Hex12 => {
                let ok = rest.len() >= 12 && rest[..12].iter().all(|&c| is_hex(c));
                (ok && bounded(12)).then_some(12)
            }
            Shape::Digits => {
                let n = rest.iter().take_while(|c| c.is_ascii_digit()).count();
                (n > 0).then_some(n)
            }
        }
    }
}

/// A doc string as pieces: `…` is `Any`; with `slots`, generated values
/// (see the module doc) are slots.
fn pieces(doc: &str, slots: bool) -> Vec<Piece> {
    let chars: Vec<char> = doc.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let after_boundary = i == 0 || !chars[i - 1].is_ascii_alphanumeric();
        let generated = [Shape::Uuid, Shape::Hex12]
            .into_iter()
            .filter(|_| slots && after_boundary)
            .find_map(|shape| Some((shape, shape.length_at(&chars, i)?)))
            .filter(|(shape, n)| {
                let value = &chars[i..i + n];
                *shape == Shape::Uuid
                    || (value.iter().any(|c| c.is_ascii_digit())
                        && value.iter().any(|c| c.is_ascii_alphabetic()))
            })
            .or_else(|| {
                let pid = slots && i >= 4 && chars[i - 4..i].iter().collect::<String>() == "pid ";
                pid.then(|| Some((Shape::Digits, Shape::Digits.length_at(&chars, i)?)))
                    .flatten()
            });
        if let Some((shape, n)) = generated {
            out.push(Piece::Slot(shape, chars[i..i + n].iter().collect()));
            i += n;
            continue;
        }
        out.push(if chars[i] == '…' {
            Piece::Any
        } else {
            Piece::Char(chars[i])
        });
        i += 1;
    }
    out
}

/// Where `segment` (no `Any`) ends when it matches `text` from `at`.
fn segment_at(
    segment: &[Piece],
    text: &[char],
    mut at: usize,
    bound: &mut Vec<(String, String)>,
) -> Option<usize> {
    for piece in segment {
        match piece {
            Piece::Char(c) => {
                if text.get(at) != Some(c) {
                    return None;
                }
                at += 1;
            }
            Piece::Slot(shape, doc) => {
                let n = shape.length_at(text, at)?;
                bound.push((doc.clone(), text[at..at + n].iter().collect()));
                at += n;
            }
            Piece::Any => unreachable!(),
        }
    }
    Some(at)
}

/// Whether `text` is what `pattern` describes; the slots' values are
/// pushed on `bound`.
fn glob(pattern: &[Piece], text: &str, bound: &mut Vec<(String, String)>) -> bool {
    let text: Vec<char> = text.chars().collect();
    let segments: Vec<&[Piece]> = pattern.split(|p| *p == Piece::Any).collect();
    let mark = bound.len();
    let Some(mut at) = segment_at(segments[0], &text, 0, bound) else {
        bound.truncate(mark);
        return false;
    };
    if segments.len() == 1 {
        return at == text.len();
    }
    for (n, segment) in segments.iter().enumerate().skip(1) {
        let last = n == segments.len() - 1;
        let found = (at..=text.len()).find_map(|start| {
            let before = bound.len();
            match segment_at(segment, &text, start, bound) {
                Some(end) if !last || end == text.len() => Some(end),
                _ => {
                    bound.truncate(before);
                    None
                }
            }
        });
        match found {
            Some(end) => at = end,
            None => {
                bound.truncate(mark);
                return false;
            }
        }
    }
    true
}

fn shown(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(300) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

fn at_path(path: &str) -> String {
    if path.is_empty() {
        "the message".to_string()
    } else {
        format!("`{path}`")
    }
}

/// Whether `actual` is what `pattern` describes; the first difference
/// otherwise, with where it is.
fn compare(
    pattern: &Value,
    actual: &Value,
    path: &str,
    bound: &mut Vec<(String, String)>,
) -> Result<(), String> {
    let differ = || {
        format!(
            "at {}: the doc has {}, the server sent {}",
            at_path(path),
            shown(pattern),
            shown(actual)
        )
    };
    match (pattern, actual) {
        (Value::Object(p), Value::Object(a)) => compare_objects(p, a, path, bound),
        (Value::Array(p), Value::Array(a)) => compare_arrays(p, a, path, bound),
        (Value::String(p), Value::String(a)) => glob(&pieces(p, true), a, bound)
            .then_some(())
            .ok_or_else(differ),
        (Value::Number(p), Value::Number(a)) => {
            (p.as_f64() == a.as_f64()).then_some(()).ok_or_else(differ)
        }
        _ => (pattern == actual).then_some(()).ok_or_else(differ),
    }
}

fn compare_objects(
    pattern: &serde_json::Map<String, Value>,
    actual: &serde_json::Map<String, Value>,
    path: &str,
    bound: &mut Vec<(String, String)>,
) -> Result<(), String> {
    let join = |key: &str| {
        if path.is_empty() {
            key.to_string()
        } else {
            format!("{path}.{key}")
        }
    };
    for (key, p) in pattern.iter().filter(|(k, _)| *k != REST) {
        let Some(a) = actual.get(key) else {
            return Err(format!("the server sent no {}", at_path(&join(key))));
        };
        if VARYING_KEYS.contains(&key.as_str()) {
            let same_type = std::mem::discriminant(p) == std::mem::discriminant(a);
            if !same_type {
                return Err(format!(
                    "at {}: the doc has {p}, the server sent {a} (another type)",
                    at_path(&join(key))
                ));
            }
            continue;
        }
        compare(p, a, &join(key), bound)?;
    }
    if !pattern.contains_key(REST) {
        if let Some((key, value)) = actual.iter().find(|(k, _)| !pattern.contains_key(*k)) {
            return Err(format!(
                "the server also sent {}: {} (the doc does not show it, nor `…`)",
                at_path(&join(key)),
                shown(value)
            ));
        }
    }
    Ok(())
}

fn compare_arrays(
    pattern: &[Value],
    actual: &[Value],
    path: &str,
    bound: &mut Vec<(String, String)>,
) -> Result<(), String> {
    let rest = json!(REST);
    if !pattern.contains(&rest) {
        if pattern.len() != actual.len() {
            return Err(format!(
                "at {}: the doc has {} elements, the server sent {}: {}",
                at_path(path),
                pattern.len(),
                actual.len(),
                shown(&Value::Array(actual.to_vec()))
            ));
        }
        for (i, (p, a)) in pattern.iter().zip(actual).enumerate() {
            compare(p, a, &format!("{path}[{i}]"), bound)?;
        }
        return Ok(());
    }
    // With `…`: the shown elements, in order, around any others.
    fn aligned(p: &[Value], a: &[Value], bound: &mut Vec<(String, String)>) -> bool {
        let mark = bound.len();
        let ok = match p.split_first() {
            None => a.is_empty(),
            Some((first, rest)) if *first == json!(REST) => {
                (0..=a.len()).any(|skip| aligned(rest, &a[skip..], bound))
            }
            Some((first, rest)) => {
                !a.is_empty()
                    && compare(first, &a[0], "", bound).is_ok()
                    && aligned(rest, &a[1..], bound)
            }
        };
        if !ok {
            bound.truncate(mark);
        }
        ok
    }
    aligned(pattern, actual, bound)
        .then_some(())
        .ok_or_else(|| {
            format!(
                "at {}: the elements shown are not among those the server sent, in order: {}",
                at_path(path),
                shown(&Value::Array(actual.to_vec()))
            )
        })
}

/// A message as the doc writes one: `jsonrpc`, `id`, `method` first.
fn doc_style(message: &Value) -> String {
    let Value::Object(fields) = message else {
        return message.to_string();
    };
    let first = ["jsonrpc", "id", "method", "params", "result", "error"];
    let ordered = first
        .iter()
        .filter_map(|k| fields.get_key_value(*k))
        .chain(fields.iter().filter(|(k, _)| !first.contains(&k.as_str())));
    let members: Vec<String> = ordered.map(|(k, v)| format!("{}:{v}", json!(k))).collect();
    format!("{{{}}}", members.join(","))
}

// ---------------------------------------------------------------------------
// Talking to the binary.

/// A WebSocket client of `compactd serve` that presents no token.
struct RawWs {
    runtime: tokio::runtime::Runtime,
    stream: support::WsStream,
}

impl RawWs {
    fn connect(url: &str) -> Result<RawWs, String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let stream = runtime
            .block_on(support::ws_connect(url, None, None))
            .map_err(|e| format!("connecting to {url}: {e}"))?;
        Ok(RawWs { runtime, stream })
    }

    fn send(&mut self, text: &str) {
        let message = WsMessage::text(text.to_string());
        self.runtime.block_on(self.stream.send(message)).unwrap();
    }

    fn next(&mut self) -> Option<Value> {
        self.runtime.block_on(support::ws_next(&mut self.stream))
    }
}

enum Conn {
    Stdio(Server),
    Ws(RawWs),
}

struct Client {
    conn: Conn,
    initialized: bool,
    /// It sent `exit`: its output ends.
    exited: bool,
}

impl Client {
    fn next(&mut self) -> Option<Value> {
        match &mut self.conn {
            Conn::Stdio(server) => server.next_message(),
            Conn::Ws(ws) => ws.next(),
        }
    }

    fn send(&mut self, frame: &str) {
        match &mut self.conn {
            Conn::Stdio(server) => server.send_raw(frame.as_bytes()),
            Conn::Ws(ws) => ws.send(frame),
        }
    }

    fn send_json(&mut self, body: &str) {
        self.send(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    }

    /// Sends `message` and waits for its answer, dropping what comes
    /// before it.
    fn request(&mut self, message: Value) -> Result<Value, String> {
        self.send_json(&message.to_string());
        loop {
            let answer = self.next().ok_or_else(|| {
                format!("the server closed its output before answering {message}")
            })?;
            if answer.get("method").is_none() && answer["id"] == message["id"] {
                return Ok(answer);
            }
        }
    }
}

/// `compactd serve`, stopped when dropped.
struct Serve {
    child: Child,
    url: String,
    discovery: PathBuf,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Claude Code's folder name for a path: every character outside
/// `[A-Za-z0-9]` as `-`.
fn claude_folder(path: &str) -> String {
    path.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// The hash a follow id ends with (`engine::follow`): FNV-1a of the
/// transcript's path, its low 32 bits.
fn follow_hash(path: &str) -> String {
    let hash = path.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{:08x}", hash as u32)
}

fn method_of(text: &str) -> Option<String> {
    let message: Value = serde_json::from_str(text).ok()?;
    message["method"].as_str().map(str::to_string)
}

/// One replay: its temporary directory, servers and clients.
struct Replay<'a> {
    blocks: &'a [Block],
    _dir: tempfile::TempDir,
    /// T, the temporary directory, as a canonical path.
    root: String,
    home: PathBuf,
    workspace: PathBuf,
    data: PathBuf,
    serve: Option<Serve>,
    clients: BTreeMap<String, Client>,
    init: Value,
    /// An `initialize` directive was given: the unshown `initialize`
    /// comes first even when the block starts with one.
    forced_init: bool,
    actions: Vec<(String, PathBuf, String)>,
    /// Follow-id hashes of paths under T, and of the doc's paths.
    hashes: Vec<(String, String)>,
    /// Generated values: the doc's, and what the server sent for them.
    bound: Vec<(String, String)>,
    compared: usize,
    /// The `←` lines that differ from what the server sent.
    differences: Vec<String>,
}

impl<'a> Replay<'a> {
    fn new(blocks: &'a [Block]) -> Replay<'a> {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let home = root.join("home/me");
        let workspace = home.join("proj");
        std::fs::create_dir_all(&workspace).unwrap();
        Replay {
            blocks,
            root: root.to_string_lossy().into_owned(),
            data: root.join("data"),
            home,
            workspace,
            _dir: dir,
            serve: None,
            clients: BTreeMap::new(),
            init: json!({"processId": null, "capabilities": {}}),
            forced_init: false,
            actions: Vec::new(),
            hashes: Vec::new(),
            bound: Vec::new(),
            compared: 0,
            differences: Vec::new(),
        }
    }

    /// The doc's `/home/me…` and `/tmp/…` under T, and its follow-id
    /// hashes those of the paths under T.
    fn to_real(&self, text: &str) -> String {
        let mut pairs = vec![
            ("/home/me".to_string(), format!("{}/home/me", self.root)),
            ("/tmp/".to_string(), format!("{}/tmp/", self.root)),
            (
                "-home-me-proj".to_string(),
                format!("{}-home-me-proj", claude_folder(&self.root)),
            ),
        ];
        pairs.extend(
            self.hashes
                .iter()
                .map(|(real, doc)| (doc.clone(), real.clone())),
        );
        let mut out = String::new();
        let mut rest = text;
        'scan: while let Some(c) = rest.chars().next() {
            for (from, to) in &pairs {
                if let Some(after) = rest.strip_prefix(from.as_str()) {
                    out.push_str(to);
                    rest = after;
                    continue 'scan;
                }
            }
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
        out
    }

    /// What the server sent, with T taken out (see the module doc).
    fn as_the_doc_shows(&self, value: Value) -> Value {
        match value {
            Value::String(s) => {
                let mut s = s
                    .replace(&self.root, "")
                    .replace(&claude_folder(&self.root), "");
                for (real, doc) in &self.hashes {
                    s = s.replace(real, doc);
                }
                Value::String(s)
            }
            Value::Array(items) => Value::Array(
                items
                    .into_iter()
                    .map(|v| self.as_the_doc_shows(v))
                    .collect(),
            ),
            Value::Object(fields) => Value::Object(
                fields
                    .into_iter()
                    .map(|(k, v)| (k, self.as_the_doc_shows(v)))
                    .collect(),
            ),
            other => other,
        }
    }

    /// Writes (or appends to) the file the doc names `path`.
    fn write(&mut self, path: &str, text: &str, append: bool) {
        let real = PathBuf::from(self.to_real(path));
        let text = self.to_real(text);
        std::fs::create_dir_all(real.parent().unwrap()).unwrap();
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(append)
            .write(true)
            .truncate(!append)
            .open(&real)
            .unwrap();
        file.write_all(text.as_bytes()).unwrap();
        self.hashes
            .push((follow_hash(&real.to_string_lossy()), follow_hash(path)));
    }

    fn start_serve(&mut self) -> Result<(), String> {
        let discovery = PathBuf::from(&self.root).join("run/server.json");
        let mut child = support::cli()
            .args(["serve", "--listen", "127.0.0.1:0", "--discovery-file"])
            .arg(&discovery)
            .current_dir(&self.workspace)
            .env("HOME", &self.home)
            .env("XDG_DATA_HOME", self.home.join("data"))
            .env("XDG_CONFIG_HOME", self.home.join("config"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("compactd serve: {e}"))?;
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .trim()
            .strip_prefix("compactd listening on ")
            .ok_or_else(|| format!("compactd serve printed {line:?}"))?
            .to_string();
        self.serve = Some(Serve {
            child,
            url,
            discovery,
        });
        Ok(())
    }

    /// The client `name`, started for a first message `text`.
    fn client(&mut self, name: &str, text: &str) -> Result<&mut Client, String> {
        if !self.clients.contains_key(name) {
            let conn = match &self.serve {
                Some(serve) if text.starts_with(NO_AUTH) => Conn::Ws(RawWs::connect(&serve.url)?),
                Some(serve) => {
                    let discovery = serve.discovery.to_string_lossy().into_owned();
                    let args = ["connect", "--discovery-file", &discovery];
                    Conn::Stdio(Server::spawn_at(
                        &self.data,
                        &self.home,
                        &self.workspace,
                        &args,
                        &[],
                    ))
                }
                None => Conn::Stdio(Server::spawn_at(
                    &self.data,
                    &self.home,
                    &self.workspace,
                    &[],
                    &[],
                )),
            };
            let conn = match conn {
                Conn::Stdio(mut server) => {
                    server.patience = PATIENCE;
                    Conn::Stdio(server)
                }
                ws => ws,
            };
            let initialized = matches!(conn, Conn::Ws(_));
            self.clients.insert(
                name.to_string(),
                Client {
                    conn,
                    initialized,
                    exited: false,
                },
            );
        }
        Ok(self.clients.get_mut(name).unwrap())
    }

    /// `message` (an `initialize`) with T/data as `dataDir` unless it names
    /// one.
    fn with_data_dir(&self, mut message: Value) -> Value {
        let options = &mut message["params"]["initializationOptions"];
        if options.get("dataDir").is_none() {
            support::merge(options, json!({"dataDir": self.data}));
        }
        message
    }

    /// Sends a `→` line (already under T) from client `name`.
    fn send(&mut self, name: &str, text: &str) -> Result<(), String> {
        let method = method_of(text);
        let is_initialize = method.as_deref() == Some("initialize");
        let init = self.with_data_dir(json!({"jsonrpc": "2.0", "id": "replay-initialize",
            "method": "initialize", "params": self.init}));
        let body = match serde_json::from_str::<Value>(text) {
            Ok(message) if is_initialize => self.with_data_dir(message).to_string(),
            _ => text.to_string(),
        };
        let forced = self.forced_init;
        let client = self.client(name, text)?;
        if let Some(json) = text.strip_prefix(NO_AUTH) {
            client.send(json);
            return Ok(());
        }
        if !client.initialized && (forced || !is_initialize) {
            let answer = client.request(init)?;
            if answer.get("error").is_some() {
                return Err(format!("the unshown initialize failed: {answer}"));
            }
            client.send_json(r#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#);
        }
        client.initialized = true;
        match text.strip_prefix("Content-Length: ") {
            Some(rest) => {
                let (length, body) = rest
                    .split_once("  ")
                    .ok_or("`Content-Length: N  BODY` with two spaces")?;
                client.send(&format!("Content-Length: {length}\r\n\r\n{body}"));
            }
            None => client.send_json(&body),
        }
        client.exited |= method.as_deref() == Some("exit");
        Ok(())
    }

    /// A set-up message: sent, and its answer awaited when it is a request.
    fn setup(&mut self, name: &str, text: &str) -> Result<(), String> {
        let text = self.to_real(text);
        self.send(name, &text)?;
        let message: Value = serde_json::from_str(&text).map_err(|e| format!("{e}: {text}"))?;
        if message.get("id").is_none() {
            return Ok(());
        }
        let client = self.clients.get_mut(name).unwrap();
        loop {
            let answer = client
                .next()
                .ok_or("the server closed its output in the set-up")?;
            if answer.get("method").is_none() && answer["id"] == message["id"] {
                return match answer.get("error") {
                    Some(error) => Err(format!("the set-up {text} failed: {error}")),
                    None => Ok(()),
                };
            }
        }
    }

    /// The next message client `name` receives that the block shows.
    fn next_shown(&mut self, name: &str, shown: &BTreeSet<String>) -> Option<Value> {
        loop {
            let message = self.clients.get_mut(name)?.next()?;
            let message = self.as_the_doc_shows(message);
            let hidden = matches!(message["method"].as_str(), Some(m) if !shown.contains(m));
            if std::env::var_os("PROTOCOL_DOC_TRACE").is_some() {
                let how = if hidden { "(not shown) " } else { "" };
                println!("{name} ← {how}{}", doc_style(&message));
            }
            if !hidden {
                return Some(message);
            }
        }
    }

    /// Compares the next message client `name` receives with a `←` line.
    fn expect(&mut self, block: &Block, name: &str, text: &str, line: usize) -> Result<(), String> {
        let pattern = pattern_of(text).map_err(|e| format!("{DOC}:{line}: {e}"))?;
        if !self.clients.contains_key(name) {
            return Err(format!(
                "{DOC}:{line}: `{name}` receives before it sent anything"
            ));
        }
        let shown = block.shown_methods(name);
        let Some(message) = self.next_shown(name, &shown) else {
            return Err(format!(
                "{DOC}:{line}: the server ended its output instead of sending\n  doc:    ← {text}"
            ));
        };
        self.compared += 1;
        let mut bound = Vec::new();
        let compared = compare(&pattern, &message, "", &mut bound).and_then(|()| self.bind(bound));
        if let Err(difference) = compared {
            // The block goes on: its other lines may differ too.
            self.differences.push(format!(
                "{DOC}:{line}: {difference}\n  doc:    ← {text}\n  server: ← {}",
                doc_style(&message)
            ));
        }
        Ok(())
    }

    /// Holds each generated value to the one the doc's value stood for
    /// before.
    fn bind(&mut self, found: Vec<(String, String)>) -> Result<(), String> {
        for (doc, actual) in found {
            for (d, a) in &self.bound {
                if (*d == doc) != (*a == actual) {
                    return Err(format!(
                        "`{doc}` stands for `{actual}` here, but `{d}` stood for `{a}` before"
                    ));
                }
            }
            self.bound.push((doc, actual));
        }
        Ok(())
    }

    /// Every client's messages up to a last answer (or the end of its
    /// output) must have been shown.
    fn barrier(&mut self, block: &Block) -> Result<(), String> {
        let names: Vec<String> = self.clients.keys().cloned().collect();
        for name in names {
            let shown = block.shown_methods(&name);
            let client = self.clients.get_mut(&name).unwrap();
            let open = matches!(client.conn, Conn::Stdio(_)) && !client.exited;
            if open {
                client.send_json(
                    r#"{"jsonrpc":"2.0","id":"replay-barrier","method":"replay/barrier"}"#,
                );
            }
            // The first message shown must be the barrier's answer (or
            // none at all, once the output ended).
            let Some(message) = self.next_shown(&name, &shown) else {
                continue;
            };
            let barrier = message["id"] == "replay-barrier" && message.get("method").is_none();
            if !(open && barrier) {
                return Err(format!(
                    "{DOC}:{}: the server also sent what the block does not show{}:\n  server: ← {}",
                    block.line,
                    if name.is_empty() { String::new() } else { format!(" to {name}") },
                    doc_style(&message)
                ));
            }
        }
        Ok(())
    }

    /// The block's directives, in order, before its lines.
    fn prepare(&mut self, block: &Block) -> Result<(), String> {
        for directive in &block.directives {
            match directive {
                Directive::File { path, text } => self.write(path, text, false),
                Directive::Fifo(path) => {
                    let real = PathBuf::from(self.to_real(path));
                    std::fs::create_dir_all(real.parent().unwrap()).unwrap();
                    support::mkfifo(&real);
                }
                Directive::After(name) => {
                    let blocks = self.blocks;
                    let named = blocks
                        .iter()
                        .find(|b| b.name() == Some(name.as_str()))
                        .ok_or_else(|| format!("{DOC}:{}: no block is named {name}", block.line))?;
                    self.run(named).map_err(|e| {
                        format!("{e}\n  (replayed before the block at {DOC}:{})", block.line)
                    })?;
                }
                Directive::Serve if self.serve.is_none() => self.start_serve()?,
                Directive::Initialize(params) => {
                    self.forced_init = true;
                    let params: Value = serde_json::from_str(&self.to_real(params))
                        .map_err(|e| format!("{DOC}:{}: initialize: {e}", block.line))?;
                    support::merge(&mut self.init, params);
                }
                Directive::Setup { client, text } => self.setup(client, text)?,
                Directive::At { note, path, text } => {
                    let real = PathBuf::from(self.to_real(path));
                    self.hashes
                        .push((follow_hash(&real.to_string_lossy()), follow_hash(path)));
                    self.actions.push((note.clone(), real, self.to_real(text)));
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn run(&mut self, block: &Block) -> Result<(), String> {
        self.prepare(block)?;
        let mut in_full = block.directives.iter().filter_map(|d| match d {
            Directive::InFull(text) => Some(text),
            _ => None,
        });
        for item in &block.items {
            match item {
                Item::Send { line, client, text } => {
                    let mut sent = text;
                    if text.contains('…') {
                        sent = in_full.next().ok_or_else(|| {
                            format!(
                                "{DOC}:{line}: a shortened message needs an `in full` directive"
                            )
                        })?;
                        if !glob(&pieces(text, false), sent, &mut Vec::new()) {
                            return Err(format!(
                                "{DOC}:{line}: the message sent in full does not read as the line shown"
                            ));
                        }
                    }
                    let real = self.to_real(sent);
                    self.send(client, &real)
                        .map_err(|e| format!("{DOC}:{line}: {e}"))?;
                }
                Item::Expect { line, client, text } => self.expect(block, client, text, *line)?,
                Item::Note(note) => {
                    let action = self.actions.iter().find(|(n, _, _)| n == note).cloned();
                    if let Some((_, real, text)) = action {
                        std::fs::create_dir_all(real.parent().unwrap()).unwrap();
                        let mut file = std::fs::OpenOptions::new()
                            .create(true)
                            .append(true)
                            .open(&real)
                            .unwrap();
                        file.write_all(text.as_bytes()).unwrap();
                    }
                }
            }
        }
        self.barrier(block)
    }
}

fn doc_text() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(DOC);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn panic_text(panic: Box<dyn std::any::Any + Send>) -> String {
    match panic.downcast::<String>() {
        Ok(text) => *text,
        Err(panic) => panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .unwrap_or_default(),
    }
}

/// Replays one block on fresh servers: the number of messages compared,
/// or what differs.
fn replay(blocks: &[Block], block: &Block) -> Result<usize, Vec<String>> {
    let mut replay = Replay::new(blocks);
    let ran = catch_unwind(AssertUnwindSafe(|| replay.run(block))).unwrap_or_else(|panic| {
        // A server's log can be long: its last lines say what it sent.
        let text = panic_text(panic);
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines[lines.len().saturating_sub(12)..].join("\n");
        Err(format!(
            "{DOC}:{}: the replay failed: {}\n{tail}",
            block.line,
            lines.first().unwrap_or(&"")
        ))
    });
    let mut failures = std::mem::take(&mut replay.differences);
    failures.extend(ran.err());
    match failures.is_empty() {
        true => Ok(replay.compared),
        false => Err(failures),
    }
}

#[test]
fn the_examples_in_protocol_md_are_what_the_binary_answers() {
    let doc = doc_text();
    let blocks = blocks(&doc).unwrap_or_else(|e| panic!("{e}"));
    let only: Option<usize> = std::env::var("PROTOCOL_DOC_LINE")
        .ok()
        .and_then(|v| v.parse().ok());
    let (mut replayed, mut compared, mut failed) = (0, 0, 0);
    let mut skipped = Vec::new();
    let mut failures = Vec::new();
    for block in blocks
        .iter()
        .filter(|b| only.is_none_or(|line| b.line == line))
    {
        if let Some(reason) = block.not_replayed() {
            skipped.push(format!("{DOC}:{}: {reason}", block.line));
            continue;
        }
        match replay(&blocks, block) {
            Ok(n) => {
                replayed += 1;
                compared += n;
            }
            // A block replayed before others (`after`) reports its
            // differences once.
            Err(found) => {
                failed += 1;
                for failure in found {
                    if !failures.contains(&failure) {
                        failures.push(failure);
                    }
                }
            }
        }
    }
    println!(
        "{DOC}: {} example blocks; replayed {replayed} ({compared} server messages compared), {} failed, {} not replayed:",
        blocks.len(),
        failed,
        skipped.len()
    );
    for line in &skipped {
        println!("  {line}");
    }
    assert!(
        failures.is_empty(),
        "{DOC}'s examples are not what the binary answers ({} differences):\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    assert!(
        skipped.len() <= MAX_NOT_REPLAYED,
        "{} blocks are not replayed; at most {MAX_NOT_REPLAYED} may be",
        skipped.len()
    );
}

/// The comparison itself, without a server: what `…`, the varying keys and
/// the generated values let through, and what they do not.
#[test]
fn the_comparison_holds_every_value_but_the_named_exceptions() {
    let check =
        |doc: &str, sent: Value| compare(&pattern_of(doc).unwrap(), &sent, "", &mut Vec::new());
    let doc = r###"{"id":1,"result":{"ids":["m1",…,"m4"],"meter":{…},"summary":"## Task\n…","durationMs":2,…}}"###;
    let sent = json!({"id": 1, "result": {"ids": ["m1", "m2", "m3", "m4"], "meter": {"a": 1},
        "summary": "## Task\n- x", "durationMs": 7, "extra": true}});
    assert_eq!(check(doc, sent.clone()), Ok(()));
    let mut drifted = sent.clone();
    drifted["result"]["ids"] = json!(["m1", "m2", "m3"]);
    assert!(check(doc, drifted).is_err());
    assert_eq!(
        check(r#"{"a":1}"#, json!({"a": 1, "b": 2})),
        Err("the server also sent `b`: 2 (the doc does not show it, nor `…`)".into())
    );
    assert_eq!(
        check(r#"{"a":{"b":[1,2]}}"#, json!({"a": {"b": [1, 3]}})),
        Err("at `a.b[1]`: the doc has 2, the server sent 3".into())
    );
    assert_eq!(check(r#"{"p":1.0}"#, json!({"p": 1})), Ok(()));
    // Generated values: any of their shape, the same one each time.
    let uuid = "488d908f-471f-40d5-a381-cb74235ca97a";
    let doc = format!(r#"["{uuid}","session {uuid}","45e91187b7e5","(pid 7384)"]"#);
    let other = "0c4b0a7e-1d2f-4a1b-9c3d-5e6f7a8b9c0d";
    let sent = json!([
        other,
        format!("session {other}"),
        "0123456789ab",
        "(pid 12)"
    ]);
    let mut bound = Vec::new();
    assert_eq!(
        compare(&pattern_of(&doc).unwrap(), &sent, "", &mut bound),
        Ok(())
    );
    let mut replay = Replay::new(&[]);
    assert_eq!(replay.bind(bound), Ok(()));
    let mixed = json!([other, format!("session {uuid}"), "0123456789ab", "(pid 12)"]);
    let mut bound = Vec::new();
    assert_eq!(
        compare(&pattern_of(&doc).unwrap(), &mixed, "", &mut bound),
        Ok(())
    );
    assert!(
        replay.bind(bound).is_err(),
        "one doc value, two server values"
    );
    assert!(check(r#"["45e91187b7e5"]"#, json!(["not-hex-at-all"])).is_err());
}
