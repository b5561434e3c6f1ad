//! The one table from method name to handler.

use lsp_server::{ErrorCode, Notification, Request};

use super::handlers::{
    append, branch, cancel, check, compact, compactions, did_change, did_change_configuration,
    did_change_watched_files, did_close, did_open, did_save, files_did, files_list,
    files_unchanged_since_read, history, import, lifecycle, open, pin, preview, report_error,
    set_auto_compact,
};
use super::{parse_params, Reply, RpcError, Server};
use crate::files::FileOp;
use crate::protocol::methods;

/// Methods this server answers, as advertised in `initialize`.
pub const REQUESTS: &[&str] = &[
    methods::OPEN,
    methods::APPEND,
    methods::HISTORY,
    methods::COMPACT,
    methods::CHECK,
    methods::SET_AUTO_COMPACT,
    methods::PREVIEW,
    methods::COMPACTIONS,
    methods::BRANCH,
    methods::PIN,
    methods::REPORT_ERROR,
    methods::IMPORT,
    methods::FILES_LIST,
    methods::FILES_UNCHANGED_SINCE_READ,
];

pub const NOTIFICATIONS_SENT: &[&str] = &[
    methods::TOKENS,
    methods::DID_COMPACT,
    methods::AUTO_COMPACT_STOPPED,
    "$/progress",
    methods::FILES_DID_CHANGE,
];

pub(crate) fn request(server: &mut Server, request: Request) -> Reply {
    let Request { id, method, params } = request;
    macro_rules! now {
        ($handler:path) => {
            Reply::from(parse_params(params).and_then(|p| $handler(server, p)))
        };
    }
    match method.as_str() {
        "initialize" => now!(lifecycle::initialize),
        "shutdown" => now!(lifecycle::shutdown),
        methods::OPEN => now!(open::handle),
        methods::APPEND => now!(append::handle),
        methods::HISTORY => now!(history::handle),
        methods::CHECK => now!(check::handle),
        methods::SET_AUTO_COMPACT => now!(set_auto_compact::handle),
        methods::PREVIEW => now!(preview::handle),
        methods::COMPACTIONS => now!(compactions::handle),
        methods::BRANCH => now!(branch::handle),
        methods::PIN => now!(pin::handle),
        methods::IMPORT => now!(import::handle),
        methods::FILES_LIST => now!(files_list::handle),
        methods::FILES_UNCHANGED_SINCE_READ => now!(files_unchanged_since_read::handle),
        methods::COMPACT => match parse_params(params) {
            Ok(p) => compact::start(server, id, p),
            Err(e) => Reply::Now(Err(e)),
        },
        methods::REPORT_ERROR => match parse_params(params) {
            Ok(p) => report_error::start(server, id, p),
            Err(e) => Reply::Now(Err(e)),
        },
        _ => Reply::Now(Err(RpcError::new(
            ErrorCode::MethodNotFound,
            format!("method not found: `{method}`"),
        ))),
    }
}

pub(crate) fn notification(server: &mut Server, notification: Notification) {
    let Notification { method, params } = notification;
    let result = match method.as_str() {
        "initialized" => Ok(()),
        "$/cancelRequest" => parse_params(params).map(|p| cancel::handle(server, p)),
        methods::APPEND => parse_params(params).and_then(|p| append::handle(server, p).map(drop)),
        "workspace/didChangeConfiguration" => {
            parse_params(params).map(|p| did_change_configuration::handle(server, p))
        }
        methods::FILES_DID_READ => {
            parse_params(params).and_then(|p| files_did::handle(server, p, FileOp::Read))
        }
        methods::FILES_DID_MODIFY => {
            parse_params(params).and_then(|p| files_did::handle(server, p, FileOp::Modify))
        }
        methods::FILES_DID_CREATE => {
            parse_params(params).and_then(|p| files_did::handle(server, p, FileOp::Create))
        }
        methods::FILES_DID_DELETE => {
            parse_params(params).and_then(|p| files_did::handle(server, p, FileOp::Delete))
        }
        methods::DID_OPEN => parse_params(params).and_then(|p| did_open::handle(server, p)),
        methods::DID_CHANGE => parse_params(params).and_then(|p| did_change::handle(server, p)),
        methods::DID_SAVE => parse_params(params).and_then(|p| did_save::handle(server, p)),
        methods::DID_CLOSE => parse_params(params).and_then(|p| did_close::handle(server, p)),
        methods::DID_CHANGE_WATCHED_FILES => {
            parse_params(params).and_then(|p| did_change_watched_files::handle(server, p))
        }
        "$/setTrace" | "$/logTrace" => Ok(()),
        _ => {
            tracing::debug!("unknown notification `{method}` ignored");
            Ok(())
        }
    };
    if let Err(error) = result {
        tracing::error!("notification `{method}` failed: {}", error.message);
    }
}
