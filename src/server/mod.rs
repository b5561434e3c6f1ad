//! The dispatcher. One task owns all state and handles incoming messages
//! strictly in arrival order; long requests (compaction) run as background
//! tasks whose results come back to that owner to be applied. Everything
//! written goes through one ordered `Outbox`, so a request's notifications
//! always precede its response, and every request is answered exactly once.

mod compactor;
mod file_tracking;
mod follow;
mod handlers;
mod importer;
mod progress;
mod routes;

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
use crate::transport::{self, Incoming, Outbox};
use file_tracking::FileTracking;
use progress::ProgressTokens;

/// How the server was started (CLI flags, not client configuration).
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    /// Overrides the user config directory (`None`: the platform default).
    pub user_config_dir: Option<PathBuf>,
    /// Skip the user config file entirely.
    pub no_user_config: bool,
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
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
    pub out: Outbox,
    phase: Phase,
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
    /// Progress tokens: created on request, held back until accepted.
    pub progress: ProgressTokens,
    options: ServeOptions,
    pub file_tracking: FileTracking,
    /// The agent transcripts followed, and auto-follow.
    pub following: follow::Following,
}

/// Serves one client until `exit` or end of input. Returns the process
/// exit code: 0 after `shutdown` then `exit`, else 1.
pub async fn serve<R, W>(input: R, output: W, options: ServeOptions) -> i32
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    tokens::preload_in_background();
    let (out, writer) = transport::spawn_writer(output);
    let (job_results_tx, mut job_results) = mpsc::unbounded_channel();
    let config = Config::default();
    let mut server = Server {
        out,
        phase: Phase::Uninitialized,
        store: SessionStore::new(config.sessions_dir(), config.durability),
        config,
        config_dirs: ConfigDirs::default(),
        sessions: HashMap::new(),
        running: HashMap::new(),
        importing: HashMap::new(),
        next_job: 0,
        job_results_tx,
        progress: ProgressTokens::default(),
        options,
        file_tracking: FileTracking::default(),
        following: follow::Following::default(),
    };
    // The reader (with any partial frame it holds) lives in the pinned read
    // future and comes back with its result, so a job or watcher event
    // arriving mid-frame never costs the bytes already read.
    let reading = next_frame(transport::Reader::new(input));
    tokio::pin!(reading);
    let exit_code = loop {
        tokio::select! {
            (mut input, incoming) = &mut reading => {
                let stop = server.handle_input(incoming);
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
    match writer.await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!("writing output failed: {e}"),
        Err(e) => tracing::warn!("writer task failed: {e}"),
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
    /// Handles what the reader produced; `Some(code)` when the server must
    /// exit. Refused input is answered here, so no request goes unanswered.
    fn handle_input(&mut self, incoming: std::io::Result<Option<Incoming>>) -> Option<i32> {
        match incoming {
            Ok(Some(Incoming::Message(message))) => self.handle_message(message),
            Ok(Some(Incoming::Refused { response, why })) => {
                tracing::error!("refused bad input: {why}");
                self.out.send_json(response);
                None
            }
            Ok(Some(Incoming::Skipped(why))) => {
                tracing::error!("skipped bad input: {why}");
                None
            }
            Ok(None) => {
                tracing::info!("input closed without exit");
                Some(if self.phase == Phase::ShuttingDown {
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
    fn handle_message(&mut self, message: Message) -> Option<i32> {
        match message {
            Message::Request(request) => {
                let id = request.id.clone();
                let reply = match self.phase {
                    Phase::Uninitialized if request.method != methods::INITIALIZE => {
                        Reply::Now(Err(RpcError::new(
                            ErrorCode::ServerNotInitialized,
                            "server not initialized: send `initialize` first",
                        )))
                    }
                    // Configuration, watcher and data dir stay as the
                    // first `initialize` set them.
                    Phase::Running if request.method == methods::INITIALIZE => {
                        Reply::Now(Err(RpcError::new(
                            ErrorCode::InvalidRequest,
                            "server already initialized: `initialize` may be sent once (the configuration, the file watcher and dataDir stay as they are; use workspace/didChangeConfiguration for live settings)",
                        )))
                    }
                    Phase::ShuttingDown => Reply::Now(Err(RpcError::new(
                        ErrorCode::InvalidRequest,
                        "server is shutting down: only `exit` is accepted",
                    ))),
                    _ => routes::request(self, request),
                };
                if let Reply::Now(result) = reply {
                    self.respond(id, result);
                }
                None
            }
            Message::Notification(notification) => {
                if notification.method == methods::EXIT {
                    return Some(if self.phase == Phase::ShuttingDown {
                        0
                    } else {
                        1
                    });
                }
                if self.phase == Phase::Uninitialized {
                    tracing::warn!(
                        "notification `{}` before initialize ignored",
                        notification.method
                    );
                    return None;
                }
                routes::notification(self, notification);
                None
            }
            Message::Response(response) => {
                // Answers to our own requests (progress token creation).
                if !self.progress.answered(&self.out, &response) {
                    tracing::warn!("a response to no request of ours: {}", response.id);
                }
                None
            }
        }
    }

    pub fn respond(&self, id: RequestId, result: RpcResult<serde_json::Value>) {
        let response = match result {
            Ok(value) => Response::new_ok(id, value),
            Err(error) => Response::new_err(id, error.code, error.message),
        };
        self.out.send(response);
    }

    pub fn set_running(&mut self) {
        self.phase = Phase::Running;
    }

    pub fn set_shutting_down(&mut self) {
        self.phase = Phase::ShuttingDown;
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
        self.out.notify(
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

    /// Keeps a session open (a new one, or one resumed from its log).
    pub fn insert_session(&mut self, open: OpenSession) {
        self.sessions.insert(open.session.id.clone(), open);
        self.sync_watches();
    }

    fn finish_job(&mut self, result: JobResult) {
        match result {
            JobResult::Compaction(finished) => compactor::finish(self, *finished),
            JobResult::Progress(progress) => compactor::report(self, progress),
            JobResult::Import(finished) => importer::finish(self, *finished),
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
