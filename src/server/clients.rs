//! The dispatcher's clients: one on stdio, any number on the shared
//! sidecar. Each has its own outbox, LSP lifecycle phase and
//! subscriptions; this is where every message the state owner sends finds
//! its connection.
//!
//! - **Responses go to the sender.** Request ids are the clients' own, so
//!   two clients may both send id 1. A request from a WebSocket connection
//!   is handled under a server-wide id (`<its id>@<connection>`), and
//!   answering that id sends the client's id back on its connection.
//!   Handlers, waiters and cancellation never see connections.
//! - **Session notifications go to its subscribers.** A connection
//!   subscribes with `conversation/subscribe`, and by opening, importing or
//!   branching a session; the connection whose message is being handled
//!   also gets what that message caused. On stdio the one client gets
//!   everything.
//! - **Progress goes to the token's connection.** A token (the client's
//!   `workDoneToken`, or one created with `window/workDoneProgress/create`)
//!   belongs to the connection that asked for the work. Clients choose
//!   their tokens as they choose ids, so a WebSocket client's token is
//!   handled as `<token>@<connection>` too (`window/workDoneProgress/cancel`
//!   names it the same way), and progress under it is sent with the
//!   client's own token. Each connection has its own `ProgressTokens`
//!   (LSP 3.17: a created token is used once that connection accepted it,
//!   never when it refused it).

use std::collections::{HashMap, HashSet};

use lsp_server::{Notification, RequestId, Response};

use super::progress::ProgressTokens;
use super::rpc::ResultFrame;
use crate::protocol::ProgressToken;
use crate::transport::{ConnectionId, Outbox, STDIO};

/// A connection's place in the LSP lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Uninitialized,
    Running,
    ShuttingDown,
}

/// One connection's state.
pub(crate) struct Client {
    pub out: Outbox,
    pub phase: Phase,
    /// The progress tokens compactd asked it to create (it can when it
    /// advertised `window.workDoneProgress`), and what became of them.
    pub progress: ProgressTokens,
    /// Sessions whose notifications it gets.
    pub subscriptions: HashSet<String>,
}

#[derive(Default)]
pub(crate) struct Clients {
    /// Several connections (the shared sidecar): notifications go by
    /// subscription. On stdio the one client gets every notification.
    shared: bool,
    clients: HashMap<ConnectionId, Client>,
    /// Requests in the dispatcher's hands: its id → connection and the
    /// client's own id.
    pending: HashMap<RequestId, (ConnectionId, RequestId)>,
    /// The connection whose message (or whose request's job) is being
    /// handled; it gets the notifications that causes.
    pub current: Option<ConnectionId>,
    /// Progress tokens as the dispatcher knows them → connection and the
    /// token that connection knows.
    tokens: HashMap<ProgressToken, (ConnectionId, ProgressToken)>,
}

impl Clients {
    pub fn new(shared: bool) -> Clients {
        Clients {
            shared,
            ..Clients::default()
        }
    }

    pub fn is_shared(&self) -> bool {
        self.shared
    }

    pub fn add(&mut self, id: ConnectionId, out: Outbox) {
        let client = Client {
            out,
            phase: Phase::Uninitialized,
            progress: ProgressTokens::default(),
            subscriptions: HashSet::new(),
        };
        self.clients.insert(id, client);
    }

    /// Forgets a connection: its outbox goes (the writer ends after what is
    /// queued); answers to its requests and its progress are dropped.
    /// Returns the sessions it was subscribed to.
    pub fn remove(&mut self, id: ConnectionId) -> HashSet<String> {
        let subscriptions = self
            .clients
            .remove(&id)
            .map(|client| client.subscriptions)
            .unwrap_or_default();
        self.pending.retain(|_, (conn, _)| *conn != id);
        self.tokens.retain(|_, (conn, _)| *conn != id);
        if self.current == Some(id) {
            self.current = None;
        }
        subscriptions
    }

    /// Whether any connection is subscribed to the session.
    pub fn is_subscribed_by_any(&self, session_id: &str) -> bool {
        self.clients
            .values()
            .any(|client| client.subscriptions.contains(session_id))
    }

    /// Whether a connection other than the current one is subscribed.
    pub fn is_subscribed_by_another(&self, session_id: &str) -> bool {
        self.clients.iter().any(|(id, client)| {
            Some(*id) != self.current && client.subscriptions.contains(session_id)
        })
    }

    pub fn get(&self, id: ConnectionId) -> Option<&Client> {
        self.clients.get(&id)
    }

    /// The current connection's state.
    pub fn current_mut(&mut self) -> Option<&mut Client> {
        self.current.and_then(|id| self.clients.get_mut(&id))
    }

    /// The id the dispatcher handles a request under; `None` when the
    /// connection already has a request with that id in flight (answering
    /// both under one id would lose one of the answers).
    pub fn accept_request(&mut self, conn: ConnectionId, id: RequestId) -> Option<RequestId> {
        let internal = Self::internal_id(conn, &id);
        if self.pending.contains_key(&internal) {
            return None;
        }
        self.pending.insert(internal.clone(), (conn, id));
        Some(internal)
    }

    fn internal_id(conn: ConnectionId, id: &RequestId) -> RequestId {
        if conn == STDIO {
            id.clone()
        } else {
            RequestId::from(format!("{id}@{conn}"))
        }
    }

    /// The dispatcher's id for a request a client names (in
    /// `$/cancelRequest`).
    pub fn request_of(&self, conn: ConnectionId, id: &RequestId) -> RequestId {
        Self::internal_id(conn, id)
    }

    /// The connection a request came from, while it is unanswered.
    pub fn connection_of(&self, internal: &RequestId) -> Option<ConnectionId> {
        self.pending.get(internal).map(|(conn, _)| *conn)
    }

    /// Sends the answer to a request to its sender, under its own id.
    pub fn respond(&mut self, internal: &RequestId, response: Response) {
        let Some((conn, id)) = self.pending.remove(internal) else {
            tracing::debug!("no connection waits for {internal}; answer dropped");
            return;
        };
        if let Some(client) = self.clients.get(&conn) {
            client.out.send(Response { id, ..response });
        }
    }

    /// Sends an answer written as its frame (`ResultFrame`) to its
    /// sender, under its own id.
    pub fn respond_framed(&mut self, internal: &RequestId, frame: ResultFrame) {
        let Some((conn, id)) = self.pending.remove(internal) else {
            tracing::debug!("no connection waits for {internal}; answer dropped");
            return;
        };
        if let Some(client) = self.clients.get(&conn) {
            client.out.send_text(frame.close(&id));
        }
    }

    pub fn send_json_to(&self, conn: ConnectionId, value: serde_json::Value) {
        if let Some(client) = self.clients.get(&conn) {
            client.out.send_json(value);
        }
    }

    /// Sends a notification about a session to its subscribers.
    pub fn notify_session(&self, session_id: &str, method: &str, params: impl serde::Serialize) {
        let notification = Notification::new(method.to_string(), params);
        for (id, client) in &self.clients {
            let follows = !self.shared
                || client.subscriptions.contains(session_id)
                || self.current == Some(*id);
            if follows {
                client.out.send(notification.clone());
            }
        }
    }

    /// Sends a notification to every connection.
    pub fn broadcast(&self, method: &str, params: impl serde::Serialize) {
        let notification = Notification::new(method.to_string(), params);
        for client in self.clients.values() {
            client.out.send(notification.clone());
        }
    }

    /// Subscribes the current connection to a session's notifications.
    pub fn subscribe_current(&mut self, session_id: &str) {
        if let Some(client) = self.current_mut() {
            client.subscriptions.insert(session_id.to_string());
        }
    }

    /// Unsubscribes the current connection; true when it was subscribed.
    pub fn unsubscribe_current(&mut self, session_id: &str) -> bool {
        self.current_mut()
            .is_some_and(|client| client.subscriptions.remove(session_id))
    }

    /// Connections subscribed to `from` also get `to`'s notifications (a
    /// handoff).
    pub fn carry_subscribers(&mut self, from: &str, to: &str) {
        for client in self.clients.values_mut() {
            if client.subscriptions.contains(from) {
                client.subscriptions.insert(to.to_string());
            }
        }
    }

    /// The token the dispatcher uses for a client's `workDoneToken`.
    pub fn accept_token(&mut self, conn: ConnectionId, token: ProgressToken) -> ProgressToken {
        let internal = Self::internal_token(conn, &token);
        self.tokens.insert(internal.clone(), (conn, token));
        internal
    }

    /// The dispatcher's token for one a client names (in
    /// `window/workDoneProgress/cancel`).
    pub fn token_of(&self, conn: ConnectionId, token: &ProgressToken) -> ProgressToken {
        Self::internal_token(conn, token)
    }

    fn internal_token(conn: ConnectionId, token: &ProgressToken) -> ProgressToken {
        match token {
            _ if conn == STDIO => token.clone(),
            ProgressToken::Number(n) => ProgressToken::String(format!("{n}@{conn}")),
            ProgressToken::String(s) => ProgressToken::String(format!("{s:?}@{conn}")),
        }
    }

    /// Asks a connection to create a progress token (when it advertised
    /// `window.workDoneProgress`); the dispatcher's name for it.
    pub fn create_token(&mut self, conn: ConnectionId) -> Option<ProgressToken> {
        let client = self.clients.get_mut(&conn)?;
        let theirs = client.progress.create(&client.out)?;
        Some(self.accept_token(conn, theirs))
    }

    /// Sends one progress value to the connection `token` belongs to,
    /// under the token that connection knows, as its `ProgressTokens`
    /// allow (held back until a created token is accepted, dropped when
    /// refused). The token is forgotten once its progress ends.
    pub fn send_progress(&mut self, token: &ProgressToken, value: serde_json::Value) {
        let Some((conn, theirs)) = self.tokens.get(token).cloned() else {
            return;
        };
        let ends = value["kind"] == "end";
        if let Some(client) = self.clients.get_mut(&conn) {
            client.progress.send(&client.out, &theirs, value);
        }
        if ends {
            self.tokens.remove(token);
        }
    }

    /// A connection's answer to a request of ours (a token's creation);
    /// false when it answers nothing we asked that connection.
    pub fn answered(&mut self, conn: ConnectionId, response: &Response) -> bool {
        self.clients
            .get_mut(&conn)
            .is_some_and(|client| client.progress.answered(&client.out, response))
    }
}

/// What a handler may do with the connection whose message it handles:
/// its lifecycle, its subscriptions and its progress tokens; nothing of
/// any other connection's.
pub(crate) struct Caller<'a> {
    clients: &'a mut Clients,
}

impl<'a> Caller<'a> {
    pub fn new(clients: &'a mut Clients) -> Caller<'a> {
        Caller { clients }
    }

    /// Several connections share this server (the shared sidecar).
    pub fn is_shared(&self) -> bool {
        self.clients.is_shared()
    }

    pub fn set_phase(&mut self, phase: Phase) {
        if let Some(client) = self.clients.current_mut() {
            client.phase = phase;
        }
    }

    /// It said at `initialize` whether it creates progress tokens.
    pub fn set_creates_tokens(&mut self, creates: bool) {
        if let Some(client) = self.clients.current_mut() {
            client.progress.client_creates = creates;
        }
    }

    /// A progress token it is asked to create, for work it asked for
    /// (`None` when it cannot create them).
    pub fn create_token(&mut self) -> Option<ProgressToken> {
        let conn = self.clients.current?;
        self.clients.create_token(conn)
    }

    pub fn subscribe(&mut self, session_id: &str) {
        self.clients.subscribe_current(session_id);
    }

    /// True when it was subscribed.
    pub fn unsubscribe(&mut self, session_id: &str) -> bool {
        self.clients.unsubscribe_current(session_id)
    }

    /// Another connection is subscribed to the session.
    pub fn shares(&self, session_id: &str) -> bool {
        self.clients.is_subscribed_by_another(session_id)
    }
}
