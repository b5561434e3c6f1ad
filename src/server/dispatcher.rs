//! The dispatcher. One task owns all state and handles incoming messages
//! strictly in arrival order; long requests (compaction) run as background
//! tasks whose results come back to that owner to be applied. A handler
//! (or a finished job) gets the state and says what to send (`Effects`);
//! the dispatcher delivers it through each client's one ordered `Outbox`,
//! then the answer, so a request's notifications always precede its
//! response, and every request is answered exactly once. The clients are
//! one on stdio (`serve`) or several WebSocket connections on the shared
//! sidecar (`shared::serve`): the same state owner takes every
//! connection's messages in the order they arrived (`clients` routes what
//! it sends).

use lsp_server::{ErrorCode, Message, RequestId, Response};
use tokio::io::{AsyncBufRead, AsyncWrite};
use tokio::sync::mpsc;

use super::clients::{Caller, Clients, Phase};
use super::context::Context;
use super::effects::{Effect, Effects};
use super::importer;
use super::jobs::{JobResult, JobSender};
use super::options::ServeOptions;
use super::routes;
use super::rpc::{Reply, RpcError, RpcResult};
use super::state::State;
use crate::protocol::methods::{self, Method};
use crate::protocol::ProgressToken;
use crate::tokens;
use crate::transport::{self, ConnectionEvent, ConnectionId, Incoming, STDIO};

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
    let (mut server, mut job_results) = Dispatcher::new(options, Clients::new(false));
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
                input.set_max_frame_bytes(server.state.config.max_frame_bytes);
                reading.set(next_frame(input));
                if let Some(code) = stop {
                    break code;
                }
            },
            Some(result) = job_results.recv() => server.finish_job(result),
        }
        // Only handling something sends, so this is where an outbox
        // overflows: stdio's client is the only one, and it does not read.
        if writer.overflowed() {
            tracing::error!(
                "compactd stops: its only client, on stdio, left more than {} bytes of output unread; what it acknowledged is in the session logs",
                transport::MAX_UNSENT_BYTES
            );
            break 1;
        }
    };
    server.state.compactions.abort_all();
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

pub(crate) struct Dispatcher {
    /// Every connection, and where each message goes.
    pub clients: Clients,
    pub state: State,
    /// Where background jobs (compactions, imports, the watcher, the
    /// follow poll) send their results to the state owner.
    results: JobSender,
}

impl Dispatcher {
    /// A dispatcher with no session and the default configuration, and the
    /// receiving end of its job channel.
    pub fn new(
        options: ServeOptions,
        clients: Clients,
    ) -> (Dispatcher, mpsc::UnboundedReceiver<JobResult>) {
        let (results, job_results) = mpsc::unbounded_channel();
        let dispatcher = Dispatcher {
            clients,
            state: State::new(options, results.clone()),
            results,
        };
        (dispatcher, job_results)
    }

    /// The phase of a connection.
    fn phase(&self, conn: ConnectionId) -> Phase {
        self.clients
            .get(conn)
            .map_or(Phase::ShuttingDown, |c| c.phase)
    }

    /// One event from a shared sidecar's connection, in the order that
    /// connection sent it.
    pub fn handle_event(&mut self, event: ConnectionEvent) {
        match event {
            ConnectionEvent::Opened { id, out, peer } => {
                tracing::debug!("connection {id} ({peer}) joins");
                self.clients.add(id, out);
            }
            ConnectionEvent::Received { id, incoming } => {
                // A connection whose client stopped reading is being
                // dropped: what it sent before its reader stopped is not
                // worth handling.
                let live = self.clients.get(id).is_some_and(|c| !c.out.is_overflowed());
                if live {
                    self.handle_input(id, Ok(Some(incoming)));
                }
            }
            ConnectionEvent::Closed { id } => self.connection_closed(id),
        }
    }

    /// Handles what a connection's reader produced; `Some(code)` when the
    /// server must exit (stdio only). Refused input is answered here, so no
    /// request goes unanswered.
    pub fn handle_input(
        &mut self,
        conn: ConnectionId,
        incoming: std::io::Result<Option<Incoming>>,
    ) -> Option<i32> {
        match incoming {
            Ok(Some(Incoming::Message(message))) => {
                self.clients.current = Some(conn);
                let stop = self.handle_message(conn, message);
                self.clients.current = None;
                self.state.sync_watches();
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
                if notification.method == methods::Exit::NAME {
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
                if notification.method == methods::CancelRequest::NAME {
                    self.cancel_for(conn, &mut notification.params);
                }
                if notification.method == methods::WorkDoneProgressCancel::NAME {
                    self.cancel_progress_for(conn, &mut notification.params);
                }
                let named = self
                    .state
                    .bring_back_named(&notification.method, &notification.params);
                if let Err(error) = named {
                    tracing::error!("`{}` not applied: {}", notification.method, error.message);
                    return None;
                }
                let ((), effects) =
                    self.with_context(|context| routes::notification(context, notification));
                self.deliver(effects);
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

    /// Runs `handle` with a handler's context; what it caused, to deliver.
    fn with_context<T>(&mut self, handle: impl FnOnce(&mut Context) -> T) -> (T, Effects) {
        let mut context = Context {
            state: &mut self.state,
            caller: Caller::new(&mut self.clients),
            effects: Effects::default(),
            results: &self.results,
        };
        let out = handle(&mut context);
        (out, context.effects)
    }

    /// Handles one request: refused when its id is already in flight on
    /// its connection, before `initialize`, after `shutdown`, or when the
    /// session it names cannot be brought back; else routed. Answered here
    /// (after what handling it caused) unless a background job owns the
    /// answer.
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
        let refused = match self.phase(conn) {
            Phase::Uninitialized if request.method != methods::Initialize::NAME => {
                Some(RpcError::new(
                    ErrorCode::ServerNotInitialized,
                    "server not initialized: send `initialize` first",
                ))
            }
            // Configuration, watcher and data dir stay as the first
            // `initialize` set them; on the shared sidecar each connection
            // initializes once.
            Phase::Running if request.method == methods::Initialize::NAME => {
                Some(self.already_initialized())
            }
            Phase::ShuttingDown => Some(RpcError::new(
                ErrorCode::InvalidRequest,
                "server is shutting down: only `exit` is accepted",
            )),
            _ => self
                .state
                .bring_back_named(&request.method, &request.params)
                .err(),
        };
        let (reply, effects) = match refused {
            Some(error) => (Reply::Now(Err(error)), Effects::default()),
            None => self.with_context(|context| routes::request(context, request)),
        };
        self.deliver(effects);
        match reply {
            Reply::Now(result) => self.respond(id, result),
            Reply::Framed(frame) => self.clients.respond_framed(&id, frame),
            Reply::Later => {}
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

    /// A shared sidecar's connection ended: the sessions it used that no
    /// other connection uses are closed (followed ones stay: auto-follow
    /// owns them).
    fn connection_closed(&mut self, conn: ConnectionId) {
        let used = self.clients.remove(conn);
        let mut effects = Effects::default();
        for id in used {
            if !self.clients.is_subscribed_by_any(&id) && !self.state.following.is_followed(&id) {
                self.state.close_session(&id, &mut effects);
            }
        }
        self.deliver(effects);
        self.state.sync_watches();
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
    fn respond(&mut self, id: RequestId, result: RpcResult<serde_json::Value>) {
        let response = match result {
            Ok(value) => Response::new_ok(id.clone(), value),
            Err(error) => Response::new_err(id.clone(), error.code, error.message),
        };
        self.clients.respond(&id, response);
    }

    /// Sends what handling a message (or a job) caused, in order.
    fn deliver(&mut self, effects: Effects) {
        for effect in effects {
            match effect {
                Effect::Notify {
                    session_id,
                    method,
                    params,
                } => self.clients.notify_session(&session_id, method, params),
                Effect::Broadcast { method, params } => self.clients.broadcast(method, params),
                Effect::Progress { token, value } => self.clients.send_progress(&token, value),
                Effect::Respond { id, result } => self.respond(id, result),
                Effect::Subscribe(session_id) => self.clients.subscribe_current(&session_id),
                Effect::CarrySubscribers { from, to } => self.clients.carry_subscribers(&from, &to),
            }
        }
    }

    /// What a background job handed back, applied on the state owner.
    pub fn finish_job(&mut self, result: JobResult) {
        let mut effects = Effects::default();
        match result {
            JobResult::Compaction(done) => {
                // What the job causes goes to the connection that asked.
                self.clients.current = self
                    .state
                    .compactions
                    .owner(&done.session_id)
                    .and_then(|id| self.clients.connection_of(id));
                self.state.finish_compaction(*done, &mut effects);
            }
            JobResult::Progress(progress) => self.state.compactions.report(progress, &mut effects),
            JobResult::Import(done) => {
                // The importer subscribes to the session it imported.
                self.clients.current = self.clients.connection_of(done.request.id());
                importer::finish(&mut self.state, *done, &mut effects);
            }
            JobResult::FilesChanged(changes) => self.state.files_changed(changes, &mut effects),
            JobResult::FollowPoll => self.state.follow_poll(&mut effects),
            JobResult::Followed(loaded) => self.state.follow_loaded(*loaded, &mut effects),
            JobResult::Answer(request, result) => {
                self.clients.current = self.clients.connection_of(&request);
                effects.respond(request, result);
            }
        }
        self.deliver(effects);
        self.clients.current = None;
        self.state.sync_watches();
    }
}
