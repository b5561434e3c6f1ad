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

use crate::transcript::{self, Line};

/// Bytes read per chunk: a large file never sits in memory whole.
const CHUNK: usize = 1 << 20;
/// The first bytes of the file, compared at each step: a file rewritten
/// in place with different content starts differently.
const HEAD: usize = 256;

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
}

impl Tail {
    pub fn new(path: &Path) -> Tail {
        Tail {
            path: path.to_path_buf(),
            offset: 0,
            lines: 0,
            identity: None,
            head: Vec::new(),
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
    /// non-blank one to `each` as it is read. An error (the file is gone,
    /// or not a regular file) changes nothing.
    pub fn step(&mut self, mut each: impl FnMut(Line)) -> io::Result<Step> {
        // A FIFO swapped in would block the open, and the state owner.
        let mut file = crate::regular_file::open_read(&self.path)?;
        let meta = file.metadata()?;
        let identity = identity(&meta);
        if self.identity.is_some() && identity != self.identity {
            return Ok(Step::Changed("replaced by another file"));
        }
        if meta.len() < self.offset {
            return Ok(Step::Changed("truncated"));
        }
        if !self.head.is_empty() {
            let mut head = vec![0; self.head.len()];
            file.read_exact(&mut head)?;
            if head != self.head {
                return Ok(Step::Changed("rewritten"));
            }
        }
        self.identity = identity;
        if meta.len() == self.offset {
            return Ok(Step::Read);
        }
        file.seek(SeekFrom::Start(self.offset))?;
        self.read_lines(&mut file, &mut each)?;
        Ok(Step::Read)
    }

    fn read_lines(&mut self, file: &mut File, each: &mut impl FnMut(Line)) -> io::Result<()> {
        let mut pending: Vec<u8> = Vec::new();
        let mut chunk = vec![0u8; CHUNK];
        loop {
            let n = file.read(&mut chunk)?;
            if n == 0 {
                return Ok(());
            }
            // Only the new bytes are searched: `pending` holds no newline
            // before them, so a long last line costs its length, not its
            // length squared.
            let Some(in_chunk) = chunk[..n].iter().rposition(|b| *b == b'\n') else {
                pending.extend_from_slice(&chunk[..n]);
                continue;
            };
            let last_newline = pending.len() + in_chunk;
            pending.extend_from_slice(&chunk[..n]);
            let complete: Vec<u8> = pending.drain(..=last_newline).collect();
            if self.head.len() < HEAD && self.offset == 0 {
                self.head = complete[..complete.len().min(HEAD)].to_vec();
            }
            for raw in complete[..complete.len() - 1].split(|b| *b == b'\n') {
                self.lines += 1;
                if !raw.iter().all(u8::is_ascii_whitespace) {
                    each(transcript::parse_line(self.lines, raw));
                }
            }
            self.offset += complete.len() as u64;
        }
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
}
