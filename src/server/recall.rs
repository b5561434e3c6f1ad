//! `conversation/search` off the state owner. Each session searched has a
//! `Feed`, held here on the state owner, and a `LiveIndex` shared with the
//! blocking threads that search. A search asks the feed what the session
//! gained since the last one (O(new): the new messages shared, not the
//! session copied), queues that delta and starts a blocking thread, which
//! applies every delta queued, in order, and searches; appends never touch
//! the index. The index is built by the first search of a session. The
//! state owner only ever waits for the queue, never for a search: a
//! search holds the index, not the queue. An index goes when its session
//! is no longer open (closed, unfollowed, evicted; looked at by each
//! search), and starts over when the session it describes was replaced by
//! another conversation (the feed tells).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::jobs::{JobSender, Pending};
use super::rpc::{Reply, RpcError, RpcResult};
use super::sessions::Sessions;
use crate::protocol::{methods, SearchHit, SearchParams, SearchResult};
use crate::recall::{Candidate, Delta, Feed, LiveIndex, Query};

/// Hits given when the request names no limit, and the most given.
const DEFAULT_LIMIT: usize = 20;
const MAX_LIMIT: usize = 200;
/// Snippet width, in characters.
const SNIPPET: usize = 240;

#[derive(Default)]
pub(crate) struct Recall {
    indexes: HashMap<String, Indexed>,
}

/// One session's index: the feed on the state owner, the rest shared.
#[derive(Default)]
struct Indexed {
    feed: Feed,
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    /// Deltas not applied yet, oldest first.
    queued: Mutex<Vec<Delta>>,
    index: Mutex<LiveIndex>,
}

/// What the blocking thread needs of one session.
struct Snapshot {
    session_id: String,
    shared: Arc<Shared>,
    /// The session's messages when the search was asked for: later ones
    /// are not searched.
    count: usize,
}

impl Recall {
    /// Checks the request, hands the sessions' news to their indexes and
    /// starts the search; the blocking thread answers.
    pub fn start(
        &mut self,
        sessions: &Sessions,
        results: &JobSender,
        pending: Pending<methods::Search>,
        params: SearchParams,
    ) -> Reply<SearchResult> {
        let query = match Query::parse(&params.query) {
            Ok(query) => query,
            Err(e) => return Reply::Now(Err(RpcError::invalid_params(format!("query: {e}")))),
        };
        self.indexes.retain(|id, _| sessions.contains(id));
        let ids = match &params.session_id {
            Some(session_id) => vec![session_id.clone()],
            None => sessions.ids(),
        };
        let mut snapshots = Vec::new();
        for session_id in ids {
            let open = match sessions.get(&session_id) {
                Ok(open) => open,
                Err(e) => return Reply::Now(Err(e)),
            };
            let indexed = self.indexes.entry(session_id.clone()).or_default();
            if let Some(delta) = indexed.feed.delta(&open.session) {
                match indexed.shared.queued.lock() {
                    Ok(mut queued) => queued.push(delta),
                    Err(e) => return Reply::Now(Err(poisoned(e))),
                }
            }
            snapshots.push(Snapshot {
                session_id,
                shared: indexed.shared.clone(),
                count: open.session.message_count(),
            });
        }
        let results = results.clone();
        tokio::task::spawn_blocking(move || {
            let outcome = std::panic::catch_unwind(|| search(&snapshots, &query, &params))
                .unwrap_or_else(|_| Err(RpcError::internal("the search failed (see the log)")));
            pending.send(&results, outcome);
        });
        Reply::Later
    }
}

fn poisoned<T>(_: T) -> RpcError {
    RpcError::internal("a search index was poisoned")
}

fn search(snapshots: &[Snapshot], query: &Query, params: &SearchParams) -> RpcResult<SearchResult> {
    let limit = params.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
    let mut hits = Vec::new();
    let mut searched = 0;
    for snapshot in snapshots {
        let mut index = snapshot.shared.index.lock().map_err(poisoned)?;
        let queued = std::mem::take(&mut *snapshot.shared.queued.lock().map_err(poisoned)?);
        for delta in queued {
            index.apply(delta);
        }
        let accept = |candidate: Candidate| {
            (params.compacted_only != Some(true) || candidate.summarized.is_some())
                && params
                    .roles
                    .as_ref()
                    .is_none_or(|roles| roles.contains(&candidate.role))
        };
        searched += index.len().min(snapshot.count);
        for hit in index.search(query, snapshot.count, accept, limit, SNIPPET) {
            hits.push(SearchHit {
                session_id: snapshot.session_id.clone(),
                message_id: hit.message.id.clone(),
                role: hit.message.role(),
                snippet: hit.snippet,
                score: (hit.score * 1000.0).round() / 1000.0,
                compaction_id: hit.summarized.map(|(_, id)| id.to_string()),
            });
        }
    }
    hits.sort_by(|a, b| b.score.total_cmp(&a.score));
    hits.truncate(limit);
    Ok(SearchResult { hits, searched })
}
