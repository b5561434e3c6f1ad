//! The one ordered sender of a connection, and the bound on what it holds.
//!
//! Everything the server sends a client goes through its [`Outbox`], so
//! output leaves in the order it was sent; a writer task (stdio's
//! [`spawn_writer`], or `ws`'s per connection) takes it from there. A
//! message is turned into its JSON text when it is sent, so what waits for
//! a client is counted in bytes, and a client that stops reading cannot
//! make the server keep its output without bound (4 MB answers to a client
//! that never read once reached 3.1 GB): once [`MAX_UNSENT_BYTES`] wait
//! behind the message being written, the outbox drops everything sent to
//! it, logs why, and tells whoever owns the connection ([`Overflow`]) to
//! drop it.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use lsp_server::Message;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, Notify};

/// The most output that may wait for one connection behind the message
/// being written: 64 MiB. A client that reads at all never comes near it:
/// the largest answers compactd builds in one go (`conversation/messages`
/// at most 8 MB, a search's 200 hits) fit eight times, and a subscriber's
/// meter notifications (about 300 bytes each) would take minutes of a busy
/// agent to fill it. A single message larger than the bound (the history
/// of a session holding big images) is still sent when nothing waits
/// before it, so no answer is too large in itself. And a client that never
/// reads costs at most this much plus one message: with every one of the
/// shared sidecar's 32 connections at it, about 2 GiB, against the 3.1 GB
/// one such client reached before there was a bound.
pub const MAX_UNSENT_BYTES: usize = 64 << 20;

/// How long the output may take no byte at all before a writer that is
/// finishing gives up.
pub const STALLED_OUTPUT: Duration = Duration::from_secs(10);

/// A connection's outbox: cheap to clone, every clone sends to the same
/// writer.
#[derive(Debug, Clone)]
pub struct Outbox {
    tx: mpsc::UnboundedSender<String>,
    queue: Arc<Queue>,
}

/// What an outbox and its writer share.
#[derive(Debug)]
struct Queue {
    /// Bytes sent that the writer has not taken yet.
    waiting: AtomicUsize,
    overflowed: AtomicBool,
    /// Wakes whoever drops the connection once it overflowed.
    overflow: Notify,
    /// The connection, as the log names it.
    name: String,
    /// `MAX_UNSENT_BYTES` but in tests.
    limit: usize,
}

impl Queue {
    fn new(name: String, limit: usize) -> Arc<Queue> {
        Arc::new(Queue {
            waiting: AtomicUsize::new(0),
            overflowed: AtomicBool::new(false),
            overflow: Notify::new(),
            name,
            limit,
        })
    }

    fn overflow(&self, waiting: usize) {
        if self.overflowed.swap(true, Ordering::Relaxed) {
            return;
        }
        tracing::error!(
            "{}: {waiting} bytes of output wait for a client that is not reading them, over the bound of {} bytes; the connection is dropped",
            self.name,
            self.limit
        );
        self.overflow.notify_waiters();
    }
}

impl Outbox {
    pub fn send(&self, message: impl Into<Message>) {
        let message = message.into();
        self.push(|| message_text(&message));
    }

    /// Sends a message built as JSON (answers `lsp-server`'s types cannot
    /// express, such as an error for `id: null`).
    pub fn send_json(&self, value: serde_json::Value) {
        self.push(|| value.to_string());
    }

    /// Sends a message already written as its JSON text.
    pub fn send_text(&self, text: String) {
        self.push(|| text);
    }

    pub fn notify(&self, method: &str, params: impl serde::Serialize) {
        self.send(lsp_server::Notification::new(method.to_string(), params));
    }

    /// Queues one message's text, unless the connection overflowed (then
    /// nothing it is sent is kept: it is being dropped).
    fn push(&self, text: impl FnOnce() -> String) {
        if self.queue.overflowed.load(Ordering::Relaxed) {
            return;
        }
        let text = text();
        let len = text.len();
        let before = self.queue.waiting.fetch_add(len, Ordering::Relaxed);
        // The first message waiting may be larger than the bound: an
        // answer is never too large in itself, only a queue too long.
        if before > 0 && before + len > self.queue.limit {
            self.queue.overflow(before + len);
            return;
        }
        // The writer only stops when the output is gone; nothing to do then.
        let _ = self.tx.send(text);
    }

    /// An outbox named `name` in the log, and the receiving end a writer
    /// drains.
    pub(crate) fn pair(name: String) -> (Outbox, Queued) {
        Self::bounded(name, MAX_UNSENT_BYTES)
    }

    fn bounded(name: String, limit: usize) -> (Outbox, Queued) {
        let (tx, rx) = mpsc::unbounded_channel();
        let queue = Queue::new(name, limit);
        let queued = Queued {
            rx,
            queue: queue.clone(),
        };
        (Outbox { tx, queue }, queued)
    }

    /// True once the writer is gone (the connection closed).
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }

    /// True once more than [`MAX_UNSENT_BYTES`] waited: nothing sent to
    /// it goes out any more (its owner drops the connection).
    pub fn is_overflowed(&self) -> bool {
        self.queue.overflowed.load(Ordering::Relaxed)
    }

    /// An outbox whose output a test reads from the other half.
    #[cfg(test)]
    pub fn channel() -> (Outbox, Sent) {
        let (outbox, queued) = Outbox::pair("a test".into());
        (outbox, Sent(queued))
    }
}

/// A message's JSON text with its `"jsonrpc": "2.0"` first, as
/// `lsp-server` writes it in a frame.
fn message_text(message: &Message) -> String {
    #[derive(serde::Serialize)]
    struct JsonRpc<'a> {
        jsonrpc: &'static str,
        #[serde(flatten)]
        message: &'a Message,
    }
    serde_json::to_string(&JsonRpc {
        jsonrpc: "2.0",
        message,
    })
    .expect("messages serialize")
}

/// What a writer drains: the texts sent to an outbox, in order.
#[derive(Debug)]
pub(crate) struct Queued {
    rx: mpsc::UnboundedReceiver<String>,
    queue: Arc<Queue>,
}

impl Queued {
    /// The next text to write; `None` once every outbox is gone.
    pub(crate) async fn recv(&mut self) -> Option<String> {
        let text = self.rx.recv().await?;
        self.queue.waiting.fetch_sub(text.len(), Ordering::Relaxed);
        Some(text)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.rx.is_empty()
    }

    /// The signal that this connection overflowed.
    pub(crate) fn overflow(&self) -> Overflow {
        Overflow(self.queue.clone())
    }
}

/// Tells whoever owns a connection that its outbox overflowed.
#[derive(Debug, Clone)]
pub struct Overflow(Arc<Queue>);

impl Overflow {
    pub fn happened(&self) -> bool {
        self.0.overflowed.load(Ordering::Relaxed)
    }

    /// Returns once the outbox overflowed (at once if it has).
    pub async fn wait(&self) {
        loop {
            // Registered before the check, so an overflow in between is
            // not missed.
            let overflowed = self.0.overflow.notified();
            if self.happened() {
                return;
            }
            overflowed.await;
        }
    }
}

/// What an outbox made by `Outbox::channel` sent.
#[cfg(test)]
pub struct Sent(Queued);

#[cfg(test)]
impl Sent {
    /// Everything sent since the last call, each message as JSON.
    pub fn take(&mut self) -> Vec<serde_json::Value> {
        let mut out = Vec::new();
        while let Ok(text) = self.0.rx.try_recv() {
            self.0
                .queue
                .waiting
                .fetch_sub(text.len(), Ordering::Relaxed);
            out.push(serde_json::from_str(&text).expect("outboxes send JSON"));
        }
        out
    }
}

/// The writer task `spawn_writer` started.
pub struct Writer {
    task: tokio::task::JoinHandle<io::Result<()>>,
    /// Bytes written so far: whether it is getting anywhere.
    written: Arc<AtomicU64>,
    overflow: Overflow,
}

impl Writer {
    /// True once its outbox overflowed: the client is not reading.
    pub fn overflowed(&self) -> bool {
        self.overflow.happened()
    }

    /// Waits for everything queued to be written, as long as the reader
    /// takes some of it every `STALLED_OUTPUT`: a client that stopped
    /// reading (its stdout still open) cannot keep the process alive. After
    /// an overflow nothing more is written: the output already lost a
    /// message, and the client was not reading it.
    pub async fn finish(mut self) -> io::Result<()> {
        if self.overflowed() {
            self.task.abort();
            return Err(io::Error::other(format!(
                "the client left more than {} bytes unread; the rest of the output was dropped",
                self.overflow.0.limit
            )));
        }
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

/// Starts the writer task of a stdio connection: each message with its
/// `Content-Length` header. It ends when every `Outbox` is dropped.
/// The most written to stdout in one go.
const WRITE_PIECE: usize = 64 << 10;

pub fn spawn_writer<W: AsyncWrite + Unpin + Send + 'static>(mut output: W) -> (Outbox, Writer) {
    let (outbox, mut queued) = Outbox::pair("the stdio client".into());
    let overflow = queued.overflow();
    let written = Arc::new(AtomicU64::new(0));
    let counter = written.clone();
    let task = tokio::spawn(async move {
        while let Some(text) = queued.recv().await {
            let header = format!("Content-Length: {}\r\n\r\n", text.len());
            // Header and body in one buffer when it is small: each write to
            // stdout is a trip to a blocking thread, a cost the append path
            // shows. A large body is not copied to put a header before it
            // (a 78 MB history would be held twice).
            let frame = if text.len() <= WRITE_PIECE {
                let mut frame = header;
                frame.push_str(&text);
                drop(text);
                frame
            } else {
                output.write_all(header.as_bytes()).await?;
                counter.fetch_add(header.len() as u64, Ordering::Relaxed);
                text
            };
            // Written in pieces, so a slow reader still shows progress.
            for piece in frame.as_bytes().chunks(WRITE_PIECE) {
                output.write_all(piece).await?;
                counter.fetch_add(piece.len() as u64, Ordering::Relaxed);
            }
            if queued.is_empty() {
                output.flush().await?;
            }
        }
        output.flush().await
    });
    let writer = Writer {
        task,
        written,
        overflow,
    };
    (outbox, writer)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A test's outbox bounded at 100 bytes.
    fn small() -> (Outbox, Sent) {
        let (outbox, queued) = Outbox::bounded("a test".into(), 100);
        (outbox, Sent(queued))
    }

    fn text(len: usize) -> serde_json::Value {
        // Its JSON text is `len` bytes, quotes included.
        serde_json::Value::String("x".repeat(len - 2))
    }

    #[tokio::test]
    async fn a_queue_past_the_bound_overflows_and_keeps_nothing_more() {
        let (out, mut sent) = small();
        let overflow = sent.0.overflow();
        // One message larger than the bound, with nothing before it, goes.
        out.send_json(text(1000));
        assert_eq!(sent.take().len(), 1);
        for _ in 0..4 {
            out.send_json(text(25));
        }
        assert!(!out.is_overflowed(), "4 × 25 bytes is the bound");
        assert!(!overflow.happened());
        out.send_json(text(2));
        assert!(out.is_overflowed());
        overflow.wait().await;
        out.send_json(text(2));
        // What waited before the overflow is still there (its owner drops
        // it with the connection); nothing after it.
        assert_eq!(sent.take().len(), 4);
    }

    #[test]
    fn what_the_writer_takes_no_longer_counts() {
        let (out, mut sent) = small();
        for _ in 0..100 {
            out.send_json(text(60));
            assert_eq!(sent.take().len(), 1);
        }
        assert!(!out.is_overflowed());
        assert_eq!(sent.0.queue.waiting.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn messages_carry_jsonrpc_first() {
        let message: Message =
            lsp_server::Notification::new("x/y".into(), serde_json::json!({"a": 1})).into();
        assert_eq!(
            message_text(&message),
            r#"{"jsonrpc":"2.0","method":"x/y","params":{"a":1}}"#
        );
    }
}
