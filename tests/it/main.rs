//! One integration binary: every suite talks to the real `compactd` binary
//! over stdio (see `support`).

mod support;

mod cli;
mod compaction;
mod conversation;
mod engine;
mod import;
mod lifecycle;
mod persistence;
mod schemas;
mod tokens;
mod transcripts;
