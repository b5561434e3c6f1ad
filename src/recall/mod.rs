//! Recall: every message a session ever held, compacted away or not, found
//! again by what it says. Pure: an `Index` of the messages' text, a
//! `Query`, ranked `Found` hits and their snippets; the server and
//! `compactd mcp` feed it and answer with it.
//!
//! The index is the messages' searchable text (content, thinking, tool
//! names and arguments, tool output), ASCII-lowercased, in one buffer with
//! each message's start; a query's first term is found with
//! `memchr::memmem` over the whole buffer, the others in the messages that
//! hold the ones before, so any substring is found exactly — a file name,
//! an identifier, an error code, punctuation and all — with no tokenizer to
//! miss it. Every term must occur; messages rank by BM25 over the terms'
//! occurrences. Adding a message costs its own text; the index is rebuilt
//! from the session (the log stays the truth) and never written anywhere.
//! `live` keeps an index in step with a session at the cost of what
//! changed; `select` picks the messages a caller reads back.
//! Why not an inverted index (tantivy, SQLite FTS5): README "Why not".

mod live;
mod query;
mod select;

use std::sync::Arc;

use memchr::memmem;

use crate::compaction::record::CompactionRecord;
use crate::conversation::{Message, MessageBody};
pub use live::{Candidate, Delta, Feed, Hit, LiveIndex, SessionIndex};
pub use query::{Query, QueryError};
pub use select::{select, Asked, Selected, Selection, Unselectable};

/// Text between two messages in the buffer: no query matches across it
/// (a query holds no NUL).
const SEPARATOR: u8 = 0;
/// Below this much text an index is built by one thread.
const PARALLEL_BYTES: usize = 8 << 20;
/// The most threads that build one.
const MAX_THREADS: usize = 8;
/// BM25's usual constants.
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// The searchable text of every message added, in order.
#[derive(Debug, Default, Clone)]
pub struct Index {
    text: Vec<u8>,
    /// Where each message's text starts in `text`.
    starts: Vec<usize>,
}

/// A message that matched, by its position in the index.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub doc: usize,
    pub score: f64,
    /// Where in the message's searchable text the first term first occurs.
    pub at: usize,
}

/// The messages holding every term so far, in order: each one's position
/// and where the first term first occurs in it, and its count of each term
/// (`counts`, `width` a message).
struct Candidates {
    width: usize,
    docs: Vec<(usize, usize)>,
    counts: Vec<f64>,
}

impl Candidates {
    fn counts_of(&mut self, i: usize) -> &mut [f64] {
        &mut self.counts[i * self.width..(i + 1) * self.width]
    }

    /// Keeps the messages that hold term `t`.
    fn keep_holding(&mut self, t: usize) {
        let width = self.width;
        let mut kept = 0;
        for i in 0..self.docs.len() {
            if self.counts[i * width + t] > 0.0 {
                self.docs[kept] = self.docs[i];
                self.counts
                    .copy_within(i * width..(i + 1) * width, kept * width);
                kept += 1;
            }
        }
        self.docs.truncate(kept);
        self.counts.truncate(kept * width);
    }
}

impl Index {
    /// Messages indexed.
    pub fn len(&self) -> usize {
        self.starts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }

    /// Bytes of text held (the index's size, near enough).
    pub fn bytes(&self) -> usize {
        self.text.len() + self.starts.len() * std::mem::size_of::<usize>()
    }

    /// Adds the next message: its searchable text written straight into
    /// the buffer, lowercased in place (no copy of it made first).
    pub fn push(&mut self, message: &Message) {
        self.starts.push(self.text.len());
        let text = &mut self.text;
        write_searchable(message, |piece| {
            let from = text.len();
            text.extend_from_slice(piece.as_bytes());
            lower(&mut text[from..]);
        });
        self.text.push(SEPARATOR);
    }

    /// The index of `messages`, built at once: each message's length
    /// first, then the text written into one buffer of that size by a
    /// thread per core, each its run of messages. Building a large
    /// session's index is most of its first search, and it is bound less
    /// by the copy than by the page faults of ~100 MB never touched before,
    /// which the threads take in parallel.
    pub fn build(messages: &[Arc<Message>]) -> Index {
        let mut starts = Vec::with_capacity(messages.len());
        let mut total = 0;
        for message in messages {
            starts.push(total);
            let mut length = 0;
            write_searchable(message, |piece| length += piece.len());
            total += length + 1;
        }
        let threads = match total < PARALLEL_BYTES {
            true => 1,
            false => std::thread::available_parallelism().map_or(1, |n| n.get().min(MAX_THREADS)),
        };
        Self::build_in(messages, starts, total, threads)
    }

    /// `build`'s second half: the text of `messages`, which begins at
    /// `starts` and takes `total` bytes, written by `threads` threads.
    fn build_in(
        messages: &[Arc<Message>],
        starts: Vec<usize>,
        total: usize,
        threads: usize,
    ) -> Index {
        // Zeroed by the allocator (fresh pages are zero): nothing written
        // yet, the separators already in place.
        let mut text = vec![SEPARATOR; total];
        std::thread::scope(|scope| {
            let mut rest: &mut [u8] = &mut text;
            let mut first = 0;
            for part in 1..=threads {
                let end = match part == threads {
                    true => messages.len(),
                    false => starts.partition_point(|&s| s < total / threads * part),
                };
                let to = starts.get(end).copied().unwrap_or(total);
                let (mine, after) = std::mem::take(&mut rest)
                    .split_at_mut(to - starts.get(first).copied().unwrap_or(total));
                rest = after;
                let run = &messages[first..end];
                match part == threads {
                    true => fill(mine, run),
                    false => {
                        scope.spawn(move || fill(mine, run));
                    }
                }
                first = end;
            }
        });
        Index { text, starts }
    }

    /// Keeps the first `len` messages (the later ones changed: they are
    /// pushed again).
    pub fn truncate(&mut self, len: usize) {
        if let Some(&end) = self.starts.get(len) {
            self.text.truncate(end);
            self.starts.truncate(len);
        }
    }

    /// Whether the `len` bytes at `at` are not part of a longer word
    /// (letters, digits, `_`) on either side.
    fn whole_word(&self, at: usize, len: usize) -> bool {
        let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
        let before = at.checked_sub(1).map(|i| self.text[i]);
        let after = self.text.get(at + len).copied();
        let inner = &self.text[at..at + len];
        let joined_before = before.is_some_and(word) && inner.first().is_some_and(|b| word(*b));
        let joined_after = after.is_some_and(word) && inner.last().is_some_and(|b| word(*b));
        !joined_before && !joined_after
    }

    /// An occurrence's weight: a whole-word one counts half again (`parse`
    /// ranks `parse` above `parse_args`).
    fn weight(&self, at: usize, len: usize) -> f64 {
        match self.whole_word(at, len) {
            true => 1.5,
            false => 1.0,
        }
    }

    /// Where a message's text starts and ends (before its separator).
    fn span(&self, doc: usize) -> (usize, usize) {
        let next = self.starts.get(doc + 1).copied();
        (self.starts[doc], next.unwrap_or(self.text.len()) - 1)
    }

    /// The messages holding the first term, found over the whole buffer.
    /// Occurrences come in order, so the message of each is the one before
    /// unless it lies past that one's end (then looked up from there on).
    fn first_term(&self, term: &str, width: usize) -> Candidates {
        let mut found = Candidates {
            width,
            docs: Vec::new(),
            counts: Vec::new(),
        };
        let (mut doc, mut end) = (0, 0);
        for at in memmem::find_iter(&self.text, term.as_bytes()) {
            if found.docs.is_empty() || at >= end {
                doc += self.starts[doc..].partition_point(|&s| s <= at) - 1;
                end = self.span(doc).1;
                found.docs.push((doc, at - self.starts[doc]));
                found.counts.resize(found.counts.len() + width, 0.0);
            }
            let last = found.docs.len() - 1;
            found.counts_of(last)[0] += self.weight(at, term.len());
        }
        found
    }

    /// Term `t` counted in the messages that hold the terms before it:
    /// found in their text alone, not the whole buffer.
    fn next_term(&self, found: &mut Candidates, t: usize, term: &str) {
        let finder = memmem::Finder::new(term.as_bytes());
        for i in 0..found.docs.len() {
            let (start, end) = self.span(found.docs[i].0);
            let mut count = 0.0;
            for at in finder.find_iter(&self.text[start..end]) {
                count += self.weight(start + at, term.len());
            }
            found.counts_of(i)[t] = count;
        }
        found.keep_holding(t);
    }

    /// The messages holding every term of `query` that `accept` takes,
    /// best first, at most `limit`.
    pub fn search(
        &self,
        query: &Query,
        accept: impl Fn(usize) -> bool,
        limit: usize,
    ) -> Vec<Found> {
        let terms = query.terms();
        let mut found = self.first_term(&terms[0], terms.len());
        for (t, term) in terms.iter().enumerate().skip(1) {
            if found.docs.is_empty() {
                break;
            }
            self.next_term(&mut found, t, term);
        }
        let total = self.len().max(1) as f64;
        let average = (self.text.len() as f64 / total).max(1.0);
        // Every message left holds every term: each term's document
        // frequency is their number.
        let frequency = found.docs.len() as f64;
        let idf = ((total - frequency + 0.5) / (frequency + 0.5) + 1.0).ln();
        let mut ranked: Vec<Found> = found
            .docs
            .iter()
            .zip(found.counts.chunks_exact(terms.len()))
            .filter(|((doc, _), _)| accept(*doc))
            .map(|(&(doc, at), tf)| {
                let (start, end) = self.span(doc);
                let length = (end - start) as f64;
                let score = tf
                    .iter()
                    .map(|&tf| idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * length / average)))
                    .sum();
                Found { doc, score, at }
            })
            .collect();
        // Best first; equal scores newest first (the later message is the
        // likelier one to matter now). Only the best `limit` are sorted: a
        // common word matches most of a session.
        let order = |a: &Found, b: &Found| b.score.total_cmp(&a.score).then(b.doc.cmp(&a.doc));
        if limit == 0 {
            return Vec::new();
        }
        if ranked.len() > limit {
            ranked.select_nth_unstable_by(limit - 1, order);
            ranked.truncate(limit);
        }
        ranked.sort_by(order);
        ranked
    }
}

/// `messages`' searchable text into `out`, which holds exactly it and
/// their separators.
fn fill(out: &mut [u8], messages: &[Arc<Message>]) {
    let mut rest = out;
    for message in messages {
        write_searchable(message, |piece| {
            let (to, after) = std::mem::take(&mut rest).split_at_mut(piece.len());
            to.copy_from_slice(piece.as_bytes());
            lower(to);
            rest = after;
        });
        // Past the separator, there already.
        rest = &mut std::mem::take(&mut rest)[1..];
    }
}

/// Text as the index holds it: ASCII-lowercased, a NUL (the separator) as
/// a space.
fn lower(text: &mut [u8]) {
    for b in text {
        *b = match *b {
            SEPARATOR => b' ',
            b => b.to_ascii_lowercase(),
        };
    }
}

/// What of a message is searched: its text, thinking, each tool call's
/// name and arguments, a tool result's tool name and output.
pub fn searchable_text(message: &Message) -> String {
    let mut out = String::new();
    write_searchable(message, |piece| out.push_str(piece));
    out
}

/// `searchable_text` piece by piece, to `write`.
fn write_searchable(message: &Message, mut write: impl FnMut(&str)) {
    // A tool's output follows its tool's name, as a reader expects it
    // ("Bash: …"), so a snippet never ends in the name.
    let mut empty = match &message.body {
        MessageBody::Tool {
            tool_name: Some(name),
            ..
        } if !name.is_empty() => {
            write(name);
            write(": ");
            write(message.text());
            false
        }
        _ => {
            write(message.text());
            message.text().is_empty()
        }
    };
    let mut add = |s: &str| {
        if !s.is_empty() {
            if !empty {
                write("\n");
            }
            write(s);
            empty = false;
        }
    };
    if let MessageBody::Assistant {
        thinking,
        tool_calls,
        ..
    } = &message.body
    {
        add(thinking.as_deref().unwrap_or(""));
        for call in tool_calls {
            add(&format!("{} {}", call.name, call.arguments));
        }
    }
}

/// About `width` characters of `text` around byte `at`, on character
/// boundaries, whitespace runs as one space, `…` where it was cut.
pub fn snippet(text: &str, at: usize, width: usize) -> String {
    let at = floor_boundary(text, at.min(text.len()));
    let before = width / 3;
    let start = text[..at]
        .char_indices()
        .rev()
        .nth(before.saturating_sub(1))
        .map_or(0, |(i, _)| i);
    let end = text[start..]
        .char_indices()
        .nth(width)
        .map_or(text.len(), |(i, _)| start + i);
    let body = text[start..end]
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let lead = if start > 0 { "…" } else { "" };
    let tail = if end < text.len() { "…" } else { "" };
    format!("{lead}{body}{tail}")
}

fn floor_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// For each of the first `count` messages, the compaction that first
/// summarized or pruned it, by index into `records`: a checkpoint covers
/// every message up to its last summarized one not covered before; an
/// incremental summary its run; a prune its results. `position` finds a
/// message by id. Also whether a record names a message `position` does not
/// find (one that may come later, and change the answer then).
pub fn summarized_by(
    records: &[CompactionRecord],
    count: usize,
    position: impl Fn(&str) -> Option<usize>,
) -> (Vec<Option<usize>>, bool) {
    let mut unresolved = false;
    let mut find = |id: &str| {
        let found = position(id).filter(|&at| at < count);
        unresolved |= found.is_none();
        found
    };
    let mut by = vec![None; count];
    // Every message before `painted` is marked: checkpoints cover the
    // session from its start, each further than the last, and painting
    // each from the start again would cost the session per record.
    let mut painted = 0;
    let mut mark = |from: usize, to: usize, record: usize| {
        let start = if from <= painted { painted } else { from };
        for slot in by.iter_mut().take(to + 1).skip(start) {
            slot.get_or_insert(record);
        }
        if from <= painted {
            painted = painted.max(to + 1);
        }
    };
    for (r, record) in records.iter().enumerate() {
        if let Some(last) = record
            .last_summarized_message_id
            .as_deref()
            .and_then(&mut find)
        {
            mark(0, last, r);
        } else if record.replaces.is_none() && record.pruned_message_ids.is_empty() {
            if let Some(kept) = record.first_kept_message_id.as_deref().and_then(&mut find) {
                if kept > 0 {
                    mark(0, kept - 1, r);
                }
            }
        }
        if let Some(range) = &record.replaces {
            if let (Some(from), Some(to)) =
                (find(&range.from_message_id), find(&range.to_message_id))
            {
                if from <= to {
                    mark(from, to, r);
                }
            }
        }
        for id in &record.pruned_message_ids {
            if let Some(i) = find(id) {
                mark(i, i, r);
            }
        }
    }
    (by, unresolved)
}

#[cfg(test)]
mod tests;
