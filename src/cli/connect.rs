//! `compactd connect`: a stdio ↔ WebSocket bridge to a running shared
//! sidecar, so any client that spawns a stdio language server (Neovim's
//! `vim.lsp`, an agent's LSP library) attaches to it with no WebSocket
//! code. Frames from stdin are read as the server reads them (malformed
//! input is answered here, as the server would) and sent one JSON-RPC
//! message per WebSocket message; what the server sends is written to
//! stdout with its `Content-Length` header, in order.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use super::args::ConnectArgs;
use super::error::CliError;
use super::out::outln;
use crate::transport::discovery;
use crate::transport::ws_client::{self, Receiver, Sender};
use crate::transport::{self, Incoming, Outbox};

pub async fn run(args: &ConnectArgs) -> Result<(), CliError> {
    if args.check {
        return check(args).await;
    }
    let (url, token) = target(args)?;
    let (sender, receiver) = ws_client::connect(&url, &token)
        .await
        .map_err(CliError::Failure)?;
    tracing::info!("attached to {url}");
    // One writer for stdout: the server's messages and the answers to bad
    // input never interleave.
    let (stdout, writer) = transport::spawn_writer(tokio::io::stdout());
    let pending = Arc::new(Pending::default());
    let upstream = tokio::spawn(forward_stdin(sender, stdout.clone(), pending.clone()));
    let result = forward_server(receiver, &stdout, &pending).await;
    upstream.abort();
    drop(stdout);
    let _ = writer.finish().await;
    result
}

/// `--check`: a live server's URL on stdout, or why there is none.
async fn check(args: &ConnectArgs) -> Result<(), CliError> {
    let path = discovery::resolve_path(args.discovery_file.as_deref())
        .ok_or_else(|| CliError::Failure("no default discovery file path".into()))?;
    match discovery::live(&path).await? {
        Some(found) => {
            outln!("{}", found.url);
            Ok(())
        }
        None => Err(CliError::Failure(format!(
            "no live shared compactd ({}: missing, or left by a server that is gone)",
            path.display()
        ))),
    }
}

/// The URL (flag, else discovery file) and the token (COMPACTD_TOKEN, else
/// the discovery file's).
fn target(args: &ConnectArgs) -> Result<(String, String), CliError> {
    let path = discovery::resolve_path(args.discovery_file.as_deref());
    let found = match &path {
        Some(path) => discovery::read(path)?,
        None => None,
    };
    let token = std::env::var("COMPACTD_TOKEN")
        .ok()
        .or_else(|| found.as_ref().map(|d| d.token.clone()));
    let url = args
        .url
        .clone()
        .or_else(|| found.as_ref().map(|d| d.url.clone()));
    match (url, token) {
        (Some(url), Some(token)) => Ok((url, token)),
        _ => Err(CliError::Failure(format!(
            "no shared compactd: no discovery file at {} (start one with `compactd serve --listen 127.0.0.1:0`)",
            path.map_or("(no default path)".into(), |p| p.display().to_string())
        ))),
    }
}

/// The requests sent and not answered yet: at the end of stdin the bridge
/// waits for their answers before it closes the connection, as the stdio
/// server answers everything it read before it exits.
#[derive(Default)]
struct Pending {
    ids: Mutex<HashSet<String>>,
    answered: Notify,
}

impl Pending {
    fn sent(&self, message: &serde_json::Value) {
        if message.get("method").is_some() {
            if let Some(id) = message.get("id") {
                self.lock().insert(id.to_string());
            }
        }
    }

    fn received(&self, message: &serde_json::Value) {
        if message.get("method").is_none() {
            if let Some(id) = message.get("id") {
                self.lock().remove(&id.to_string());
                self.answered.notify_waiters();
            }
        }
    }

    async fn all_answered(&self) {
        loop {
            let answered = self.answered.notified();
            if self.lock().is_empty() {
                return;
            }
            answered.await;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.ids.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// stdin frames → WebSocket messages, until stdin ends and every request
/// sent is answered.
async fn forward_stdin(mut sender: Sender, stdout: Outbox, pending: Arc<Pending>) {
    let stdin = tokio::io::BufReader::new(tokio::io::stdin());
    let mut reader = transport::Reader::new(stdin);
    loop {
        let text = match reader.next().await {
            Ok(Some(Incoming::Message(message))) => {
                let json = transport::message_json(&message);
                pending.sent(&json);
                json.to_string()
            }
            Ok(Some(Incoming::Refused { response, why })) => {
                tracing::error!("refused bad input: {why}");
                stdout.send_json(response);
                continue;
            }
            Ok(Some(Incoming::Skipped(why))) => {
                tracing::error!("skipped bad input: {why}");
                continue;
            }
            Ok(None) | Err(_) => break,
        };
        if sender.send_text_owned(text).await.is_err() || sender.flush().await.is_err() {
            return;
        }
    }
    pending.all_answered().await;
    let _ = sender.close().await;
}

/// WebSocket messages → stdout frames, until the server closes.
async fn forward_server(
    mut receiver: Receiver,
    stdout: &Outbox,
    pending: &Pending,
) -> Result<(), CliError> {
    loop {
        let mut data = Vec::new();
        match receiver.receive_data(&mut data).await {
            Ok(_) => match serde_json::from_slice::<serde_json::Value>(&data) {
                Ok(value) => {
                    pending.received(&value);
                    stdout.send_json(value);
                    if stdout.is_overflowed() {
                        // Its client is not reading: forwarding more would
                        // only grow the bridge (the outbox logged it).
                        return Err(CliError::Failure(
                            "the stdio client left too much output unread".into(),
                        ));
                    }
                }
                Err(e) => {
                    tracing::error!("the server sent a message that is not JSON ({e}); dropped")
                }
            },
            Err(soketto::connection::Error::Closed) => return Ok(()),
            Err(e) => return Err(CliError::Failure(format!("connection lost: {e}"))),
        }
    }
}
