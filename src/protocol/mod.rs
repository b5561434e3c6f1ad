//! Every wire type: params, results and notifications, the method table
//! (`methods`) and compactd's own error codes (`error_codes`). Types the
//! core defines and the wire carries (messages, strategies, triggers, the
//! configuration, file operations, transcript formats) are re-exported
//! here, so the front ends take every wire type from this module. Serde +
//! schemars, no logic beyond building results from core values;
//! `schemas/` is generated from these and committed.

pub use crate::agents::Supports;
pub use crate::compaction::trigger::TriggerKind;
pub use crate::compaction::{Strategy, Trigger};
pub use crate::config::{Config, FollowMode, SummarizerConfig, SummarizerProvider};
pub use crate::conversation::{Content, Message, MessageBody, Part, Role, ToolCall, Usage};
pub use crate::files::watch::WatchMode;
pub use crate::files::{FileToolRule, ToolOperation};
pub use crate::import::Format;
pub use crate::store::{Durability, MirroredSession};

mod compaction;
pub(crate) mod error_codes;
mod files;
mod follow;
mod import;
mod lifecycle;
mod lsp;
mod meter;
pub(crate) mod methods;
mod recall;
mod schemas;
mod session;
mod shared;

pub use compaction::*;
pub use files::*;
pub use follow::*;
pub use import::*;
pub use lifecycle::*;
pub use lsp::*;
pub use meter::*;
pub use recall::*;
pub use schemas::schemas;
pub use session::*;
pub use shared::*;
