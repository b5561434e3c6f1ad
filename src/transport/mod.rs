//! LSP base framing (`Content-Length` headers) over any async byte stream,
//! and JSON-RPC 2.0 classification of what arrives. Reading never gives up
//! on bad input: a bad frame is answered or logged, and the reader
//! resynchronises on the next `Content-Length` header (see `framing` for
//! how, and `decode` for which error answers what).

pub mod body;
pub mod decode;
pub(crate) mod discovery;
pub mod framing;
pub(crate) mod guard;
pub mod leading_id;
pub(crate) mod outbox;
pub(crate) mod ws;
pub(crate) mod ws_client;

use std::io;

use lsp_server::Message;
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

pub use decode::Incoming;
pub use framing::{FrameDecoder, DEFAULT_MAX_FRAME_BYTES};
pub use outbox::{spawn_writer, Outbox, Overflow, Writer, MAX_UNSENT_BYTES, STALLED_OUTPUT};

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

#[cfg(test)]
mod tests;

#[cfg(test)]
mod proptests;
