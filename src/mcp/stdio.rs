//! `compactd mcp` on stdin and stdout: a framing layer in front of `rmcp`,
//! which talks to it through an in-memory pipe. Three tasks:
//!
//! - the reader cuts stdin into lines (`framing::LineSplitter`, at most
//!   16 MiB held), checks each (`framing::decode_line`) and lets `gate::Gate`
//!   decide: passed on to `rmcp` as one re-serialized line, or answered
//!   here; at the end of stdin it closes `rmcp`'s input, and `rmcp` answers
//!   what is in flight and stops;
//! - the relay copies each line `rmcp` writes to the writer, telling the
//!   gate which request it answers;
//! - the writer alone writes to stdout, one whole line at a time.
//!
//! Logs go to stderr (the tracing subscriber), never to stdout.

use std::sync::{Arc, Mutex};

use rmcp::service::ServerInitializeError;
use rmcp::ServiceExt;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use super::framing::{self, LineEvent, LineSplitter, MAX_LINE_BYTES};
use super::gate::{Admit, Gate};
use super::History;

/// The in-memory pipe's buffer, each way.
const PIPE_BYTES: usize = 1 << 16;
/// How much of stdin one read takes.
const READ_BYTES: usize = 1 << 16;
/// Lines waiting for the writer; a client that does not read its answers
/// stops being read from.
const QUEUED_LINES: usize = 64;

/// Serves `history` on stdin and stdout until stdin ends; `Ok` at the end
/// of input (before `initialize` too).
pub async fn serve_stdio(history: History) -> Result<(), String> {
    serve(history, tokio::io::stdin(), tokio::io::stdout()).await
}

/// [`serve_stdio`] over any input and output.
pub async fn serve<R, W>(history: History, input: R, output: W) -> Result<(), String>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (rmcp_end, pump_end) = tokio::io::duplex(PIPE_BYTES);
    let (from_rmcp, to_rmcp) = tokio::io::split(pump_end);
    let gate = Arc::new(Mutex::new(Gate::default()));
    let (lines, queued) = mpsc::channel::<Vec<u8>>(QUEUED_LINES);
    let writer = tokio::spawn(write_lines(output, queued));
    let relay = tokio::spawn(relay(from_rmcp, gate.clone(), lines.clone()));
    let reader = tokio::spawn(read_lines(input, to_rmcp, gate, lines));
    let served = match history.serve(rmcp_end).await {
        Ok(service) => service
            .waiting()
            .await
            .map(|_| ())
            .map_err(|e| format!("MCP: {e}")),
        // Its input ended before `initialize`: the client went away.
        Err(ServerInitializeError::ConnectionClosed(_)) => Ok(()),
        Err(e) => Err(format!("MCP: {e}")),
    };
    // Done at the end of stdin; else `rmcp` stopped on its own, and the
    // reader may wait on stdin forever.
    reader.abort();
    let _ = relay.await;
    let _ = writer.await;
    served
}

/// Reads `input` to its end, answering or passing on each line.
async fn read_lines<R, P>(
    mut input: R,
    mut to_rmcp: P,
    gate: Arc<Mutex<Gate>>,
    lines: mpsc::Sender<Vec<u8>>,
) where
    R: AsyncRead + Unpin,
    P: AsyncWrite + Unpin,
{
    let mut splitter = LineSplitter::new(MAX_LINE_BYTES);
    let mut buf = vec![0u8; READ_BYTES];
    let mut events = Vec::new();
    loop {
        let read = input.read(&mut buf).await;
        let ended = match read {
            Ok(0) => true,
            Ok(n) => {
                splitter.feed(&buf[..n], &mut events);
                false
            }
            Err(e) => {
                tracing::error!("compactd mcp: reading stdin: {e}");
                true
            }
        };
        if ended {
            splitter.finish(&mut events);
        }
        for event in events.drain(..) {
            let Some(line) = take(event, &gate, &lines).await else {
                continue;
            };
            if to_rmcp.write_all(&line).await.is_err() {
                return; // `rmcp` stopped.
            }
        }
        if ended {
            let _ = to_rmcp.shutdown().await;
            return;
        }
    }
}

/// One line or overlong line from stdin: the line to pass on to `rmcp`
/// (newline included), or `None` when it was answered here or dropped.
async fn take(
    event: LineEvent,
    gate: &Mutex<Gate>,
    lines: &mpsc::Sender<Vec<u8>>,
) -> Option<Vec<u8>> {
    let refused = match event {
        LineEvent::TooLong { head } => framing::FramingError::too_long(&head, MAX_LINE_BYTES),
        LineEvent::Line(line) if framing::is_blank(&line) => return None,
        LineEvent::Line(line) => match framing::decode_line(&line) {
            Ok(message) => return admit(message, gate, lines).await,
            Err(refused) => refused,
        },
    };
    tracing::warn!("compactd mcp: refused a line: {}", refused.why);
    if let Some(response) = refused.response {
        send(lines, &response).await;
    }
    None
}

async fn admit(
    message: Value,
    gate: &Mutex<Gate>,
    lines: &mpsc::Sender<Vec<u8>>,
) -> Option<Vec<u8>> {
    let admit = gate
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .admit(&message);
    match admit {
        Admit::Forward => {
            let mut line = serde_json::to_vec(&message).expect("a JSON value serializes");
            line.push(b'\n');
            Some(line)
        }
        Admit::Refuse { response, why } => {
            tracing::warn!("compactd mcp: {why}");
            send(lines, &response).await;
            None
        }
        Admit::Drop(why) => {
            tracing::warn!("compactd mcp: dropped: {why}");
            None
        }
    }
}

async fn send(lines: &mpsc::Sender<Vec<u8>>, message: &Value) {
    let line = serde_json::to_vec(message).expect("a JSON value serializes");
    let _ = lines.send(line).await;
}

/// Copies `rmcp`'s lines to the writer; each answer frees its id.
async fn relay<P>(from_rmcp: P, gate: Arc<Mutex<Gate>>, lines: mpsc::Sender<Vec<u8>>)
where
    P: AsyncRead + Unpin,
{
    let mut from_rmcp = BufReader::new(from_rmcp);
    let mut line = Vec::new();
    loop {
        line.clear();
        match from_rmcp.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        while line.last().is_some_and(|b| matches!(b, b'\n' | b'\r')) {
            line.pop();
        }
        if line.is_empty() {
            continue;
        }
        // Freed before the answer is out: a client may reuse the id at once.
        gate.lock().unwrap_or_else(|e| e.into_inner()).sent(&line);
        if lines.send(std::mem::take(&mut line)).await.is_err() {
            return;
        }
    }
}

/// Writes each line whole, then its newline, and flushes.
async fn write_lines<W>(mut output: W, mut queued: mpsc::Receiver<Vec<u8>>)
where
    W: AsyncWrite + Unpin,
{
    while let Some(mut line) = queued.recv().await {
        line.push(b'\n');
        if let Err(e) = async {
            output.write_all(&line).await?;
            output.flush().await
        }
        .await
        {
            tracing::error!("compactd mcp: writing stdout: {e}");
            return;
        }
    }
}
