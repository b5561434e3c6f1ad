//! Work-done progress, as LSP 3.17 has it: under the client's
//! `workDoneToken`, or under a token compactd asks the client to create
//! (`window/workDoneProgress/create`, only for a compaction that will run).
//! A created token is used only once the client accepted it: until its
//! answer the begin, the latest report and the end are held back, then sent
//! in that order; a token the client refused is never used.

use std::collections::{HashMap, HashSet};

use lsp_server::{RequestId, Response};

use crate::protocol::methods::{self, Method};
use crate::protocol::ProgressToken;
use crate::transport::Outbox;

/// What is held back under a token the client has not answered for yet.
#[derive(Debug, Default)]
struct Held {
    begin: Option<serde_json::Value>,
    report: Option<serde_json::Value>,
    end: Option<serde_json::Value>,
}

/// The progress tokens compactd created and what became of them.
#[derive(Debug, Default)]
pub(crate) struct ProgressTokens {
    /// The client creates tokens on request (it advertised
    /// `window.workDoneProgress`).
    pub client_creates: bool,
    next: u64,
    /// Tokens asked for, by the id of the create request.
    asked: HashMap<RequestId, ProgressToken>,
    /// Tokens the client has not answered for yet.
    held: HashMap<ProgressToken, Held>,
    /// Tokens the client refused, until their progress ends.
    refused: HashSet<ProgressToken>,
}

impl ProgressTokens {
    /// Asks the client to create a token; `None` when it cannot.
    pub fn create(&mut self, out: &Outbox) -> Option<ProgressToken> {
        if !self.client_creates {
            return None;
        }
        self.next += 1;
        let token = ProgressToken::String(format!("compactd/{}", self.next));
        let id = RequestId::from(format!("compactd-progress-{}", self.next));
        out.send(lsp_server::Request::new(
            id.clone(),
            methods::WorkDoneProgressCreate::NAME.to_string(),
            serde_json::json!({ "token": token }),
        ));
        self.asked.insert(id, token.clone());
        self.held.insert(token.clone(), Held::default());
        Some(token)
    }

    /// Sends one progress value (`begin`, `report` or `end`) under `token`,
    /// or holds it back until the client answers, or drops it when the
    /// client refused the token.
    pub fn send(&mut self, out: &Outbox, token: &ProgressToken, value: serde_json::Value) {
        let ends = value["kind"] == "end";
        if let Some(held) = self.held.get_mut(token) {
            match value["kind"].as_str() {
                Some("begin") => held.begin = Some(value),
                Some("end") => held.end = Some(value),
                _ => held.report = Some(value),
            }
            return;
        }
        if self.refused.contains(token) {
            if ends {
                self.refused.remove(token);
            }
            return;
        }
        send_progress(out, token, value);
    }

    /// The client's answer to a create request. Returns false when the
    /// response answers no request of ours.
    pub fn answered(&mut self, out: &Outbox, response: &Response) -> bool {
        let Some(token) = self.asked.remove(&response.id) else {
            return false;
        };
        let held = self.held.remove(&token).unwrap_or_default();
        match &response.response_result {
            Ok(_) => {
                for value in [held.begin, held.report, held.end].into_iter().flatten() {
                    send_progress(out, &token, value);
                }
            }
            Err(error) => {
                tracing::info!(
                    "the client refused progress token {token:?} ({}: {}); no progress is sent under it",
                    error.code,
                    error.message
                );
                if held.end.is_none() {
                    self.refused.insert(token);
                }
            }
        }
        true
    }
}

/// Sends `$/progress` under `token`.
fn send_progress(out: &Outbox, token: &ProgressToken, value: serde_json::Value) {
    out.notify(
        methods::Progress::NAME,
        serde_json::json!({ "token": token, "value": value }),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use lsp_server::ResponseError;
    use serde_json::json;

    fn kinds(messages: &[serde_json::Value]) -> Vec<String> {
        messages
            .iter()
            .map(|m| match m["method"].as_str() {
                Some("$/progress") => m["params"]["value"]["kind"].as_str().unwrap().to_string(),
                Some(method) => method.to_string(),
                None => "response".into(),
            })
            .collect()
    }

    fn answer(id: &str, ok: bool) -> Response {
        Response {
            id: RequestId::from(id.to_string()),
            response_result: if ok {
                Ok(serde_json::Value::Null)
            } else {
                Err(ResponseError {
                    code: -32603,
                    message: "no".into(),
                    data: None,
                })
            },
        }
    }

    #[test]
    fn a_created_token_waits_for_the_answer_and_a_refused_one_is_never_used() {
        let (out, mut sent) = Outbox::channel();
        let mut tokens = ProgressTokens {
            client_creates: true,
            ..ProgressTokens::default()
        };
        let accepted = tokens.create(&out).unwrap();
        tokens.send(&out, &accepted, json!({"kind": "begin"}));
        tokens.send(&out, &accepted, json!({"kind": "report", "percentage": 10}));
        tokens.send(&out, &accepted, json!({"kind": "report", "percentage": 20}));
        assert_eq!(kinds(&sent.take()), ["window/workDoneProgress/create"]);
        assert!(tokens.answered(&out, &answer("compactd-progress-1", true)));
        let flushed = sent.take();
        assert_eq!(kinds(&flushed), ["begin", "report"]);
        assert_eq!(flushed[1]["params"]["value"]["percentage"], 20);
        tokens.send(&out, &accepted, json!({"kind": "end"}));
        assert_eq!(kinds(&sent.take()), ["end"]);

        let refused = tokens.create(&out).unwrap();
        tokens.send(&out, &refused, json!({"kind": "begin"}));
        assert!(tokens.answered(&out, &answer("compactd-progress-2", false)));
        tokens.send(&out, &refused, json!({"kind": "report"}));
        tokens.send(&out, &refused, json!({"kind": "end"}));
        assert_eq!(kinds(&sent.take()), ["window/workDoneProgress/create"]);
        assert!(tokens.refused.is_empty() && tokens.held.is_empty());
        assert!(!tokens.answered(&out, &answer("someone-else", true)));
    }

    #[test]
    fn a_client_that_cannot_create_tokens_gets_none() {
        let (out, mut sent) = Outbox::channel();
        assert_eq!(ProgressTokens::default().create(&out), None);
        assert!(sent.take().is_empty());
    }
}
