//! One integration binary: every suite talks to the real `compactd` binary
//! over stdio (see `support`), but `architecture`, which reads `src/`.

mod fixture;
mod support;

mod agents;
mod architecture;
mod cli;
mod compaction;
mod conversation;
mod crash;
mod disk_full;
mod docs;
mod engine;
mod files;
mod follow;
mod front_ends;
mod gemini;
mod import;
mod lifecycle;
mod llm;
mod locking;
mod mcp;
mod opencode;
mod overhead;
mod parts;
mod parts_images;
mod persistence;
mod progress;
mod protocol_doc;
mod recall;
mod residency;
mod robustness;
mod schemas;
mod secrets;
mod setup;
mod shared;
mod slow_readers;
mod statusline;
mod store;
mod summarizers;
mod terminal;
mod tokens;
mod transcripts;
