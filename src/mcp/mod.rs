//! `compactd mcp`: recall as MCP tools, over stdio, for any agent that
//! speaks MCP (built on `rmcp`, the official Rust SDK). It serves one
//! session (`source`): by default the session of the agent that launched
//! it (the one of its directory written since it started), followed as the
//! transcript grows; or compactd's own session by id. Each call first
//! reads what the session gained since the last one, then answers from the
//! recall index (`recall`), which it keeps in step the same way.

mod render;
mod source;

use std::sync::{Arc, Mutex};

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{Implementation, ServerCapabilities, ServerConfig};
use rmcp::{schemars, tool, tool_handler, tool_router, ServerHandler};
use serde::Deserialize;

use crate::recall::{self, LiveIndex, Query};
use crate::session::Session;
pub use source::{Source, SourceError};

/// What the model is told about the server.
const INSTRUCTIONS: &str = "compactd keeps this coding session's whole history verbatim, including everything a compaction summarized away. When a detail is missing after a compaction (an exact error, a file's content, a command, a decision), search_history finds the messages that held it and read_messages returns them word for word.";
/// Hits listed when the call names no limit, and the most listed.
const DEFAULT_HITS: usize = 10;
const MAX_HITS: usize = 50;
/// Snippet width, in characters.
const SNIPPET: usize = 240;

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct SearchArgs {
    /// Words and "quoted phrases" that must all occur (case ignored; file
    /// names, identifiers and error codes are found as written).
    pub query: String,
    /// The most hits (default 10, at most 50).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Only messages a compaction summarized away.
    #[serde(default)]
    pub compacted_only: bool,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ReadArgs {
    /// Message ids (from search_history).
    #[serde(default)]
    pub ids: Vec<String>,
    /// Or a range: the first message id …
    #[serde(default)]
    pub from: Option<String>,
    /// … and the last (both included).
    #[serde(default)]
    pub to: Option<String>,
}

/// The MCP server: one session and its recall index.
#[derive(Clone)]
pub struct History {
    source: Arc<Mutex<Source>>,
    index: Arc<Mutex<LiveIndex>>,
    tool_router: ToolRouter<History>,
}

impl History {
    pub fn new(source: Source) -> History {
        History {
            source: Arc::new(Mutex::new(source)),
            index: Arc::new(Mutex::new(LiveIndex::default())),
            tool_router: Self::tool_router(),
        }
    }

    /// `f` on the session brought up to date; an error as the tool's text.
    fn with_session(&self, f: impl FnOnce(&Session, &mut LiveIndex) -> String) -> String {
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

#[tool_router]
impl History {
    #[tool(
        description = "Search this session's whole history, including what compactions summarized away: user requests, assistant replies, tool calls and their output. Returns message ids with snippets, best first; read the full messages with read_messages."
    )]
    fn search_history(&self, Parameters(args): Parameters<SearchArgs>) -> String {
        let query = match Query::parse(&args.query) {
            Ok(query) => query,
            Err(e) => return format!("compactd: query: {e}"),
        };
        let limit = args.limit.unwrap_or(DEFAULT_HITS).clamp(1, MAX_HITS);
        self.with_session(|session, live| {
            let messages: Vec<_> = session.shared_messages().cloned().collect();
            let index = live.catch_up(&messages);
            let ids: Vec<&str> = messages.iter().map(|m| m.id.as_str()).collect();
            let summarized = recall::summarized_by(session.compactions(), &ids);
            let found = index.search(
                &query,
                |doc| !args.compacted_only || summarized[doc].is_some(),
                limit,
            );
            let hits: Vec<render::Hit> = found
                .iter()
                .map(|f| {
                    let message = &messages[f.doc];
                    render::Hit {
                        id: &message.id,
                        role: message.role().as_str(),
                        compacted: summarized[f.doc].is_some(),
                        snippet: recall::snippet(&recall::searchable_text(message), f.at, SNIPPET),
                    }
                })
                .collect();
            render::hits(&args.query, &hits, messages.len())
        })
    }

    #[tool(
        description = "Read messages of this session word for word, by the ids search_history gave (or a range from/to), including those a compaction summarized away."
    )]
    fn read_messages(&self, Parameters(args): Parameters<ReadArgs>) -> String {
        self.with_session(|session, _| {
            let positions = match render::positions(
                session,
                &args.ids,
                args.from.as_deref(),
                args.to.as_deref(),
            ) {
                Ok(positions) => positions,
                Err(e) => return format!("compactd: {e}"),
            };
            let messages: Vec<_> = session.all_messages().collect();
            let ids: Vec<&str> = messages.iter().map(|m| m.id.as_str()).collect();
            let summarized = recall::summarized_by(session.compactions(), &ids);
            render::messages(&positions, &messages, &summarized)
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
