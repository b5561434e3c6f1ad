//! `compactd mcp`: recall as MCP tools, over stdio, for any agent that
//! speaks MCP (built on `rmcp`, the official Rust SDK). It serves one
//! session (`source`): by default the session of the agent that launched
//! it (the one of its directory written since it started), followed as the
//! transcript grows; or compactd's own session by id. Each call first
//! reads what the session gained since the last one, then answers from the
//! recall index (`recall`), which it keeps in step the same way. Its
//! stdin and stdout go through `stdio` (with `framing` and `gate`), which
//! answers what `rmcp` would leave unanswered: every request gets exactly
//! one answer.

pub mod framing;
mod gate;
mod render;
mod source;
mod stdio;

use std::sync::{Arc, Mutex};

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{Implementation, ServerCapabilities, ServerConfig};
use rmcp::{schemars, tool, tool_handler, tool_router, ServerHandler};
use serde::Deserialize;

use crate::conversation::{Message, MessageBody, Role};
use crate::recall::{self, Query, Selection, SessionIndex};
use crate::session::Session;
pub use source::{Source, SourceError};
pub use stdio::{serve, serve_stdio};

/// What the model is told about the server.
const INSTRUCTIONS: &str = "compactd keeps this coding session's whole history verbatim, including everything a compaction summarized away. When a detail is missing after a compaction (an exact error, a file's content, a command, a decision), search_history finds the messages that held it and read_messages returns them word for word.";
/// Hits listed when the call names no limit, and the most listed.
const DEFAULT_HITS: usize = 10;
const MAX_HITS: usize = 50;
/// Snippet width, in characters.
const SNIPPET: usize = 240;
/// This server's tools, as `#[tool_router]` names them.
const TOOLS: [&str; 4] = [
    "search_history",
    "read_messages",
    "list_files",
    "last_summary",
];

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct SearchArgs {
    /// Words and "quoted phrases" that must all occur (case ignored; file
    /// names, identifiers and error codes are found as written).
    pub query: String,
    /// The most hits (default 10, at most 50).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Only messages a compaction summarized away (default false).
    #[serde(default)]
    pub compacted_only: Option<bool>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ReadArgs {
    /// Message ids (from search_history).
    #[serde(default)]
    pub ids: Option<Vec<String>>,
    /// Or a range: the first message id …
    #[serde(default)]
    pub from: Option<String>,
    /// … and the last (both included).
    #[serde(default)]
    pub to: Option<String>,
    /// Where to start in the first message, in characters: what an answer
    /// cut short gave to read on.
    #[serde(default)]
    pub offset: Option<usize>,
}

/// The MCP server: one session and its recall index.
#[derive(Clone)]
pub struct History {
    source: Arc<Mutex<Source>>,
    index: Arc<Mutex<SessionIndex>>,
    tool_router: ToolRouter<History>,
}

impl History {
    pub fn new(source: Source) -> History {
        History {
            source: Arc::new(Mutex::new(source)),
            index: Arc::new(Mutex::new(SessionIndex::default())),
            tool_router: Self::tool_router(),
        }
    }

    /// `f` on the session brought up to date; an error as the tool's text.
    fn with_session(&self, f: impl FnOnce(&Session, &mut SessionIndex) -> String) -> String {
        let mut source = match self.source.lock() {
            Ok(source) => source,
            Err(_) => {
                return "compactd: the session is unavailable (an earlier call failed)".into()
            }
        };
        match source.refresh() {
            Ok(session) => {
                let mut index = self.index.lock().unwrap_or_else(|e| e.into_inner());
                f(session, &mut index)
            }
            Err(e) => format!("compactd: {e}"),
        }
    }
}

/// Whether `name` is one of this server's tools as an agent calls it:
/// bare, or after the server's name (`mcp__compactd__search_history`,
/// opencode's `compactd_search_history`).
fn is_recall_tool(name: &str) -> bool {
    TOOLS.iter().any(|tool| {
        name.strip_suffix(tool)
            .is_some_and(|server| server.is_empty() || server.ends_with('_'))
    })
}

/// Whether `message` holds every term of `query` only through this
/// server's own tools: a call of one (a search would find the very call
/// that asks it, which the agent writes to its transcript first) or what
/// one answered (copies of messages that are found themselves). They are
/// about the history, not of it: a search never lists them.
fn only_through_recall(message: &Message, query: &Query) -> bool {
    match &message.body {
        MessageBody::Tool {
            tool_name: Some(name),
            ..
        } => is_recall_tool(name),
        MessageBody::Assistant { tool_calls, .. }
            if tool_calls.iter().any(|call| is_recall_tool(&call.name)) =>
        {
            let mut rest = message.clone();
            if let MessageBody::Assistant { tool_calls, .. } = &mut rest.body {
                tool_calls.retain(|call| !is_recall_tool(&call.name));
            }
            let text = recall::searchable_text(&rest).to_ascii_lowercase();
            !query
                .terms()
                .iter()
                .all(|term| text.contains(term.as_str()))
        }
        _ => false,
    }
}

#[tool_router]
impl History {
    #[tool(
        description = "Search this session's whole history, including what compactions summarized away: user requests, assistant replies, tool calls and their output (not calls of these recall tools, nor their answers). Returns message ids with snippets, best first; read the full messages with read_messages."
    )]
    fn search_history(&self, Parameters(args): Parameters<SearchArgs>) -> String {
        let query = match Query::parse(&args.query) {
            Ok(query) => query,
            Err(e) => return format!("compactd: query: {e}"),
        };
        let limit = args.limit.unwrap_or(DEFAULT_HITS).clamp(1, MAX_HITS);
        self.with_session(|session, indexed| {
            let index = indexed.catch_up(session);
            let count = session.message_count();
            let compacted_only = args.compacted_only == Some(true);
            let found = index.search(
                &query,
                count,
                |candidate| {
                    // Only a tool result or an assistant message can be
                    // about recall: the others' bodies are not read.
                    let about_recall = matches!(candidate.role, Role::Tool | Role::Assistant)
                        && only_through_recall(candidate.message, &query);
                    (!compacted_only || candidate.summarized.is_some()) && !about_recall
                },
                limit,
                SNIPPET,
            );
            let hits: Vec<render::Hit> = found
                .into_iter()
                .map(|hit| render::Hit {
                    id: &hit.message.id,
                    role: hit.message.role().as_str(),
                    compacted: hit.summarized.is_some(),
                    snippet: hit.snippet,
                })
                .collect();
            render::hits(&args.query, &hits, count)
        })
    }

    #[tool(
        description = "Read messages of this session word for word, by the ids search_history gave (or a range from/to), including those a compaction summarized away. An answer holds at most 60,000 characters: a longer one stops there, even inside a message, and ends saying how to read on (`offset` continues the message cut short)."
    )]
    fn read_messages(&self, Parameters(args): Parameters<ReadArgs>) -> String {
        self.with_session(|session, _| {
            let ids = args.ids.as_deref().unwrap_or_default();
            let selection = match (ids.is_empty(), args.from.as_deref(), args.to.as_deref()) {
                (false, None, None) => Selection::Ids(ids),
                (true, Some(first), Some(last)) => Selection::Range { first, last },
                _ => return "compactd: give `ids`, or `from` and `to`".into(),
            };
            match recall::select(session, selection) {
                Ok(selected) => render::messages(&selected, args.offset.unwrap_or(0)),
                Err(e) => format!("compactd: {}", render::refused(&e)),
            }
        })
    }

    #[tool(
        description = "The files this session read and modified (from its tool calls): each with its last operation, how often it was read and changed, and whether its content on disk is still what was last read."
    )]
    fn list_files(&self) -> String {
        self.with_session(|session, _| render::files(session))
    }

    #[tool(
        description = "The latest compaction of this session: its summary, when and how it was made, and what it left out."
    )]
    fn last_summary(&self) -> String {
        self.with_session(|session, _| render::last_summary(session))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for History {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("compactd", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::ToolCall;

    fn call(name: &str, query: &str) -> ToolCall {
        ToolCall {
            id: "c".into(),
            name: name.into(),
            arguments: serde_json::json!({ "query": query }),
        }
    }

    #[test]
    fn a_search_does_not_find_the_recall_tools_own_calls_and_answers() {
        let query = Query::parse("ZQX-DEPLOY-4417").unwrap();
        for name in [
            "mcp__compactd__search_history",
            "compactd_search_history",
            "search_history",
        ] {
            let asking = Message::assistant("a", "Searching.", vec![call(name, "ZQX-DEPLOY-4417")]);
            assert!(only_through_recall(&asking, &query), "{name}");
        }
        // Its own text, or another tool's call, is still found.
        let said = Message::assistant(
            "a",
            "The code was ZQX-DEPLOY-4417.",
            vec![call("mcp__compactd__search_history", "ZQX-DEPLOY-4417")],
        );
        assert!(!only_through_recall(&said, &query));
        let bash = Message::assistant("a", "", vec![call("Bash", "echo ZQX-DEPLOY-4417")]);
        assert!(!only_through_recall(&bash, &query));
        assert!(!only_through_recall(
            &Message::assistant(
                "a",
                "",
                vec![call("mcp__other__search_histories", "ZQX-DEPLOY-4417")]
            ),
            &query
        ));
        // An answer of a recall tool copies other messages; a Bash output
        // is the history itself.
        let mut answer = Message::tool_result("t", "c", "[m1] tool: Bash: ZQX-DEPLOY-4417", false);
        if let MessageBody::Tool { tool_name, .. } = &mut answer.body {
            *tool_name = Some("mcp__compactd__read_messages".into());
        }
        assert!(only_through_recall(&answer, &query));
        if let MessageBody::Tool { tool_name, .. } = &mut answer.body {
            *tool_name = Some("Bash".into());
        }
        assert!(!only_through_recall(&answer, &query));
    }
}
