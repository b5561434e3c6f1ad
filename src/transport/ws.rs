//! The shared sidecar's network edge: JSON-RPC over WebSocket, one text
//! message per JSON-RPC message, built from jsonrpsee's server pieces.
//!
//! jsonrpsee serves each TCP connection (`serve_with_graceful_shutdown`:
//! hyper with upgrades, a stop signal) and recognises the upgrade
//! (`ws::is_upgrade_request`); compactd does the rest itself, because
//! jsonrpsee's own RPC layer cannot carry compactd's protocol (measured in
//! `benches/jsonrpsee_order.rs`, documented in docs/protocol.md): it
//! handles every message of a connection in a task of its own, so one
//! client's appends can be applied out of order; its default service drops
//! client notifications; a client's answer to a server request (LSP's
//! `window/workDoneProgress/create`) is refused as an invalid request; and
//! it pushes to clients only as subscriptions. So each connection here has
//! one reader that hands every message, requests, notifications and
//! responses alike, to the dispatcher in the order it arrived
//! ([`ConnectionEvent`]), and one writer that sends what the dispatcher
//! queued in its [`Outbox`], in order.
//!
//! Before a connection reaches the dispatcher it passes [`super::guard`]:
//! an allowed `Origin` (or none), the token (header, or the first message),
//! a free connection slot. Only an authenticated connection holds a slot:
//! one that upgrades without the header waits for its first message in a
//! pool of its own, at most `AUTHENTICATE_WITHIN`, so connections without
//! the token cannot keep the real clients out.
//!
//! Its writer stops at its outbox's bound (`super::outbox`): a connection
//! whose client leaves more than 64 MiB unread is dropped, and the others
//! go on.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_util::io::{BufReader, BufWriter};
use hyper_util::rt::TokioIo;
use jsonrpsee::server::{
    serve_with_graceful_shutdown, stop_channel, ws::is_upgrade_request, HttpBody, HttpResponse,
    ServerHandle, StopHandle,
};
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use tokio_util::compat::TokioAsyncReadCompatExt;

use super::guard;
use super::outbox::Queued;
use super::{classify_text, ConnectionEvent, ConnectionId, Incoming, Outbox};

type Stream = BufReader<BufWriter<tokio_util::compat::Compat<TokioIo<hyper::upgrade::Upgraded>>>>;
type Sender = soketto::Sender<Stream>;
type Receiver = soketto::Receiver<Stream>;

/// The method a connection without an `Authorization` header sends first.
pub const AUTHENTICATE: &str = "connection/authenticate";

/// How long a connection may take to authenticate with its first message.
const AUTHENTICATE_WITHIN: Duration = Duration::from_secs(10);

/// JSON-RPC error code for a connection without the right token.
pub const UNAUTHORIZED: i32 = -32001;

/// How the shared sidecar listens.
#[derive(Debug, Clone)]
pub struct WsOptions {
    /// Where to listen (checked with `guard::check_listen_address`).
    pub addr: SocketAddr,
    pub token: String,
    /// Browser origins allowed to connect (none by default).
    pub allowed_origins: Vec<String>,
    pub max_connections: usize,
    /// The largest message accepted; a bigger one is refused with -32600
    /// and skipped.
    pub max_message_bytes: usize,
}

/// A running listener.
pub struct Listening {
    pub local_addr: SocketAddr,
    stop: ServerHandle,
    accept: tokio::task::JoinHandle<()>,
}

impl Listening {
    /// Stops accepting and closes every connection.
    pub async fn stop(self) {
        let _ = self.stop.stop();
        let _ = self.accept.await;
    }
}

/// What every connection shares.
struct Gate {
    options: WsOptions,
    events: mpsc::UnboundedSender<ConnectionEvent>,
    next_id: AtomicU64,
    /// One per authenticated connection (`max_connections`).
    slots: Arc<Semaphore>,
    /// One per connection upgraded without the header that has not
    /// authenticated yet (as many as `slots`, apart from them): a client
    /// without the token can fill only these, and only for
    /// `AUTHENTICATE_WITHIN` at a time.
    authenticating: Arc<Semaphore>,
    stop: StopHandle,
}

/// What a connection holds while it runs.
enum Admission {
    /// Authenticated by its header: a connection slot.
    Slot(OwnedSemaphorePermit),
    /// No header: a place among those authenticating, until it sends the
    /// token (then it takes a slot) or its time is up.
    Authenticating(OwnedSemaphorePermit),
}

/// Binds and starts accepting; connections report to `events`.
pub async fn listen(
    options: WsOptions,
    events: mpsc::UnboundedSender<ConnectionEvent>,
) -> std::io::Result<Listening> {
    let listener = tokio::net::TcpListener::bind(options.addr).await?;
    let local_addr = listener.local_addr()?;
    let (stop_handle, server_handle) = stop_channel();
    let gate = Arc::new(Gate {
        slots: Arc::new(Semaphore::new(options.max_connections)),
        authenticating: Arc::new(Semaphore::new(options.max_connections)),
        options,
        events,
        next_id: AtomicU64::new(0),
        stop: stop_handle.clone(),
    });
    let accept = tokio::spawn(async move {
        loop {
            tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((stream, peer)) => serve_connection(gate.clone(), stream, peer),
                    Err(e) => tracing::warn!("accept failed: {e}"),
                },
                _ = stop_handle.clone().shutdown() => break,
            }
        }
    });
    Ok(Listening {
        local_addr,
        stop: server_handle,
        accept,
    })
}

/// Serves one TCP connection's HTTP (the upgrade request) with jsonrpsee.
fn serve_connection(gate: Arc<Gate>, stream: tokio::net::TcpStream, peer: SocketAddr) {
    let _ = stream.set_nodelay(true);
    let stopped = gate.stop.clone().shutdown();
    let service = tower::service_fn(move |request| {
        let gate = gate.clone();
        async move { Ok::<_, Infallible>(gate.upgrade(request, peer)) }
    });
    tokio::spawn(async move {
        if let Err(e) = serve_with_graceful_shutdown(stream, service, stopped).await {
            tracing::debug!("connection from {peer}: {e}");
        }
    });
}

fn refusal(status: u16, text: String) -> HttpResponse {
    let mut response = HttpResponse::new(HttpBody::from(text));
    *response.status_mut() = http::StatusCode::from_u16(status).expect("valid status");
    response
}

fn header<B>(request: &http::Request<B>, name: http::header::HeaderName) -> Option<&str> {
    request.headers().get(name).and_then(|v| v.to_str().ok())
}

impl Gate {
    /// Checks an HTTP request and upgrades it, or answers why not.
    fn upgrade<B: Send + 'static>(
        self: Arc<Self>,
        request: http::Request<B>,
        peer: SocketAddr,
    ) -> HttpResponse {
        if !is_upgrade_request(&request) {
            return refusal(426, "compactd serves JSON-RPC over WebSocket here\n".into());
        }
        let origin = header(&request, http::header::ORIGIN);
        if !guard::origin_allowed(origin, &self.options.allowed_origins) {
            tracing::warn!("refused a connection from {peer}: cross-origin ({origin:?})");
            return refusal(403, "cross-origin connections are refused\n".into());
        }
        let authenticated = match header(&request, http::header::AUTHORIZATION) {
            None => false,
            Some(value) => match guard::bearer(value) {
                Some(token) if guard::token_matches(token, &self.options.token) => true,
                _ => {
                    tracing::warn!("refused a connection from {peer}: wrong token");
                    return refusal(401, "wrong token\n".into());
                }
            },
        };
        let admission = match self.admit(authenticated) {
            Ok(admission) => admission,
            Err(why) => {
                tracing::warn!("refused a connection from {peer}: {why}");
                return refusal(503, format!("{why}\n"));
            }
        };
        let mut handshake = soketto::handshake::http::Server::new();
        let response = match handshake.receive_request(&request) {
            Ok(response) => response,
            Err(e) => return refusal(400, format!("WebSocket handshake failed: {e}\n")),
        };
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        tokio::spawn(async move {
            let upgraded = match hyper::upgrade::on(request).await {
                Ok(upgraded) => upgraded,
                Err(e) => return tracing::debug!("upgrade from {peer} failed: {e}"),
            };
            let stream = BufReader::new(BufWriter::new(TokioIo::new(upgraded).compat()));
            let mut builder = handshake.into_builder(stream);
            let max = self.options.max_message_bytes;
            builder.set_max_message_size(max);
            // Frames over the message limit are skipped by the message
            // check (the connection lives on), not refused by the codec.
            builder.set_max_frame_size(usize::MAX);
            let (sender, receiver) = builder.finish();
            self.run(id, peer, sender, receiver, admission).await;
        });
        response.map(|()| HttpBody::empty())
    }

    /// What an upgrade request may hold: a connection slot when its header
    /// authenticated it, else a place among those authenticating (so a
    /// client without the token never holds a slot); why not, when none
    /// is free.
    fn admit(&self, authenticated: bool) -> Result<Admission, String> {
        let max = self.options.max_connections;
        if authenticated {
            let slot = self.slots.clone().try_acquire_owned();
            return slot
                .map(Admission::Slot)
                .map_err(|_| format!("too many connections (at most {max})"));
        }
        // No slot to wait for after authenticating: say so before the
        // upgrade, as to a client with the header.
        if self.slots.available_permits() == 0 {
            return Err(format!("too many connections (at most {max})"));
        }
        let place = self.authenticating.clone().try_acquire_owned();
        place.map(Admission::Authenticating).map_err(|_| {
            format!(
                "too many connections without a token yet (at most {max} authenticating at once)"
            )
        })
    }

    /// One connection from authentication to close; it holds its slot
    /// until then.
    async fn run(
        &self,
        id: ConnectionId,
        peer: SocketAddr,
        mut sender: Sender,
        mut receiver: Receiver,
        admission: Admission,
    ) {
        let _slot = match self.slot(admission, &mut sender, &mut receiver).await {
            Ok(slot) => slot,
            Err(why) => {
                tracing::warn!("refused connection {id} from {peer}: {why}");
                let _ = sender.close().await;
                return;
            }
        };
        let (out, queued) = Outbox::pair(format!("connection {id} from {peer}"));
        let overflow = queued.overflow();
        let writer = tokio::spawn(write(sender, queued));
        let peer = peer.to_string();
        tracing::info!("connection {id} from {peer}");
        let _ = self.events.send(ConnectionEvent::Opened { id, out, peer });
        let stopped = self.stop.clone().shutdown();
        tokio::pin!(stopped);
        loop {
            let mut data = Vec::new();
            let received = tokio::select! {
                received = receiver.receive_data(&mut data) => received,
                _ = &mut stopped => break,
                // Its client stopped reading: what waits for it is dropped
                // with the connection.
                _ = overflow.wait() => break,
            };
            let incoming = match received {
                Ok(_) => classify_text(&data),
                Err(soketto::connection::Error::MessageTooLarge { current, maximum }) => {
                    too_large(current, maximum)
                }
                Err(soketto::connection::Error::Closed) => break,
                Err(e) => {
                    tracing::debug!("connection {id}: {e}");
                    break;
                }
            };
            let _ = self.events.send(ConnectionEvent::Received { id, incoming });
        }
        let _ = self.events.send(ConnectionEvent::Closed { id });
        if overflow.happened() {
            // Its writer is stuck on a client that does not read; the
            // socket closes with the writer's half and this one.
            writer.abort();
            let _ = writer.await;
            tracing::warn!("connection {id} dropped: its client left its output unread");
        } else {
            // The dispatcher drops the connection's outbox, which ends
            // the writer after what was queued before.
            let _ = writer.await;
            tracing::info!("connection {id} closed");
        }
    }

    /// The slot a connection runs in: the one its header got it, or, once
    /// its first message authenticated it, a free one (its place among
    /// those authenticating is given back either way); why not.
    async fn slot(
        &self,
        admission: Admission,
        sender: &mut Sender,
        receiver: &mut Receiver,
    ) -> Result<OwnedSemaphorePermit, String> {
        let place = match admission {
            Admission::Slot(slot) => return Ok(slot),
            Admission::Authenticating(place) => place,
        };
        self.authenticate(sender, receiver).await?;
        drop(place);
        // The slots may have filled while it authenticated.
        let max = self.options.max_connections;
        let slot = self.slots.clone().try_acquire_owned();
        slot.map_err(|_| format!("too many connections (at most {max})"))
    }

    /// The first message of a connection without the header must be
    /// `connection/authenticate {token}`.
    async fn authenticate(
        &self,
        sender: &mut Sender,
        receiver: &mut Receiver,
    ) -> Result<(), String> {
        let mut data = Vec::new();
        match tokio::time::timeout(AUTHENTICATE_WITHIN, receiver.receive_data(&mut data)).await {
            Err(_) => return Err("no token within 10 s".into()),
            Ok(Err(e)) => return Err(format!("closed before authenticating: {e}")),
            Ok(Ok(_)) => {}
        }
        let message: serde_json::Value = serde_json::from_slice(&data).unwrap_or_default();
        let presented = (message["method"] == AUTHENTICATE)
            .then(|| message["params"]["token"].as_str())
            .flatten();
        if presented.is_some_and(|t| guard::token_matches(t, &self.options.token)) {
            return Ok(());
        }
        let why = match presented {
            Some(_) => "wrong token",
            None => "no token: send `Authorization: Bearer <token>` or `connection/authenticate {token}` first",
        };
        if let Some(id) = message
            .get("id")
            .filter(|id| id.is_string() || id.is_number())
        {
            let error = serde_json::json!({
                "jsonrpc": "2.0", "id": id,
                "error": {"code": UNAUTHORIZED, "message": format!("unauthorized: {why}")}
            });
            let _ = sender.send_text(error.to_string()).await;
            let _ = sender.flush().await;
        }
        Err(why.to_string())
    }
}

fn too_large(current: usize, maximum: usize) -> Incoming {
    let why = format!(
        "a message of at least {current} bytes is over the limit ({maximum}); it was skipped"
    );
    Incoming::Refused {
        response: serde_json::json!({
            "jsonrpc": "2.0", "id": null,
            "error": {"code": lsp_server::ErrorCode::InvalidRequest as i32, "message": why},
        }),
        why,
    }
}

/// Sends what the dispatcher queued, in order, flushing when the queue is
/// empty; closes the WebSocket when the dispatcher lets the outbox go.
async fn write(mut sender: Sender, mut queued: Queued) {
    while let Some(text) = queued.recv().await {
        if sender.send_text_owned(text).await.is_err() {
            return;
        }
        if queued.is_empty() && sender.flush().await.is_err() {
            return;
        }
    }
    let _ = sender.close().await;
}
