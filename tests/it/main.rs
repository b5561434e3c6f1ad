//! One integration binary: every suite talks to the real `compactd` binary
//! over stdio (see `support`).

mod fixture;
mod support;

mod cli;
mod compaction;
mod conversation;
mod crash;
mod engine;
mod files;
mod import;
mod lifecycle;
mod llm;
mod locking;
mod persistence;
mod schemas;
mod store;
mod summarizers;
mod tokens;
mod transcripts;
