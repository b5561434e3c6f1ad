//! What handling a message (or a finished job) causes for the clients, in
//! the order it happened: the state's owners return it and the dispatcher
//! delivers it (`Dispatcher::deliver`), so no owner writes to a connection
//! or calls back into the dispatcher. Answers a job owes go through here
//! too, after the notifications the job caused.

use lsp_server::RequestId;
use serde::Serialize;
use serde_json::Value;

use super::rpc::RpcResult;
use crate::protocol::methods::{self, ServerNotification};
use crate::protocol::{MeterInfo, ProgressToken, TokensNotification};

/// One thing to send, or a subscription to change.
#[derive(Debug)]
pub(crate) enum Effect {
    /// A notification about a session, to the connections subscribed to it
    /// (and the one whose message this is).
    Notify {
        session_id: String,
        method: &'static str,
        params: Value,
    },
    /// A notification to every connection.
    Broadcast { method: &'static str, params: Value },
    /// A `$/progress` value under one of the dispatcher's tokens.
    Progress { token: ProgressToken, value: Value },
    /// The answer to a request a job held (or a cancel released).
    Respond {
        id: RequestId,
        result: RpcResult<Value>,
    },
    /// The connection whose message (or job) this is subscribes to a
    /// session.
    Subscribe(String),
    /// Connections subscribed to `from` also get `to`'s notifications (a
    /// handoff's new session).
    CarrySubscribers { from: String, to: String },
}

/// The effects of one message, in order.
#[derive(Debug, Default)]
pub(crate) struct Effects(Vec<Effect>);

impl Effects {
    /// A notification `M` about a session, with `M`'s params (their type
    /// from the method table).
    pub fn notify<M: ServerNotification<Params: Serialize>>(
        &mut self,
        session_id: &str,
        params: M::Params,
    ) {
        self.0.push(Effect::Notify {
            session_id: session_id.to_string(),
            method: M::NAME,
            params: to_value(params),
        });
    }

    /// `conversation/tokens` with a meter already worked out.
    pub fn meter(&mut self, session_id: &str, meter: MeterInfo) {
        let params = TokensNotification {
            session_id: session_id.to_string(),
            meter,
        };
        self.notify::<methods::Tokens>(session_id, params);
    }

    /// A notification `M` to every connection.
    pub fn broadcast<M: ServerNotification<Params: Serialize>>(&mut self, params: M::Params) {
        self.0.push(Effect::Broadcast {
            method: M::NAME,
            params: to_value(params),
        });
    }

    pub fn progress(&mut self, token: &ProgressToken, value: Value) {
        self.0.push(Effect::Progress {
            token: token.clone(),
            value,
        });
    }

    /// An answer: an error to any request, a result only through the
    /// request's `jobs::Pending` (typed by its method).
    pub fn respond(&mut self, id: RequestId, result: RpcResult<Value>) {
        self.0.push(Effect::Respond { id, result });
    }

    pub fn subscribe(&mut self, session_id: &str) {
        self.0.push(Effect::Subscribe(session_id.to_string()));
    }

    pub fn carry_subscribers(&mut self, from: &str, to: &str) {
        self.0.push(Effect::CarrySubscribers {
            from: from.to_string(),
            to: to.to_string(),
        });
    }
}

impl IntoIterator for Effects {
    type Item = Effect;
    type IntoIter = std::vec::IntoIter<Effect>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

fn to_value(params: impl Serialize) -> Value {
    serde_json::to_value(params).expect("notifications serialize")
}
