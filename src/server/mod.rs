//! The dispatcher. One task owns all state and handles incoming messages
//! strictly in arrival order; long requests (compaction) run as background
//! tasks whose results come back to that owner to be applied. Everything
//! written to a client goes through its one ordered `Outbox`, so a
//! request's notifications always precede its response, and every request
//! is answered exactly once. The clients are one on stdio (`serve`) or
//! several WebSocket connections on the shared sidecar (`shared::serve`):
//! the same state owner takes every connection's messages in the order
//! they arrived (`clients` routes what it sends).

mod clients;
mod compactor;
mod file_tracking;
mod follow;
mod handlers;
mod importer;
mod progress;
mod residency;
mod routes;
pub mod shared;

use std::collections::HashMap;
use std::path::PathBuf;

use lsp_server::{ErrorCode, Message, RequestId, Response};
use serde::de::DeserializeOwned;
use tokio::io::{AsyncBufRead, AsyncWrite};
use tokio::sync::mpsc;

use crate::config::Config;
use crate::engine::{self, EngineError, OpenSession, SessionEnv};
use crate::protocol::{error_codes, methods, MeterInfo, ProgressToken, TokensNotification};
use crate::session::Session;
use crate::store::{SessionStore, StoreError};
use crate::tokens;
use crate::transport::{self, ConnectionId, Incoming, Outbox, STDIO};
use clients::Clients;
use file_tracking::FileTracking;
pub use residency::raise_descriptor_limit;

/// How the server was started (CLI flags, not client configuration).
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    /// Overrides the user config directory (`None`: the platform default).
    pub user_config_dir: Option<PathBuf>,
    /// Skip the user config file entirely.
    pub no_user_config: bool,
}

impl ServeOptions {
    /// The user config directory to read `compactd.toml` from, if any.
    pub fn user_dir(&self) -> Option<PathBuf> {
        if self.no_user_config {
            return None;
        }
        self.user_config_dir
            .clone()
            .or_else(Config::user_config_dir)
    }
}

/// An error answered to a request.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i32,
    pub message: String,
}

impl RpcError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> RpcError {
        RpcError {
            code: code as i32,
            message: message.into(),
        }
    }
    pub fn invalid_params(message: impl Into<String>) -> RpcError {
        RpcError::new(ErrorCode::InvalidParams, message)
    }
    pub fn internal(message: impl Into<String>) -> RpcError {
        RpcError::new(ErrorCode::InternalError, message)
    }
}

/// The one place engine (and store) errors get their codes.
impl From<EngineError> for RpcError {
    fn from(e: EngineError) -> RpcError {
        match e {
            EngineError::Invalid(message) => RpcError::invalid_params(message),
            EngineError::Failed(message) => RpcError::internal(message),
            EngineError::Refused(
                e @ (StoreError::InvalidId { .. } | StoreError::Exists { .. }),
            ) => RpcError::invalid_params(format!("sessionId: {e}")),
            EngineError::Refused(e @ StoreError::Locked { .. }) => RpcError {
                code: error_codes::SESSION_LOCKED,
                message: e.to_string(),
            },
            EngineError::Refused(e @ StoreError::ReadOnly { .. }) => RpcError {
                code: error_codes::SESSION_READ_ONLY,
                message: e.to_string(),
            },
            e @ EngineError::Follows { .. } => RpcError {
                code: error_codes::SESSION_READ_ONLY,
                message: e.to_string(),
            },
            EngineError::Refused(e @ StoreError::Io { .. }) => RpcError::internal(e.to_string()),
        }
    }
}

pub type RpcResult<T> = Result<T, RpcError>;

/// How a request is answered.
pub(crate) enum Reply {
    Now(RpcResult<serde_json::Value>),
    /// A background job owns the answer.
    Later,
}

impl Reply {
    pub(crate) fn from<T: serde::Serialize>(result: RpcResult<T>) -> Reply {
        Reply::Now(result.map(|v| serde_json::to_value(v).expect("results serialize")))
    }
}

/// A connection's place in the LSP lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Uninitialized,
    Running,
    ShuttingDown,
}

/// What a background job hands back to the state owner.
pub(crate) enum JobResult {
    Compaction(Box<compactor::Finished>),
    /// A running compaction's progress (`report`), for its token.
    Progress(compactor::JobProgress),
    /// An import whose session is built.
    Import(Box<importer::FinishedImport>),
    /// The file watcher saw changes on disk.
    FilesChanged(Vec<crate::files::watch::DiskChange>),
    /// Time to look at the followed transcripts again.
    FollowPoll,
}

/// Where the config files were looked for at `initialize`, so that
/// `workspace/didChangeConfiguration` resolves the same layers.
#[derive(Debug, Clone, Default)]
pub(crate) struct ConfigDirs {
    /// The workspace root (`compactd.toml` there).
    pub workspace_root: Option<PathBuf>,
    /// The user config directory.
    pub user_dir: Option<PathBuf>,
}

pub(crate) struct Server {
    /// Every connection, and where each message goes.
    pub clients: Clients,
    pub config: Config,
    pub config_dirs: ConfigDirs,
    pub store: SessionStore,
    pub sessions: HashMap<String, OpenSession>,
    /// The running compaction of each session.
    pub running: HashMap<String, compactor::RunningJob>,
    /// Ids of sessions being imported, with the import's request.
    pub importing: HashMap<String, RequestId>,
    next_job: u64,
    /// Where background jobs (compactions, the watcher) send their results
    /// to the state owner.
    pub job_results_tx: mpsc::UnboundedSender<JobResult>,
    options: ServeOptions,
    pub file_tracking: FileTracking,
    /// The agent transcripts followed, and auto-follow.
    pub following: follow::Following,
    /// Which sessions stay open, and those evicted to free descriptors.
    residency: residency::Residency,
}

/// Serves one client until `exit` or end of input. Returns the process
/// exit code: 0 once `shutdown` was answered (then `exit` or the end of
/// input), else 1.
pub async fn serve<R, W>(input: R, output: W, options: ServeOptions) -> i32
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    tokens::preload_in_background();
    let (out, writer) = transport::spawn_writer(output);
    let (mut server, mut job_results) = Server::new(options, Clients::new(false));
    server.clients.add(STDIO, out);
    // The reader (with any partial frame it holds) lives in the pinned read
    // future and comes back with its result, so a job or watcher event
    // arriving mid-frame never costs the bytes already read.
    let reading = next_frame(transport::Reader::new(input));
    tokio::pin!(reading);
    let exit_code = loop {
        tokio::select! {
            (mut input, incoming) = &mut reading => {
                let stop = server.handle_input(STDIO, incoming);
                // The cap may have changed (initialize, configuration).
                input.set_max_frame_bytes(server.config.max_frame_bytes);
                reading.set(next_frame(input));
                if let Some(code) = stop {
                    break code;
                }
            },
            Some(result) = job_results.recv() => server.finish_job(result),
        }
    };
    for (_, job) in server.running.drain() {
        job.abort.abort();
    }
    drop(server);
    if let Err(e) = writer.finish().await {
        tracing::warn!("writing output failed: {e}");
    }
    exit_code
}

/// Reads one message, handing the reader back with it.
async fn next_frame<R: AsyncBufRead + Unpin>(
    mut input: transport::Reader<R>,
) -> (transport::Reader<R>, std::io::Result<Option<Incoming>>) {
    let incoming = input.next().await;
    (input, incoming)
}

impl Server {
    /// A server with no session and the default configuration, and the
    /// receiving end of its job channel.
    fn new(
        options: ServeOptions,
        clients: Clients,
    ) -> (Server, mpsc::UnboundedReceiver<JobResult>) {
        let (job_results_tx, job_results) = mpsc::unbounded_channel();
        let config = Config::default();
        let server = Server {
            clients,
            store: SessionStore::new(config.sessions_dir(), config.durability),
            config,
            config_dirs: ConfigDirs::default(),
            sessions: HashMap::new(),
            running: HashMap::new(),
            importing: HashMap::new(),
            next_job: 0,
            job_results_tx,
            options,
            file_tracking: FileTracking::default(),
            following: follow::Following::default(),
            residency: residency::Residency::default(),
        };
        (server, job_results)
    }

    /// Takes a configuration: the store, the file watcher over `roots`.
    pub fn configure(&mut self, config: Config, roots: Vec<PathBuf>, dirs: ConfigDirs) {
        self.store = SessionStore::new(config.sessions_dir(), config.durability);
        tracing::info!("sessions in {}", self.store.dir().display());
        self.file_tracking = FileTracking::start(&config, roots, &self.job_results_tx);
        self.config = config;
        self.config_dirs = dirs;
    }

    /// The phase of the connection being served.
    fn phase(&self, conn: ConnectionId) -> Phase {
        self.clients
            .get(conn)
            .map_or(Phase::ShuttingDown, |c| c.phase)
    }

    /// Handles what a connection's reader produced; `Some(code)` when the
    /// server must exit (stdio only). Refused input is answered here, so no
    /// request goes unanswered.
    fn handle_input(
        &mut self,
        conn: ConnectionId,
        incoming: std::io::Result<Option<Incoming>>,
    ) -> Option<i32> {
        match incoming {
            Ok(Some(Incoming::Message(message))) => {
                self.clients.current = Some(conn);
                let stop = self.handle_message(conn, message);
                self.clients.current = None;
                stop
            }
            Ok(Some(Incoming::Refused { response, why })) => {
                tracing::error!("refused bad input: {why}");
                self.clients.send_json_to(conn, response);
                None
            }
            Ok(Some(Incoming::Skipped(why))) => {
                tracing::error!("skipped bad input: {why}");
                None
            }
            Ok(None) => {
                tracing::info!("input closed without exit");
                Some(if self.phase(conn) == Phase::ShuttingDown {
                    0
                } else {
                    1
                })
            }
            Err(e) => {
                tracing::error!("reading input failed: {e}");
                Some(1)
            }
        }
    }

    /// Handles one message; `Some(code)` when the server must exit.
    fn handle_message(&mut self, conn: ConnectionId, message: Message) -> Option<i32> {
        match message {
            Message::Request(request) => {
                self.handle_request(conn, request);
                None
            }
            Message::Notification(mut notification) => {
                if notification.method == methods::EXIT {
                    let code = if self.phase(conn) == Phase::ShuttingDown {
                        0
                    } else {
                        1
                    };
                    return self.exit(conn, code);
                }
                if self.phase(conn) == Phase::Uninitialized {
                    tracing::warn!(
                        "notification `{}` before initialize ignored",
                        notification.method
                    );
                    return None;
                }
                if notification.method == methods::CANCEL_REQUEST {
                    self.cancel_for(conn, &mut notification.params);
                }
                if notification.method == methods::WORK_DONE_PROGRESS_CANCEL {
                    self.cancel_progress_for(conn, &mut notification.params);
                }
                if let Err(error) =
                    self.bring_back_named(&notification.method, &notification.params)
                {
                    tracing::error!("`{}` not applied: {}", notification.method, error.message);
                    return None;
                }
                routes::notification(self, notification);
                None
            }
            Message::Response(response) => {
                // Answers to our own requests (progress token creation).
                if !self.clients.answered(conn, &response) {
                    tracing::warn!("a response to no request of ours: {}", response.id);
                }
                None
            }
        }
    }

    /// Handles one request: refused when its id is already in flight on
    /// its connection, before `initialize`, after `shutdown`, or when the
    /// session it names cannot be brought back; else routed. Answered here
    /// unless a background job owns the answer.
    fn handle_request(&mut self, conn: ConnectionId, request: lsp_server::Request) {
        let Some(id) = self.clients.accept_request(conn, request.id.clone()) else {
            let message = format!(
                "invalid request: id {} is already in use by a request still in flight; `{}` was not run (use a new id for each request)",
                request.id, request.method
            );
            tracing::error!("{message}");
            let id = serde_json::to_value(&request.id).expect("ids serialize");
            self.clients.send_json_to(
                conn,
                transport::decode::error_response(&id, ErrorCode::InvalidRequest as i32, &message),
            );
            return;
        };
        let mut request = lsp_server::Request {
            id: id.clone(),
            ..request
        };
        self.accept_token(conn, &mut request.params);
        let reply = match self.phase(conn) {
            Phase::Uninitialized if request.method != methods::INITIALIZE => {
                Reply::Now(Err(RpcError::new(
                    ErrorCode::ServerNotInitialized,
                    "server not initialized: send `initialize` first",
                )))
            }
            // Configuration, watcher and data dir stay as the
            // first `initialize` set them; on the shared sidecar
            // each connection initializes once.
            Phase::Running if request.method == methods::INITIALIZE => {
                Reply::Now(Err(self.already_initialized()))
            }
            Phase::ShuttingDown => Reply::Now(Err(RpcError::new(
                ErrorCode::InvalidRequest,
                "server is shutting down: only `exit` is accepted",
            ))),
            _ => match self.bring_back_named(&request.method, &request.params) {
                Ok(()) => routes::request(self, request),
                Err(error) => Reply::Now(Err(error)),
            },
        };
        if let Reply::Now(result) = reply {
            self.respond(id, result);
        }
    }

    /// The answer to a second `initialize` on one connection.
    fn already_initialized(&self) -> RpcError {
        let message = if self.clients.is_shared() {
            "connection already initialized: `initialize` may be sent once per connection (a shared compactd keeps the configuration it started with; open another connection for another client)"
        } else {
            "server already initialized: `initialize` may be sent once (the configuration, the file watcher and dataDir stay as they are; use workspace/didChangeConfiguration for live settings)"
        };
        RpcError::new(ErrorCode::InvalidRequest, message)
    }

    /// `exit` ends the process on stdio; on the shared sidecar it closes
    /// that connection only.
    fn exit(&mut self, conn: ConnectionId, code: i32) -> Option<i32> {
        if conn == STDIO {
            return Some(code);
        }
        tracing::info!("connection {conn} exited");
        self.connection_closed(conn);
        None
    }

    /// A request's `workDoneToken` becomes the dispatcher's token for it
    /// (`clients` sends progress under it with the client's own token).
    fn accept_token(&mut self, conn: ConnectionId, params: &mut serde_json::Value) {
        let Some(given) = params.get_mut("workDoneToken") else {
            return;
        };
        if let Ok(token) = serde_json::from_value::<ProgressToken>(given.clone()) {
            let internal = self.clients.accept_token(conn, token);
            *given = serde_json::to_value(internal).expect("tokens serialize");
        }
    }

    /// `$/cancelRequest` names the client's id; the dispatcher's is
    /// `clients`' translation of it.
    fn cancel_for(&self, conn: ConnectionId, params: &mut serde_json::Value) {
        let id = serde_json::from_value::<RequestId>(params["id"].clone());
        if let Ok(id) = id {
            params["id"] =
                serde_json::to_value(self.clients.request_of(conn, &id)).expect("ids serialize");
        }
    }

    /// `window/workDoneProgress/cancel` names the client's token; the
    /// dispatcher's is `clients`' translation of it.
    fn cancel_progress_for(&self, conn: ConnectionId, params: &mut serde_json::Value) {
        let token = serde_json::from_value::<ProgressToken>(params["token"].clone());
        if let Ok(token) = token {
            params["token"] = serde_json::to_value(self.clients.token_of(conn, &token))
                .expect("tokens serialize");
        }
    }

    /// Answers a request, on the connection it came from.
    pub fn respond(&mut self, id: RequestId, result: RpcResult<serde_json::Value>) {
        let response = match result {
            Ok(value) => Response::new_ok(id.clone(), value),
            Err(error) => Response::new_err(id.clone(), error.code, error.message),
        };
        self.clients.respond(&id, response);
    }

    /// The connection being served enters the running phase.
    pub fn set_running(&mut self) {
        if let Some(client) = self.clients.current_mut() {
            client.phase = Phase::Running;
        }
    }

    pub fn set_shutting_down(&mut self) {
        if let Some(client) = self.clients.current_mut() {
            client.phase = Phase::ShuttingDown;
        }
    }

    pub fn options(&self) -> &ServeOptions {
        &self.options
    }

    pub fn session_mut(&mut self, id: &str) -> RpcResult<&mut OpenSession> {
        self.unreserved(id)?;
        self.sessions.get_mut(id).ok_or_else(|| no_session(id))
    }

    pub fn session(&self, id: &str) -> RpcResult<&OpenSession> {
        self.unreserved(id)?;
        self.sessions.get(id).ok_or_else(|| no_session(id))
    }

    /// Refuses an id whose session is being imported: it exists once the
    /// import is answered.
    pub fn unreserved(&self, id: &str) -> RpcResult<()> {
        match self.importing.get(id) {
            Some(request) => Err(RpcError::invalid_params(format!(
                "sessionId: `{id}` is being imported (request {request}); it opens when that request is answered"
            ))),
            None => Ok(()),
        }
    }

    /// A session to change (an overflow's recovery compacts it): refused
    /// up front when it is open read-only or follows an agent, before a
    /// progress token or a plan exists for it.
    pub fn writable_session(&self, id: &str) -> RpcResult<&OpenSession> {
        let open = self.session(id)?;
        open.check_writable()?;
        Ok(open)
    }

    /// A session a client may compact: refused when it is open read-only.
    /// A followed one is compacted into compactd's own log of it.
    pub fn compactable_session(&self, id: &str) -> RpcResult<&OpenSession> {
        let open = self.session(id)?;
        open.check_compactable()?;
        Ok(open)
    }

    pub fn meter_info(&self, session: &Session) -> MeterInfo {
        self.follow_meter(session)
            .unwrap_or_else(|| engine::window::meter(&self.config, session).into())
    }

    pub fn send_meter(&self, session: &Session) {
        self.clients.notify_session(
            &session.id,
            methods::TOKENS,
            TokensNotification {
                session_id: session.id.clone(),
                meter: self.meter_info(session),
            },
        );
    }

    /// What sessions opened here take from the configuration and the
    /// workspace.
    pub fn session_env(&self) -> SessionEnv {
        SessionEnv::new(&self.config, self.file_tracking.workspace.clone())
    }

    /// Keeps a session open (a new one, or one resumed from its log); the
    /// connection that opened it follows it. Under pressure the least
    /// recently used idle session makes room (`residency`).
    pub fn insert_session(&mut self, open: OpenSession) {
        let id = open.session.id.clone();
        self.clients.subscribe_current(&id);
        self.sessions.insert(id.clone(), open);
        self.make_room(&id);
        self.sync_watches();
    }

    /// Reopens the session a message's params name if it was evicted
    /// (`residency`), and marks it used.
    fn bring_back_named(&mut self, method: &str, params: &serde_json::Value) -> RpcResult<()> {
        match residency::named_session(method, params) {
            Some(id) => self.bring_back(id),
            None => Ok(()),
        }
    }

    /// A progress token compactd asks the connection being served to
    /// create, for work it asked for (`None` when it cannot create them).
    pub fn create_progress_token(&mut self) -> Option<ProgressToken> {
        let conn = self.clients.current?;
        self.clients.create_token(conn)
    }

    /// Sends `$/progress` to the connection its token belongs to, as LSP
    /// 3.17 has it there (`progress::ProgressTokens`).
    pub fn send_progress(&mut self, token: &ProgressToken, value: serde_json::Value) {
        self.clients.send_progress(token, value);
    }

    /// Sends a notification about a session to its subscribers.
    pub fn notify_session(&self, session_id: &str, method: &str, params: impl serde::Serialize) {
        self.clients.notify_session(session_id, method, params);
    }

    fn finish_job(&mut self, result: JobResult) {
        match result {
            JobResult::Compaction(finished) => {
                // What the job causes goes to the connection that asked.
                self.clients.current = self
                    .running
                    .get(&finished.session_id)
                    .and_then(|job| job.owner.as_ref())
                    .and_then(|id| self.clients.connection_of(id));
                compactor::finish(self, *finished);
                self.clients.current = None;
            }
            JobResult::Progress(progress) => compactor::report(self, progress),
            JobResult::Import(finished) => {
                // The importer follows the session it imported.
                self.clients.current = self.clients.connection_of(&finished.request);
                importer::finish(self, *finished);
                self.clients.current = None;
            }
            JobResult::FilesChanged(changes) => {
                self.follow_disk_changes(&changes);
                self.on_disk_changes(changes);
            }
            JobResult::FollowPoll => self.on_follow_poll(),
        }
    }
}

pub(crate) fn no_session(id: &str) -> RpcError {
    RpcError::invalid_params(format!(
        "sessionId: no open session `{}` (call conversation/open first)",
        crate::store::shown_id(id)
    ))
}

/// Sends `$/progress` under `token`.
pub(crate) fn send_progress(out: &Outbox, token: &ProgressToken, value: serde_json::Value) {
    out.notify(
        methods::PROGRESS,
        serde_json::json!({ "token": token, "value": value }),
    );
}

/// Decodes params into `P`. Absent or null params are an empty object, and
/// a one-element array holding an object (or null) is unwrapped, since some
/// clients wrap params that way. Errors name the offending field.
pub(crate) fn parse_params<P: DeserializeOwned>(params: serde_json::Value) -> RpcResult<P> {
    let params = match params {
        serde_json::Value::Null => serde_json::json!({}),
        serde_json::Value::Array(mut items)
            if items.len() == 1 && (items[0].is_object() || items[0].is_null()) =>
        {
            match items.remove(0) {
                serde_json::Value::Null => serde_json::json!({}),
                item => item,
            }
        }
        serde_json::Value::Object(map) => serde_json::Value::Object(map),
        other => {
            return Err(RpcError::invalid_params(format!(
                "params must be an object, got {}",
                json_kind(&other)
            )))
        }
    };
    serde_path_to_error::deserialize(params).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        if path == "." {
            RpcError::invalid_params(format!("invalid params: {inner}"))
        } else {
            RpcError::invalid_params(format!("invalid params at `{path}`: {inner}"))
        }
    })
}

fn json_kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::SessionParams;
    use serde_json::json;

    #[test]
    fn params_errors_name_the_field() {
        let err = parse_params::<SessionParams>(json!({})).unwrap_err();
        assert_eq!(err.code, -32602);
        assert!(err.message.contains("sessionId"), "{}", err.message);
        let err = parse_params::<crate::protocol::AppendParams>(
            json!({"sessionId": "s", "messages": [{"role": "user", "content": "x"}, {"role": "robot"}]}),
        )
        .unwrap_err();
        assert!(err.message.contains("messages[1]"), "{}", err.message);
        let err = parse_params::<SessionParams>(json!("s")).unwrap_err();
        assert!(err.message.contains("must be an object"), "{}", err.message);
    }

    #[test]
    fn null_and_wrapped_params_are_accepted() {
        let p: crate::protocol::OpenParams = parse_params(json!(null)).unwrap();
        assert!(p.session_id.is_none());
        let p: crate::protocol::OpenParams = parse_params(json!([null])).unwrap();
        assert!(p.session_id.is_none());
        let p: SessionParams = parse_params(json!([{"sessionId": "x"}])).unwrap();
        assert_eq!(p.session_id, "x");
    }
}
