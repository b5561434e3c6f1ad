//! Recall: every message a session ever held, compacted away or not, found
//! again by what it says. Pure: an `Index` of the messages' text, a
//! `Query`, ranked `Found` hits and their snippets; the server and
//! `compactd mcp` feed it and answer with it.
//!
//! The index is the messages' searchable text (content, thinking, tool
//! names and arguments, tool output), ASCII-lowercased, in one buffer with
//! each message's start; a query's terms are found with `memchr::memmem`
//! over the whole buffer, so any substring is found exactly — a file name,
//! an identifier, an error code, punctuation and all — with no tokenizer to
//! miss it. Every term must occur; messages rank by BM25 over the terms'
//! occurrences. Adding a message costs its own text; the index is rebuilt
//! from the session (the log stays the truth) and never written anywhere.
//! Why not an inverted index (tantivy, SQLite FTS5): README "Why not".

mod query;

use std::collections::HashMap;
use std::sync::Arc;

use memchr::memmem;

use crate::compaction::record::CompactionRecord;
use crate::conversation::{Message, MessageBody};
pub use query::{Query, QueryError};

/// Text between two messages in the buffer: no query matches across it
/// (a query holds no NUL).
const SEPARATOR: u8 = 0;
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

    /// Adds the next message.
    pub fn push(&mut self, message: &Message) {
        self.starts.push(self.text.len());
        let text = searchable_text(message);
        self.text.extend(text.bytes().map(|b| match b {
            SEPARATOR => b' ',
            b => b.to_ascii_lowercase(),
        }));
        self.text.push(SEPARATOR);
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

    fn span(&self, doc: usize) -> (usize, usize) {
        let end = self
            .starts
            .get(doc + 1)
            .map_or(self.text.len(), |next| next - 1);
        (self.starts[doc], end)
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
        // Per message: each term's count (a whole-word occurrence counts
        // half again: `parse` ranks `parse` above `parse_args`), and where
        // the first one begins.
        let mut counts: HashMap<usize, (Vec<f64>, usize)> = HashMap::new();
        for (t, term) in terms.iter().enumerate() {
            let mut seen_in = 0usize;
            for at in memmem::find_iter(&self.text, term.as_bytes()) {
                let doc = self.starts.partition_point(|&s| s <= at) - 1;
                if t > 0 && !counts.contains_key(&doc) {
                    continue;
                }
                let entry = counts
                    .entry(doc)
                    .or_insert_with(|| (vec![0.0; terms.len()], at - self.starts[doc]));
                if entry.0[t] == 0.0 {
                    seen_in += 1;
                }
                entry.0[t] += match self.whole_word(at, term.len()) {
                    true => 1.5,
                    false => 1.0,
                };
            }
            if seen_in == 0 {
                return Vec::new();
            }
            counts.retain(|_, (c, _)| c[t] > 0.0);
        }
        let total = self.len().max(1) as f64;
        let average = (self.text.len() as f64 / total).max(1.0);
        let frequency: Vec<f64> = (0..terms.len())
            .map(|t| counts.values().filter(|(c, _)| c[t] > 0.0).count() as f64)
            .collect();
        let mut found: Vec<Found> = counts
            .into_iter()
            .filter(|(doc, _)| accept(*doc))
            .map(|(doc, (tf, at))| {
                let (start, end) = self.span(doc);
                let length = (end - start) as f64;
                let score = tf
                    .iter()
                    .zip(&frequency)
                    .map(|(&tf, &df)| {
                        let idf = ((total - df + 0.5) / (df + 0.5) + 1.0).ln();
                        idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * length / average))
                    })
                    .sum();
                Found { doc, score, at }
            })
            .collect();
        // Best first; equal scores newest first (the later message is the
        // likelier one to matter now).
        found.sort_by(|a, b| b.score.total_cmp(&a.score).then(b.doc.cmp(&a.doc)));
        found.truncate(limit);
        found
    }
}

/// An index kept up to date with a session that only grows: each
/// `catch_up` adds the messages since the last one (O(new)), and starts
/// over when the session is no longer the one it indexed (the id at its
/// last position changed: a followed transcript was read again).
#[derive(Debug, Default)]
pub struct LiveIndex {
    index: Index,
    last_id: Option<String>,
}

impl LiveIndex {
    pub fn catch_up(&mut self, messages: &[Arc<Message>]) -> &Index {
        let held = self.index.len();
        let same = held == 0
            || (held <= messages.len()
                && self.last_id.as_deref() == Some(messages[held - 1].id.as_str()));
        if !same {
            *self = LiveIndex::default();
        }
        for message in &messages[self.index.len()..] {
            self.index.push(message);
        }
        self.last_id = messages.last().map(|m| m.id.clone());
        &self.index
    }
}

/// What of a message is searched: its text, thinking, each tool call's
/// name and arguments, a tool result's tool name and output.
pub fn searchable_text(message: &Message) -> String {
    // A tool's output follows its tool's name, as a reader expects it
    // ("Bash: …"), so a snippet never ends in the name.
    let mut out = match &message.body {
        MessageBody::Tool {
            tool_name: Some(name),
            ..
        } if !name.is_empty() => format!("{name}: {}", message.text()),
        _ => String::from(message.text()),
    };
    let mut add = |s: &str| {
        if !s.is_empty() {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(s);
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
    out
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

/// For each message (by index, ids in session order), the compaction that
/// first summarized or pruned it, by index into `records`: a checkpoint
/// covers every message up to its last summarized one not covered before;
/// an incremental summary its run; a prune its results.
pub fn summarized_by(records: &[CompactionRecord], ids: &[&str]) -> Vec<Option<usize>> {
    let position: HashMap<&str, usize> = ids.iter().enumerate().map(|(i, id)| (*id, i)).collect();
    let mut by = vec![None; ids.len()];
    let mut mark = |range: std::ops::RangeInclusive<usize>, record: usize| {
        for slot in &mut by[range] {
            slot.get_or_insert(record);
        }
    };
    for (r, record) in records.iter().enumerate() {
        if let Some(last) = record
            .last_summarized_message_id
            .as_deref()
            .and_then(|id| position.get(id))
        {
            mark(0..=*last, r);
        } else if let Some(kept) = record
            .first_kept_message_id
            .as_deref()
            .and_then(|id| position.get(id))
            .filter(|_| record.replaces.is_none() && record.pruned_message_ids.is_empty())
        {
            if *kept > 0 {
                mark(0..=kept - 1, r);
            }
        }
        if let Some(range) = &record.replaces {
            if let (Some(from), Some(to)) = (
                position.get(range.from_message_id.as_str()),
                position.get(range.to_message_id.as_str()),
            ) {
                mark(*from..=*to, r);
            }
        }
        for id in &record.pruned_message_ids {
            if let Some(i) = position.get(id.as_str()) {
                mark(*i..=*i, r);
            }
        }
    }
    by
}

#[cfg(test)]
mod tests;
