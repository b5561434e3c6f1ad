//! From method to handler, typed: each route names a method's marker
//! (`protocol::methods::Append`, from the method table) and a handler whose
//! params and result are that method's, so a handler that drifts from the
//! table is a compile error, as is a notification routed as a request or
//! the reverse (the kind traits of `protocol::methods`); a handler answered
//! later gets the request as a `jobs::Pending` of its method, answered with
//! that method's result. One walk of the routes dispatches a message; in
//! tests the same walk lists what is routed (`exit` is the dispatcher's
//! own). A test holds the routes, the method table and `docs/protocol.md`
//! to each other.

use lsp_server::{ErrorCode, Notification, Request};
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::context::Context;
use super::handlers::{
    append, branch, cancel, cancel_progress, check, close, compact, compactions, did_change,
    did_change_configuration, did_change_watched_files, did_close, did_open, did_save, files_did,
    files_list, files_unchanged_since_read, follow, history, import, lifecycle,
    list_agent_sessions, messages, open, pin, preview, recap, report_error, search,
    set_auto_compact, subscribe, unfollow, unsubscribe,
};
use super::jobs::Pending;
use super::rpc::{parse_params, Reply, ResultFrame, RpcError, RpcResult};
use crate::protocol::methods::{self, ClientNotification, ClientRequest, Method, Untyped};
use crate::protocol::FileOp;

/// A handler answering now.
type Now<M> = fn(&mut Context, <M as Method>::Params) -> RpcResult<<M as Method>::Result>;
/// A handler whose answer a background job may owe (`Reply::Later`).
type Later<M> = fn(&mut Context, Pending<M>, <M as Method>::Params) -> Reply<<M as Method>::Result>;
/// A handler answering now with its result already written as the
/// answer's frame (`ResultFrame`: an answer too large to hold twice).
type Framed<M> =
    fn(&mut Context, <M as Method>::Params) -> RpcResult<ResultFrame<<M as Method>::Result>>;
/// A notification's handler (a result, for a method that may also be a
/// request, is dropped).
type Notify<M> = fn(&mut Context, <M as Method>::Params) -> RpcResult<<M as Method>::Result>;

/// A request the routes decode and answer.
trait Answered: ClientRequest<Params: DeserializeOwned, Result: Serialize> {}
impl<M: ClientRequest<Params: DeserializeOwned, Result: Serialize>> Answered for M {}

/// A notification the routes decode.
trait Decoded: ClientNotification<Params: DeserializeOwned> {}
impl<M: ClientNotification<Params: DeserializeOwned>> Decoded for M {}

/// A notification whose params are not read.
type Bare = fn(&mut Context);

/// What the request routes are walked with.
trait RequestRoutes {
    fn on<M: Answered>(&mut self, handler: Now<M>) -> &mut Self;
    fn later<M: Answered>(&mut self, handler: Later<M>) -> &mut Self;
    fn framed<M: Answered>(&mut self, handler: Framed<M>) -> &mut Self;
}

/// What the notification routes are walked with.
trait NotificationRoutes {
    fn on<M: Decoded>(&mut self, handler: Notify<M>) -> &mut Self;
    fn bare<M: ClientNotification<Params = Untyped>>(&mut self, handler: Bare) -> &mut Self;
}

/// Every request compactd answers, with its handler.
fn requests(routes: &mut impl RequestRoutes) {
    routes
        .on::<methods::Initialize>(lifecycle::initialize)
        .on::<methods::Shutdown>(lifecycle::shutdown)
        .on::<methods::Open>(open::handle)
        .on::<methods::CloseSession>(close::handle)
        .on::<methods::Append>(append::handle)
        .framed::<methods::History>(history::handle)
        .later::<methods::Compact>(compact::start)
        .on::<methods::Check>(check::handle)
        .on::<methods::SetAutoCompact>(set_auto_compact::handle)
        .on::<methods::Preview>(preview::handle)
        .on::<methods::Compactions>(compactions::handle)
        .on::<methods::Branch>(branch::handle)
        .on::<methods::Pin>(pin::handle)
        .later::<methods::ReportError>(report_error::start)
        .later::<methods::Import>(import::start)
        .later::<methods::Recap>(recap::start)
        .later::<methods::Search>(search::start)
        .on::<methods::Messages>(messages::handle)
        .later::<methods::Follow>(follow::start)
        .on::<methods::Unfollow>(unfollow::handle)
        .on::<methods::ListAgentSessions>(list_agent_sessions::handle)
        .on::<methods::Subscribe>(subscribe::handle)
        .on::<methods::Unsubscribe>(unsubscribe::handle)
        .on::<methods::FilesList>(files_list::handle)
        .on::<methods::FilesUnchangedSinceRead>(files_unchanged_since_read::handle);
}

/// Every notification compactd takes, with its handler.
fn notifications(routes: &mut impl NotificationRoutes) {
    routes
        // Auto-follow starts once the client is ready for notifications.
        .bare::<methods::Initialized>(|s| s.state.apply_follow_mode(&mut s.effects))
        .on::<methods::CancelRequest>(|s, p| {
            cancel::handle(s, p);
            Ok(())
        })
        .on::<methods::WorkDoneProgressCancel>(|s, p| {
            cancel_progress::handle(s, p);
            Ok(())
        })
        .bare::<methods::SetTrace>(|_| {})
        // The WebSocket edge takes it as a connection's first message; a
        // later one (or one on stdio) changes nothing.
        .on::<methods::Authenticate>(|_, _| Ok(()))
        .bare::<methods::LogTrace>(|_| {})
        .on::<methods::DidChangeConfiguration>(|s, p| {
            did_change_configuration::handle(s, p);
            Ok(())
        })
        .on::<methods::Append>(append::handle)
        .on::<methods::FilesDidRead>(|s, p| files_did::handle(s, p, FileOp::Read))
        .on::<methods::FilesDidModify>(|s, p| files_did::handle(s, p, FileOp::Modify))
        .on::<methods::FilesDidCreate>(|s, p| files_did::handle(s, p, FileOp::Create))
        .on::<methods::FilesDidDelete>(|s, p| files_did::handle(s, p, FileOp::Delete))
        .on::<methods::DidOpen>(did_open::handle)
        .on::<methods::DidChange>(did_change::handle)
        .on::<methods::DidSave>(did_save::handle)
        .on::<methods::DidClose>(did_close::handle)
        .on::<methods::DidChangeWatchedFiles>(did_change_watched_files::handle);
}

/// One request on its way to the route of its method.
struct DispatchRequest<'c, 'a> {
    context: &'c mut Context<'a>,
    /// Until a route takes it.
    request: Option<Request>,
    reply: Option<Reply>,
}

impl DispatchRequest<'_, '_> {
    fn take<M: Method>(&mut self) -> Option<Request> {
        self.request.take_if(|r| r.method == M::NAME)
    }
}

impl RequestRoutes for DispatchRequest<'_, '_> {
    fn on<M: Answered>(&mut self, handler: Now<M>) -> &mut Self {
        if let Some(request) = self.take::<M>() {
            let result = parse_params(request.params).and_then(|p| handler(self.context, p));
            self.reply = Some(Reply::Now(result).json());
        }
        self
    }

    fn later<M: Answered>(&mut self, handler: Later<M>) -> &mut Self {
        if let Some(request) = self.take::<M>() {
            let reply = match parse_params(request.params) {
                Ok(p) => handler(self.context, Pending::new(request.id), p),
                Err(e) => Reply::Now(Err(e)),
            };
            self.reply = Some(reply.json());
        }
        self
    }

    fn framed<M: Answered>(&mut self, handler: Framed<M>) -> &mut Self {
        if let Some(request) = self.take::<M>() {
            let reply = match parse_params(request.params).and_then(|p| handler(self.context, p)) {
                Ok(frame) => Reply::Framed(frame.erase()),
                Err(e) => Reply::Now(Err(e)),
            };
            self.reply = Some(reply);
        }
        self
    }
}

/// One notification on its way to the route of its method.
struct DispatchNotification<'c, 'a> {
    context: &'c mut Context<'a>,
    /// Until a route takes it.
    notification: Option<Notification>,
    /// What its handler came to, once routed.
    outcome: Option<RpcResult<()>>,
}

impl DispatchNotification<'_, '_> {
    fn take<M: Method>(&mut self) -> Option<Notification> {
        self.notification.take_if(|n| n.method == M::NAME)
    }
}

impl NotificationRoutes for DispatchNotification<'_, '_> {
    fn on<M: Decoded>(&mut self, handler: Notify<M>) -> &mut Self {
        if let Some(notification) = self.take::<M>() {
            let outcome = parse_params(notification.params).and_then(|p| handler(self.context, p));
            self.outcome = Some(outcome.map(drop));
        }
        self
    }

    fn bare<M: ClientNotification<Params = Untyped>>(&mut self, handler: Bare) -> &mut Self {
        if self.take::<M>().is_some() {
            handler(self.context);
            self.outcome = Some(Ok(()));
        }
        self
    }
}

pub(crate) fn request(context: &mut Context, request: Request) -> Reply {
    let method = request.method.clone();
    let mut dispatch = DispatchRequest {
        context,
        request: Some(request),
        reply: None,
    };
    requests(&mut dispatch);
    dispatch.reply.unwrap_or_else(|| {
        Reply::Now(Err(RpcError::new(
            ErrorCode::MethodNotFound,
            format!("method not found: `{method}`"),
        )))
    })
}

pub(crate) fn notification(context: &mut Context, notification: Notification) {
    let method = notification.method.clone();
    let mut dispatch = DispatchNotification {
        context,
        notification: Some(notification),
        outcome: None,
    };
    notifications(&mut dispatch);
    match dispatch.outcome {
        None => tracing::debug!("unknown notification `{method}` ignored"),
        Some(Err(error)) => tracing::error!("notification `{method}` failed: {}", error.message),
        Some(Ok(())) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The routes walked for their names.
    #[derive(Default)]
    struct Names(Vec<&'static str>);

    impl RequestRoutes for Names {
        fn on<M: Answered>(&mut self, _: Now<M>) -> &mut Self {
            self.0.push(M::NAME);
            self
        }
        fn later<M: Answered>(&mut self, _: Later<M>) -> &mut Self {
            self.0.push(M::NAME);
            self
        }
        fn framed<M: Answered>(&mut self, _: Framed<M>) -> &mut Self {
            self.0.push(M::NAME);
            self
        }
    }

    impl NotificationRoutes for Names {
        fn on<M: Decoded>(&mut self, _: Notify<M>) -> &mut Self {
            self.0.push(M::NAME);
            self
        }
        fn bare<M: ClientNotification<Params = Untyped>>(&mut self, _: Bare) -> &mut Self {
            self.0.push(M::NAME);
            self
        }
    }

    fn routed_requests() -> Vec<&'static str> {
        let mut names = Names::default();
        requests(&mut names);
        names.0
    }

    /// Notifications the routes answer, and `exit`, which the dispatcher
    /// handles before routing (its exit code depends on the phase).
    fn routed_notifications() -> Vec<&'static str> {
        let mut names = Names::default();
        notifications(&mut names);
        names.0.push(methods::Exit::NAME);
        names.0
    }

    #[test]
    fn each_method_is_routed_once() {
        for names in [routed_requests(), routed_notifications()] {
            for (i, name) in names.iter().enumerate() {
                assert!(!names[..i].contains(name), "`{name}` is routed twice");
            }
        }
    }

    #[test]
    fn every_client_method_in_the_table_is_routed_and_nothing_else() {
        for method in methods::ALL {
            assert_eq!(
                routed_requests().contains(&method.name),
                method.kind.is_request(),
                "{}: {:?} vs the request routes",
                method.name,
                method.kind
            );
            assert_eq!(
                routed_notifications().contains(&method.name),
                method.kind.is_notification(),
                "{}: {:?} vs the notification routes",
                method.name,
                method.kind
            );
        }
        for name in routed_requests().into_iter().chain(routed_notifications()) {
            assert!(
                methods::find(name).is_some(),
                "`{name}` is routed but not in the table"
            );
        }
    }

    /// Method names as `docs/protocol.md` writes them: in backticks, of the
    /// shape `resource/verb` (or `$/verb`).
    fn documented_methods(text: &str) -> Vec<String> {
        let shape = |name: &str| {
            let parts: Vec<&str> = name.split('/').collect();
            parts.len() >= 2
                && (parts[0] == "$"
                    || (!parts[0].is_empty() && parts[0].chars().all(|c| c.is_ascii_alphabetic())))
                && parts[1..].iter().all(|p| {
                    p.starts_with(|c: char| c.is_ascii_lowercase())
                        && p.chars().all(|c| c.is_ascii_alphabetic())
                })
        };
        text.split('`')
            .skip(1)
            .step_by(2)
            .filter(|name| shape(name))
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn the_protocol_document_names_exactly_the_methods_of_the_table() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/protocol.md");
        let text = std::fs::read_to_string(path).expect("docs/protocol.md");
        for method in methods::ALL {
            assert!(
                text.contains(&format!("`{}`", method.name)),
                "`{}` ({:?}) is not documented in docs/protocol.md",
                method.name,
                method.kind
            );
        }
        for name in &documented_methods(&text) {
            assert!(
                methods::find(name).is_some(),
                "docs/protocol.md documents `{name}`, which is not in the method table (nor routed)"
            );
        }
    }

    #[test]
    fn initialize_advertises_compactd_requests_and_every_server_notification() {
        assert_eq!(
            methods::advertised_requests(),
            [
                "conversation/open",
                "conversation/close",
                "conversation/append",
                "conversation/history",
                "conversation/compact",
                "conversation/check",
                "conversation/setAutoCompact",
                "conversation/preview",
                "conversation/compactions",
                "conversation/branch",
                "conversation/pin",
                "conversation/reportError",
                "conversation/import",
                "conversation/recap",
                "conversation/search",
                "conversation/messages",
                "conversation/follow",
                "conversation/unfollow",
                "conversation/listAgentSessions",
                "conversation/subscribe",
                "conversation/unsubscribe",
                "files/list",
                "files/unchangedSinceRead",
            ]
        );
        assert_eq!(
            methods::advertised_notifications(),
            [
                "conversation/tokens",
                "conversation/didCompact",
                "conversation/autoCompactStopped",
                "conversation/didFollow",
                "$/progress",
                "files/didChange",
            ]
        );
    }
}
