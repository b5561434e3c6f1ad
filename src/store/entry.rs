//! What a session log holds, line by line: the header, messages with their
//! token counts, settings changes, compactions, pins and file events.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::compaction::CompactionRecord;
use crate::conversation::Message;
use crate::files::FileEvent;
use crate::tokens::Encoding;

pub const LOG_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum LogEntry {
    Header(SessionHeader),
    /// Session settings changed (on reopen, or by setAutoCompact).
    Settings(SessionSettings),
    Message {
        message: Message,
        /// The message's token count when it was appended, so resuming a
        /// session does not tokenize it again. Absent in older logs and
        /// imports; a count for another encoding is ignored.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tokens: Option<TokenCount>,
    },
    Compaction(Box<CompactionRecord>),
    /// What the agent added to its requests after the message before
    /// this entry, in no message (`transcript::Event::AttachedMidway`),
    /// counted when it came: it counts with that message.
    Attached {
        tokens: u64,
    },
    /// Text the user pinned: kept verbatim through every compaction.
    Pin {
        text: String,
    },
    /// A change to the file ledger.
    File(FileEvent),
}

impl LogEntry {
    /// A message entry without a count (it is counted when read back).
    pub fn message(message: Message) -> LogEntry {
        LogEntry::Message {
            message,
            tokens: None,
        }
    }
}

/// A message's tokens as `tokens::count_message` counted them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenCount {
    /// `Encoding::count_name()`: a count is used only by a session counting
    /// with the same vocabulary (and image rule, for a message with images;
    /// a string, so an unknown one is just ignored).
    pub encoding: String,
    pub count: u64,
}

impl TokenCount {
    pub fn new(encoding: Encoding, message: &Message, count: u64) -> TokenCount {
        TokenCount {
            encoding: encoding.count_name(message).into_owned(),
            count,
        }
    }

    /// Whether the count was made the way `encoding` counts `message`.
    pub fn is_for(&self, encoding: Encoding, message: &Message) -> bool {
        self.encoding == encoding.count_name(message)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionHeader {
    pub version: u32,
    pub session_id: String,
    pub created_at: u64,
    #[serde(flatten)]
    pub settings: SessionSettings,
    /// The agent transcript this session follows (`conversation/follow`):
    /// the conversation is read from there, and this log holds only
    /// compactd's own entries about it (its compactions, pins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub follows: Option<FollowedTranscript>,
    /// The agent's session this one mirrors (the opencode plugin's
    /// sessions name opencode's): a follow of that agent session is kept
    /// under this session's id (`engine::follow::followed_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mirrors: Option<MirroredSession>,
}

/// An agent's session that a client mirrors into one of compactd's
/// sessions, message by message (the opencode plugin: `opencode`, and
/// opencode's session id).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MirroredSession {
    /// The agent's name (`opencode`).
    pub agent: String,
    /// The agent's id of the session (opencode's `sessionID`).
    pub session_id: String,
}

/// An agent's transcript, as a followed session's log names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FollowedTranscript {
    /// `claude-code`, `codex`, `pi` or `gemini`.
    pub agent: String,
    pub path: PathBuf,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSettings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// The tool definitions sent with every request, as the provider gets
    /// them (counted in the meter's overhead).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_definitions: Option<Vec<serde_json::Value>>,
    /// Auto-compaction switched on or off for this session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_compact: Option<bool>,
}
