//! Every method of the protocol, named once: who sends it and whether it
//! is answered. `server::routes` dispatches by these names, `initialize`
//! advertises from this table, `schemas/methods.json` (from which the VS
//! Code extension's method list is generated) is written from it, and a
//! test holds it, the routes and `docs/protocol.md` to each other.

use serde::Serialize;

/// Who sends a method, and whether it is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Kind {
    /// Client → server, answered.
    Request,
    /// Client → server, not answered.
    Notification,
    /// Client → server, either way (answered only as a request).
    RequestOrNotification,
    /// Server → client, not answered.
    ServerNotification,
    /// Server → client, answered.
    ServerRequest,
}

impl Kind {
    /// The client may send it as a request.
    pub fn is_request(self) -> bool {
        matches!(self, Kind::Request | Kind::RequestOrNotification)
    }

    /// The client may send it as a notification.
    pub fn is_notification(self) -> bool {
        matches!(self, Kind::Notification | Kind::RequestOrNotification)
    }
}

/// One method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Method {
    /// The constant that names it here and in the VS Code extension.
    pub constant: &'static str,
    pub name: &'static str,
    pub kind: Kind,
    /// Defined by LSP or JSON-RPC, not by compactd.
    pub lsp: bool,
    pub doc: &'static str,
}

macro_rules! methods {
    ($($(#[doc = $doc:literal])+ $constant:ident = $name:literal, $kind:ident $(, $lsp:ident)?;)+) => {
        $(
            $(#[doc = $doc])+
            pub const $constant: &str = $name;
        )+
        /// Every method, in the order the protocol documents them.
        pub const ALL: &[Method] = &[$(Method {
            constant: stringify!($constant),
            name: $name,
            kind: Kind::$kind,
            lsp: methods!(@lsp $($lsp)?),
            doc: concat!($($doc),+),
        },)+];
    };
    (@lsp lsp) => { true };
    (@lsp) => { false };
}

methods! {
    /// Starts a session with the server; `initializationOptions` is the configuration.
    INITIALIZE = "initialize", Request, lsp;
    /// The client finished initializing.
    INITIALIZED = "initialized", Notification, lsp;
    /// Stops serving requests; `exit` follows.
    SHUTDOWN = "shutdown", Request, lsp;
    /// Ends the process (0 after `shutdown`, else 1).
    EXIT = "exit", Notification, lsp;
    /// Cancels a running request.
    CANCEL_REQUEST = "$/cancelRequest", Notification, lsp;
    /// Accepted and ignored.
    SET_TRACE = "$/setTrace", Notification, lsp;
    /// Accepted and ignored.
    LOG_TRACE = "$/logTrace", Notification, lsp;
    /// Live configuration, in the shape of `initializationOptions`.
    DID_CHANGE_CONFIGURATION = "workspace/didChangeConfiguration", Notification, lsp;
    /// Server → client: creates a progress token (clients that advertised `window.workDoneProgress`).
    WORK_DONE_PROGRESS_CREATE = "window/workDoneProgress/create", ServerRequest, lsp;
    /// Opens a new session, or resumes one from its log.
    OPEN = "conversation/open", Request;
    /// Appends messages to a session.
    APPEND = "conversation/append", RequestOrNotification;
    /// The history as the model should see it.
    HISTORY = "conversation/history", Request;
    /// Compacts a session.
    COMPACT = "conversation/compact", Request;
    /// Whether a session should compact; starts auto-compaction when a trigger fires.
    CHECK = "conversation/check", Request;
    /// Switches auto-compaction for one session.
    SET_AUTO_COMPACT = "conversation/setAutoCompact", Request;
    /// What a compaction would do, without a summarizer.
    PREVIEW = "conversation/preview", Request;
    /// Every compaction of a session.
    COMPACTIONS = "conversation/compactions", Request;
    /// A new session holding everything logged before a message.
    BRANCH = "conversation/branch", Request;
    /// Text kept verbatim through every compaction.
    PIN = "conversation/pin", Request;
    /// A failed model request; a context overflow compacts.
    REPORT_ERROR = "conversation/reportError", Request;
    /// A transcript in another tool's format becomes a new session.
    IMPORT = "conversation/import", Request;
    /// Mirrors an agent's transcript (Claude Code, Codex, pi) as a read-only session that follows it as it grows.
    FOLLOW = "conversation/follow", Request;
    /// Stops following a transcript.
    UNFOLLOW = "conversation/unfollow", Request;
    /// The agents' recent sessions for a workspace.
    LIST_AGENT_SESSIONS = "conversation/listAgentSessions", Request;
    /// Server → client: a session's meter changed.
    TOKENS = "conversation/tokens", ServerNotification;
    /// Server → client: a compaction was applied.
    DID_COMPACT = "conversation/didCompact", ServerNotification;
    /// Server → client: the circuit breaker stopped auto-compaction of a session.
    AUTO_COMPACT_STOPPED = "conversation/autoCompactStopped", ServerNotification;
    /// Server → client: `follow: "auto"` started following an agent's session.
    DID_FOLLOW = "conversation/didFollow", ServerNotification;
    /// Server → client: progress of a long request.
    PROGRESS = "$/progress", ServerNotification, lsp;
    /// A session's file ledger.
    FILES_LIST = "files/list", Request;
    /// Files whose content still hashes as at their last read.
    FILES_UNCHANGED_SINCE_READ = "files/unchangedSinceRead", Request;
    /// An agent read a file.
    FILES_DID_READ = "files/didRead", Notification;
    /// An agent modified a file.
    FILES_DID_MODIFY = "files/didModify", Notification;
    /// An agent created a file.
    FILES_DID_CREATE = "files/didCreate", Notification;
    /// An agent deleted a file.
    FILES_DID_DELETE = "files/didDelete", Notification;
    /// Server → client: a ledger file changed on disk by someone else.
    FILES_DID_CHANGE = "files/didChange", ServerNotification;
    /// An editor opened a file (a read).
    DID_OPEN = "textDocument/didOpen", Notification, lsp;
    /// An editor changed a buffer (a modification).
    DID_CHANGE = "textDocument/didChange", Notification, lsp;
    /// An editor saved a file (a modification).
    DID_SAVE = "textDocument/didSave", Notification, lsp;
    /// An editor closed a buffer.
    DID_CLOSE = "textDocument/didClose", Notification, lsp;
    /// An editor's watcher saw files created, changed or deleted.
    DID_CHANGE_WATCHED_FILES = "workspace/didChangeWatchedFiles", Notification, lsp;
}

/// The method called `name`.
pub fn find(name: &str) -> Option<&'static Method> {
    ALL.iter().find(|m| m.name == name)
}

fn names(wanted: impl Fn(&Method) -> bool) -> Vec<String> {
    ALL.iter()
        .filter(|m| wanted(m))
        .map(|m| m.name.to_string())
        .collect()
}

/// compactd's own requests, as `initialize` advertises them.
pub fn advertised_requests() -> Vec<String> {
    names(|m| m.kind.is_request() && !m.lsp)
}

/// The notifications the server sends, as `initialize` advertises them.
pub fn advertised_notifications() -> Vec<String> {
    names(|m| m.kind == Kind::ServerNotification)
}

/// The JSON-RPC error codes compactd answers with.
pub const ERROR_CODES: &[(&str, lsp_server::ErrorCode)] = &[
    (
        "SERVER_NOT_INITIALIZED",
        lsp_server::ErrorCode::ServerNotInitialized,
    ),
    ("INVALID_REQUEST", lsp_server::ErrorCode::InvalidRequest),
    ("METHOD_NOT_FOUND", lsp_server::ErrorCode::MethodNotFound),
    ("INVALID_PARAMS", lsp_server::ErrorCode::InvalidParams),
    ("INTERNAL_ERROR", lsp_server::ErrorCode::InternalError),
    ("REQUEST_CANCELLED", lsp_server::ErrorCode::RequestCanceled),
];

/// `schemas/methods.json`: the table and the error codes.
pub fn table_json() -> serde_json::Value {
    let methods: Vec<serde_json::Value> = ALL
        .iter()
        .map(|m| {
            serde_json::json!({
                "constant": m.constant,
                "name": m.name,
                "kind": m.kind,
                "lsp": m.lsp,
                "doc": m.doc.trim(),
            })
        })
        .collect();
    let codes: serde_json::Map<String, serde_json::Value> = ERROR_CODES
        .iter()
        .map(|(name, code)| (name.to_string(), serde_json::json!(*code as i32)))
        .collect();
    serde_json::json!({ "methods": methods, "errorCodes": codes })
}
