//! compactd: keeps LLM coding conversations inside their context window.
//!
//! The core (`conversation`, `tokens`, `compaction`, `session`, the file
//! ledger in `files`) is pure; I/O lives at the edges (`transport`,
//! `store`, `summarize`, `import`, `agents`, `files::watch`, `files::disk`). The
//! `engine` holds every operation and policy on a session; the two front
//! ends, `server` (JSON-RPC, wire types in `protocol`) and `cli`, call it.
//! See `docs/ARCHITECTURE.md`.

pub mod agents;
pub mod cli;
pub(crate) mod compaction;
pub mod config;
pub mod conversation;
pub mod engine;
pub mod files;
pub mod import;
pub mod mcp;
pub mod protocol;
pub(crate) mod provider_error;
pub mod recall;
pub(crate) mod redact;
pub(crate) mod regular_file;
pub mod server;
pub mod session;
pub mod store;
pub mod summarize;
pub mod tokens;
pub(crate) mod transcript;
pub mod transport;

pub use server::{serve, ServeOptions};
