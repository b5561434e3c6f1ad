//! Hostile or buggy clients: bad frames, invalid JSON-RPC and bad request
//! ids, through the real binary. The server must answer what it can, run
//! nothing it refused, and keep serving every later request.

use serde_json::{json, Value};

use crate::support::Server;

/// A request body as a client would send it.
fn body(id: Value, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

fn frame(body: &str) -> String {
    format!("Content-Length: {}\r\n\r\n{body}", body.len())
}

/// An append of one user message `text` to `session`, as a raw body.
fn append_body(id: Value, session: &str, text: &str) -> String {
    body(
        id,
        "conversation/append",
        json!({"sessionId": session, "messages": [{"role": "user", "content": text}]}),
    )
}

/// The user messages in `session`'s history.
fn history(server: &mut Server, session: &str) -> Vec<String> {
    let history = server
        .request("conversation/history", json!({"sessionId": session}))
        .unwrap();
    history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// Sends ten appends one at a time, each waiting for its answer, so a
/// reader still stuck on the bad frame would fail here.
fn ten_appends_are_answered(server: &mut Server, session: &str) {
    for i in 0..10 {
        let text = format!("after {i}");
        server.append(session, json!([{"role": "user", "content": text}]));
    }
}

/// The error answers with `id` among `received`.
fn errors_for(received: &[Value], id: &Value) -> Vec<Value> {
    received
        .iter()
        .filter(|m| m.get("method").is_none() && &m["id"] == id && m.get("error").is_some())
        .map(|m| m["error"].clone())
        .collect()
}

struct BadFrame {
    /// What is wrong with it (lengths are relative to the body).
    name: &'static str,
    bytes: String,
    /// The error code it is answered with, under `answer_id`.
    answer: Option<i64>,
    answer_id: Value,
    /// A fragment of the line logged on stderr.
    logged: &'static str,
}

const PARSE_ERROR: Option<i64> = Some(-32700);
const INVALID_REQUEST: Option<i64> = Some(-32600);
const NOT_ANSWERED: Option<i64> = None;

/// A bad frame's name, bytes, answer code, the id answered (`null`, or the
/// lost request's own id when it can still be read) and what is logged.
type Kind = (&'static str, String, Option<i64>, Value, &'static str);

/// The id of the request the bad frames lose, read from what is left of it.
fn lost_id() -> Value {
    json!(500)
}

/// Frames whose `Content-Length` is wrong (`lost` is the body).
fn bad_lengths(lost: &str) -> Vec<Kind> {
    let len = lost.len() as i64;
    let with_length = |n: i64| format!("Content-Length: {n}\r\n\r\n{lost}");
    let huge = "Content-Length: 123456789012345678901234567890\r\n\r\n";
    vec![
        (
            "3 short",
            with_length(len - 3),
            PARSE_ERROR,
            lost_id(),
            "not valid JSON",
        ),
        (
            "1 short",
            with_length(len - 1),
            PARSE_ERROR,
            lost_id(),
            "not valid JSON",
        ),
        (
            "1 long",
            with_length(len + 1),
            PARSE_ERROR,
            lost_id(),
            "parse error",
        ),
        (
            "5 long",
            with_length(len + 5),
            PARSE_ERROR,
            lost_id(),
            "parse error",
        ),
        (
            "40 long",
            with_length(len + 40),
            PARSE_ERROR,
            lost_id(),
            "parse error",
        ),
        (
            "50000 long",
            with_length(len + 50_000),
            PARSE_ERROR,
            lost_id(),
            "next header",
        ),
        (
            "zero",
            with_length(0),
            PARSE_ERROR,
            Value::Null,
            "parse error",
        ),
        (
            "negative",
            with_length(-5),
            NOT_ANSWERED,
            Value::Null,
            "invalid Content-Length",
        ),
        (
            "a word",
            with_length(len).replace(&len.to_string(), "many"),
            NOT_ANSWERED,
            Value::Null,
            "invalid Content-Length",
        ),
        (
            "over the cap",
            "Content-Length: 300000000\r\n\r\n".into(),
            INVALID_REQUEST,
            Value::Null,
            "maxFrameBytes",
        ),
        (
            "more digits than u64",
            huge.into(),
            INVALID_REQUEST,
            Value::Null,
            "maxFrameBytes",
        ),
    ]
}

/// Frames whose header is missing or broken, or whose body is not JSON.
fn bad_headers(lost: &str) -> Vec<Kind> {
    let len = lost.len();
    let only_type = "Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n";
    let cut = frame("{\"jsonrpc\": \"2.0\", \"id\": 500,");
    vec![
        ("invalid JSON", cut, PARSE_ERROR, lost_id(), "parse error"),
        (
            "missing header",
            lost.into(),
            NOT_ANSWERED,
            Value::Null,
            "malformed header line",
        ),
        (
            "only Content-Type",
            format!("{only_type}{lost}"),
            NOT_ANSWERED,
            Value::Null,
            "without Content-Length",
        ),
        (
            "garbage line",
            format!("hello there\r\n{lost}"),
            NOT_ANSWERED,
            Value::Null,
            "malformed header line",
        ),
        (
            "no blank line",
            format!("Content-Length: {len}\r\n{lost}"),
            NOT_ANSWERED,
            Value::Null,
            "malformed header line",
        ),
    ]
}

fn bad_frames(session: &str) -> Vec<BadFrame> {
    let lost = append_body(json!(500), session, "lost");
    let mut frames: Vec<BadFrame> = bad_lengths(&lost)
        .into_iter()
        .chain(bad_headers(&lost))
        .map(|(name, bytes, answer, answer_id, logged)| BadFrame {
            name,
            bytes,
            answer,
            answer_id,
            logged,
        })
        .collect();
    let big = append_body(json!(501), session, &"x".repeat(300_000));
    frames.push(BadFrame {
        name: "oversized request",
        bytes: frame(&big),
        answer: INVALID_REQUEST,
        answer_id: json!(501),
        logged: "maxFrameBytes",
    });
    frames
}

#[test]
fn every_bad_frame_kind_is_followed_by_ten_answered_requests() {
    // One server for all kinds (each in its own session): the stream goes
    // on after every one of them.
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), json!({"maxFrameBytes": 100_000}));
    for index in 0..bad_frames("s").len() {
        let session = server.open(json!({}));
        let BadFrame {
            name,
            bytes,
            answer,
            answer_id,
            logged,
        } = bad_frames(&session).swap_remove(index);
        let (seen, logged_before) = (server.received.len(), server.stderr().len());
        server.send_raw(bytes.as_bytes());
        ten_appends_are_answered(&mut server, &session);
        let expected: Vec<String> = (0..10).map(|i| format!("after {i}")).collect();
        assert_eq!(
            history(&mut server, &session),
            expected,
            "{name}: the bad frame applied nothing"
        );
        let errors = errors_for(&server.received[seen..], &answer_id);
        match answer {
            Some(code) => {
                assert_eq!(
                    errors.len(),
                    1,
                    "{name}: one answer with id {answer_id}: {errors:?}"
                );
                assert_eq!(errors[0]["code"], code, "{name}: {errors:?}");
            }
            None => assert!(
                errors.is_empty(),
                "{name}: not a frame, not answered: {errors:?}"
            ),
        }
        let stderr = server.stderr_after_containing(logged_before, logged);
        assert!(
            stderr.contains(logged),
            "{name}: `{logged}` not logged:\n{stderr}"
        );
    }
}

#[test]
fn bad_frames_back_to_back_then_requests() {
    // Every kind in one stream, without waiting in between.
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), json!({"maxFrameBytes": 100_000}));
    let session = server.open(json!({}));
    let all: String = bad_frames(&session).into_iter().map(|b| b.bytes).collect();
    server.send_raw(all.as_bytes());
    ten_appends_are_answered(&mut server, &session);
    let expected: Vec<String> = (0..10).map(|i| format!("after {i}")).collect();
    assert_eq!(history(&mut server, &session), expected);
    assert_eq!(
        errors_for(&server.received, &json!(501)).len(),
        1,
        "the oversized request is answered"
    );
}

/// Bodies that are not JSON-RPC requests, and the answer each gets
/// (`{id, code}`, or an array of them for a batch).
fn invalid_messages(session: &str) -> Vec<(&'static str, String, Value)> {
    let history = |id: Value| body(id, "conversation/history", json!({"sessionId": session}));
    let parse = |id: Value| json!({"id": id, "code": -32700});
    let invalid = |id: Value| json!({"id": id, "code": -32600});
    let batch = format!(
        "[{},{{\"jsonrpc\":\"2.0\",\"method\":\"x\"}}]",
        history(json!(13))
    );
    vec![
        (
            "unparsable",
            r#"{"jsonrpc":"2.0","id":7,"method":"#.into(),
            parse(json!(7)),
        ),
        (
            "trailing characters",
            format!("{} x", history(json!(8))),
            parse(json!(8)),
        ),
        ("bad escape", r#"{"a":"\u00"}"#.into(), parse(Value::Null)),
        (
            "method not a string",
            r#"{"jsonrpc":"2.0","id":9,"method":5}"#.into(),
            invalid(json!(9)),
        ),
        (
            "method null",
            r#"{"jsonrpc":"2.0","id":"s","method":null}"#.into(),
            invalid(json!("s")),
        ),
        (
            "no jsonrpc",
            r#"{"id":10,"method":"conversation/history"}"#.into(),
            invalid(json!(10)),
        ),
        (
            "jsonrpc 1.0",
            r#"{"jsonrpc":"1.0","id":11,"method":"shutdown"}"#.into(),
            invalid(json!(11)),
        ),
        (
            "neither request nor response",
            r#"{"jsonrpc":"2.0","id":12}"#.into(),
            invalid(json!(12)),
        ),
        (
            "a string",
            r#""conversation/history""#.into(),
            invalid(Value::Null),
        ),
        ("a number", "42".into(), invalid(Value::Null)),
        ("empty batch", "[]".into(), invalid(Value::Null)),
        (
            "a batch",
            batch,
            json!([invalid(json!(13)), invalid(Value::Null)]),
        ),
        // Ids that are strings: the pings' numbers never meet them.
        (
            "broken before the id",
            r#"{"jsonrpc":"2.0","method":"m","params":{"x":tru},"id":"late-16"}"#.into(),
            parse(json!("late-16")),
        ),
        (
            "tool arguments nested 200 levels, id last",
            format!(
                r#"{{"jsonrpc":"2.0","method":"conversation/append","params":{{"sessionId":"{session}","messages":[{{"role":"assistant","content":"","toolCalls":[{{"id":"c","name":"t","arguments":{{"a":{}1{}}}}}]}}]}},"id":"deep-17"}}"#,
                "[".repeat(200),
                "]".repeat(200)
            ),
            invalid(json!("deep-17")),
        ),
        (
            "100,000 nested arrays",
            format!(
                r#"{{"jsonrpc":"2.0","id":"deep-18","method":"conversation/history","params":{}{}}}"#,
                "[".repeat(100_000),
                "]".repeat(100_000)
            ),
            invalid(json!("deep-18")),
        ),
    ]
}

#[test]
fn invalid_json_rpc_gets_minus_32700_or_minus_32600_with_its_id() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), json!({}));
    let session = server.open(json!({}));
    let brief = |a: &Value| json!({"id": a["id"], "code": a["error"]["code"]});
    for (name, bad, expected) in invalid_messages(&session) {
        server.send_raw(frame(&bad).as_bytes());
        let ping = server.send_request("conversation/history", json!({"sessionId": session}));
        let answer = server.next_where(|m| m.get("method").is_none());
        let got = match &answer {
            Value::Array(items) => Value::Array(items.iter().map(brief).collect()),
            single => brief(single),
        };
        assert_eq!(got, expected, "{name}: {answer}");
        assert!(
            server.response(ping).is_ok(),
            "{name}: the next request is answered"
        );
    }
    let shutdown = server.request("shutdown", json!(null));
    assert!(
        shutdown.is_ok(),
        "the refused `shutdown` (jsonrpc 1.0) did not run: {shutdown:?}"
    );
}

#[test]
fn bad_request_ids_are_answered_and_never_applied() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), json!({}));
    let session = server.open(json!({}));
    // Each would append a message if it ran, as a request or as a
    // notification.
    let ids = [
        (json!(1.5), json!(1.5)),
        (json!(2.0), json!(2.0)),
        (json!(2_147_483_648i64), json!(2_147_483_648i64)),
        (json!(-2_147_483_649i64), json!(-2_147_483_649i64)),
        (json!(u64::MAX), json!(u64::MAX)),
        (json!(true), Value::Null),
        (Value::Null, Value::Null),
        (json!({"n": 1}), Value::Null),
        (json!([3]), Value::Null),
    ];
    for (id, echoed) in &ids {
        server.send_raw(frame(&append_body(id.clone(), &session, &format!("id {id}"))).as_bytes());
        let answer = server.next_where(|m| m.get("method").is_none());
        assert_eq!(&answer["id"], echoed, "{id}: {answer}");
        assert_eq!(answer["error"]["code"], -32600, "{id}: {answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("conversation/append` was not run"),
            "{id}: {message}"
        );
    }
    assert!(history(&mut server, &session).is_empty(), "nothing applied");
    // The ids LSP allows all run.
    for id in [
        json!("req-1"),
        json!(2_147_483_647),
        json!(-2_147_483_648i64),
        json!(0),
    ] {
        server.send_raw(frame(&append_body(id.clone(), &session, &format!("id {id}"))).as_bytes());
        let answer = server.next_where(|m| m.get("method").is_none());
        assert_eq!(answer["id"], id);
        assert!(answer["result"]["ids"].is_array(), "{id}: {answer}");
    }
    assert_eq!(history(&mut server, &session).len(), 4);
}

#[test]
fn max_frame_bytes_is_a_setting_with_a_floor() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::spawn(dir.path());
    let err = server
        .request(
            "initialize",
            json!({"processId": null, "capabilities": {}, "initializationOptions": {"dataDir": dir.path(), "maxFrameBytes": 100}}),
        )
        .unwrap_err();
    assert!(err.message.contains("maxFrameBytes"), "{err:?}");
    // Under the default cap, a 300 kB request is fine.
    let mut server = Server::start(dir.path(), json!({}));
    let session = server.open(json!({}));
    server.append(
        &session,
        json!([{"role": "user", "content": "x".repeat(300_000)}]),
    );
    assert_eq!(history(&mut server, &session).len(), 1);
}

/// A lone surrogate escape (a truncated emoji as Python's `json.dumps` or
/// JavaScript's `JSON.stringify` writes it) is text: the request is
/// answered, a notification's batch kept, and each lone surrogate reads
/// as U+FFFD, through a restart.
#[test]
fn lone_surrogates_are_kept_as_the_replacement_character() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), json!({}));
    let session = server.open(json!({"sessionId": "s"}));
    let request = r#"{"jsonrpc":"2.0","id":41,"method":"conversation/append","params":{"sessionId":"s","messages":[{"role":"user","content":"abc\ud83d"},{"role":"user","content":"\ude00 pair \ud83d\ude00"}]}}"#;
    server.send_raw(frame(request).as_bytes());
    let answer = server.next_where(|m| m["id"] == 41);
    assert!(answer.get("result").is_some(), "{answer}");
    let notification = r#"{"jsonrpc":"2.0","method":"conversation/append","params":{"sessionId":"s","messages":[{"role":"user","content":"file-\udcff.txt"}]}}"#;
    server.send_raw(frame(notification).as_bytes());
    let expected = ["abc\u{fffd}", "\u{fffd} pair 😀", "file-\u{fffd}.txt"];
    assert_eq!(history(&mut server, &session), expected);
    assert_eq!(server.shutdown_and_exit(), 0);
    let mut again = Server::start(dir.path(), json!({}));
    again.open(json!({"sessionId": "s"}));
    assert_eq!(history(&mut again, "s"), expected);
}

/// A request id reused while the first request with it is still in flight
/// is refused -32600 naming the id, and the first is still answered once.
#[test]
fn a_request_id_reused_in_flight_is_refused_and_the_first_still_answered() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(
        dir.path(),
        json!({"autoCompact": false, "keepRecentTokens": 10,
               "summarizer": {"provider": "test", "delayMs": 30000}}),
    );
    let session = server.open(json!({}));
    let chat: Vec<Value> = (0..8)
        .flat_map(|i| {
            [
                json!({"role": "user", "content": format!("request {i}: {}", "word ".repeat(60))}),
                json!({"role": "assistant", "content": format!("answer {i}: {}", "word ".repeat(60))}),
            ]
        })
        .collect();
    server.append(&session, chat);
    let seen = server.received.len();
    let compact = body(
        json!("dup"),
        "conversation/compact",
        json!({"sessionId": session}),
    );
    server.send_raw(frame(&compact).as_bytes());
    let history = body(
        json!("dup"),
        "conversation/history",
        json!({"sessionId": session}),
    );
    server.send_raw(frame(&history).as_bytes());
    let refused = server.next_where(|m| m["id"] == "dup");
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("\"dup\"") && message.contains("conversation/history"),
        "{message}"
    );
    server.notify("$/cancelRequest", json!({"id": "dup"}));
    let first = server.next_where(|m| m["id"] == "dup");
    assert_eq!(first["error"]["code"], -32800, "the compaction: {first}");
    assert_eq!(
        server.received[seen..]
            .iter()
            .filter(|m| m["id"] == "dup")
            .count(),
        2,
        "one answer each"
    );
    // The id is free again once answered.
    server.send_raw(frame(&history).as_bytes());
    let again = server.next_where(|m| m["id"] == "dup");
    assert!(again.get("result").is_some(), "{again}");
}

/// A recap reads every message of its session: of one with an 8 MB
/// message it takes long enough that, on the state owner, every other
/// session waited for it. It runs off the owner: a request sent after it
/// to another session is answered first, and the recap still answers.
#[test]
fn a_recap_of_a_huge_message_does_not_hold_up_other_sessions() {
    let data = tempfile::tempdir().unwrap();
    let mut server = Server::start(data.path(), json!({}));
    let big = server.open(json!({}));
    let line =
        "The migration must keep every row of the ledger intact and never drop the audit column. "
            .repeat(100_000);
    assert!(line.len() > 8_000_000);
    server
        .request(
            "conversation/append",
            json!({"sessionId": big, "messages": [{"role": "user", "content": line}]}),
        )
        .unwrap();
    let other = server.open(json!({}));
    let recap = server.send_request("conversation/recap", json!({"sessionId": big}));
    let append = server.send_request(
        "conversation/append",
        json!({"sessionId": other, "messages": [{"role": "user", "content": "still here"}]}),
    );
    assert_eq!(server.response(append).unwrap()["ids"], json!(["m1"]));
    assert!(
        !server.received.iter().any(|m| m["id"] == json!(recap)),
        "the recap answered before the append sent after it"
    );
    let answered = server.response(recap).unwrap();
    assert!(
        answered["context"].as_str().is_some_and(|c| !c.is_empty()),
        "{answered}"
    );
}
