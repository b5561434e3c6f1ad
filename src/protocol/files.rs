//! Wire types of file tracking: `files/*` and the LSP text-document and
//! watched-file notifications that feed the ledger.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use crate::files::{ChangeKind, FileOp, FileStatus, Origin, Position, Range};

/// `files/didRead`, `files/didModify`, `files/didCreate`, `files/didDelete`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileNotificationParams {
    /// The session that touched the file; omitted: every open session.
    #[serde(default)]
    pub session_id: Option<String>,
    /// Absolute, relative to the workspace root, `~/…`, or a `file://` URI.
    pub path: String,
    /// The part of the file that was read or changed.
    #[serde(default)]
    pub range: Option<Range>,
}

/// One ledger entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileInfo {
    /// Absolute and normalized.
    pub path: String,
    /// Relative to the workspace root when inside it, `~/…` under the home.
    pub display_path: String,
    pub status: FileStatus,
    pub first_op: FileOp,
    pub last_op: FileOp,
    pub reads: u32,
    pub modifications: u32,
    /// Who reported operations on it, in a fixed order.
    pub origins: Vec<Origin>,
    /// The message of the last operation: the calling message for tool
    /// calls, else the newest message when the event arrived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_message_id: Option<String>,
    /// SHA-256 of the content at the last read, when it was readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_hash: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_range: Option<Range>,
    /// Compactions the session had when the file was last touched.
    pub generation: usize,
    /// Its directory is being watched for changes by others.
    pub watched: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FilesListResult {
    /// Most recently touched first.
    pub files: Vec<FileInfo>,
    /// What `<read-files>` lists, uncapped: read and not modified.
    pub read_files: Vec<String>,
    /// What `<modified-files>` lists, uncapped.
    pub modified_files: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnchangedSinceReadResult {
    /// Absolute paths of the files whose content still has the hash it had
    /// at the last read: re-reading them would return the same text.
    pub files: Vec<String>,
}

/// `files/didChange`: a ledger file was changed on disk by someone else.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileDidChangeNotification {
    pub session_id: String,
    /// Absolute path.
    pub path: String,
    pub kind: ChangeKind,
    /// `renamed` only: where it went.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_path: Option<String>,
}

// The LSP notifications compactd reads, with only the fields it uses.

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TextDocumentItem {
    pub uri: String,
    #[serde(default)]
    pub language_id: Option<String>,
    #[serde(default)]
    pub version: Option<i64>,
    pub text: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TextDocumentIdentifier {
    pub uri: String,
    #[serde(default)]
    pub version: Option<i64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DidOpenTextDocumentParams {
    pub text_document: TextDocumentItem,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TextDocumentContentChangeEvent {
    /// Absent: `text` is the whole document (compactd asks for full sync).
    #[serde(default)]
    pub range: Option<Range>,
    pub text: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DidChangeTextDocumentParams {
    pub text_document: TextDocumentIdentifier,
    pub content_changes: Vec<TextDocumentContentChangeEvent>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DidSaveTextDocumentParams {
    pub text_document: TextDocumentIdentifier,
    /// The saved content, when the client includes it.
    #[serde(default)]
    pub text: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DidCloseTextDocumentParams {
    pub text_document: TextDocumentIdentifier,
}

/// LSP `FileEvent`: `type` is 1 created, 2 changed, 3 deleted.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct WatchedFileEvent {
    pub uri: String,
    #[serde(rename = "type")]
    #[schemars(range(min = 1, max = 3))]
    pub kind: u8,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct DidChangeWatchedFilesParams {
    pub changes: Vec<WatchedFileEvent>,
}
