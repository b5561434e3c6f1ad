//! Reading a growing transcript one step at a time: each step reads only
//! the bytes written since the last one and hands over the lines they
//! complete. A last line without its newline is held back until the agent
//! finishes writing it. A file that is no longer the one read so far
//! (truncated, replaced by another file, or rewritten in place) is
//! reported, so the caller reads it again from the start.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::transcript::{self, Emitter, Event, Line, Reader, Skips};

/// Bytes read per chunk: a large file never sits in memory whole.
const CHUNK: usize = 1 << 20;
/// The first bytes of the file, compared at each step: a file rewritten
/// in place with different content starts differently.
const HEAD: usize = 256;
/// A line longer than this is not read: it is passed over (never held in
/// memory) and reported as skipped. No agent writes one (an image is a
/// few megabytes); one so long would cost its reader many times its size.
pub const MAX_LINE: usize = 64 << 20;
/// From this many new bytes on, `feed` parses the lines on a second
/// thread while this one applies what they say.
const PIPELINED: u64 = 4 << 20;
/// Lines handed from the parsing thread at a time.
const BATCH: usize = 64;

/// What a step found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// The complete lines written since the last step (perhaps none) were
    /// handed over.
    Read,
    /// The file is not the one read so far: read it again from the start.
    Changed(&'static str),
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Tail {
    path: PathBuf,
    /// Bytes of complete lines read so far.
    offset: u64,
    /// Lines (blank ones included) read so far.
    lines: usize,
    identity: Option<(u64, u64)>,
    head: Vec<u8>,
    /// Bytes after `offset` known to hold no newline: the start of a line
    /// still being written, not read again until its newline comes.
    #[serde(default)]
    held: u64,
    /// `MAX_LINE`, smaller in tests.
    #[serde(skip, default = "max_line")]
    max_line: usize,
}

fn max_line() -> usize {
    MAX_LINE
}

impl Tail {
    pub fn new(path: &Path) -> Tail {
        Tail {
            path: path.to_path_buf(),
            offset: 0,
            lines: 0,
            identity: None,
            head: Vec::new(),
            held: 0,
            max_line: MAX_LINE,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes of complete lines read so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Reads the lines completed since the last step, handing each
    /// non-blank one to `each` as it is read (a line over `MAX_LINE` as
    /// unreadable, unread). An error (the file is gone, or not a regular
    /// file) changes nothing.
    pub fn step(&mut self, mut each: impl FnMut(Line)) -> io::Result<Step> {
        let mut file = match self.open(&mut each)? {
            Ok(file) => file,
            Err(step) => return Ok(step),
        };
        self.read_lines(&mut file, &mut each)?;
        Ok(Step::Read)
    }

    /// `step`, each line fed to `reader` (none after one that restarts
    /// it) and the events it gives handed to `apply` in order, with the
    /// skipped lines so far (`out.skipped`, where `apply` adds its own).
    /// Many new bytes are parsed and read on a second thread meanwhile.
    pub fn feed(
        &mut self,
        reader: &mut (dyn Reader + Send),
        out: &mut Emitter,
        mut apply: impl FnMut(Event, &mut Skips),
    ) -> io::Result<Step> {
        let mut feeder = Feeder::default();
        let mut each = |line: Line| {
            for event in feeder.line(reader, out, line) {
                apply(event, &mut out.skipped);
            }
        };
        let mut file = match self.open(&mut each)? {
            Ok(file) => file,
            Err(step) => return Ok(step),
        };
        let new = file.metadata()?.len().saturating_sub(self.offset);
        if new < PIPELINED {
            self.read_lines(&mut file, &mut each)?;
            return Ok(Step::Read);
        }
        self.pipelined(&mut file, feeder, reader, out, apply)?;
        Ok(Step::Read)
    }

    /// `feed`'s reading on a second thread: it parses the lines and feeds
    /// the reader, sending each line's events and skips; this thread
    /// applies them in order.
    fn pipelined(
        &mut self,
        file: &mut File,
        mut feeder: Feeder,
        reader: &mut (dyn Reader + Send),
        out: &mut Emitter,
        mut apply: impl FnMut(Event, &mut Skips),
    ) -> io::Result<()> {
        let mut skipped = std::mem::take(&mut out.skipped);
        type Batch = Vec<(Vec<Event>, Skips)>;
        let (send, receive) = std::sync::mpsc::sync_channel::<Batch>(8);
        // Batches come back emptied, to be freed where they were allocated:
        // freed on this thread, each line's allocations took the reading
        // thread's malloc arena lock against it (a tenth of this thread's
        // time under `perf`).
        let (give_back, given_back) = std::sync::mpsc::channel::<Batch>();
        let read = std::thread::scope(|scope| {
            let (this, feeder, reader, out) = (&mut *self, &mut feeder, &mut *reader, &mut *out);
            let reading = scope.spawn(move || {
                // Owned here, so the channel closes when reading ends.
                let (send, given_back) = (send, given_back);
                let mut batch = Vec::with_capacity(BATCH);
                let read = this.read_lines(file, &mut |line| {
                    let events = feeder.line(reader, out, line);
                    batch.push((events, std::mem::take(&mut out.skipped)));
                    if batch.len() == BATCH {
                        let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH));
                        let _ = send.send(full);
                        given_back.try_iter().for_each(drop);
                    }
                });
                let _ = send.send(batch);
                read
            });
            for mut batch in receive {
                for (events, skips) in &mut batch {
                    skipped.merge_from(skips);
                    for event in events.drain(..) {
                        apply(event, &mut skipped);
                    }
                }
                let _ = give_back.send(batch);
            }
            reading.join().expect("the reading thread does not panic")
        });
        out.skipped = skipped;
        read
    }

    /// Opens the file for a step, at the first byte not read yet: `Err`
    /// with what the step found when there is nothing to read. A line held
    /// back is only looked at again once its newline came (one over
    /// `MAX_LINE` is then passed over, reported to `each`).
    fn open(&mut self, each: &mut impl FnMut(Line)) -> io::Result<Result<File, Step>> {
        // A FIFO swapped in would block the open, and the state owner.
        let mut file = crate::regular_file::open_read(&self.path)?;
        let meta = file.metadata()?;
        let identity = identity(&meta);
        if self.identity.is_some() && identity != self.identity {
            return Ok(Err(Step::Changed("replaced by another file")));
        }
        if meta.len() < self.offset + self.held {
            return Ok(Err(Step::Changed("truncated")));
        }
        if !self.head.is_empty() {
            let mut head = vec![0; self.head.len()];
            file.read_exact(&mut head)?;
            if head != self.head {
                return Ok(Err(Step::Changed("rewritten")));
            }
        }
        self.identity = identity;
        if meta.len() == self.offset + self.held {
            return Ok(Err(Step::Read));
        }
        if self.held > 0 {
            let held = self.offset + self.held;
            file.seek(SeekFrom::Start(held))?;
            let Some(newline) = find_newline(&mut file, held)? else {
                self.held = meta.len() - self.offset;
                return Ok(Err(Step::Read));
            };
            self.held = 0;
            if newline - self.offset > self.max_line as u64 {
                self.pass_over(newline - self.offset, each);
            }
        }
        file.seek(SeekFrom::Start(self.offset))?;
        Ok(Ok(file))
    }

    /// A line of `length` bytes (without its newline) over `MAX_LINE`,
    /// passed over unread.
    fn pass_over(&mut self, length: u64, each: &mut impl FnMut(Line)) {
        self.lines += 1;
        self.offset += length + 1;
        each(Line {
            number: self.lines,
            value: Err(too_long(length, self.max_line)),
        });
    }

    fn read_lines(&mut self, file: &mut File, each: &mut impl FnMut(Line)) -> io::Result<()> {
        // The line being read, from its first byte (never more than
        // `MAX_LINE` and a chunk); `None` while passing over a longer one.
        let mut pending: Option<Vec<u8>> = Some(Vec::with_capacity(CHUNK));
        let mut passed = 0u64;
        let mut chunk = vec![0u8; CHUNK];
        loop {
            let n = file.read(&mut chunk)?;
            if n == 0 {
                self.held = pending.map_or(passed, |p| p.len() as u64);
                return Ok(());
            }
            let mut new = &chunk[..n];
            let Some(buffer) = pending.as_mut() else {
                // Only the new bytes are searched: a long line costs its
                // length, not its length squared.
                let Some(end) = memchr::memchr(b'\n', new) else {
                    passed += n as u64;
                    continue;
                };
                self.pass_over(passed + end as u64, each);
                passed = 0;
                new = &new[end + 1..];
                pending = Some(Vec::with_capacity(CHUNK));
                let buffer = pending.as_mut().expect("just set");
                self.take_lines(buffer, new, each);
                continue;
            };
            self.take_lines(buffer, new, each);
            if buffer.len() > self.max_line {
                passed = buffer.len() as u64;
                pending = None;
            }
        }
    }

    /// Adds `new` to the line being read in `pending`, handing over the
    /// lines it completes; what follows the last newline stays pending.
    fn take_lines(&mut self, pending: &mut Vec<u8>, new: &[u8], each: &mut impl FnMut(Line)) {
        let Some(last) = memchr::memrchr(b'\n', new) else {
            pending.extend_from_slice(new);
            return;
        };
        let (complete, rest) = new.split_at(last + 1);
        if self.head.len() < HEAD && self.offset == 0 {
            let mut head = pending[..pending.len().min(HEAD)].to_vec();
            head.extend_from_slice(&complete[..complete.len().min(HEAD - head.len())]);
            self.head = head;
        }
        // Each newline ends a line (found with `memchr`, many bytes at a
        // time, where a byte-by-byte split cost as much as a tenth of
        // reading the line's JSON).
        let mut ends = memchr::memchr_iter(b'\n', complete);
        let first_end = ends.next().expect("a newline ends the complete lines");
        let first = &complete[..first_end];
        let joined;
        let first = if pending.is_empty() {
            first
        } else {
            pending.extend_from_slice(first);
            joined = std::mem::take(pending);
            &joined[..]
        };
        self.offset += (first.len() + 1) as u64;
        self.hand_over(first, each);
        let mut start = first_end + 1;
        for end in ends {
            let raw = &complete[start..end];
            start = end + 1;
            self.offset += (raw.len() + 1) as u64;
            self.hand_over(raw, each);
        }
        pending.clear();
        pending.extend_from_slice(rest);
    }

    fn hand_over(&mut self, raw: &[u8], each: &mut impl FnMut(Line)) {
        self.lines += 1;
        if raw.len() > self.max_line {
            each(Line {
                number: self.lines,
                value: Err(too_long(raw.len() as u64, self.max_line)),
            });
        } else if !raw.iter().all(u8::is_ascii_whitespace) {
            each(transcript::parse_line(self.lines, raw));
        }
    }
}

/// Feeds lines to a reader as `Tail::feed` does.
#[derive(Default)]
struct Feeder {
    /// The reader restarted: the rest is read again anyway.
    stopped: bool,
}

impl Feeder {
    fn line(
        &mut self,
        reader: &mut (dyn Reader + Send),
        out: &mut Emitter,
        line: Line,
    ) -> Vec<Event> {
        if self.stopped {
            return Vec::new();
        }
        if let Some(value) = out.readable(&line) {
            reader.line(line.number, value, out);
        }
        let events = out.drain();
        self.stopped |= events.iter().any(|e| matches!(e, Event::Restart));
        events
    }
}

fn too_long(length: u64, max_line: usize) -> String {
    format!("a line of {length} bytes, over the {max_line} bytes a line may have: not read")
}

/// Where the next newline is, reading `file` on from `at`.
fn find_newline(file: &mut File, mut at: u64) -> io::Result<Option<u64>> {
    let mut chunk = vec![0u8; CHUNK];
    loop {
        let n = file.read(&mut chunk)?;
        if n == 0 {
            return Ok(None);
        }
        if let Some(i) = memchr::memchr(b'\n', &chunk[..n]) {
            return Ok(Some(at + i as u64));
        }
        at += n as u64;
    }
}

#[cfg(unix)]
fn identity(meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    Some((meta.dev(), meta.ino()))
}

#[cfg(not(unix))]
fn identity(_meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn numbers(tail: &mut Tail) -> (Step, Vec<usize>) {
        let mut seen = Vec::new();
        let step = tail.step(|line| seen.push(line.number)).unwrap();
        (step, seen)
    }

    #[test]
    fn a_torn_line_waits_and_a_changed_file_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        std::fs::write(&path, "{\"a\":1}\n\n{\"b\":").unwrap();
        let mut tail = Tail::new(&path);
        assert_eq!(numbers(&mut tail), (Step::Read, vec![1]));
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        file.write_all(b"2}\n").unwrap();
        assert_eq!(numbers(&mut tail), (Step::Read, vec![3]));
        assert_eq!(numbers(&mut tail), (Step::Read, vec![]));
        std::fs::write(&path, "{\"a\":1}\n").unwrap();
        assert_eq!(numbers(&mut tail).0, Step::Changed("truncated"));
        // Same length and more, other content: rewritten.
        let mut fresh = Tail::new(&path);
        numbers(&mut fresh);
        std::fs::write(&path, "{\"z\":9}\n{\"y\":8}\n").unwrap();
        assert_eq!(numbers(&mut fresh).0, Step::Changed("rewritten"));
        let mut replaced = Tail::new(&path);
        numbers(&mut replaced);
        let other = dir.path().join("other.jsonl");
        std::fs::write(&other, "{\"z\":9}\n").unwrap();
        std::fs::rename(&other, &path).unwrap();
        assert_eq!(
            numbers(&mut replaced).0,
            Step::Changed("replaced by another file")
        );
    }

    fn lines(tail: &mut Tail) -> Vec<(usize, Result<(), String>)> {
        let mut seen = Vec::new();
        tail.step(|line| seen.push((line.number, line.value.map(|_| ()))))
            .unwrap();
        seen
    }

    fn append(path: &Path, bytes: &[u8]) {
        let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
        file.write_all(bytes).unwrap();
    }

    #[test]
    fn a_line_over_the_limit_is_passed_over_unread_and_the_next_ones_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        // Longer than a chunk, so it is passed over across reads.
        let long = vec![b'x'; 3 * CHUNK + 17];
        let short = vec![b'y'; 300];
        let mut text = b"{\"a\":1}\n".to_vec();
        for line in [&long, &short] {
            text.extend_from_slice(line);
            text.push(b'\n');
        }
        text.extend_from_slice(b"{\"b\":2}\n");
        std::fs::write(&path, &text).unwrap();
        let mut tail = Tail::new(&path);
        tail.max_line = 200;
        let seen = lines(&mut tail);
        assert_eq!(seen.len(), 4, "{seen:?}");
        assert_eq!(seen[0], (1, Ok(())));
        let too_long = |n: usize| Err(too_long(n as u64, 200));
        assert_eq!(seen[1], (2, too_long(long.len())));
        assert_eq!(seen[2], (3, too_long(short.len())));
        assert_eq!(seen[3], (4, Ok(())));
        assert_eq!(tail.offset(), text.len() as u64);
    }

    #[test]
    fn a_last_line_still_being_written_is_held_not_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        std::fs::write(&path, b"{\"a\":1}\n{\"b\":\"").unwrap();
        let mut tail = Tail::new(&path);
        assert_eq!(lines(&mut tail), vec![(1, Ok(()))]);
        let big = vec![b'z'; 2 * CHUNK];
        append(&path, &big);
        assert_eq!(lines(&mut tail), vec![]);
        // What was read of the line is not looked at again: only what
        // came after it is searched for its newline.
        assert_eq!(tail.offset(), 8);
        assert_eq!(tail.held, 6 + big.len() as u64);
        append(&path, b"\"}\n{\"c\":3}\n");
        assert_eq!(lines(&mut tail), vec![(2, Ok(())), (3, Ok(()))]);
        assert_eq!(tail.held, 0);
        // Over the limit once its newline comes: passed over, the rest read.
        let mut small = Tail::new(&path);
        small.max_line = 100;
        lines(&mut small);
        append(&path, &big);
        assert_eq!(lines(&mut small), vec![]);
        append(&path, b"\n{\"d\":4}\n");
        let seen = lines(&mut small);
        assert_eq!(seen.len(), 2, "{seen:?}");
        assert!(seen[0].1.is_err(), "{seen:?}");
        assert_eq!(seen[1], (5, Ok(())));
        // Truncated inside the held line: changed.
        append(&path, b"{\"e\":");
        lines(&mut small);
        let len = std::fs::metadata(&path).unwrap().len();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(len - 2)
            .unwrap();
        assert_eq!(small.step(|_| {}).unwrap(), Step::Changed("truncated"));
    }
}
