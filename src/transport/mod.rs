//! LSP base framing (`Content-Length` headers) over any async byte stream,
//! and JSON-RPC 2.0 classification of what arrives. Reading never gives up
//! on bad input: a bad frame is answered or logged, and the reader
//! resynchronises on the next `Content-Length` header (see `framing` for
//! how, and `decode` for which error answers what).

pub mod body;
pub mod decode;
pub mod discovery;
pub mod framing;
pub mod guard;
pub mod leading_id;
pub mod ws;
pub mod ws_client;

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use lsp_server::Message;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

pub use decode::Incoming;
pub use framing::{FrameDecoder, DEFAULT_MAX_FRAME_BYTES};

/// Reads what the client sends, one classified message at a time.
#[derive(Debug)]
pub struct Reader<R> {
    input: R,
    decoder: FrameDecoder,
}

impl<R: AsyncBufRead + Unpin> Reader<R> {
    pub fn new(input: R) -> Reader<R> {
        Reader {
            input,
            decoder: FrameDecoder::default(),
        }
    }

    /// The cap on frames whose header is not complete yet.
    pub fn set_max_frame_bytes(&mut self, max_frame_bytes: u64) {
        self.decoder.set_max_frame_bytes(max_frame_bytes);
    }

    /// The next piece of input; `Ok(None)` at end of input. Cancel-safe:
    /// bytes taken from the input are in the decoder before the next await.
    pub async fn next(&mut self) -> io::Result<Option<Incoming>> {
        loop {
            if let Some(event) = self.decoder.next_event() {
                return Ok(Some(decode::classify(event)));
            }
            if self.decoder.is_done() {
                return Ok(None);
            }
            let chunk = self.input.fill_buf().await?;
            if chunk.is_empty() {
                self.decoder.finish();
                continue;
            }
            let n = chunk.len();
            self.decoder.feed(chunk);
            self.input.consume(n);
        }
    }
}

/// Encodes one message with its header.
pub fn encode(message: &Message) -> Vec<u8> {
    let mut buf = Vec::new();
    message
        .write(&mut buf)
        .expect("writing to a Vec cannot fail");
    buf
}

/// Encodes any JSON value with its header (answers `lsp-server`'s types
/// cannot express, such as an error for `id: null`).
pub fn encode_json(value: &serde_json::Value) -> Vec<u8> {
    let body = serde_json::to_string(value).expect("JSON values serialize");
    format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

#[derive(Debug)]
pub(crate) enum Outgoing {
    Message(Message),
    Json(serde_json::Value),
}

impl Outgoing {
    /// The JSON text of the message, without a header (one WebSocket
    /// message).
    pub(crate) fn to_text(&self) -> String {
        match self {
            Outgoing::Message(message) => message_json(message).to_string(),
            Outgoing::Json(value) => value.to_string(),
        }
    }
}

/// A message as JSON, with its `"jsonrpc": "2.0"` (which `lsp-server`
/// adds only when it writes a frame).
pub fn message_json(message: &Message) -> serde_json::Value {
    let mut value = serde_json::to_value(message).expect("messages serialize");
    if let Some(object) = value.as_object_mut() {
        object.insert("jsonrpc".into(), "2.0".into());
    }
    value
}

/// Identifies a client connection to the dispatcher: stdio's is
/// [`STDIO`], each WebSocket connection gets the next number.
pub type ConnectionId = u64;

/// The connection of a server serving stdio.
pub const STDIO: ConnectionId = 0;

/// What the shared sidecar's connections tell the dispatcher, in order
/// per connection: opened, what it sent, closed.
#[derive(Debug)]
pub enum ConnectionEvent {
    /// An authenticated connection; what the dispatcher sends it goes
    /// through `out`.
    Opened {
        id: ConnectionId,
        out: Outbox,
        peer: String,
    },
    /// One message, classified as on stdio.
    Received {
        id: ConnectionId,
        incoming: Incoming,
    },
    /// The connection is gone (closed by the client, an error, or refused
    /// after it opened).
    Closed { id: ConnectionId },
}

/// Classifies one message that arrived whole (a WebSocket text message):
/// as a frame body on stdio, without the framing.
pub fn classify_text(bytes: &[u8]) -> Incoming {
    match body::parse(bytes) {
        Ok(value) => decode::classify(framing::FrameEvent::Json(value)),
        Err(unread) => decode::classify(framing::FrameEvent::InvalidJson {
            why: unread.why,
            id: unread.id,
            too_deep: unread.too_deep,
        }),
    }
}

/// The one ordered sender: everything the server writes goes through it,
/// so output leaves in the order it was sent.
#[derive(Debug, Clone)]
pub struct Outbox {
    tx: mpsc::UnboundedSender<Outgoing>,
}

impl Outbox {
    pub fn send(&self, message: impl Into<Message>) {
        // The writer only stops when the output is gone; nothing to do then.
        let _ = self.tx.send(Outgoing::Message(message.into()));
    }

    /// Sends a message built as JSON (see `encode_json`).
    pub fn send_json(&self, value: serde_json::Value) {
        let _ = self.tx.send(Outgoing::Json(value));
    }

    pub fn notify(&self, method: &str, params: impl serde::Serialize) {
        self.send(lsp_server::Notification::new(method.to_string(), params));
    }

    /// An outbox and the receiving end a writer drains.
    pub(crate) fn pair() -> (Outbox, mpsc::UnboundedReceiver<Outgoing>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Outbox { tx }, rx)
    }

    /// True once the writer is gone (the connection closed).
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }

    /// An outbox whose output a test reads from the other half.
    #[cfg(test)]
    pub fn channel() -> (Outbox, Sent) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Outbox { tx }, Sent(rx))
    }
}

/// What an outbox made by `Outbox::channel` sent.
#[cfg(test)]
pub struct Sent(mpsc::UnboundedReceiver<Outgoing>);

#[cfg(test)]
impl Sent {
    /// Everything sent since the last call, each message as JSON.
    pub fn take(&mut self) -> Vec<serde_json::Value> {
        let mut out = Vec::new();
        while let Ok(outgoing) = self.0.try_recv() {
            out.push(match outgoing {
                Outgoing::Message(message) => {
                    serde_json::to_value(message).expect("messages serialize")
                }
                Outgoing::Json(value) => value,
            });
        }
        out
    }
}

/// The writer task `spawn_writer` started.
pub struct Writer {
    task: tokio::task::JoinHandle<io::Result<()>>,
    /// Bytes written so far: whether it is getting anywhere.
    written: Arc<AtomicU64>,
}

/// How long the output may take no byte at all before a writer that is
/// finishing gives up.
pub const STALLED_OUTPUT: Duration = Duration::from_secs(10);

impl Writer {
    /// Waits for everything queued to be written, as long as the reader
    /// takes some of it every `STALLED_OUTPUT`: a client that stopped
    /// reading (its stdout still open) cannot keep the process alive.
    pub async fn finish(mut self) -> io::Result<()> {
        let mut seen = self.written.load(Ordering::Relaxed);
        loop {
            match tokio::time::timeout(STALLED_OUTPUT, &mut self.task).await {
                Ok(Ok(result)) => return result,
                Ok(Err(e)) => return Err(io::Error::other(e)),
                Err(_) => {
                    let now = self.written.load(Ordering::Relaxed);
                    if now == seen {
                        self.task.abort();
                        return Err(io::Error::new(
                            io::ErrorKind::TimedOut,
                            format!(
                                "the reader took nothing for {}s; the rest of the output was dropped",
                                STALLED_OUTPUT.as_secs()
                            ),
                        ));
                    }
                    seen = now;
                }
            }
        }
    }
}

/// Starts the writer task; it ends when every `Outbox` is dropped.
pub fn spawn_writer<W: AsyncWrite + Unpin + Send + 'static>(mut output: W) -> (Outbox, Writer) {
    let (outbox, mut rx) = Outbox::pair();
    let written = Arc::new(AtomicU64::new(0));
    let counter = written.clone();
    let task = tokio::spawn(async move {
        while let Some(outgoing) = rx.recv().await {
            let bytes = match &outgoing {
                Outgoing::Message(message) => encode(message),
                Outgoing::Json(value) => encode_json(value),
            };
            // Written in pieces, so a slow reader still shows progress.
            for piece in bytes.chunks(64 << 10) {
                output.write_all(piece).await?;
                counter.fetch_add(piece.len() as u64, Ordering::Relaxed);
            }
            if rx.is_empty() {
                output.flush().await?;
            }
        }
        output.flush().await
    });
    (outbox, Writer { task, written })
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod proptests;
