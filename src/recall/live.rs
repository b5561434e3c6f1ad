//! An index kept in step with a session, each step costing what changed,
//! not the session: the session's owner holds a `Feed`, which tells what
//! the session gained since the last step as a `Delta` (the new messages,
//! shared, never copied; the messages amended since; the compactions
//! added); a `LiveIndex` applies deltas, in order, wherever it lives (the
//! server searches on a blocking thread, `compactd mcp` in its one). A
//! `LiveIndex` keeps what every search needs besides the text: the
//! messages (shared with the session), the compaction that first
//! summarized each, the compactions' ids. Searching a session that did not
//! change rebuilds nothing.

use std::sync::Arc;

use super::{snippet, summarized_by, Index, Query};
use crate::conversation::{Message, Role};
use crate::session::Session;

/// The newest messages a `Feed` looks at again for amendments: an agent
/// amends only the response it is still writing (its later lines, its
/// usage), never one this far back.
pub(super) const TAIL: usize = 256;

/// What the owner of a session has handed to its index.
#[derive(Debug, Default)]
pub struct Feed {
    /// Messages handed.
    handed: usize,
    /// The session's first message when last handed: another one means
    /// another `Session` (re-read from its log, brought back after it was
    /// evicted, a followed transcript read again).
    first: Option<Arc<Message>>,
    /// The newest messages handed, to see one of them amended (the session
    /// holds another `Arc` for it then).
    tail: Vec<Arc<Message>>,
    records: usize,
    /// A compaction names a message not (yet) in the session.
    unresolved: bool,
}

/// What a session gained since the last `Delta`.
#[derive(Debug)]
pub struct Delta {
    /// The messages from this position on are `messages`.
    pub(super) shared_from: usize,
    pub(super) messages: Vec<Arc<Message>>,
    /// The text of the messages from this position on is indexed again
    /// (at or after `shared_from`: a session read again from its log holds
    /// the same messages, but amended ones may be among its newest).
    pub(super) text_from: usize,
    /// The compactions from this one on have these ids.
    pub(super) records_from: usize,
    pub(super) record_ids: Vec<String>,
    /// Each message's first compaction, when more than the new messages'
    /// changed (a new compaction, another session); else the new messages
    /// have none.
    pub(super) summarized: Option<Vec<Option<usize>>>,
}

/// How the session stands to what was handed.
#[derive(PartialEq)]
enum Since {
    /// Nothing handed yet, or another conversation: everything anew.
    Anew,
    /// The same `Session`, grown or amended.
    Same,
    /// Another `Session` holding the same messages and more.
    Reread,
}

impl Feed {
    /// What `session` gained since the last delta; `None` when nothing.
    /// Costs the new messages and the last few, not the session.
    pub fn delta(&mut self, session: &Session) -> Option<Delta> {
        let count = session.message_count();
        let records = session.compactions();
        let since = self.since(session, count, records.len());
        if since == Since::Anew {
            *self = Feed::default();
        }
        let tail_start = self.handed - self.tail.len();
        let text_from = match since {
            Since::Anew => 0,
            Since::Reread => tail_start,
            Since::Same => session
                .shared_messages()
                .skip(tail_start)
                .zip(&self.tail)
                .position(|(now, held)| !Arc::ptr_eq(now, held))
                .map_or(self.handed, |i| tail_start + i),
        };
        let shared_from = if since == Since::Reread { 0 } else { text_from };
        let records_from = if since == Since::Same {
            self.records
        } else {
            0
        };
        if since == Since::Same && text_from == count && records_from == records.len() {
            return None;
        }
        let summarized = (since != Since::Same
            || records_from < records.len()
            || (self.unresolved && text_from < count))
            .then(|| {
                let (by, unresolved) = summarized_by(records, count, |id| session.position(id));
                self.unresolved = unresolved;
                by
            });
        self.handed = count;
        self.first = session.shared_messages().next().cloned();
        self.tail = session
            .shared_messages()
            .skip(count.saturating_sub(TAIL))
            .cloned()
            .collect();
        self.records = records.len();
        Some(Delta {
            shared_from,
            messages: session
                .shared_messages()
                .skip(shared_from)
                .cloned()
                .collect(),
            text_from,
            records_from,
            record_ids: records[records_from..]
                .iter()
                .map(|r| r.id.clone())
                .collect(),
            summarized,
        })
    }

    fn since(&self, session: &Session, count: usize, records: usize) -> Since {
        let (Some(first), Some(last)) = (&self.first, self.tail.last()) else {
            return Since::Anew;
        };
        if count < self.handed || records < self.records {
            return Since::Anew;
        }
        let now = session.shared_messages().next();
        if now.is_some_and(|now| Arc::ptr_eq(now, first)) {
            return Since::Same;
        }
        // Another `Session`: the same conversation when it begins and
        // goes on as the one handed did.
        let same_first = now.is_some_and(|now| now.id == first.id);
        let same_last = session
            .shared_messages()
            .nth(self.handed - 1)
            .is_some_and(|m| m.id == last.id);
        match same_first && same_last {
            true => Since::Reread,
            false => Since::Anew,
        }
    }
}

/// A session's index and what its searches need besides the text.
#[derive(Debug, Default)]
pub struct LiveIndex {
    index: Index,
    messages: Vec<Arc<Message>>,
    /// Each message's role, side by side: a search filters thousands of
    /// messages by role, and reading each one's would cost a cache miss.
    roles: Vec<Role>,
    summarized: Vec<Option<usize>>,
    record_ids: Vec<String>,
}

/// A message that holds every term, for a search's filter to take or leave.
#[derive(Debug, Clone, Copy)]
pub struct Candidate<'a> {
    pub role: Role,
    /// The compaction that first summarized (or pruned) it.
    pub summarized: Option<usize>,
    /// The message itself (reading it costs a cache miss: only when the
    /// role and the compaction do not decide).
    pub message: &'a Message,
}

/// A message found, with what a front end shows of it.
#[derive(Debug)]
pub struct Hit<'a> {
    pub message: &'a Message,
    pub score: f64,
    /// The compaction that first summarized (or pruned) it: its index and
    /// id.
    pub summarized: Option<(usize, &'a str)>,
    /// Text around the first term's first occurrence.
    pub snippet: String,
}

impl LiveIndex {
    /// Applies the next delta of the session's `Feed`.
    pub fn apply(&mut self, delta: Delta) {
        self.messages.truncate(delta.shared_from);
        self.roles.truncate(delta.shared_from);
        self.roles.extend(delta.messages.iter().map(|m| m.role()));
        self.messages.extend(delta.messages);
        let text_from = delta.text_from.min(self.index.len());
        if text_from == 0 {
            self.index = Index::build(&self.messages);
        } else {
            self.index.truncate(text_from);
            for message in &self.messages[text_from..] {
                self.index.push(message);
            }
        }
        self.record_ids.truncate(delta.records_from);
        self.record_ids.extend(delta.record_ids);
        match delta.summarized {
            Some(by) => self.summarized = by,
            None => self.summarized.resize(self.messages.len(), None),
        }
    }

    /// Messages indexed.
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// Bytes of text held.
    pub fn bytes(&self) -> usize {
        self.index.bytes()
    }

    /// The messages among the first `count` holding every term of `query`
    /// that `accept` takes, best first, at most `limit`, each with a
    /// snippet of about `width` characters.
    pub fn search(
        &self,
        query: &Query,
        count: usize,
        accept: impl Fn(Candidate) -> bool,
        limit: usize,
        width: usize,
    ) -> Vec<Hit<'_>> {
        let accept = |doc: usize| {
            doc < count
                && accept(Candidate {
                    role: self.roles[doc],
                    summarized: self.summarized[doc],
                    message: &self.messages[doc],
                })
        };
        self.index
            .search(query, accept, limit)
            .into_iter()
            .map(|found| {
                let message = self.messages[found.doc].as_ref();
                let text = super::searchable_text(message);
                Hit {
                    message,
                    score: found.score,
                    summarized: self.summarized[found.doc]
                        .map(|r| (r, self.record_ids[r].as_str())),
                    snippet: snippet(&text, found.at, width),
                }
            })
            .collect()
    }
}

/// A `Feed` and its `LiveIndex` together, for an owner that searches in
/// the thread that holds the session (`compactd mcp`).
#[derive(Debug, Default)]
pub struct SessionIndex {
    feed: Feed,
    live: LiveIndex,
}

impl SessionIndex {
    /// The index brought up to date with `session`.
    pub fn catch_up(&mut self, session: &Session) -> &LiveIndex {
        if let Some(delta) = self.feed.delta(session) {
            self.live.apply(delta);
        }
        &self.live
    }
}
