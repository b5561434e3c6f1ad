//! Work-done progress as LSP 3.17 has it, through the real binary: a token
//! compactd creates (`window/workDoneProgress/create`) only for a
//! compaction that runs, used only once the client accepted it, never when
//! it refused; `window/workDoneProgress/cancel` stops a compaction, an
//! automatic one included; percentages are numbers or absent, and rise
//! over a whole split-turn compaction; a session open read-only gets no
//! token and no compaction.

use serde_json::{json, Value};

use crate::fixture::{openai_stream, End, Fixture, Reply};
use crate::support::Server;

/// Turns of user and assistant text, `words` words each.
fn chat(n: usize, words: usize) -> Vec<Value> {
    (0..n)
        .map(|i| {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            json!({"role": role, "content": format!("turn {i} {}", "word ".repeat(words))})
        })
        .collect()
}

/// Where in `received` the response to `id` is.
fn position_of_response(server: &Server, id: i64) -> usize {
    server
        .received
        .iter()
        .position(|m| m["id"] == json!(id) && m.get("method").is_none())
        .expect("response received")
}

/// `$/progress` values received under `token`.
fn progress_under(server: &Server, token: &Value) -> Vec<Value> {
    server
        .received_notifications("$/progress")
        .into_iter()
        .filter(|p| p["token"] == *token)
        .map(|p| p["value"].clone())
        .collect()
}

fn creates(server: &Server) -> usize {
    server
        .received
        .iter()
        .filter(|m| m["method"] == "window/workDoneProgress/create")
        .count()
}

#[test]
fn a_token_is_created_only_for_a_compaction_that_runs() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start_creating_progress(
        dir.path(),
        json!({"autoCompactTokenLimit": 1, "keepRecentTokens": 20}),
    );
    let id = server.open(json!({}));
    // Every append fires a trigger, but one message leaves nothing to cut.
    let append = server.send_request(
        "conversation/append",
        json!({"sessionId": id, "messages": chat(1, 50)}),
    );
    let appended = server.response(append).unwrap();
    assert_eq!(appended["shouldCompact"], true);
    assert_eq!(appended["compacting"], false);
    let compact = server.request("conversation/compact", json!({"sessionId": id}));
    assert_eq!(compact.unwrap()["compacted"], false);
    assert_eq!(creates(&server), 0, "{:?}", server.received);

    // A compaction that runs gets one.
    let append = server.send_request(
        "conversation/append",
        json!({"sessionId": id, "messages": chat(4, 50)}),
    );
    let create = server.next_where(|m| m["method"] == "window/workDoneProgress/create");
    assert_eq!(server.response(append).unwrap()["compacting"], true);
    server.send(json!({"jsonrpc": "2.0", "id": create["id"], "result": null}));
    let end = server.wait_progress_end();
    assert_eq!(end["token"], create["params"]["token"]);
    assert_eq!(creates(&server), 1);
}

#[test]
fn progress_waits_for_the_clients_answer_and_a_refused_token_is_never_used() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start_creating_progress(dir.path(), json!({"keepRecentTokens": 20}));
    let id = server.open(json!({}));
    server.append(&id, chat(10, 150));

    // Not answered yet: the compaction runs and is answered, but nothing
    // goes under the token.
    let compact = server.send_request("conversation/compact", json!({"sessionId": id}));
    let create = server.next_where(|m| m["method"] == "window/workDoneProgress/create");
    let token = create["params"]["token"].clone();
    let result = server.response(compact).unwrap();
    assert_eq!(result["compacted"], true, "{result}");
    assert!(progress_under(&server, &token).is_empty());
    // Accepted: what was held back arrives, begin first, end last.
    server.send(json!({"jsonrpc": "2.0", "id": create["id"], "result": null}));
    assert_eq!(server.wait_progress_end()["token"], token);
    let values = progress_under(&server, &token);
    assert_eq!(values.first().unwrap()["kind"], "begin", "{values:?}");
    assert_eq!(values.last().unwrap()["kind"], "end", "{values:?}");

    // Refused: nothing is ever sent under it.
    server.append(&id, chat(10, 150));
    let compact = server.send_request("conversation/compact", json!({"sessionId": id}));
    let create = server.next_where(|m| m["method"] == "window/workDoneProgress/create");
    let token = create["params"]["token"].clone();
    server.send(json!({"jsonrpc": "2.0", "id": create["id"],
                       "error": {"code": -32603, "message": "no progress here"}}));
    let result = server.response(compact).unwrap();
    assert_eq!(result["compacted"], true, "{result}");
    // A round trip after the refusal: the server has read it by now.
    server
        .request("conversation/history", json!({"sessionId": id}))
        .unwrap();
    assert!(
        progress_under(&server, &token).is_empty(),
        "{:?}",
        progress_under(&server, &token)
    );
}

/// A server whose summarizer takes 30 s per call, with a session over its
/// automatic limit once `chat(8, 40)` is appended.
fn slow_server(dir: &std::path::Path) -> (Server, String) {
    let mut server = Server::start_creating_progress(
        dir,
        json!({"autoCompactTokenLimit": 200, "keepRecentTokens": 10,
               "summarizer": {"provider": "test", "delayMs": 30000}}),
    );
    let id = server.open(json!({}));
    (server, id)
}

/// Accepts the token compactd created (its request may have come before
/// the response the test waited for) and waits for its `begin`.
fn accept_and_begin(server: &mut Server) -> Value {
    let is_create = |m: &Value| m["method"] == "window/workDoneProgress/create";
    let create = match server.received.iter().find(|m| is_create(m)) {
        Some(create) => create.clone(),
        None => server.next_where(is_create),
    };
    server.send(json!({"jsonrpc": "2.0", "id": create["id"], "result": null}));
    let token = create["params"]["token"].clone();
    let begin = server.next_where(|m| m["method"] == "$/progress" && m["params"]["token"] == token);
    assert_eq!(begin["params"]["value"]["kind"], "begin");
    token
}

#[test]
fn cancelling_the_progress_stops_an_automatic_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let (mut server, id) = slow_server(dir.path());
    let appended = server.append(&id, chat(8, 40));
    assert_eq!(appended["compacting"], true, "{appended}");
    let token = accept_and_begin(&mut server);
    let before = server
        .request("conversation/history", json!({"sessionId": id}))
        .unwrap();

    server.notify("window/workDoneProgress/cancel", json!({"token": token}));
    let end = server.wait_progress_end();
    assert_eq!(end["token"], token);
    assert_eq!(end["value"]["message"], "cancelled");
    let after = server
        .request("conversation/history", json!({"sessionId": id}))
        .unwrap();
    assert_eq!(before["messages"], after["messages"], "history untouched");
    let records = server
        .request("conversation/compactions", json!({"sessionId": id}))
        .unwrap();
    assert_eq!(records["compactions"], json!([]));
    server.assert_not_compacted(&id);
}

#[test]
fn cancelling_the_progress_of_a_request_answers_it_with_minus_32800() {
    let dir = tempfile::tempdir().unwrap();
    let (mut server, id) = slow_server(dir.path());
    server
        .request(
            "conversation/setAutoCompact",
            json!({"sessionId": id, "enabled": false}),
        )
        .unwrap();
    server.append(&id, chat(8, 40));
    let compact = server.send_request("conversation/compact", json!({"sessionId": id}));
    let token = accept_and_begin(&mut server);
    server.notify("window/workDoneProgress/cancel", json!({"token": token}));
    let err = server.response(compact).unwrap_err();
    assert_eq!(err.code, -32800, "{err:?}");
    let end_at = server
        .received
        .iter()
        .position(|m| m["method"] == "$/progress" && m["params"]["value"]["kind"] == "end")
        .expect("progress ended");
    assert!(end_at < position_of_response(&server, compact));
}

#[test]
fn a_split_turn_compaction_reports_one_rising_sequence_without_nulls() {
    let fixture = Fixture::script(vec![Reply::stream(
        openai_stream(
            &["## Goal\n- Refactor the lexer.", "\n## Next step\n- Test."],
            "stop",
        ),
        End::Complete,
    )]);
    let dir = tempfile::tempdir().unwrap();
    // A summarizer window of 2,000 tokens chunks both the main summary and
    // the split turn's prefix.
    let mut server = Server::start(
        dir.path(),
        json!({"autoCompact": false, "keepRecentTokens": 1200,
               "summarizer": {"provider": "openai", "baseUrl": fixture.url, "model": "fixture",
                              "maxTokens": 200, "timeoutMs": 5000, "contextWindow": 2000}}),
    );
    let id = server.open(json!({}));
    let mut messages = Vec::new();
    for (turn, calls) in [(1, 6), (2, 16)] {
        messages.push(json!({"role": "user", "content": format!("task {turn}: refactor part {turn} of the lexer")}));
        for c in 0..calls {
            let call = format!("c{turn}-{c}");
            messages.push(json!({"role": "assistant", "content": "",
                "toolCalls": [{"id": call, "name": "read", "arguments": {"path": format!("src/lex{c}.rs")}}]}));
            messages.push(json!({"role": "tool", "toolCallId": call,
                "content": format!("fn lex{c}() {{ {} }}", "token(); ".repeat(120))}));
        }
    }
    server.append(&id, messages);
    let token = json!("split");
    let result = server
        .request(
            "conversation/compact",
            json!({"sessionId": id, "workDoneToken": token}),
        )
        .unwrap();
    assert_eq!(result["compacted"], true, "{result}");
    assert!(
        result["summary"]
            .as_str()
            .unwrap()
            .contains("<turn-prefix>"),
        "a split turn: {result}"
    );
    let values = progress_under(&server, &token);
    let firsts = values
        .iter()
        .filter(|v| {
            v["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("summarizing chunk 1 of"))
        })
        .count();
    assert_eq!(firsts, 2, "both parts were chunked: {values:?}");
    let mut percentages = Vec::new();
    for value in &values {
        match value.get("percentage") {
            None => {}
            Some(p) => percentages.push(p.as_u64().unwrap_or_else(|| panic!("{value}"))),
        }
    }
    assert!(
        values
            .iter()
            .any(|v| v["kind"] == "report" && v.get("percentage").is_none()),
        "reports without a percentage leave it out: {values:?}"
    );
    assert!(
        percentages.windows(2).all(|w| w[0] <= w[1]),
        "{percentages:?}"
    );
    assert!(*percentages.last().unwrap() > 80, "{percentages:?}");
}

#[test]
fn a_read_only_session_gets_no_token_and_no_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = Server::start(dir.path(), json!({}));
    writer.open(json!({"sessionId": "s"}));
    writer.append("s", chat(6, 50));
    // A client that creates tokens, with limits every request exceeds.
    let mut reader = Server::start_creating_progress(
        dir.path(),
        json!({"autoCompactTokenLimit": 1, "keepRecentTokens": 20}),
    );
    let opened = reader
        .request(
            "conversation/open",
            json!({"sessionId": "s", "readOnly": true}),
        )
        .unwrap();
    assert_eq!(opened["readOnly"], true);
    let check = reader
        .request("conversation/check", json!({"sessionId": "s"}))
        .unwrap();
    assert_eq!(check["compacting"], false, "{check}");
    let read_only = |result: Result<Value, crate::support::RpcError>| {
        assert_eq!(result.expect_err("refused").code, -32011);
    };
    read_only(reader.request("conversation/compact", json!({"sessionId": "s"})));
    read_only(reader.request(
        "conversation/compact",
        json!({"sessionId": "s", "workDoneToken": "mine"}),
    ));
    read_only(reader.request(
        "conversation/reportError",
        json!({"sessionId": "s", "status": 400, "message": "prompt is too long: 200000 tokens > 100000 maximum"}),
    ));
    // Everything was answered; nothing asked for a token or reported.
    reader
        .request("conversation/history", json!({"sessionId": "s"}))
        .unwrap();
    assert_eq!(creates(&reader), 0, "{:?}", reader.received);
    assert!(reader.received_notifications("$/progress").is_empty());
    reader.assert_not_compacted("s");
}
