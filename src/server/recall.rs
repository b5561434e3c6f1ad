//! `conversation/search` off the state owner. Each session's recall index
//! is built the first time it is searched and brought up to date by each
//! search (the messages appended since, O(new)); appends never touch it.
//! The state owner only takes a snapshot (the shared messages and the
//! compaction records); indexing and searching run on a blocking thread,
//! which answers the request itself. An index goes when its session is no
//! longer open (closed, unfollowed, evicted; looked at by each search), and
//! is rebuilt when the session it describes changed under it (a followed
//! transcript read again from its start).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use lsp_server::RequestId;

use super::jobs::{JobResult, JobSender};
use super::rpc::{Reply, RpcError, RpcResult};
use super::sessions::Sessions;
use crate::compaction::record::CompactionRecord;
use crate::conversation::Message;
use crate::protocol::{SearchHit, SearchParams, SearchResult};
use crate::recall::{self, LiveIndex, Query};

/// Hits given when the request names no limit, and the most given.
const DEFAULT_LIMIT: usize = 20;
const MAX_LIMIT: usize = 200;
/// Snippet width, in characters.
const SNIPPET: usize = 240;

#[derive(Default)]
pub(crate) struct Recall {
    indexes: HashMap<String, Arc<Mutex<LiveIndex>>>,
}

/// What the blocking thread needs of one session.
struct Snapshot {
    session_id: String,
    indexed: Arc<Mutex<LiveIndex>>,
    messages: Vec<Arc<Message>>,
    records: Vec<CompactionRecord>,
}

impl Recall {
    /// Checks the request, snapshots the sessions and starts the search;
    /// the blocking thread answers.
    pub fn start(
        &mut self,
        sessions: &Sessions,
        results: &JobSender,
        id: RequestId,
        params: SearchParams,
    ) -> Reply {
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
            let indexed = self.indexes.entry(session_id.clone()).or_default().clone();
            snapshots.push(Snapshot {
                session_id,
                indexed,
                messages: open.session.shared_messages().cloned().collect(),
                records: open.session.compactions().to_vec(),
            });
        }
        let results = results.clone();
        tokio::task::spawn_blocking(move || {
            let outcome = std::panic::catch_unwind(|| search(&snapshots, &query, &params))
                .unwrap_or_else(|_| Err(RpcError::internal("the search failed (see the log)")))
                .map(|r| serde_json::to_value(r).expect("results serialize"));
            let _ = results.send(JobResult::Answer(id, outcome));
        });
        Reply::Later
    }
}

fn search(snapshots: &[Snapshot], query: &Query, params: &SearchParams) -> RpcResult<SearchResult> {
    let limit = params.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
    let mut hits = Vec::new();
    let mut searched = 0;
    for snapshot in snapshots {
        let mut indexed = snapshot
            .indexed
            .lock()
            .map_err(|_| RpcError::internal("a search index was poisoned"))?;
        let index = indexed.catch_up(&snapshot.messages);
        let ids: Vec<&str> = snapshot.messages.iter().map(|m| m.id.as_str()).collect();
        let summarized = recall::summarized_by(&snapshot.records, &ids);
        let accept = |doc: usize| {
            let message = &snapshot.messages[doc];
            (params.compacted_only != Some(true) || summarized[doc].is_some())
                && params
                    .roles
                    .as_ref()
                    .is_none_or(|roles| roles.contains(&message.role()))
        };
        searched += index.len();
        for found in index.search(query, accept, limit) {
            let message = &snapshot.messages[found.doc];
            let text = recall::searchable_text(message);
            hits.push(SearchHit {
                session_id: snapshot.session_id.clone(),
                message_id: message.id.clone(),
                role: message.role(),
                snippet: recall::snippet(&text, found.at, SNIPPET),
                score: (found.score * 1000.0).round() / 1000.0,
                compaction_id: summarized[found.doc].map(|r| snapshot.records[r].id.clone()),
            });
        }
    }
    hits.sort_by(|a, b| b.score.total_cmp(&a.score));
    hits.truncate(limit);
    Ok(SearchResult { hits, searched })
}
