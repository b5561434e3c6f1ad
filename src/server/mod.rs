//! The dispatcher. One task owns all state and handles incoming messages
//! strictly in arrival order; long requests (compaction) run as background
//! tasks whose results come back to that owner to be applied. Everything
//! written goes through one ordered `Outbox`, so a request's notifications
//! always precede its response, and every request is answered exactly once.

mod compactor;
mod files;
mod handlers;
mod routes;

use std::collections::HashMap;
use std::path::PathBuf;

use lsp_server::{ErrorCode, Message, RequestId, Response};
use serde::de::DeserializeOwned;
use tokio::io::{AsyncBufRead, AsyncWrite};
use tokio::sync::mpsc;

use crate::config::Config;
use crate::protocol::{self, MeterInfo, ProgressToken};
use crate::session::Session;
use crate::store::{SessionLog, SessionStore, StoreError};
use crate::tokens;
use crate::transport::{self, Frame, Outbox};

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

impl From<StoreError> for RpcError {
    fn from(error: StoreError) -> RpcError {
        let code = match &error {
            StoreError::InvalidId { .. } | StoreError::Exists { .. } => {
                ErrorCode::InvalidParams as i32
            }
            StoreError::Locked { .. } => protocol::error_codes::SESSION_LOCKED,
            StoreError::ReadOnly { .. } => protocol::error_codes::SESSION_READ_ONLY,
            StoreError::Io { .. } => ErrorCode::InternalError as i32,
        };
        let message = match &error {
            StoreError::InvalidId { .. } | StoreError::Exists { .. } => {
                format!("sessionId: {error}")
            }
            _ => error.to_string(),
        };
        RpcError { code, message }
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

/// A session that is open in this server.
pub(crate) struct OpenSession {
    pub session: Session,
    pub log: SessionLog,
}

/// What a background job hands back to the state owner.
pub(crate) enum JobDone {
    Compaction(Box<compactor::Finished>),
    /// The file watcher saw changes on disk.
    FilesChanged(Vec<crate::files::watch::DiskChange>),
}

pub(crate) struct Server {
    pub out: Outbox,
    phase: Phase,
    pub config: Config,
    /// Where the config files were found at `initialize`, so that
    /// `workspace/didChangeConfiguration` resolves the same layers.
    pub config_dirs: (Option<PathBuf>, Option<PathBuf>),
    pub store: SessionStore,
    pub sessions: HashMap<String, OpenSession>,
    /// The running compaction of each session.
    pub running: HashMap<String, compactor::RunningJob>,
    next_job: u64,
    pub jobs: mpsc::UnboundedSender<JobDone>,
    /// The client can create progress tokens on request.
    pub client_work_done_progress: bool,
    next_server_request: u64,
    options: ServeOptions,
    pub files: files::ServerFiles,
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
    let (jobs_tx, mut jobs_rx) = mpsc::unbounded_channel();
    let config = Config::default();
    let mut server = Server {
        out,
        phase: Phase::Uninitialized,
        store: SessionStore::new(config.sessions_dir(), config.durability),
        config,
        config_dirs: (None, None),
        sessions: HashMap::new(),
        running: HashMap::new(),
        next_job: 0,
        jobs: jobs_tx,
        client_work_done_progress: false,
        next_server_request: 0,
        options,
        files: files::ServerFiles::default(),
    };
    let mut exit_code = 1;
    // The frame being read survives the other branch winning: `read_frame`
    // is not cancel-safe, and a job or watcher event arriving mid-frame
    // must not lose the bytes already read.
    let reading = next_frame(input);
    tokio::pin!(reading);
    loop {
        tokio::select! {
            (input, frame) = &mut reading => {
                reading.set(next_frame(input));
                match frame {
                Ok(Some(Frame::Message(message))) => {
                    if let Some(code) = server.handle_message(message) {
                        exit_code = code;
                        break;
                    }
                }
                Ok(Some(Frame::Malformed(why))) => tracing::error!("skipped bad input: {why}"),
                Ok(None) => {
                    tracing::info!("input closed without exit");
                    exit_code = if server.phase == Phase::ShuttingDown { 0 } else { 1 };
                    break;
                }
                Err(e) => {
                    tracing::error!("reading input failed: {e}");
                    break;
                }
                }
            },
            Some(done) = jobs_rx.recv() => server.finish_job(done),
        }
    }
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

/// Reads one frame, handing the reader back with it.
async fn next_frame<R: AsyncBufRead + Unpin>(mut input: R) -> (R, std::io::Result<Option<Frame>>) {
    let frame = transport::read_frame(&mut input).await;
    (input, frame)
}

impl Server {
    /// Handles one message; `Some(code)` when the server must exit.
    fn handle_message(&mut self, message: Message) -> Option<i32> {
        match message {
            Message::Request(request) => {
                let id = request.id.clone();
                let reply = match self.phase {
                    Phase::Uninitialized if request.method != "initialize" => {
                        Reply::Now(Err(RpcError::new(
                            ErrorCode::ServerNotInitialized,
                            "server not initialized: send `initialize` first",
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
                if notification.method == "exit" {
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
                if let Err(error) = response.response_result {
                    tracing::warn!(
                        "client answered {} with error {}: {}",
                        response.id,
                        error.code,
                        error.message
                    );
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

    /// A session to change: refused when it is open read-only.
    pub fn session_mut(&mut self, id: &str) -> RpcResult<&mut OpenSession> {
        let open = self.sessions.get_mut(id).ok_or_else(|| no_session(id))?;
        if open.log.is_read_only() {
            return Err(read_only(id));
        }
        Ok(open)
    }

    pub fn session(&self, id: &str) -> RpcResult<&OpenSession> {
        self.sessions.get(id).ok_or_else(|| no_session(id))
    }

    /// The context window that applies to a session.
    pub fn context_window(&self, session: &Session) -> u64 {
        session
            .context_window
            .or(self.config.context_window)
            .or_else(|| {
                session
                    .model
                    .as_deref()
                    .or(self.config.model.as_deref())
                    .and_then(tokens::context_window_for)
            })
            .unwrap_or(self.config.default_context_window)
    }

    pub fn meter_info(&self, session: &Session) -> MeterInfo {
        let window = self.context_window(session);
        let at = crate::compaction::trigger::auto_compact_at(&self.config, window);
        let meter = session.meter(window, at);
        MeterInfo {
            context_tokens: meter.context_tokens,
            context_window: meter.context_window,
            percent: meter.percent(),
            auto_compact_at: meter.auto_compact_at,
            source: match meter.source {
                tokens::MeterSource::Usage => protocol::MeterSource::Usage,
                tokens::MeterSource::Estimate => protocol::MeterSource::Estimate,
            },
        }
    }

    pub fn send_meter(&self, session: &Session) {
        self.out.notify(
            protocol::methods::TOKENS,
            protocol::TokensNotification {
                session_id: session.id.clone(),
                meter: self.meter_info(session),
            },
        );
    }

    /// A progress token for a long request: the client's, or one we create
    /// when the client advertised `window.workDoneProgress`.
    pub fn progress_token(&mut self, client_token: Option<ProgressToken>) -> Option<ProgressToken> {
        if client_token.is_some() {
            return client_token;
        }
        if !self.client_work_done_progress {
            return None;
        }
        self.next_server_request += 1;
        let token = ProgressToken::String(format!("compactd/{}", self.next_server_request));
        self.out.send(lsp_server::Request::new(
            RequestId::from(format!("compactd-progress-{}", self.next_server_request)),
            "window/workDoneProgress/create".to_string(),
            serde_json::json!({ "token": token }),
        ));
        Some(token)
    }

    fn finish_job(&mut self, done: JobDone) {
        match done {
            JobDone::Compaction(finished) => compactor::finish(self, *finished),
            JobDone::FilesChanged(changes) => self.on_disk_changes(changes),
        }
    }

    /// The triggers that fire for a session now (`None`: no such session).
    pub fn triggers_fired(
        &self,
        session_id: &str,
    ) -> Option<Vec<crate::compaction::trigger::TriggerKind>> {
        let open = self.sessions.get(session_id)?;
        let window = self.context_window(&open.session);
        let at = crate::compaction::trigger::auto_compact_at(&self.config, window);
        Some(crate::compaction::trigger::evaluate(
            &self.config,
            open.session.trigger_input(window, at),
        ))
    }

    /// Automatic compaction is allowed for a session: the environment's
    /// kill switch (`COMPACTD_DISABLE_AUTOCOMPACT=1`) is off, the session's
    /// own switch (else the config's `autoCompact`) is on, and the circuit
    /// breaker has not tripped.
    pub fn auto_compact_allowed(&self, session_id: &str) -> bool {
        let Some(open) = self.sessions.get(session_id) else {
            return false;
        };
        let env = std::env::var("COMPACTD_DISABLE_AUTOCOMPACT").ok();
        let switch = open
            .session
            .auto_compact
            .unwrap_or(self.config.auto_compact);
        crate::compaction::trigger::auto_compact_enabled(switch, env.as_deref())
            && open.session.auto.stopped.is_none()
            && !open.log.is_read_only()
    }
}

pub(crate) fn no_session(id: &str) -> RpcError {
    RpcError::invalid_params(format!(
        "sessionId: no open session `{}` (call conversation/open first)",
        crate::store::shown_id(id)
    ))
}

pub(crate) fn read_only(id: &str) -> RpcError {
    RpcError {
        code: protocol::error_codes::SESSION_READ_ONLY,
        message: format!(
            "session `{id}` is open read-only: it cannot be appended to, compacted, pinned or reconfigured (open it without `readOnly` once no other process writes it)"
        ),
    }
}

/// Sends `$/progress` under `token`.
pub(crate) fn send_progress(out: &Outbox, token: &ProgressToken, value: serde_json::Value) {
    out.notify(
        "$/progress",
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

pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
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
