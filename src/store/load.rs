//! Reading a session log back: line by line, without holding the file or
//! every entry at once, and replaying entries into a `Session` as they
//! arrive. Message entries carry their token counts (written at append
//! time), so a resume tokenizes nothing; entries without one (logs written
//! before counts were stored, imports) are counted in batches on every core.

use std::io::{self, BufRead};

use crate::conversation::{Message, MessageBody, Usage};
use crate::session::Session;
use crate::tokens::{self, Encoding};

use super::{shown_id as shown, LogEntry, SessionSettings, TokenCount};

/// Entries without a count are held back until this much of their text is
/// waiting, then counted in parallel: large enough to keep every core busy,
/// small enough not to hold a copy of the log.
const COUNT_BATCH_BYTES: usize = 8 << 20;
/// Below this, counting on other threads costs more than it saves.
const PARALLEL_MIN_BYTES: usize = 256 << 10;

/// What reading a log found besides its entries.
#[derive(Debug, Default)]
pub struct ReadReport {
    pub warnings: Vec<String>,
    /// The file does not end with a newline (a torn write); appends must
    /// start on a fresh line.
    pub torn_tail: bool,
}

/// The longest log line read into memory: four times the default frame
/// cap, room for the largest message a client can send, escaped. A longer
/// line is skipped as it streams past, like a line that is no entry.
pub const MAX_LINE_BYTES: usize = 1 << 30;

/// Reads entries one line at a time, handing each to `each`. Lines that do
/// not parse are skipped with a warning (a torn last line is one). A line
/// that cannot be an entry (it does not start with `{`: a run of NULs
/// from a sparse file, binary garbage) or is longer than
/// [`MAX_LINE_BYTES`] is skipped without being held, so no file, however
/// large, is read into memory whole.
pub fn read_entries(reader: impl BufRead, each: impl FnMut(LogEntry)) -> io::Result<ReadReport> {
    read_entries_capped(reader, MAX_LINE_BYTES, each)
}

fn read_entries_capped(
    mut reader: impl BufRead,
    max_line: usize,
    mut each: impl FnMut(LogEntry),
) -> io::Result<ReadReport> {
    let mut report = ReadReport::default();
    let mut line = Vec::new();
    let mut number = 0usize;
    while let Some(read) = next_line(&mut reader, &mut line, max_line)? {
        number += 1;
        report.torn_tail = !read.complete;
        let skipped = match read.skipped {
            Some(Skipped::NotAnEntry(byte)) => Some(format!("starts with byte {byte:#04x}")),
            Some(Skipped::TooLong) => Some(format!("longer than {max_line} bytes")),
            None => None,
        };
        if let Some(why) = skipped {
            report.warnings.push(format!(
                "line {number}: not an entry ({why}, {} bytes), skipped unread",
                read.bytes
            ));
            continue;
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<LogEntry>(&line) {
            Ok(entry) => each(entry),
            Err(e) if !read.complete => report
                .warnings
                .push(format!("line {number}: torn last line skipped ({e})")),
            Err(e) => report
                .warnings
                .push(format!("line {number}: unreadable entry skipped ({e})")),
        }
    }
    Ok(report)
}

/// One line as `next_line` read it.
struct ReadLine {
    /// Ended by a newline (else the file ended first).
    complete: bool,
    /// Its length, newline included.
    bytes: u64,
    /// Why it was not kept, if it was not.
    skipped: Option<Skipped>,
}

enum Skipped {
    /// The first byte that is not whitespace is not `{`.
    NotAnEntry(u8),
    TooLong,
}

/// Reads the next line into `line`, or streams past it without keeping it
/// when it cannot be an entry or is longer than `max`. `None` at the end.
fn next_line(
    reader: &mut impl BufRead,
    line: &mut Vec<u8>,
    max: usize,
) -> io::Result<Option<ReadLine>> {
    line.clear();
    let mut read = ReadLine {
        complete: false,
        bytes: 0,
        skipped: None,
    };
    loop {
        let buf = match reader.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            return Ok((read.bytes > 0).then_some(read));
        }
        let (chunk, complete) = match memchr::memchr(b'\n', buf) {
            Some(at) => (&buf[..=at], true),
            None => (buf, false),
        };
        if read.skipped.is_none() {
            if line.len() + chunk.len() > max {
                read.skipped = Some(Skipped::TooLong);
                line.clear();
            } else {
                line.extend_from_slice(chunk);
                let first = line.iter().find(|b| !b.is_ascii_whitespace());
                if let Some(&byte) = first.filter(|&&b| b != b'{') {
                    read.skipped = Some(Skipped::NotAnEntry(byte));
                    line.clear();
                }
            }
        }
        let n = chunk.len();
        read.bytes += n as u64;
        reader.consume(n);
        if complete {
            read.complete = true;
            return Ok(Some(read));
        }
    }
}

/// Rebuilds a session from entries given in log order. Only the latest
/// compaction decides the view; earlier ones are history.
///
/// A log may have been edited by hand, so what it says is bounded before
/// it is trusted, each time with a warning: a header after the first entry
/// is ignored (a header starts a log; a second one would replace its
/// settings), a stored token count above what the message's bytes could
/// tokenize to is counted again, usage above `Usage::MAX_TOKENS` is
/// dropped, and a compaction naming messages the log does not hold is
/// applied only where it names messages that are there.
pub struct Replay {
    session: Session,
    /// Entries waiting for the token counts of their messages, in order.
    pending: Vec<LogEntry>,
    pending_bytes: usize,
    /// Entries seen so far.
    entries: usize,
    warnings: Vec<String>,
}

impl Replay {
    pub fn new(id: &str, summary_prefix: String) -> Replay {
        Replay {
            session: Session::new(id.to_string(), None, None, None, summary_prefix),
            pending: Vec::new(),
            pending_bytes: 0,
            entries: 0,
            warnings: Vec::new(),
        }
    }

    pub fn add(&mut self, entry: LogEntry) {
        self.entries += 1;
        let Some(entry) = self.bounded(entry) else {
            return;
        };
        match &entry {
            LogEntry::Message { message, tokens } => {
                let counted = tokens
                    .as_ref()
                    .is_some_and(|t| t.is_for(self.session.encoding(), message));
                if counted && self.pending.is_empty() {
                    return self.apply(entry);
                }
                if !counted {
                    self.pending_bytes += text_bytes(message);
                }
                self.pending.push(entry);
                if self.pending_bytes >= COUNT_BATCH_BYTES {
                    self.flush();
                }
            }
            // Settings may change the model, and with it the encoding the
            // waiting messages are counted with.
            LogEntry::Header(_) | LogEntry::Settings(_) => {
                self.flush();
                self.apply(entry);
            }
            _ if self.pending.is_empty() => self.apply(entry),
            _ => self.pending.push(entry),
        }
    }

    pub fn finish(self) -> Session {
        self.finish_with_warnings().0
    }

    /// The session, and what in the log was not trusted as it stood.
    pub fn finish_with_warnings(mut self) -> (Session, Vec<String>) {
        self.flush();
        (self.session, self.warnings)
    }

    /// The entry as far as it can be trusted (`None`: ignored), with a
    /// warning for what was not.
    fn bounded(&mut self, mut entry: LogEntry) -> Option<LogEntry> {
        let n = self.entries;
        match &mut entry {
            LogEntry::Header(_) if n > 1 => {
                self.warnings.push(format!(
                    "entry {n}: a second header ignored (a header only starts a log)"
                ));
                return None;
            }
            LogEntry::Message { message, tokens } => {
                let most = tokens::max_tokens(message);
                if let Some(stored) = tokens.as_ref().filter(|t| t.count > most) {
                    self.warnings.push(format!(
                        "entry {n}: message `{}` has a stored count of {} tokens, more than its {most}-token bound; counted again",
                        shown(&message.id),
                        stored.count
                    ));
                    *tokens = None;
                }
                if let Some(largest) = message.usage.and_then(|u| u.implausible()) {
                    self.warnings.push(format!(
                        "entry {n}: message `{}` reports usage of {largest} tokens, more than {}; its usage is ignored",
                        shown(&message.id),
                        Usage::MAX_TOKENS
                    ));
                    message.usage = None;
                }
            }
            _ => {}
        }
        Some(entry)
    }

    fn flush(&mut self) {
        fill_token_counts(&mut self.pending, self.session.encoding());
        for entry in std::mem::take(&mut self.pending) {
            self.apply(entry);
        }
        self.pending_bytes = 0;
    }

    fn apply(&mut self, entry: LogEntry) {
        if let LogEntry::Compaction(record) = &entry {
            let missing: Vec<&str> = record
                .named_message_ids()
                .filter(|id| !self.session.contains_message(id))
                .collect();
            if !missing.is_empty() {
                self.warnings.push(format!(
                    "compaction `{}` names {} message(s) the log does not hold before it ({}); it applies only where it names messages that are there",
                    shown(&record.id),
                    missing.len(),
                    missing
                        .iter()
                        .take(3)
                        .map(|id| format!("`{}`", shown(id)))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
        apply_entry(&mut self.session, entry);
    }
}

/// Rebuilds a session from its entries. Only the latest compaction decides
/// the view; earlier ones are history.
pub fn replay(id: &str, entries: Vec<LogEntry>, summary_prefix: String) -> Session {
    let mut replay = Replay::new(id, summary_prefix);
    for entry in entries {
        replay.add(entry);
    }
    replay.finish()
}

/// Applies one log entry to a session: the one way a logged change becomes
/// state, whether a log is replayed or a transcript walked. A message's
/// stored count is used when it was made with the session's encoding;
/// otherwise the message is counted here.
pub fn apply_entry(session: &mut Session, entry: LogEntry) {
    match entry {
        LogEntry::Header(header) => apply_settings(session, header.settings),
        LogEntry::Settings(settings) => apply_settings(session, settings),
        LogEntry::Message { message, tokens } => {
            let count = tokens
                .filter(|t| t.is_for(session.encoding(), &message))
                .map(|t| t.count);
            let mut batch = vec![message];
            // A duplicate id can only come from a hand-edited log; keep
            // the message under a fresh id rather than lose it.
            if session.assign_ids(&mut batch).is_err() {
                batch[0].id.clear();
                let _ = session.assign_ids(&mut batch);
            }
            session.push_counted(batch.into_iter().map(|m| (m, count)));
        }
        LogEntry::Compaction(record) => session.apply_compaction(*record),
        LogEntry::Attached { tokens } => session.attach_after_latest(tokens),
        LogEntry::Pin { text } => session.add_pin(text),
        LogEntry::File(event) => session.apply_file_event(&event),
    }
}

/// Applies the settings an entry sets; absent ones stay.
pub fn apply_settings(session: &mut Session, settings: SessionSettings) {
    if settings.model.is_some() {
        session.set_model(settings.model);
    }
    if settings.context_window.is_some() {
        session.context_window = settings.context_window;
    }
    if settings.system_prompt.is_some() {
        session.set_system_prompt(settings.system_prompt);
    }
    if settings.tool_definitions.is_some() {
        session.set_tool_definitions(settings.tool_definitions);
    }
    if settings.auto_compact.is_some() {
        session.auto_compact_switch = settings.auto_compact;
    }
}

/// Roughly the bytes a message's count has to tokenize.
fn text_bytes(message: &Message) -> usize {
    match &message.body {
        MessageBody::Assistant {
            content,
            thinking,
            tool_calls,
            ..
        } => content.len() + thinking.as_ref().map_or(0, String::len) + tool_calls.len() * 64,
        _ => message.text().len(),
    }
}

/// Gives every message entry without a count for `encoding` its count,
/// splitting the work across the machine's cores when there is enough.
pub fn fill_token_counts(entries: &mut [LogEntry], encoding: Encoding) {
    let mut missing: Vec<&mut LogEntry> = entries
        .iter_mut()
        .filter(|e| {
            matches!(e, LogEntry::Message { message, tokens }
                if !tokens.as_ref().is_some_and(|t| t.is_for(encoding, message)))
        })
        .collect();
    let sizes: Vec<usize> = missing
        .iter()
        .map(|e| match e {
            LogEntry::Message { message, .. } => text_bytes(message),
            _ => 0,
        })
        .collect();
    let total: usize = sizes.iter().sum();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    if threads < 2 || total < PARALLEL_MIN_BYTES {
        missing.iter_mut().for_each(|e| count_entry(e, encoding));
        return;
    }
    // Contiguous runs of about equal text, one per thread.
    let share = total.div_ceil(threads);
    let mut runs: Vec<&mut [&mut LogEntry]> = Vec::with_capacity(threads);
    let mut rest: &mut [&mut LogEntry] = &mut missing;
    let (mut start, mut acc) = (0, 0);
    for (i, size) in sizes.iter().enumerate() {
        acc += size;
        if acc >= share && runs.len() + 1 < threads {
            let (run, tail) = std::mem::take(&mut rest).split_at_mut(i + 1 - start);
            runs.push(run);
            rest = tail;
            (start, acc) = (i + 1, 0);
        }
    }
    runs.push(rest);
    std::thread::scope(|scope| {
        for run in runs {
            scope.spawn(move || run.iter_mut().for_each(|e| count_entry(e, encoding)));
        }
    });
}

fn count_entry(entry: &mut LogEntry, encoding: Encoding) {
    if let LogEntry::Message { message, tokens } = entry {
        *tokens = Some(TokenCount::new(
            encoding,
            message,
            tokens::count_message(encoding, message),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry_line(id: &str) -> Vec<u8> {
        let mut line = serde_json::to_vec(&LogEntry::message(Message::user(id, "hi"))).unwrap();
        line.push(b'\n');
        line
    }

    fn read(bytes: &[u8], max_line: usize) -> (Vec<String>, ReadReport) {
        let mut ids = Vec::new();
        // A small buffer, so lines span many reads.
        let reader = io::BufReader::with_capacity(7, bytes);
        let report = read_entries_capped(reader, max_line, |entry| {
            if let LogEntry::Message { message, .. } = entry {
                ids.push(message.id);
            }
        })
        .unwrap();
        (ids, report)
    }

    #[test]
    fn lines_that_are_no_entry_or_too_long_are_skipped_without_being_kept() {
        let mut bytes = entry_line("a");
        bytes.extend(vec![0u8; 10_000]);
        bytes.push(b'\n');
        bytes.extend(entry_line("b"));
        bytes.extend(format!("{{\"type\":\"pin\",\"text\":\"{}\"}}\n", "x".repeat(500)).as_bytes());
        bytes.extend(entry_line("c"));
        bytes.extend(vec![0u8; 300]);
        let (ids, report) = read(&bytes, 400);
        assert_eq!(ids, ["a", "b", "c"]);
        assert!(report.torn_tail, "the NULs at the end are a torn tail");
        assert_eq!(report.warnings.len(), 3, "{:?}", report.warnings);
        assert!(report.warnings[0]
            .contains("line 2: not an entry (starts with byte 0x00, 10001 bytes)"));
        assert!(report.warnings[1].contains("line 4: not an entry (longer than 400 bytes"));
        assert!(
            report.warnings[2].contains("line 6: not an entry (starts with byte 0x00, 300 bytes)")
        );
        let whole = read(&entry_line("a"), 400);
        assert_eq!((whole.0.len(), whole.1.torn_tail), (1, false));
        assert!(read(b"", 400).0.is_empty());
    }
}
