//! LSP base framing as a pure decoder: bytes go in with [`FrameDecoder::feed`],
//! frames come out of [`FrameDecoder::next_event`]. No I/O, so it is tested
//! and fuzzed with byte slices cut anywhere.
//!
//! # Recovery
//!
//! A frame is a header block (`Name: value` lines, one of them
//! `Content-Length: N`, ended by an empty line) and then exactly N bytes of
//! JSON. Anything else is a bad frame: garbage where a header should be, a
//! missing, negative or non-numeric `Content-Length`, a header block with
//! only `Content-Type`, or a body that is not one JSON document of the
//! declared length. After a bad frame the decoder *resynchronises*: it
//! rescans from the bad frame's second byte for the next
//! `Content-Length: <digits>` line (name in any case, found anywhere, since
//! bodies end without a newline and the next header follows directly) and
//! discards the bytes before it. Only bad frames are rescanned, so every byte
//! is read at most a few times and nothing that was decoded is decoded again.
//!
//! A length that is a few bytes off:
//! - too short: the body is cut mid-JSON, fails to parse (answered -32700),
//!   and its rest is skipped up to the next frame's header;
//! - too long: the body swallows the start of the next frame. The next
//!   header is still found, because the rescan covers the swallowed bytes:
//!   the bad frame costs only itself. Better, the decoder does not wait for
//!   the missing bytes when it can tell the length is wrong: a valid JSON
//!   body can never contain a raw `Content-Length: <digits>` line (a string
//!   cannot hold a raw newline, and outside strings the name is not JSON),
//!   so as soon as one appears inside the declared body, the body is known
//!   to be bad and the next frame is read at once. A client that sends a
//!   too-long frame and then waits is therefore answered as soon as it sends
//!   its next frame; before that, nothing can tell "too long" from "not all
//!   sent yet".
//!
//! A frame declaring more than the cap (`maxFrameBytes`) is refused without
//! buffering it: the decoder looks at most [`ID_PREFIX_BYTES`] of its body
//! for the request id (so the refusal can be answered to the right id), then
//! resynchronises, discarding the rest as it streams past instead of waiting
//! for the declared length, which may never come.

use serde_json::Value;

use super::body;
use super::leading_id::leading_id_at;

/// The default cap on one frame's body: 256 MiB fits any real transcript.
pub const DEFAULT_MAX_FRAME_BYTES: u64 = 256 * 1024 * 1024;
/// One header line longer than this is garbage.
pub const MAX_HEADER_LINE: usize = 8 * 1024;
/// A header block longer than this is garbage.
pub const MAX_HEADER_BLOCK: usize = 64 * 1024;
/// A buffer larger than this is let go once everything in it was read.
const RELEASE_ABOVE: usize = 1 << 20;
/// How much of an oversized frame's body is searched for its request id.
pub const ID_PREFIX_BYTES: usize = 64 * 1024;

const NAME: &[u8] = b"content-length";
/// The longest `[ \t]*digits[ \t]*\r?\n` tail that still counts as a
/// `Content-Length` line during a rescan.
const MAX_LENGTH_TAIL: usize = 64;

/// What the decoder made of the next stretch of input.
#[derive(Debug, Clone, PartialEq)]
pub enum FrameEvent {
    /// A well-framed body holding one JSON document.
    Json(Value),
    /// A frame with a valid header whose body is not one JSON document of
    /// the declared length (answered -32700, or -32600 when `too_deep`),
    /// with the id found in it, if any (`leading_id`).
    InvalidJson {
        why: String,
        id: Option<Value>,
        /// Valid JSON nested past `body::MAX_DEPTH`.
        too_deep: bool,
    },
    /// A frame declaring more than the cap; its body was skipped unread.
    /// `id` is the request id found at the start of the body, if any.
    TooLarge {
        declared: u64,
        limit: u64,
        id: Option<Value>,
    },
    /// Input that is no frame at all (bad header); logged, not answered.
    Skipped(String),
}

impl FrameEvent {
    /// Whether two events mean the same to the client: equal, except for the
    /// reason an invalid body gives, which depends on how much of it had
    /// arrived when it was found out.
    pub fn same_outcome(&self, other: &FrameEvent) -> bool {
        match (self, other) {
            (FrameEvent::InvalidJson { .. }, FrameEvent::InvalidJson { .. }) => true,
            (a, b) => a == b,
        }
    }
}

/// Whether two event sequences mean the same (see `FrameEvent::same_outcome`).
pub fn same_outcomes(a: &[FrameEvent], b: &[FrameEvent]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(a, b)| a.same_outcome(b))
}

#[derive(Debug)]
pub struct FrameDecoder {
    buf: Vec<u8>,
    /// Bytes before this offset are consumed; offsets in `state` count from it.
    pos: usize,
    state: State,
    max_frame_bytes: u64,
    eof: bool,
    /// Bytes dropped from the front of `buf` so far: `base + i` is where
    /// `buf[i]` stands in the whole input.
    base: u64,
    /// Where the ids of the latest refused frames stood in the whole input:
    /// a rescan may read a bad frame's bytes again as another frame, and
    /// one request is answered once.
    answered_ids: std::collections::VecDeque<u64>,
}

#[derive(Debug, Clone, Copy)]
enum State {
    Header(HeaderScan),
    Body {
        body_at: usize,
        declared: u64,
        /// Candidate header lines inside the body start at or after this.
        scanned: usize,
        /// The cap the frame exceeds, decided when its header was read.
        over_limit: Option<u64>,
    },
    /// Looking for a `Content-Length` line starting at or after `from`.
    Resync {
        from: usize,
    },
}

#[derive(Debug, Clone, Copy, Default)]
struct HeaderScan {
    cursor: usize,
    line_start: usize,
    colon: Option<usize>,
    content_length: Option<u64>,
    started: bool,
}

enum Find {
    /// A complete `Content-Length: N` line starts here.
    Found(usize),
    /// One may start here; more input decides.
    Partial(usize),
    NotFound,
}

impl Default for FrameDecoder {
    fn default() -> Self {
        FrameDecoder::new(DEFAULT_MAX_FRAME_BYTES)
    }
}

impl FrameDecoder {
    pub fn new(max_frame_bytes: u64) -> FrameDecoder {
        FrameDecoder {
            buf: Vec::new(),
            pos: 0,
            state: State::Header(HeaderScan::default()),
            max_frame_bytes,
            eof: false,
            base: 0,
            answered_ids: std::collections::VecDeque::new(),
        }
    }

    /// Applies to frames whose header block is not complete yet.
    pub fn set_max_frame_bytes(&mut self, max_frame_bytes: u64) {
        self.max_frame_bytes = max_frame_bytes;
    }

    /// Appends input.
    pub fn feed(&mut self, bytes: &[u8]) {
        // Drop consumed bytes once they are at least half the buffer, so
        // the copying stays linear overall.
        if self.pos > 0 && self.pos * 2 >= self.buf.len() {
            self.buf.drain(..self.pos);
            self.base += self.pos as u64;
            self.pos = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// Marks the end of input: what is pending is decided without waiting.
    pub fn finish(&mut self) {
        self.eof = true;
    }

    /// True after `finish` once everything was consumed.
    pub fn is_done(&self) -> bool {
        self.eof && self.pos == self.buf.len()
    }

    /// Bytes held that are not consumed yet.
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// The next event, or `None` when more input is needed (or, after
    /// `finish`, when everything was consumed).
    pub fn next_event(&mut self) -> Option<FrameEvent> {
        loop {
            let step = match self.state {
                State::Header(scan) => self.header(scan),
                State::Body {
                    body_at,
                    declared,
                    scanned,
                    over_limit,
                } => self.body(body_at, declared, scanned, over_limit),
                State::Resync { from } => self.resync(from),
            };
            match step {
                Step::Continue => continue,
                Step::Wait => return None,
                Step::Emit(event) => return Some(event),
            }
        }
    }

    fn pending(&self) -> &[u8] {
        &self.buf[self.pos..]
    }

    fn consume(&mut self, n: usize) {
        self.pos += n;
        // A large frame's buffer goes as soon as its JSON is built, so the
        // bytes and the value are not both held longer than the parse.
        if self.pos == self.buf.len() && self.buf.capacity() > RELEASE_ABOVE {
            self.buf = Vec::new();
            self.base += self.pos as u64;
            self.pos = 0;
        }
    }

    /// The frame starting at `pos` is bad: rescan from its second byte.
    fn bad(&mut self, event: FrameEvent) -> Step {
        self.state = State::Resync { from: 1 };
        Step::Emit(event)
    }

    fn skipped(&mut self, why: impl Into<String>) -> Step {
        self.bad(FrameEvent::Skipped(why.into()))
    }

    fn header(&mut self, mut scan: HeaderScan) -> Step {
        loop {
            let hay = self.pending();
            let Some(&b) = hay.get(scan.cursor) else {
                self.state = State::Header(scan);
                if !self.eof {
                    return Step::Wait;
                }
                if scan.started {
                    return self.skipped("end of input inside a header");
                }
                self.pos = self.buf.len();
                return Step::Wait;
            };
            if !scan.started {
                if b.is_ascii_whitespace() {
                    self.consume(1); // blank lines between frames
                    continue;
                }
                scan.started = true;
            }
            if b == b'\n' {
                let mut line = &hay[scan.line_start..scan.cursor];
                if let [rest @ .., b'\r'] = line {
                    line = rest;
                }
                if line.is_empty() {
                    return self.header_done(scan.content_length, scan.cursor + 1);
                }
                let Some(colon) = scan.colon else {
                    return self.skipped("malformed header line (no `:`)");
                };
                let name = &hay[scan.line_start..colon];
                if name.eq_ignore_ascii_case(NAME) {
                    let value = trim(&hay[colon + 1..scan.line_start + line.len()]);
                    let Some(len) = parse_length(value) else {
                        return self.skipped(format!(
                            "invalid Content-Length ({} bytes that are not a number)",
                            value.len()
                        ));
                    };
                    if scan.content_length.is_some_and(|known| known != len) {
                        return self.skipped("conflicting Content-Length headers");
                    }
                    scan.content_length = Some(len);
                }
                scan.cursor += 1;
                scan.line_start = scan.cursor;
                scan.colon = None;
                continue;
            }
            if let Some(why) = header_byte_error(hay, &scan, b) {
                return self.skipped(why);
            }
            if scan.colon.is_none() && b == b':' {
                scan.colon = Some(scan.cursor);
            }
            scan.cursor += 1;
            if scan.cursor - scan.line_start > MAX_HEADER_LINE {
                return self.skipped(format!(
                    "malformed header line (longer than {MAX_HEADER_LINE} bytes)"
                ));
            }
            if scan.cursor > MAX_HEADER_BLOCK {
                return self.skipped(format!("header block longer than {MAX_HEADER_BLOCK} bytes"));
            }
        }
    }

    fn header_done(&mut self, content_length: Option<u64>, body_at: usize) -> Step {
        let Some(declared) = content_length else {
            return self.skipped("header block without Content-Length");
        };
        let over_limit = (declared > self.max_frame_bytes).then_some(self.max_frame_bytes);
        if over_limit.is_none() {
            // Room for the whole body at once: growing by doubling would
            // copy it several times and hold two buffers while it does.
            let end = self.pos + body_at + declared as usize;
            self.buf.reserve(end.saturating_sub(self.buf.len()));
        }
        self.state = State::Body {
            body_at,
            declared,
            scanned: body_at,
            over_limit,
        };
        Step::Continue
    }

    fn body(
        &mut self,
        body_at: usize,
        declared: u64,
        scanned: usize,
        over_limit: Option<u64>,
    ) -> Step {
        let needed = if over_limit.is_some() {
            declared.min(ID_PREFIX_BYTES as u64) as usize
        } else {
            declared as usize
        };
        let available = self.pending().len() - body_at;
        if available >= needed {
            if let Some(limit) = over_limit {
                let id = self.answer_id(body_at, needed);
                return self.too_large(declared, limit, id);
            }
            return self.whole_body(body_at, needed);
        }
        // Not all there: a header line inside the body proves the declared
        // length wrong (see the module docs), so stop waiting for the rest.
        let (cut_at, scanned) = match find_length_line(self.pending(), scanned) {
            Find::Found(at) => (Some(at), scanned),
            Find::Partial(at) => (None, at),
            Find::NotFound => (None, self.pending().len().saturating_sub(NAME.len())),
        };
        self.state = State::Body {
            body_at,
            declared,
            scanned: scanned.max(body_at),
            over_limit,
        };
        let end = match (cut_at, self.eof) {
            (Some(at), _) => at,
            (None, true) => self.pending().len(),
            (None, false) => return Step::Wait,
        };
        if let Some(limit) = over_limit {
            let id = self.answer_id(body_at, end - body_at);
            return self.too_large(declared, limit, id);
        }
        match cut_at {
            Some(at) => {
                let id = self.answer_id(body_at, at - body_at);
                self.bad(FrameEvent::InvalidJson {
                    why: format!(
                        "Content-Length says {declared} bytes but the next header starts after {}",
                        at - body_at
                    ),
                    id,
                    too_deep: false,
                })
            }
            None => self.skipped(format!(
                "end of input inside a frame body ({available} of {declared} bytes)"
            )),
        }
    }

    /// The body of `needed` bytes at `body_at` arrived whole: one JSON
    /// document, or a bad frame answered under its id when it has one.
    fn whole_body(&mut self, body_at: usize, needed: usize) -> Step {
        match body::parse(&self.pending()[body_at..body_at + needed]) {
            Ok(value) => {
                self.consume(body_at + needed);
                self.state = State::Header(HeaderScan::default());
                Step::Emit(FrameEvent::Json(value))
            }
            Err(unread) => {
                // The id as `body::parse` read it, answered once.
                let id = self.answer_id(body_at, needed);
                self.bad(FrameEvent::InvalidJson {
                    why: if unread.too_deep {
                        format!("the {needed}-byte body: {}", unread.why)
                    } else {
                        format!("the {needed}-byte body is not valid JSON ({})", unread.why)
                    },
                    id,
                    too_deep: unread.too_deep,
                })
            }
        }
    }

    /// The id to answer the bad frame whose body is the `len` bytes at
    /// `body_at` with: the one `leading_id` reads there, unless those very
    /// bytes were answered already (a rescan reading them again).
    fn answer_id(&mut self, body_at: usize, len: usize) -> Option<Value> {
        // A header block holding a second `Content-Length` (a garbled one,
        // `CContent-Length: 91`, which a rescan reads as a header) may be
        // where the next frame starts: the body is then that frame's, and
        // its id that frame's to answer once (it was: run and answered).
        let headers = &self.pending()[..body_at];
        let lengths = headers
            .windows(b"content-length".len())
            .filter(|w| w.eq_ignore_ascii_case(b"content-length"))
            .count();
        if lengths > 1 {
            return None;
        }
        let (id, offset) = leading_id_at(&self.pending()[body_at..body_at + len])?;
        let at = self.base + (self.pos + body_at + offset) as u64;
        if self.answered_ids.contains(&at) {
            return None;
        }
        if self.answered_ids.len() == 16 {
            self.answered_ids.pop_front();
        }
        self.answered_ids.push_back(at);
        Some(id)
    }

    fn too_large(&mut self, declared: u64, limit: u64, id: Option<Value>) -> Step {
        self.bad(FrameEvent::TooLarge {
            declared,
            limit,
            id,
        })
    }

    fn resync(&mut self, from: usize) -> Step {
        match find_length_line(self.pending(), from) {
            Find::Found(at) => {
                self.consume(at);
                self.state = State::Header(HeaderScan::default());
                Step::Continue
            }
            Find::Partial(at) if !self.eof => {
                self.consume(at);
                self.state = State::Resync { from: 0 };
                Step::Wait
            }
            Find::Partial(_) | Find::NotFound if self.eof => {
                self.pos = self.buf.len();
                self.state = State::Header(HeaderScan::default());
                Step::Wait
            }
            Find::Partial(_) | Find::NotFound => {
                // Keep only what could still begin a header name.
                let hay = self.pending().len();
                let keep_from = hay.saturating_sub(NAME.len()).max(from).min(hay);
                self.consume(keep_from);
                self.state = State::Resync { from: 0 };
                Step::Wait
            }
        }
    }
}

enum Step {
    Continue,
    Wait,
    Emit(FrameEvent),
}

/// Why byte `b` at `scan.cursor` cannot be part of a header line.
fn header_byte_error(hay: &[u8], scan: &HeaderScan, b: u8) -> Option<&'static str> {
    let line = &hay[scan.line_start..scan.cursor];
    if line.first() == Some(&b'\r') {
        return Some("malformed header line (a stray carriage return)");
    }
    if scan.colon.is_some() {
        let control = (b < 0x20 && b != b'\t' && b != b'\r') || b == 0x7f;
        return control.then_some("malformed header line (a control character in a value)");
    }
    match b {
        b':' if line.is_empty() => Some("malformed header line (no name before `:`)"),
        b':' => None,
        b'\r' if line.is_empty() => None,
        _ if is_token_byte(b) => None,
        _ => Some("malformed header line"),
    }
}

/// HTTP token characters, which header names are made of.
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn trim(mut value: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = value {
        value = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = value {
        value = rest;
    }
    value
}

/// A `Content-Length` value: ASCII digits only (no sign). Too large for
/// `u64` reads as `u64::MAX`, which is over any cap.
fn parse_length(value: &[u8]) -> Option<u64> {
    if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(value.iter().fold(0u64, |n, d| {
        n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
    }))
}

/// Finds the first `Content-Length:[ \t]*digits[ \t]*\r?\n` starting at or
/// after `from` in `hay`.
fn find_length_line(hay: &[u8], from: usize) -> Find {
    let mut search = from + NAME.len();
    while search < hay.len() {
        let Some(offset) = memchr::memchr(b':', &hay[search..]) else {
            return Find::NotFound;
        };
        let colon = search + offset;
        search = colon + 1;
        let start = colon - NAME.len();
        if !hay[start..colon].eq_ignore_ascii_case(NAME) {
            continue;
        }
        match length_tail(&hay[colon + 1..]) {
            Some(true) => return Find::Found(start),
            None => return Find::Partial(start),
            Some(false) => {}
        }
    }
    Find::NotFound
}

/// Whether `tail` begins with `[ \t]*digits[ \t]*\r?\n`; `None`: not
/// decided until more bytes arrive.
fn length_tail(tail: &[u8]) -> Option<bool> {
    let mut digits = 0;
    let mut after_digits = false;
    for (i, &b) in tail.iter().enumerate() {
        if i >= MAX_LENGTH_TAIL {
            return Some(false);
        }
        match b {
            b' ' | b'\t' => after_digits |= digits > 0,
            b'0'..=b'9' if !after_digits => digits += 1,
            b'\n' => return Some(digits > 0),
            b'\r' => {
                return match tail.get(i + 1) {
                    None => None,
                    Some(b'\n') => Some(digits > 0),
                    Some(_) => Some(false),
                }
            }
            _ => return Some(false),
        }
    }
    None
}

#[cfg(test)]
mod tests;
