//! Every part of every message, kept: content as parts (text, images,
//! thinking with its signature, redacted thinking, kinds compactd does not
//! know) and fields it does not know come back from `conversation/history`
//! as they were sent, after a restart, a branch and a compaction; images
//! are counted by their size, not their base64, and stored once; an agent
//! with extended thinking on runs its tool loop through compactd's history
//! against a server that refuses a thinking block sent back altered.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;
use serde_json::{json, Map, Value};

use crate::support::{python3_missing, transcripts_dir, ScriptedModel, Server};

#[path = "../../benches/support/png.rs"]
mod png;
use png::png;

fn image(width: u32, height: u32, bytes: usize, seed: u32) -> Value {
    json!({"type": "image", "mediaType": "image/png", "data": png(width, height, bytes, seed)})
}

/// Any part, of each kind compactd reads and of kinds it does not, with
/// fields it does not know.
fn part() -> impl Strategy<Value = Value> {
    let word = "[a-z]{1,8}";
    let extra = proptest::option::of(("[a-z_]{3,10}", word))
        .prop_map(|kv| kv.map(|(k, v)| (k, json!({ "v": v }))));
    prop_oneof![
        (".{0,40}", extra.clone()).prop_map(|(text, extra)| with(json!({"type": "text", "text": text}), extra)),
        (1u32..3000, 1u32..3000, prop_oneof![Just(300usize), Just(12_000usize)], any::<u32>())
            .prop_map(|(w, h, bytes, seed)| image(w, h, bytes, seed)),
        (".{0,40}", "[A-Za-z0-9+/=]{8,40}", extra.clone()).prop_map(|(thinking, signature, extra)| with(
            json!({"type": "thinking", "thinking": thinking, "signature": signature}),
            extra
        )),
        "[A-Za-z0-9+/=]{8,60}".prop_map(|data| json!({"type": "redactedThinking", "data": data})),
        (word, word).prop_map(|(a, b)| json!({"type": "reasoning", "encrypted_content": a, "summary": [{"type": "summary_text", "text": b}]})),
    ]
}

fn with(mut part: Value, extra: Option<(String, Value)>) -> Value {
    if let Some((key, value)) = extra.filter(|(k, _)| {
        ![
            "type",
            "text",
            "thinking",
            "signature",
            "data",
            "mediaType",
            "url",
        ]
        .contains(&k.as_str())
    }) {
        part[key] = value;
    }
    part
}

fn content() -> impl Strategy<Value = Value> {
    prop_oneof![
        ".{0,60}".prop_map(Value::from),
        proptest::collection::vec(part(), 0..4).prop_map(Value::from)
    ]
}

/// Fields compactd does not know, on a message.
fn unknown_fields() -> impl Strategy<Value = Map<String, Value>> {
    proptest::collection::btree_map(
        prop_oneof![
            Just("thinkingSignature"),
            Just("name"),
            Just("cache_control"),
            Just("x-trace")
        ],
        "[a-z0-9]{1,12}",
        0..3,
    )
    .prop_map(|fields| {
        fields
            .into_iter()
            .map(|(k, v)| (k.to_string(), Value::from(v)))
            .collect()
    })
}

/// A turn: a user message, an assistant message with one call, its result
/// (each with any content and unknown fields), and an answer.
fn turn(n: usize) -> impl Strategy<Value = Vec<Value>> {
    (content(), content(), content(), content(), unknown_fields(), unknown_fields()).prop_map(
        move |(user, assistant, result, answer, extra_a, extra_b)| {
            let mut call = json!({"id": format!("a{n}"), "role": "assistant", "content": assistant,
                "toolCalls": [{"id": format!("c{n}"), "name": "read", "arguments": {"path": "x"}}]});
            call.as_object_mut().unwrap().extend(extra_a);
            let mut user = json!({"id": format!("u{n}"), "role": "user", "content": user});
            user.as_object_mut().unwrap().extend(extra_b);
            vec![
                user,
                call,
                json!({"id": format!("t{n}"), "role": "tool", "toolCallId": format!("c{n}"), "toolName": "read", "content": result}),
                json!({"id": format!("r{n}"), "role": "assistant", "content": answer, "model": "claude-sonnet-4-5"}),
            ]
        },
    )
}

fn conversation() -> impl Strategy<Value = Vec<Value>> {
    (turn(1), turn(2), turn(3)).prop_map(|(a, b, c)| a.into_iter().chain(b).chain(c).collect())
}

fn history(server: &mut Server, session: &str) -> Vec<Value> {
    let history = server
        .request("conversation/history", json!({"sessionId": session}))
        .unwrap();
    history["messages"].as_array().unwrap().clone()
}

/// A message as history gives it: summaries aside, every message as sent.
fn by_id(messages: &[Value]) -> Map<String, Value> {
    messages
        .iter()
        .map(|m| (m["id"].as_str().unwrap_or("").to_string(), m.clone()))
        .collect()
}

#[test]
fn any_message_comes_back_as_it_was_sent() {
    let dir = tempfile::tempdir().unwrap();
    let options = json!({"summarizer": {"provider": "offline"}});
    let mut server = Server::start(dir.path(), options.clone());
    let mut runner = TestRunner::deterministic();
    let mut cases = Vec::new();
    for case in 0..24 {
        let sent = conversation().new_tree(&mut runner).unwrap().current();
        let session = format!("p{case}");
        server.open(json!({"sessionId": session, "model": "claude-sonnet-4-5"}));
        server.append(&session, &sent);
        assert_eq!(history(&mut server, &session), sent, "case {case}");
        // A branch before the last turn holds the two before it, as sent.
        let branched = server
            .request(
                "conversation/branch",
                json!({"sessionId": session, "beforeMessageId": "u3"}),
            )
            .unwrap();
        let branch = branched["sessionId"].as_str().unwrap().to_string();
        assert_eq!(
            history(&mut server, &branch),
            sent[..8].to_vec(),
            "case {case}: branch"
        );
        cases.push((session, branch, sent));
    }
    // A compaction keeps the tail verbatim: each kept message as sent.
    for (session, _, sent) in &cases[..8] {
        let compacted = server
            .request(
                "conversation/compact",
                json!({"sessionId": session, "keepRecentTokens": 1}),
            )
            .unwrap();
        assert_eq!(compacted["compacted"], true, "{compacted}");
        let kept = history(&mut server, session);
        let sent = by_id(sent);
        let mut checked = 0;
        for message in kept
            .iter()
            .filter(|m| sent.contains_key(m["id"].as_str().unwrap_or("")))
        {
            assert_eq!(message, &sent[message["id"].as_str().unwrap()], "{session}");
            checked += 1;
        }
        assert!(checked >= 1, "{session}: a kept tail");
    }
    assert_eq!(server.shutdown_and_exit(), 0);
    // After a restart, from the logs and the blob store.
    let mut server = Server::start(dir.path(), options);
    for (session, branch, sent) in &cases[8..] {
        server.open(json!({"sessionId": session}));
        assert_eq!(
            &history(&mut server, session),
            sent,
            "{session} after a restart"
        );
        server.open(json!({"sessionId": branch}));
        assert_eq!(
            history(&mut server, branch),
            sent[..8].to_vec(),
            "{branch} after a restart"
        );
    }
}

#[test]
fn parts_that_lack_what_their_kind_needs_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), json!({}));
    let session = server.open(json!({}));
    let cases = [
        (
            json!([{"type": "image"}]),
            "content[0]: an image part needs `data` (base64) or `url`",
        ),
        (json!([{"text": "x"}]), "a part needs a `type`"),
        (
            json!([{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}}]),
            "content[0]: an image part takes `mediaType` with `data` (base64), or `url`, not Anthropic's `source`",
        ),
        (json!(7), "expected a string or an array of parts"),
        (
            json!([{"type": "image", "data": "x", "$stored": {"length": 1}}]),
            "`$stored` is compactd's own field",
        ),
    ];
    for (content, words) in cases {
        let err = server
            .request(
                "conversation/append",
                json!({"sessionId": session, "messages": [{"role": "user", "content": content}]}),
            )
            .unwrap_err();
        assert_eq!(err.code, -32602, "{content}");
        assert!(err.message.contains(words), "{content}: {}", err.message);
    }
    assert!(history(&mut server, &session).is_empty(), "nothing applied");
}

/// The files under `dir`, and their total size.
fn du(dir: &Path) -> (usize, u64) {
    let mut files = 0;
    let mut bytes = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let meta = entry.metadata().unwrap();
        if meta.is_dir() {
            let (f, b) = du(&entry.path());
            files += f;
            bytes += b;
        } else {
            files += 1;
            bytes += meta.len();
        }
    }
    (files, bytes)
}

#[test]
fn a_screenshot_counts_by_its_size_and_is_stored_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), json!({"autoCompact": false}));
    let session = server.open(json!({"model": "claude-sonnet-4-5", "contextWindow": 200000}));
    let empty = server.append(&session, [json!({"role": "user", "content": "hi"})]);
    let before = empty["meter"]["contextTokens"].as_u64().unwrap();
    // A 1 MB PNG screenshot, 1280×720.
    let shot = image(1280, 720, 1 << 20, 7);
    let message =
        json!({"role": "user", "content": [shot, {"type": "text", "text": "what is wrong here?"}]});
    let after = server.append(&session, [message.clone()])["meter"]["contextTokens"]
        .as_u64()
        .unwrap();
    let image_tokens = after - before;
    // Anthropic: 1280 × 720 / 750 = 1,229 (plus the words and framing).
    assert!((1_229..1_300).contains(&image_tokens), "{image_tokens}");
    let data = dir.path().join("blobs");
    let (files, bytes) = du(&data);
    assert_eq!(files, 1);
    // Nine more times: the data dir grows by the log lines only.
    let log_before = std::fs::metadata(dir.path().join(format!("{session}.jsonl")))
        .unwrap()
        .len();
    for _ in 0..9 {
        server.append(&session, [message.clone()]);
    }
    assert_eq!(du(&data), (files, bytes), "one copy of the image");
    let log_after = std::fs::metadata(dir.path().join(format!("{session}.jsonl")))
        .unwrap()
        .len();
    assert!(
        log_after - log_before < 9 * 2_000,
        "the log names the blob: {}",
        log_after - log_before
    );
    // And the history has the bytes back.
    let messages = history(&mut server, &session);
    assert_eq!(
        messages[1]["content"][0]["data"],
        message["content"][0]["data"]
    );
    // OpenAI's rule for an OpenAI model: 85 + 170 × 6 tiles.
    let gpt = server.open(json!({"model": "gpt-4o", "contextWindow": 128000}));
    let base = server.append(&gpt, [json!({"role": "user", "content": "hi"})])["meter"]
        ["contextTokens"]
        .as_u64()
        .unwrap();
    let with = server.append(&gpt, [message])["meter"]["contextTokens"]
        .as_u64()
        .unwrap();
    assert!((1_105..1_180).contains(&(with - base)), "{}", with - base);
}

#[test]
fn a_blob_missing_on_load_is_reported_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), json!({}));
    let session = server.open(json!({"sessionId": "s"}));
    server.append(
        &session,
        [json!({"role": "user", "content": [image(640, 480, 20_000, 1)]})],
    );
    server.shutdown_and_exit();
    std::fs::remove_dir_all(dir.path().join("blobs")).unwrap();
    let mut server = Server::start(dir.path(), json!({}));
    let opened = server
        .request("conversation/open", json!({"sessionId": "s"}))
        .unwrap();
    let warnings = opened["warnings"].to_string();
    assert!(warnings.contains("is missing"), "{opened}");
    let messages = history(&mut server, "s");
    assert_eq!(messages.len(), 1);
    assert!(
        messages[0]["content"][0].get("$stored").is_some(),
        "the reference stays"
    );
}

/// A blob damaged on disk (same length, other bytes) is never served as
/// the image: the history keeps the reference and the server logs the
/// blob's name; appending the same image again writes the good data back.
#[test]
fn a_damaged_blob_is_not_served_and_a_re_append_repairs_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), json!({}));
    let session = server.open(json!({"sessionId": "s"}));
    let picture = image(640, 480, 20_000, 7);
    server.append(
        &session,
        [json!({"role": "user", "content": [picture.clone()]})],
    );
    let (count, _) = du(&dir.path().join("blobs"));
    assert_eq!(count, 1);
    let blob = walk_files(&dir.path().join("blobs")).pop().unwrap();
    let length = std::fs::metadata(&blob).unwrap().len() as usize;
    std::fs::write(&blob, "A".repeat(length)).unwrap();
    let messages = history(&mut server, "s");
    let served = &messages[0]["content"][0];
    assert_ne!(
        served.get("data"),
        Some(&json!("A".repeat(length))),
        "garbage served"
    );
    assert!(served.get("$stored").is_some(), "{served}");
    server.append(
        &session,
        [json!({"role": "user", "content": [picture.clone()]})],
    );
    let messages = history(&mut server, "s");
    assert_eq!(messages[0]["content"][0]["data"], picture["data"]);
    assert_eq!(messages[1]["content"][0]["data"], picture["data"]);
}

/// A blob that is a symlink to a 2 GiB sparse file (issue #39: it was
/// read whole, 24 GB before the machine ran out) is refused by its type,
/// never read: history keeps the reference and the server's log names the
/// blob, its memory stays small, and appending the image again puts a
/// regular file back in place of the link, leaving its target untouched.
#[cfg(unix)]
#[test]
fn a_blob_that_is_a_symlink_is_never_followed() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), json!({}));
    let session = server.open(json!({"sessionId": "s"}));
    let picture = image(640, 480, 20_000, 9);
    server.append(
        &session,
        [json!({"role": "user", "content": [picture.clone()]})],
    );
    let blob = walk_files(&dir.path().join("blobs")).pop().unwrap();
    let sparse = dir.path().join("sparse");
    std::fs::File::create(&sparse)
        .unwrap()
        .set_len(2 << 30)
        .unwrap();
    std::fs::remove_file(&blob).unwrap();
    std::os::unix::fs::symlink(&sparse, &blob).unwrap();
    let name = blob.file_name().unwrap().to_str().unwrap().to_string();
    let messages = history(&mut server, "s");
    assert!(
        messages[0]["content"][0].get("$stored").is_some(),
        "{}",
        messages[0]
    );
    let read = server
        .request(
            "conversation/messages",
            json!({"sessionId": "s", "ids": [messages[0]["id"]]}),
        )
        .unwrap();
    assert!(
        read["messages"][0]["message"]["content"][0]
            .get("$stored")
            .is_some(),
        "{read}"
    );
    let refusal = format!("blob {name} is a symlink, not a regular file");
    let stderr = server.stderr_after_containing(0, &refusal);
    assert!(stderr.contains(&refusal), "{stderr}");
    let peak = crate::support::peak_rss_kib(server.pid());
    assert!(peak < 300 * 1024, "the blob was read: peak RSS {peak} KiB");
    server.append(
        &session,
        [json!({"role": "user", "content": [picture.clone()]})],
    );
    assert!(std::fs::symlink_metadata(&blob).unwrap().is_file());
    let messages = history(&mut server, "s");
    assert_eq!(messages[0]["content"][0]["data"], picture["data"]);
    let target = std::fs::metadata(&sparse).unwrap();
    assert_eq!(target.len(), 2 << 30, "the link's target was written");
}

fn walk_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk_files(&path));
        } else {
            out.push(path);
        }
    }
    out
}

// ---------------------------------------------------------------------
// An agent with extended thinking on, its history kept in compactd.

/// POST `body` as JSON; the status and the JSON answer.
fn post(url: &str, path: &str, body: &Value) -> (u16, Value) {
    let address = url.trim_start_matches("http://");
    let mut stream = TcpStream::connect(address).unwrap();
    let body = body.to_string();
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nx-api-key: scripted\r\nanthropic-version: 2023-06-01\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

/// compactd's history as an Anthropic Messages request: parts become
/// blocks (thinking with its signature first), tool results user blocks,
/// and neighbours of one role merge.
fn anthropic_messages(history: &[Value]) -> (Option<String>, Vec<Value>) {
    let mut system = None;
    let mut out: Vec<Value> = Vec::new();
    for m in history {
        let blocks: Vec<Value> = match &m["content"] {
            Value::String(text) if !text.is_empty() => vec![json!({"type": "text", "text": text})],
            Value::Array(parts) => parts
                .iter()
                .map(|p| match p["type"].as_str() {
                    Some("image") => json!({"type": "image", "source": {"type": "base64", "media_type": p["mediaType"], "data": p["data"]}}),
                    Some("thinking") => json!({"type": "thinking", "thinking": p["thinking"], "signature": p["signature"]}),
                    Some("redactedThinking") => json!({"type": "redacted_thinking", "data": p["data"]}),
                    _ => json!({"type": "text", "text": p["text"]}),
                })
                .collect(),
            _ => Vec::new(),
        };
        let (role, blocks) = match m["role"].as_str().unwrap() {
            "system" => {
                system = m["content"].as_str().map(str::to_string);
                continue;
            }
            "tool" => (
                "user",
                vec![
                    json!({"type": "tool_result", "tool_use_id": m["toolCallId"], "content": blocks}),
                ],
            ),
            "assistant" => {
                let mut blocks = blocks;
                for call in m["toolCalls"].as_array().into_iter().flatten() {
                    blocks.push(json!({"type": "tool_use", "id": call["id"], "name": call["name"], "input": call["arguments"]}));
                }
                ("assistant", blocks)
            }
            role => (if role == "user" { "user" } else { "assistant" }, blocks),
        };
        match out.last_mut() {
            Some(last) if last["role"] == role => {
                last["content"].as_array_mut().unwrap().extend(blocks)
            }
            _ => out.push(json!({"role": role, "content": blocks})),
        }
    }
    (system, out)
}

/// An Anthropic response as the compactd message it is: thinking (with
/// its signature) and text as parts, tool uses as calls, its usage.
fn assistant_message(response: &Value) -> Value {
    let mut parts = Vec::new();
    let mut calls = Vec::new();
    for block in response["content"].as_array().unwrap() {
        match block["type"].as_str().unwrap() {
            "thinking" => parts.push(json!({"type": "thinking", "thinking": block["thinking"], "signature": block["signature"]})),
            "text" => parts.push(json!({"type": "text", "text": block["text"]})),
            "tool_use" => calls.push(json!({"id": block["id"], "name": block["name"], "arguments": block["input"]})),
            _ => {}
        }
    }
    let u = &response["usage"];
    json!({"role": "assistant", "content": parts, "toolCalls": calls, "model": response["model"],
        "usage": {"input": u["input_tokens"], "output": u["output_tokens"],
            "cacheRead": u["cache_read_input_tokens"], "cacheWrite": u["cache_creation_input_tokens"]}})
}

#[test]
fn an_agent_with_thinking_on_runs_its_tool_loop_through_compactds_history() {
    if python3_missing() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // Six tool calls, each answered with thinking, then the end.
    let mut turns: Vec<Value> = (1..=6)
        .map(|n| json!({"reply": {"thinking": format!("step {n}: read the next file"), "text": format!("Reading f{n}."),
            "tool_calls": [{"id": format!("toolu_{n}"), "name": "read", "arguments": {"path": format!("f{n}.rs")}}],
            "usage": "auto"}}))
        .collect();
    turns.push(json!({"reply": {"thinking": "all read", "text": "Done: the screenshot shows a layout bug in f3.", "usage": "auto"}}));
    let scenario = dir.path().join("thinking.json");
    std::fs::write(&scenario, json!({"turns": turns}).to_string()).unwrap();
    let model = ScriptedModel::start_file(&scenario, &dir.path().join("requests.jsonl"), &[]);
    let mut server = Server::start(&dir.path().join("data"), json!({"autoCompact": false}));
    let session = server.open(
        json!({"model": "claude-sonnet-4-5", "contextWindow": 200000,
        "systemPrompt": "You are a coding agent."}),
    );
    let shot = image(1280, 720, 200_000, 3);
    server.append(&session, [json!({"role": "user", "content": [shot.clone(), {"type": "text", "text": "Fix what this screenshot shows."}]})]);
    let mut compactions = 0;
    for round in 0.. {
        let (system, messages) = anthropic_messages(&history(&mut server, &session));
        let request = json!({"model": "claude-sonnet-4-5", "max_tokens": 4096, "system": system,
            "thinking": {"type": "enabled", "budget_tokens": 2048}, "messages": messages});
        let (status, response) = post(&model.url, "/v1/messages", &request);
        assert_eq!(status, 200, "round {round}: {response}");
        let reply = assistant_message(&response);
        let calls = reply["toolCalls"].as_array().unwrap().clone();
        server.append(&session, [reply]);
        if calls.is_empty() {
            break;
        }
        let results: Vec<Value> = calls
            .iter()
            .map(|c| json!({"role": "tool", "toolCallId": c["id"], "toolName": "read", "content": format!("contents of {}\n{}", c["arguments"]["path"], "x".repeat(4000))}))
            .collect();
        server.append(&session, results);
        // Mid-loop, every other round: the summary, then the call with its
        // signed thinking and its result, kept verbatim.
        if round % 2 == 1 {
            let compacted = server
                .request(
                    "conversation/compact",
                    json!({"sessionId": session, "keepRecentTokens": 1}),
                )
                .unwrap();
            assert_eq!(compacted["compacted"], true, "{compacted}");
            compactions += 1;
            let summary = compacted["summary"].as_str().unwrap();
            if compactions == 1 {
                assert!(
                    summary.contains("[image: image/png, 1280×720, message m1]"),
                    "{summary}"
                );
            }
        }
        assert!(round < 20, "the scenario ends");
    }
    assert!(compactions >= 3, "{compactions}");
    let log = std::fs::read_to_string(dir.path().join("requests.jsonl")).unwrap();
    let requests: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(requests.len(), 7);
    assert!(
        requests
            .iter()
            .all(|r| r.get("rejected").is_none_or(Value::is_null)),
        "{log}"
    );
    // The check has teeth: the same request with the signature altered is refused.
    let (_, mut messages) = anthropic_messages(&history(&mut server, &session));
    let n = messages.len();
    messages.truncate(n - 1);
    if let Some(last) = messages.last_mut() {
        last["content"][0]["signature"] = json!("altered");
    }
    messages.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_6", "content": "x"}]}));
    let (status, _) = post(
        &model.url,
        "/v1/messages",
        &json!({"model": "m", "max_tokens": 10,
        "thinking": {"type": "enabled", "budget_tokens": 1024}, "messages": messages}),
    );
    assert_eq!(status, 400);
}

// ---------------------------------------------------------------------
// Real transcripts that carry images and signed thinking.

/// The signatures of a transcript's thinking blocks, each once, in order
/// (a response's line may be written twice).
fn signatures_in(raw: &str, field: &str) -> Vec<String> {
    let mut unique: Vec<String> = Vec::new();
    let blocks = raw
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .flat_map(|e| {
            e.pointer("/message/content")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        });
    for block in blocks.filter(|b| b["type"] == "thinking") {
        if let Some(signature) = block[field]
            .as_str()
            .filter(|s| !unique.iter().any(|u| u == s))
        {
            unique.push(signature.to_string());
        }
    }
    unique
}

#[test]
fn imported_transcripts_keep_their_images_and_signed_thinking() {
    let Some(corpus) = transcripts_dir() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), json!({}));
    let import = |server: &mut Server, path: &Path| -> Vec<Value> {
        let result = server
            .request("conversation/import", json!({"path": path}))
            .unwrap();
        history(server, result["sessionId"].as_str().unwrap())
    };
    // Claude Code: a pasted screenshot (claude-code-message-catalog).
    let messages = import(
        &mut server,
        &corpus.join("claude-code-message-catalog/user/image.jsonl"),
    );
    let parts = messages[0]["content"].as_array().expect("parts");
    assert_eq!(parts[0]["type"], "image");
    assert_eq!(parts[0]["mediaType"], "image/png");
    assert!(parts[0]["data"]
        .as_str()
        .unwrap()
        .starts_with("iVBORw0KGgo"));
    assert!(parts[1]["text"]
        .as_str()
        .unwrap()
        .starts_with("Do you think we could set up rewrites"));
    // Thinking with its signature: a real Claude Code session, and pi's.
    let sessions = [
        ("claude-code-jsonl/-Users-dain-workspace-coderabbit-review-helper/cb2e607c-c758-415a-8b45-c49e4631906a.jsonl", "signature"),
        ("pi-session-jsonl/large-session.jsonl", "thinkingSignature"),
    ];
    for (file, field) in sessions {
        let session = corpus.join(file);
        let source = signatures_in(&std::fs::read_to_string(&session).unwrap(), field);
        assert!(!source.is_empty(), "{file} has signed thinking");
        let messages = import(&mut server, &session);
        let kept: Vec<String> = messages
            .iter()
            .flat_map(|m| m["content"].as_array().into_iter().flatten())
            .filter(|p| p["type"] == "thinking")
            .filter_map(|p| p["signature"].as_str().map(str::to_string))
            .collect();
        assert_eq!(kept, source, "{file}");
    }
}

// ---------------------------------------------------------------------
// The provider's own count of a compacted history.

#[test]
fn a_recount_asks_the_provider_and_feeds_the_calibration() {
    if python3_missing() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("summaries.json");
    let summary = "## Task\n- read the files\n\n## Progress\n- all read";
    std::fs::write(
        &scenario,
        json!({"turns": [{"repeat": true, "reply": {"text": summary}}]}).to_string(),
    )
    .unwrap();
    let log = dir.path().join("requests.jsonl");
    let model = ScriptedModel::start_file(&scenario, &log, &[]);
    let options = |provider: &str| {
        json!({"autoCompact": false, "summarizer": {"provider": provider, "model": "claude-haiku-4-5",
            "baseUrl": model.url, "apiKeyEnv": "SCRIPTED_KEY", "recount": true}})
    };
    let env = [("SCRIPTED_KEY", "sk-ant-scripted-0000000000000000000000")];
    let mut server = Server::spawn_with_env(&dir.path().join("data"), &env);
    server.initialize(options("anthropic"));
    let session = server.open(
        json!({"model": "claude-sonnet-4-5", "contextWindow": 200000,
        "systemPrompt": "You are a coding agent."}),
    );
    let turns: Vec<Value> = (0..8)
        .flat_map(|n| {
            [
                json!({"role": "user", "content": format!("read f{n}.rs")}),
                json!({"role": "assistant", "content": format!("f{n}.rs holds {}", "words ".repeat(400))}),
            ]
        })
        .collect();
    server.append(&session, &turns);
    let compacted = compact_keeping_600(&mut server, &session);
    assert_eq!(compacted["compacted"], true, "{compacted}");
    let counted = compacted["providerTokensAfter"]
        .as_u64()
        .expect("a recount");
    let requests: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let recount = requests
        .iter()
        .find(|r| r["api"] == "count_tokens")
        .expect("count_tokens asked");
    // The scripted server counts a request's bytes / 4.
    assert_eq!(counted, recount["bytes"].as_u64().unwrap() / 4);
    let sent = &recount["body"];
    assert_eq!(sent["system"], "You are a coding agent.");
    assert!(sent["messages"][0]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains(summary));
    // The calibration took it: the meter now says what the provider said.
    let history = server
        .request("conversation/history", json!({"sessionId": session}))
        .unwrap();
    let meter = history["meter"]["contextTokens"].as_u64().unwrap();
    assert!(
        meter.abs_diff(counted) * 100 <= counted,
        "meter {meter}, provider {counted}"
    );
    // A provider without a count endpoint says so.
    let mut server = Server::spawn_with_env(&dir.path().join("data2"), &env);
    server.initialize(options("openai"));
    let session = server.open(json!({"model": "gpt-4o"}));
    server.append(&session, &turns);
    let compacted = compact_keeping_600(&mut server, &session);
    assert!(compacted.get("providerTokensAfter").is_none());
    let note = compacted["recountNote"].as_str().unwrap();
    assert!(note.contains("no endpoint that counts"), "{note}");
}

fn compact_keeping_600(server: &mut Server, session: &str) -> Value {
    server
        .request(
            "conversation/compact",
            json!({"sessionId": session, "keepRecentTokens": 600}),
        )
        .unwrap()
}
