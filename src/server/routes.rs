//! From method name to handler: one table for requests, one for
//! notifications, keyed by the names in `protocol::methods` (`exit` is the
//! dispatcher's own). A test holds these tables, the method table and
//! `docs/protocol.md` to each other.

use lsp_server::{ErrorCode, Notification, Request, RequestId};
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
use super::rpc::{parse_params, Reply, RpcError, RpcResult};
use crate::protocol::{methods, FileOp};

type RequestRoute = fn(&mut Context, RequestId, serde_json::Value) -> Reply;
type NotificationRoute = fn(&mut Context, serde_json::Value) -> RpcResult<()>;

/// Answered now: decode the params, run the handler, answer its result.
fn now<P: DeserializeOwned, R: Serialize>(
    context: &mut Context,
    params: serde_json::Value,
    handler: fn(&mut Context, P) -> RpcResult<R>,
) -> Reply {
    Reply::from(parse_params(params).and_then(|p| handler(context, p)))
}

/// Answered later, by a background job the handler starts.
fn later<P: DeserializeOwned>(
    context: &mut Context,
    id: RequestId,
    params: serde_json::Value,
    handler: fn(&mut Context, RequestId, P) -> Reply,
) -> Reply {
    match parse_params(params) {
        Ok(p) => handler(context, id, p),
        Err(e) => Reply::Now(Err(e)),
    }
}

fn notify<P: DeserializeOwned>(
    context: &mut Context,
    params: serde_json::Value,
    handler: fn(&mut Context, P) -> RpcResult<()>,
) -> RpcResult<()> {
    parse_params(params).and_then(|p| handler(context, p))
}

const REQUESTS: &[(&str, RequestRoute)] = &[
    (methods::INITIALIZE, |s, _, p| {
        now(s, p, lifecycle::initialize)
    }),
    (methods::SHUTDOWN, |s, _, p| now(s, p, lifecycle::shutdown)),
    (methods::OPEN, |s, _, p| now(s, p, open::handle)),
    (methods::CLOSE_SESSION, |s, _, p| now(s, p, close::handle)),
    (methods::APPEND, |s, _, p| now(s, p, append::handle)),
    (methods::HISTORY, |s, _, p| now(s, p, history::handle)),
    (methods::COMPACT, |s, id, p| later(s, id, p, compact::start)),
    (methods::CHECK, |s, _, p| now(s, p, check::handle)),
    (methods::SET_AUTO_COMPACT, |s, _, p| {
        now(s, p, set_auto_compact::handle)
    }),
    (methods::PREVIEW, |s, _, p| now(s, p, preview::handle)),
    (methods::COMPACTIONS, |s, _, p| {
        now(s, p, compactions::handle)
    }),
    (methods::BRANCH, |s, _, p| now(s, p, branch::handle)),
    (methods::PIN, |s, _, p| now(s, p, pin::handle)),
    (methods::REPORT_ERROR, |s, id, p| {
        later(s, id, p, report_error::start)
    }),
    (methods::IMPORT, |s, id, p| later(s, id, p, import::start)),
    (methods::RECAP, |s, id, p| later(s, id, p, recap::start)),
    (methods::SEARCH, |s, id, p| later(s, id, p, search::start)),
    (methods::MESSAGES, |s, _, p| now(s, p, messages::handle)),
    (methods::FOLLOW, |s, _, p| now(s, p, follow::handle)),
    (methods::UNFOLLOW, |s, _, p| now(s, p, unfollow::handle)),
    (methods::LIST_AGENT_SESSIONS, |s, _, p| {
        now(s, p, list_agent_sessions::handle)
    }),
    (methods::SUBSCRIBE, |s, _, p| now(s, p, subscribe::handle)),
    (methods::UNSUBSCRIBE, |s, _, p| {
        now(s, p, unsubscribe::handle)
    }),
    (methods::FILES_LIST, |s, _, p| now(s, p, files_list::handle)),
    (methods::FILES_UNCHANGED_SINCE_READ, |s, _, p| {
        now(s, p, files_unchanged_since_read::handle)
    }),
];

const NOTIFICATIONS: &[(&str, NotificationRoute)] = &[
    // Auto-follow starts once the client is ready for notifications.
    (methods::INITIALIZED, |s, _| {
        s.state.apply_follow_mode(&mut s.effects);
        Ok(())
    }),
    (methods::CANCEL_REQUEST, |s, p| {
        parse_params(p).map(|p| cancel::handle(s, p))
    }),
    (methods::WORK_DONE_PROGRESS_CANCEL, |s, p| {
        parse_params(p).map(|p| cancel_progress::handle(s, p))
    }),
    (methods::SET_TRACE, |_, _| Ok(())),
    // The WebSocket edge takes it as a connection's first message; a later
    // one (or one on stdio) changes nothing.
    (methods::AUTHENTICATE, |_, _| Ok(())),
    (methods::LOG_TRACE, |_, _| Ok(())),
    (methods::DID_CHANGE_CONFIGURATION, |s, p| {
        parse_params(p).map(|p| did_change_configuration::handle(s, p))
    }),
    (methods::APPEND, |s, p| {
        parse_params(p).and_then(|p| append::handle(s, p).map(drop))
    }),
    (methods::FILES_DID_READ, |s, p| {
        parse_params(p).and_then(|p| files_did::handle(s, p, FileOp::Read))
    }),
    (methods::FILES_DID_MODIFY, |s, p| {
        parse_params(p).and_then(|p| files_did::handle(s, p, FileOp::Modify))
    }),
    (methods::FILES_DID_CREATE, |s, p| {
        parse_params(p).and_then(|p| files_did::handle(s, p, FileOp::Create))
    }),
    (methods::FILES_DID_DELETE, |s, p| {
        parse_params(p).and_then(|p| files_did::handle(s, p, FileOp::Delete))
    }),
    (methods::DID_OPEN, |s, p| notify(s, p, did_open::handle)),
    (methods::DID_CHANGE, |s, p| notify(s, p, did_change::handle)),
    (methods::DID_SAVE, |s, p| notify(s, p, did_save::handle)),
    (methods::DID_CLOSE, |s, p| notify(s, p, did_close::handle)),
    (methods::DID_CHANGE_WATCHED_FILES, |s, p| {
        notify(s, p, did_change_watched_files::handle)
    }),
];

pub(crate) fn request(context: &mut Context, request: Request) -> Reply {
    let Request { id, method, params } = request;
    match REQUESTS.iter().find(|(name, _)| *name == method) {
        Some((_, route)) => route(context, id, params),
        None => Reply::Now(Err(RpcError::new(
            ErrorCode::MethodNotFound,
            format!("method not found: `{method}`"),
        ))),
    }
}

pub(crate) fn notification(context: &mut Context, notification: Notification) {
    let Notification { method, params } = notification;
    let Some((_, route)) = NOTIFICATIONS.iter().find(|(name, _)| *name == method) else {
        tracing::debug!("unknown notification `{method}` ignored");
        return;
    };
    if let Err(error) = route(context, params) {
        tracing::error!("notification `{method}` failed: {}", error.message);
    }
}

#[cfg(test)]
mod tests {
    use super::{NOTIFICATIONS, REQUESTS};
    use crate::protocol::methods;

    fn routed_requests() -> Vec<&'static str> {
        REQUESTS.iter().map(|(name, _)| *name).collect()
    }

    /// Notifications the routes answer, and `exit`, which the dispatcher
    /// handles before routing (its exit code depends on the phase).
    fn routed_notifications() -> Vec<&'static str> {
        let mut names: Vec<&str> = NOTIFICATIONS.iter().map(|(name, _)| *name).collect();
        names.push(methods::EXIT);
        names
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
