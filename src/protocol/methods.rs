//! Every method of the protocol, named once: who sends it, whether it is
//! answered, and the types of its params and result, as a marker type per
//! method (`Method`). `server::routes` routes each marker to a handler of
//! those types, `initialize` advertises from this table,
//! `schemas/methods.json` (from which the VS Code extension's method list
//! and the clients' typed methods are generated) is written from it, and
//! a test holds it, the routes and `docs/protocol.md` to each other.

use lsp_server::ErrorCode;
use serde::Serialize;

use super::*;

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
    #[cfg(test)]
    pub fn is_notification(self) -> bool {
        matches!(self, Kind::Notification | Kind::RequestOrNotification)
    }
}

/// One method, as the table lists it (`schemas/methods.json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MethodInfo {
    /// The constant that names it in the generated clients and the VS Code
    /// extension (its marker type here).
    pub constant: &'static str,
    pub name: &'static str,
    pub kind: Kind,
    /// Defined by LSP or JSON-RPC, not by compactd.
    pub lsp: bool,
    /// The schema (under `schemas/`) of its params, for the generated
    /// clients; `None` for LSP's own lifecycle types.
    pub params: Option<&'static str>,
    /// The schema of a request's result.
    pub result: Option<&'static str>,
    pub doc: &'static str,
}

/// A method as a type: its name, its kind, and the types of its params
/// and result, from the one table below. Each method has a marker
/// implementing it (`methods::Append`, …) and the trait of its kind
/// (`ClientRequest`, `ClientNotification`, `ServerNotification`), so the
/// server routes a method to a handler of exactly these types
/// (`server::routes`: a handler whose params or result differ from the
/// table does not compile, nor a notification routed as a request or the
/// reverse), answers a request a job holds with this `Result`
/// (`server::jobs::Pending`), and sends a notification with these
/// `Params` (`server::effects::Effects`).
pub trait Method {
    const NAME: &'static str;
    const KIND: Kind;
    /// What its params decode into.
    type Params;
    /// What a request is answered with; `()` for a notification.
    type Result;
}

/// A method the client may send as a request (its kind in the table).
pub trait ClientRequest: Method {}
/// A method the client may send as a notification.
pub trait ClientNotification: Method {}
/// A notification the server sends.
pub trait ServerNotification: Method {}

/// The params of a method whose params compactd does not read (or, for
/// what it sends, writes by hand: `$/progress`,
/// `window/workDoneProgress/create`). Routed only as such
/// (`server::routes`), never decoded.
#[derive(Debug)]
pub enum Untyped {}

/// The table: per method its constant and marker, its name, its kind, the
/// schemas of its params and result (`Kind(Params => Result)`, each a wire
/// type written to `schemas/`), and `lsp` for LSP's and JSON-RPC's own
/// methods, with the Rust types of their params and result when compactd
/// reads or answers them (`lsp(Params => Result)`, no schema: LSP defines
/// them). A method with neither has `Untyped` params and a `()` result.
macro_rules! methods {
    ($($(#[doc = $doc:literal])+ $constant:ident: $marker:ident = $name:literal, $kind:ident
        $(($params:ident $(=> $result:ident)?))?
        $(, $lsp:ident $(($lsp_params:ty $(=> $lsp_result:ty)?))?)?;)+) => {
        $(
            $(#[doc = $doc])+
            #[derive(Debug)]
            pub enum $marker {}

            impl Method for $marker {
                const NAME: &'static str = $name;
                const KIND: Kind = Kind::$kind;
                type Params = methods!(@ty [$($params)?] [$($($lsp_params)?)?] Untyped);
                type Result = methods!(@ty [$($($result)?)?] [$($($($lsp_result)?)?)?] ());
            }
            methods!(@kind $marker $kind);
        )+
        /// Every method, in the order the protocol documents them.
        pub const ALL: &[MethodInfo] = &[$(MethodInfo {
            constant: stringify!($constant),
            name: <$marker as Method>::NAME,
            kind: <$marker as Method>::KIND,
            lsp: methods!(@lsp $($lsp)?),
            params: methods!(@name $($params)?),
            result: methods!(@name $($($result)?)?),
            doc: concat!($($doc),+),
        },)+];
        // The named types exist and are wire types.
        const _: () = {$($(
            wire_type::<$params>();
            $(wire_type::<$result>();)?
        )?)+};
        /// The JSON Schema of every type the table names, each once, by
        /// its name (`schemas/<name>.json`).
        pub fn type_schemas() -> Vec<(&'static str, serde_json::Value)> {
            let mut out: Vec<(&'static str, serde_json::Value)> = Vec::new();
            $($(
                add_schema::<$params>(&mut out, stringify!($params));
                $(add_schema::<$result>(&mut out, stringify!($result));)?
            )?)+
            out
        }
    };
    (@kind $marker:ident Request) => { impl ClientRequest for $marker {} };
    (@kind $marker:ident Notification) => { impl ClientNotification for $marker {} };
    (@kind $marker:ident RequestOrNotification) => {
        impl ClientRequest for $marker {}
        impl ClientNotification for $marker {}
    };
    (@kind $marker:ident ServerNotification) => { impl ServerNotification for $marker {} };
    (@kind $marker:ident ServerRequest) => {};
    (@lsp lsp) => { true };
    (@lsp) => { false };
    (@name $ty:ident) => { Some(stringify!($ty)) };
    (@name) => { None };
    // A wire type, else LSP's type, else the default.
    (@ty [] [] $default:ty) => { $default };
    (@ty [] [$ty:ty] $default:ty) => { $ty };
    (@ty [$ty:ty] [] $default:ty) => { $ty };
}

const fn wire_type<T: schemars::JsonSchema>() {}

fn add_schema<T: schemars::JsonSchema>(
    out: &mut Vec<(&'static str, serde_json::Value)>,
    name: &'static str,
) {
    if out.iter().all(|(known, _)| *known != name) {
        let schema = serde_json::to_value(schemars::schema_for!(T)).expect("schema serializes");
        out.push((name, schema));
    }
}

methods! {
    /// Starts a session with the server; `initializationOptions` is the configuration.
    INITIALIZE: Initialize = "initialize", Request, lsp(InitializeParams => serde_json::Value);
    /// The client finished initializing.
    INITIALIZED: Initialized = "initialized", Notification, lsp;
    /// Stops serving requests; `exit` follows.
    SHUTDOWN: Shutdown = "shutdown", Request, lsp(serde_json::Value => ());
    /// Ends the process (0 after `shutdown`, else 1).
    EXIT: Exit = "exit", Notification, lsp;
    /// Cancels a running request.
    CANCEL_REQUEST: CancelRequest = "$/cancelRequest", Notification, lsp(CancelParams);
    /// Accepted and ignored.
    SET_TRACE: SetTrace = "$/setTrace", Notification, lsp;
    /// Accepted and ignored.
    LOG_TRACE: LogTrace = "$/logTrace", Notification, lsp;
    /// Live configuration, in the shape of `initializationOptions`.
    DID_CHANGE_CONFIGURATION: DidChangeConfiguration = "workspace/didChangeConfiguration", Notification, lsp(DidChangeConfigurationParams);
    /// Server → client: creates a progress token (clients that advertised `window.workDoneProgress`).
    WORK_DONE_PROGRESS_CREATE: WorkDoneProgressCreate = "window/workDoneProgress/create", ServerRequest, lsp;
    /// The user cancelled a progress compactd created: the compaction stops as with `$/cancelRequest`.
    WORK_DONE_PROGRESS_CANCEL: WorkDoneProgressCancel = "window/workDoneProgress/cancel", Notification(WorkDoneProgressCancelParams), lsp;
    /// Opens a new session, or resumes one from its log.
    OPEN: Open = "conversation/open", Request(OpenParams => OpenResult);
    /// Closes a session: releases its log and lock, cancels its running compaction (on a shared compactd, once no other connection uses it).
    CLOSE_SESSION: CloseSession = "conversation/close", Request(SessionParams => CloseResult);
    /// Appends messages to a session.
    APPEND: Append = "conversation/append", RequestOrNotification(AppendParams => AppendResult);
    /// The history as the model should see it.
    HISTORY: History = "conversation/history", Request(SessionParams => HistoryResult);
    /// Compacts a session.
    COMPACT: Compact = "conversation/compact", Request(CompactParams => CompactResult);
    /// Whether a session should compact; starts auto-compaction when a trigger fires.
    CHECK: Check = "conversation/check", Request(SessionParams => CheckResult);
    /// Switches auto-compaction for one session.
    SET_AUTO_COMPACT: SetAutoCompact = "conversation/setAutoCompact", Request(SetAutoCompactParams => SetAutoCompactResult);
    /// What a compaction would do, without a summarizer.
    PREVIEW: Preview = "conversation/preview", Request(PreviewParams => PreviewResult);
    /// Every compaction of a session.
    COMPACTIONS: Compactions = "conversation/compactions", Request(SessionParams => CompactionsResult);
    /// A new session holding everything logged before a message.
    BRANCH: Branch = "conversation/branch", Request(BranchParams => BranchResult);
    /// Text kept verbatim through every compaction.
    PIN: Pin = "conversation/pin", Request(PinParams => PinResult);
    /// A failed model request; a context overflow compacts.
    REPORT_ERROR: ReportError = "conversation/reportError", Request(ReportErrorParams => ReportErrorResult);
    /// A transcript in another tool's format becomes a new session.
    IMPORT: Import = "conversation/import", Request(ImportParams => ImportResult);
    /// What an agent's own compaction must keep of a session: instructions for its summarizer, compactd's record for after, what its summary dropped.
    RECAP: Recap = "conversation/recap", Request(RecapParams => RecapResult);
    /// Messages of a session, compacted away or not, found by what they say.
    SEARCH: Search = "conversation/search", Request(SearchParams => SearchResult);
    /// Messages verbatim, by id or range, with the compaction that summarized each.
    MESSAGES: Messages = "conversation/messages", Request(MessagesParams => MessagesResult);
    /// Mirrors an agent's transcript as a read-only session that follows it as it grows.
    FOLLOW: Follow = "conversation/follow", Request(FollowParams => FollowResult);
    /// Stops following a transcript.
    UNFOLLOW: Unfollow = "conversation/unfollow", Request(SessionParams => UnfollowResult);
    /// The agents' recent sessions for a workspace.
    LIST_AGENT_SESSIONS: ListAgentSessions = "conversation/listAgentSessions", Request(ListAgentSessionsParams => ListAgentSessionsResult);
    /// Subscribes to a session: its notifications reach this connection too (the shared sidecar; on stdio the one client gets them all).
    SUBSCRIBE: Subscribe = "conversation/subscribe", Request(SessionParams => SubscribeResult);
    /// Unsubscribes from a session.
    UNSUBSCRIBE: Unsubscribe = "conversation/unsubscribe", Request(SessionParams => UnsubscribeResult);
    /// A WebSocket connection's first message when it sent no `Authorization` header: the token.
    AUTHENTICATE: Authenticate = "connection/authenticate", Notification(AuthenticateParams);
    /// Server → client: a session's meter changed.
    TOKENS: Tokens = "conversation/tokens", ServerNotification(TokensNotification);
    /// Server → client: a compaction was applied.
    DID_COMPACT: DidCompact = "conversation/didCompact", ServerNotification(DidCompactNotification);
    /// Server → client: the circuit breaker stopped auto-compaction of a session.
    AUTO_COMPACT_STOPPED: AutoCompactStopped = "conversation/autoCompactStopped", ServerNotification(AutoCompactStoppedNotification);
    /// Server → client: `follow: "auto"` started following an agent's session.
    DID_FOLLOW: DidFollow = "conversation/didFollow", ServerNotification(DidFollowNotification);
    /// Server → client: progress of a long request.
    PROGRESS: Progress = "$/progress", ServerNotification, lsp;
    /// A session's file ledger.
    FILES_LIST: FilesList = "files/list", Request(SessionParams => FilesListResult);
    /// Files whose content still hashes as at their last read.
    FILES_UNCHANGED_SINCE_READ: FilesUnchangedSinceRead = "files/unchangedSinceRead", Request(SessionParams => UnchangedSinceReadResult);
    /// An agent read a file.
    FILES_DID_READ: FilesDidRead = "files/didRead", Notification(FileNotificationParams);
    /// An agent modified a file.
    FILES_DID_MODIFY: FilesDidModify = "files/didModify", Notification(FileNotificationParams);
    /// An agent created a file.
    FILES_DID_CREATE: FilesDidCreate = "files/didCreate", Notification(FileNotificationParams);
    /// An agent deleted a file.
    FILES_DID_DELETE: FilesDidDelete = "files/didDelete", Notification(FileNotificationParams);
    /// Server → client: a ledger file changed on disk by someone else.
    FILES_DID_CHANGE: FilesDidChange = "files/didChange", ServerNotification(FileDidChangeNotification);
    /// An editor opened a file (a read).
    DID_OPEN: DidOpen = "textDocument/didOpen", Notification(DidOpenTextDocumentParams), lsp;
    /// An editor changed a buffer (a modification).
    DID_CHANGE: DidChange = "textDocument/didChange", Notification(DidChangeTextDocumentParams), lsp;
    /// An editor saved a file (a modification).
    DID_SAVE: DidSave = "textDocument/didSave", Notification(DidSaveTextDocumentParams), lsp;
    /// An editor closed a buffer.
    DID_CLOSE: DidClose = "textDocument/didClose", Notification(DidCloseTextDocumentParams), lsp;
    /// An editor's watcher saw files created, changed or deleted.
    DID_CHANGE_WATCHED_FILES: DidChangeWatchedFiles = "workspace/didChangeWatchedFiles", Notification(DidChangeWatchedFilesParams), lsp;
}

/// The method called `name`.
#[cfg(test)]
pub fn find(name: &str) -> Option<&'static MethodInfo> {
    ALL.iter().find(|m| m.name == name)
}

fn names(wanted: impl Fn(&MethodInfo) -> bool) -> Vec<String> {
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

/// The JSON-RPC error codes compactd answers with: JSON-RPC's and LSP's,
/// then compactd's own (`super::error_codes`).
pub const ERROR_CODES: &[(&str, i32)] = &[
    (
        "SERVER_NOT_INITIALIZED",
        ErrorCode::ServerNotInitialized as i32,
    ),
    ("INVALID_REQUEST", ErrorCode::InvalidRequest as i32),
    ("METHOD_NOT_FOUND", ErrorCode::MethodNotFound as i32),
    ("INVALID_PARAMS", ErrorCode::InvalidParams as i32),
    ("INTERNAL_ERROR", ErrorCode::InternalError as i32),
    ("REQUEST_CANCELLED", ErrorCode::RequestCanceled as i32),
    ("SESSION_LOCKED", super::error_codes::SESSION_LOCKED),
    ("SESSION_READ_ONLY", super::error_codes::SESSION_READ_ONLY),
    ("UNAUTHORIZED", super::error_codes::UNAUTHORIZED),
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
                "params": m.params,
                "result": m.result,
                "doc": m.doc.trim(),
            })
        })
        .collect();
    let codes: serde_json::Map<String, serde_json::Value> = ERROR_CODES
        .iter()
        .map(|(name, code)| (name.to_string(), serde_json::json!(*code)))
        .collect();
    serde_json::json!({ "methods": methods, "errorCodes": codes })
}

#[cfg(test)]
mod tests {
    use super::{Method, ALL};

    #[test]
    fn the_websocket_edge_authenticates_with_the_tables_method() {
        assert_eq!(
            super::Authenticate::NAME,
            crate::transport::ws::AUTHENTICATE
        );
    }

    #[test]
    fn every_type_the_table_names_has_a_schema_of_that_title() {
        let titles: Vec<String> = super::super::schemas()
            .into_iter()
            .filter_map(|(_, schema)| Some(schema.get("title")?.as_str()?.to_string()))
            .collect();
        for method in ALL {
            for name in method.params.iter().chain(method.result.iter()) {
                assert!(
                    titles.iter().any(|t| t == name),
                    "{}: no schema titled {name}",
                    method.name
                );
            }
        }
    }
}
