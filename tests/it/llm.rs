//! LLM summarizers through the real binary: against the scripted fixture
//! provider for the paths a real server cannot produce on demand, and
//! against a real local model (scripts/local-llm.sh) when one is reachable.

use std::io::{Read, Write};
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::fixture::{openai_stream, sse, End, Fixture, Piece, Reply, SUMMARY};
use crate::support::{merge, read_pi_session, transcripts_dir, Server, MODEL_PATIENCE};

use crate::support::tool_call as call;

/// A short coding session: two requests, reads, an edit, a failing test.
fn turns() -> Vec<Value> {
    vec![
        json!({"role": "user", "content": "Fix the panic in src/parse.rs on empty input."}),
        json!({"role": "assistant", "content": "Reading the parser.", "toolCalls": [call("c1", "read", json!({"path": "src/parse.rs"}))]}),
        json!({"role": "tool", "toolCallId": "c1", "toolName": "read", "content": "fn parse(s: &str) -> char { s.chars().next().unwrap() }"}),
        json!({"role": "assistant", "content": "The unwrap panics on empty input; returning an Option instead.", "toolCalls": [call("c2", "edit", json!({"path": "src/parse.rs"}))]}),
        json!({"role": "tool", "toolCallId": "c2", "toolName": "edit", "content": "ok"}),
        json!({"role": "user", "content": "Now add a test for it."}),
        json!({"role": "assistant", "content": "", "toolCalls": [call("c3", "bash", json!({"command": "cargo test"}))]}),
        json!({"role": "tool", "toolCallId": "c3", "toolName": "bash", "content": "error[E0308]: mismatched types", "isError": true}),
        json!({"role": "assistant", "content": "The test needs the new signature; fixing it."}),
        json!({"role": "user", "content": "Go on."}),
    ]
}

/// A server whose summarizer is the fixture, with one session holding
/// `turns()`.
fn start(fixture: &Fixture, data: &Path, options: Value, env: &[(&str, &str)]) -> (Server, String) {
    // Keeping only the last message (a user request) cuts at a turn
    // boundary: one summary call, no separate turn-prefix summary.
    let mut init = json!({
        "keepRecentTokens": 1,
        "summarizer": {
            "provider": "openai", "baseUrl": fixture.url, "model": "fixture",
            "maxTokens": 200, "timeoutMs": 5000
        }
    });
    merge(&mut init, options);
    let mut server = Server::spawn_with_env(data, env);
    server.initialize(init);
    let id = server.open(json!({}));
    server
        .request(
            "conversation/append",
            json!({"sessionId": id, "messages": turns()}),
        )
        .unwrap();
    (server, id)
}

/// Compacts `id`, reporting progress under `token` if given.
fn compact(server: &mut Server, id: &str, token: Option<&str>) -> Value {
    let mut params = json!({"sessionId": id});
    if let Some(token) = token {
        params["workDoneToken"] = json!(token);
    }
    server.request("conversation/compact", params).unwrap()
}

/// `report` messages received under `token`.
fn progress_reports(server: &Server, token: &str) -> Vec<String> {
    server
        .received_notifications("$/progress")
        .iter()
        .filter(|p| p["token"] == token && p["value"]["kind"] == "report")
        .map(|p| p["value"]["message"].as_str().unwrap_or("").to_string())
        .collect()
}

fn compaction_entries(data: &Path, id: &str) -> Vec<Value> {
    std::fs::read_to_string(data.join(format!("{id}.jsonl")))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "compaction")
        .collect()
}

#[test]
fn compact_streams_progress_and_stores_the_provider_usage() {
    let fixture = Fixture::script(vec![Reply::stream(
        openai_stream(
            &[
                "## Goal\n- Fix the parser.",
                "\n\n## Next step\n- Add a test.",
            ],
            "stop",
        ),
        End::Complete,
    )]);
    let data = tempfile::tempdir().unwrap();
    let (mut server, id) = start(&fixture, data.path(), json!({}), &[]);
    let result = compact(&mut server, &id, Some("t1"));
    assert_eq!(result["compacted"], true, "{result}");
    assert_eq!(result["summarizer"], "openai:fixture");
    assert!(
        result["summary"]
            .as_str()
            .unwrap()
            .starts_with("## Goal\n- Fix the parser."),
        "{result}"
    );
    assert_eq!(
        result["usage"],
        json!({"input": 321, "output": 45, "cacheRead": 0, "cacheWrite": 0})
    );
    let reports = progress_reports(&server, "t1");
    assert!(
        reports.iter().any(|m| m.contains("characters received")),
        "{reports:?}"
    );
    let entries = compaction_entries(data.path(), &id);
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["usage"]["input"], 321, "{}", entries[0]);
    assert_eq!(entries[0]["usage"]["output"], 45);
    let sent = &fixture.requests()[0];
    let transcript = sent.body["messages"][1]["content"].as_str().unwrap();
    // The user's messages and the failed result carry the ids the
    // summary is asked to cite.
    assert!(
        transcript.contains("[user m1]: Fix the panic in src/parse.rs on empty input."),
        "the transcript is sent: {transcript}"
    );
    assert!(
        transcript.contains("[tool error bash m8]: error[E0308]: mismatched types"),
        "{transcript}"
    );
    assert!(
        sent.body["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("like [u3]"),
        "the system prompt asks for citations"
    );
}

#[test]
fn rate_limits_are_retried_after_the_stated_delay() {
    let fixture = Fixture::script(vec![
        Reply::json(
            429,
            json!({"error": {"message": "Rate limit reached for requests", "type": "requests"}}),
        )
        .with_header("retry-after", "1"),
        Reply::stream(openai_stream(&[SUMMARY], "stop"), End::Complete),
    ]);
    let data = tempfile::tempdir().unwrap();
    let (mut server, id) = start(&fixture, data.path(), json!({}), &[]);
    let result = compact(&mut server, &id, Some("t"));
    assert_eq!(result["compacted"], true, "{result}");
    let requests = fixture.requests();
    assert_eq!(requests.len(), 2);
    let gap = requests[1].at - requests[0].at;
    // The backoff alone would retry after about 200 ms.
    assert!(gap >= Duration::from_secs(1), "retried after {gap:?}");
    assert!(
        progress_reports(&server, "t")
            .iter()
            .any(|m| m.contains("HTTP 429") && m.contains("retrying in 1.0 s")),
        "{:?}",
        progress_reports(&server, "t")
    );
}

#[test]
fn a_server_error_then_success_compacts() {
    let fixture = Fixture::script(vec![
        Reply::json(500, json!({"error": {"message": "internal error"}})),
        Reply::stream(openai_stream(&[SUMMARY], "stop"), End::Complete),
    ]);
    let data = tempfile::tempdir().unwrap();
    let (mut server, id) = start(&fixture, data.path(), json!({}), &[]);
    let result = compact(&mut server, &id, None);
    assert_eq!(result["compacted"], true, "{result}");
    assert!(result["summary"].as_str().unwrap().starts_with(SUMMARY));
    let requests = fixture.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests[1].at - requests[0].at >= Duration::from_millis(180));
}

#[test]
fn a_mid_stream_disconnect_is_retried_without_keeping_the_partial_text() {
    let partial: Vec<String> = openai_stream(&["## Goal\n- PARTIAL", " text"], "stop")
        .into_iter()
        .take(2)
        .collect();
    let fixture = Fixture::script(vec![
        Reply::stream(partial, End::Disconnect),
        Reply::stream(openai_stream(&[SUMMARY], "stop"), End::Complete),
    ]);
    let data = tempfile::tempdir().unwrap();
    let (mut server, id) = start(&fixture, data.path(), json!({}), &[]);
    let result = compact(&mut server, &id, None);
    assert_eq!(result["compacted"], true, "{result}");
    let summary = result["summary"].as_str().unwrap();
    assert!(summary.starts_with(SUMMARY), "{summary}");
    assert!(!summary.contains("PARTIAL"), "{summary}");
    assert_eq!(fixture.requests().len(), 2);
}

#[test]
fn an_overflow_answer_leads_to_smaller_chunks() {
    // A provider whose window holds about 2,500 characters of prompt
    // (llama.cpp's answer above it); no summarizer window is configured,
    // so only the overflow answer can make compactd chunk.
    const FITS: usize = 2_500;
    let overflow = json!({"error": {"code": 400, "message": "request (8796 tokens) exceeds the available context size (4096 tokens), try increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": 8796, "n_ctx": 4096}});
    let fixture = Fixture::with(move |_, request| {
        let prompt = request.body["messages"][1]["content"]
            .as_str()
            .unwrap_or("");
        if prompt.len() > FITS {
            Reply::json(400, overflow.clone())
        } else {
            Reply::stream(openai_stream(&[SUMMARY], "stop"), End::Complete)
        }
    });
    let data = tempfile::tempdir().unwrap();
    let (mut server, id) = start(&fixture, data.path(), json!({}), &[]);
    let mut steps = Vec::new();
    for i in 0..12 {
        steps.push(json!({"role": "user", "content": format!("Step {i}: {}", "adjust the parser tables ".repeat(12))}));
        steps.push(json!({"role": "assistant", "content": format!("Done with step {i}.")}));
    }
    steps.push(json!({"role": "user", "content": "Go on."}));
    server
        .request(
            "conversation/append",
            json!({"sessionId": id, "messages": steps}),
        )
        .unwrap();
    let result = compact(&mut server, &id, None);
    assert_eq!(result["compacted"], true, "{result}");
    assert_eq!(result["degraded"], false, "{result}");
    assert_eq!(result["summarizer"], "openai:fixture");
    assert!(result["chunks"].as_u64().unwrap() > 1, "{result}");
    let sizes: Vec<usize> = fixture
        .requests()
        .iter()
        .map(|r| r.body["messages"][1]["content"].as_str().unwrap().len())
        .collect();
    assert!(sizes[0] > FITS, "the first call overflowed: {sizes:?}");
    // Each overflow answer makes the next prompts smaller: the calls that
    // overflowed shrink, and a halving or two makes every chunk fit.
    let overflowed: Vec<usize> = sizes.iter().copied().filter(|s| *s > FITS).collect();
    assert!(
        overflowed.windows(2).all(|w| w[1] < w[0]) && overflowed.len() <= 2,
        "{sizes:?}"
    );
    assert!(
        sizes.last().is_some_and(|s| *s <= FITS),
        "the last call fitted: {sizes:?}"
    );
}

#[test]
fn cancelling_mid_stream_drops_the_stream_and_leaves_history_untouched() {
    let fixture = Fixture::script(vec![Reply::Stream {
        pieces: vec![Piece::Bytes(sse(
            &json!({"choices": [{"index": 0, "delta": {"content": "## Goal\n- Fix"}, "finish_reason": null}]}),
        ))],
        end: End::Stall,
    }]);
    let data = tempfile::tempdir().unwrap();
    let (mut server, id) = start(&fixture, data.path(), json!({}), &[]);
    let before = server
        .request("conversation/history", json!({"sessionId": id}))
        .unwrap();
    let log_before = std::fs::read(data.path().join(format!("{id}.jsonl"))).unwrap();

    let request = server.send_request(
        "conversation/compact",
        json!({"sessionId": id, "workDoneToken": "t"}),
    );
    // Mid-stream: the first characters have arrived.
    server.next_where(|m| {
        m["method"] == "$/progress"
            && m["params"]["value"]["message"]
                .as_str()
                .is_some_and(|s| s.contains("characters received"))
    });
    let cancelled_at = Instant::now();
    server.notify("$/cancelRequest", json!({"id": request}));
    let error = server.response(request).unwrap_err();
    let answered = cancelled_at.elapsed();
    assert_eq!(error.code, -32800);
    assert!(
        answered < Duration::from_millis(200),
        "answered after {answered:?}"
    );
    let requests = fixture.wait_for("the client to close the stalled stream", |r| {
        r.first().is_some_and(|r| r.closed_at.is_some())
    });
    let closed = requests[0]
        .closed_at
        .unwrap()
        .saturating_duration_since(cancelled_at);
    assert!(
        closed < Duration::from_millis(200),
        "the HTTP stream was dropped {closed:?} after the cancel"
    );

    let after = server
        .request("conversation/history", json!({"sessionId": id}))
        .unwrap();
    assert_eq!(before, after, "history unchanged");
    let log_after = std::fs::read(data.path().join(format!("{id}.jsonl"))).unwrap();
    assert_eq!(log_before, log_after, "nothing written to the session log");
    assert_eq!(fixture.requests().len(), 1, "no retry after a cancel");
}

#[test]
fn an_api_key_from_the_environment_is_sent_but_never_shown() {
    const KEY: &str = "sk-test-Zq8XbT4kLm2Pw9Rv7Ns3";
    for provider in ["openai", "anthropic"] {
        let fixture = Fixture::script(vec![
            match provider {
                "openai" => Reply::stream(openai_stream(&[SUMMARY], "stop"), End::Complete),
                _ => Reply::json(
                    200,
                    json!({
                        "type": "message", "content": [{"type": "text", "text": SUMMARY}],
                        "stop_reason": "end_turn", "usage": {"input_tokens": 50, "output_tokens": 20}
                    }),
                ),
            },
            // Providers echo keys in errors ("Incorrect API key provided: …").
            Reply::json(
                401,
                json!({"error": {"message": format!("Incorrect API key provided: {KEY}")}}),
            ),
            Reply::json(
                400,
                json!({"error": {"message": format!("invalid request made with {KEY}")}}),
            ),
        ]);
        let data = tempfile::tempdir().unwrap();
        let options = json!({"summarizer": {
            "provider": provider, "model": "fixture-model", "apiKeyEnv": "COMPACTD_FIXTURE_KEY",
            "stream": provider == "openai"
        }});
        let (mut server, id) = start(
            &fixture,
            data.path(),
            options,
            &[("COMPACTD_FIXTURE_KEY", KEY), ("COMPACTD_LOG", "trace")],
        );
        let first = compact(&mut server, &id, None);
        assert_eq!(first["compacted"], true, "{provider}: {first}");
        let sent = &fixture.requests()[0];
        match provider {
            "openai" => assert_eq!(
                sent.header("authorization"),
                Some(format!("Bearer {KEY}").as_str())
            ),
            _ => assert_eq!(sent.header("x-api-key"), Some(KEY)),
        }
        // Two failing compactions whose provider errors quote the key.
        for turn in 0..2 {
            server
                .request(
                    "conversation/append",
                    json!({"sessionId": id, "messages": [
                        // Long enough that a summary makes the history smaller.
                        {"role": "assistant", "content": format!("done {turn}: {}", "checked every parser table again. ".repeat(60))},
                        {"role": "user", "content": format!("more work {turn}")}
                    ]}),
                )
                .unwrap();
            // The ladder falls back to offline and says why, quoting the
            // provider's error with the key taken out.
            let result = compact(&mut server, &id, None);
            assert_eq!(result["degraded"], true, "{provider}: {result}");
            let reason = result["degradedReason"].as_str().unwrap();
            assert!(reason.contains("[redacted]"), "{provider}: {reason}");
        }
        let requests = fixture.requests();
        assert!(
            requests.len() >= 3,
            "{provider}: {} requests",
            requests.len()
        );
        let key_header = if provider == "openai" {
            "authorization"
        } else {
            "x-api-key"
        };
        assert!(
            requests
                .iter()
                .all(|r| r.header(key_header).is_some_and(|v| v.ends_with(KEY))),
            "{provider}: every call carried the key"
        );
        let output = serde_json::to_string(&server.received).unwrap();
        assert!(
            !output.contains(KEY),
            "{provider}: key in the protocol output"
        );
        assert!(
            !output.contains("Zq8XbT4k"),
            "{provider}: part of the key in the output"
        );
        for entry in std::fs::read_dir(data.path()).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            assert!(!text.contains(KEY), "{provider}: key in {}", path.display());
        }
        let stderr = server.stderr();
        assert!(
            stderr.contains("TRACE") || stderr.contains("DEBUG"),
            "logging was on"
        );
        assert!(!stderr.contains(KEY), "{provider}: key in stderr");
    }
}

// ---------------------------------------------------------------- a real model

/// Real-model tests share one single-slot server: one at a time.
static REAL_MODEL: Mutex<()> = Mutex::new(());

/// The local model server's base URL (`COMPACTD_TEST_LLM_URL`, else the
/// port scripts/local-llm.sh uses), or `None`, skipped (`support::skip`).
fn local_llm() -> Option<String> {
    let url = std::env::var("COMPACTD_TEST_LLM_URL")
        .unwrap_or_else(|_| "http://127.0.0.1:8765/v1".to_string());
    let root = url.trim_end_matches('/').trim_end_matches("/v1");
    if http_get_ok(&format!("{root}/health")) || http_get_ok(&format!("{url}/models")) {
        Some(url)
    } else {
        crate::support::skip(&format!(
            "no local LLM server at {url}; start one with `scripts/local-llm.sh up` or set COMPACTD_TEST_LLM_URL"
        ));
        None
    }
}

/// A plain HTTP/1.1 GET answering 200 (std only: this runs before anything
/// async).
fn http_get_ok(url: &str) -> bool {
    let Some(rest) = url.strip_prefix("http://") else {
        return false;
    };
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    let Ok(addr) = host.parse::<std::net::SocketAddr>().or_else(|_| {
        use std::net::ToSocketAddrs;
        host.to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
            .ok_or(())
    }) else {
        return false;
    };
    let Ok(mut stream) = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let request = format!("GET /{path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).is_ok() && head.starts_with(b"HTTP/1.") && &head[8..] == b" 200"
}

/// SmolLM2-135M loops on a sentence until `max_tokens` (a truncated, so
/// unusable, summary). Penalizing repetition and biasing its end-of-turn
/// token (`<|im_end|>`, id 2) lets it finish; the summaries stay poor,
/// which is why these tests assert structure, never wording.
fn tiny_model_sampling() -> Value {
    json!({"frequency_penalty": 1.0, "logit_bias": {"2": 4}})
}

fn real_summarizer(url: &str, extra: Value) -> Value {
    let mut summarizer = json!({
        "provider": "openai", "baseUrl": url, "model": "smollm2",
        "temperature": 0, "seed": 42, "maxTokens": 384, "timeoutMs": 120000,
        "extraBody": tiny_model_sampling()
    });
    merge(&mut summarizer, extra);
    summarizer
}

/// The first `n` messages of the real pi session.
fn pi_messages(n: usize) -> Option<Vec<Value>> {
    let dir = transcripts_dir()?;
    let messages = read_pi_session(&dir.join("pi-session-jsonl/large-session.jsonl"));
    Some(messages.into_iter().take(n).collect())
}

/// Compacts the first `n` messages of the real pi session through the
/// binary with the local model as summarizer (`summarizer` merged over the
/// defaults); returns the data dir, the server, the session id and the
/// result.
fn compact_real_transcript(
    url: &str,
    n: usize,
    max_tool_output_chars: usize,
    summarizer: Value,
    token: &str,
) -> Option<(tempfile::TempDir, Server, String, Value)> {
    let messages = pi_messages(n)?;
    let data = tempfile::tempdir().unwrap();
    let mut server = Server::start(
        data.path(),
        json!({
            "keepRecentTokens": 200, "maxToolOutputChars": max_tool_output_chars,
            "summarizer": real_summarizer(url, summarizer)
        }),
    );
    server.patience = MODEL_PATIENCE;
    let id = server.open(json!({"model": "claude-sonnet-4-5"}));
    server
        .request(
            "conversation/append",
            json!({"sessionId": id, "messages": messages}),
        )
        .unwrap();
    let result = compact(&mut server, &id, Some(token));
    Some((data, server, id, result))
}

#[test]
fn a_real_model_summarizes_a_real_transcript_with_progress_and_usage() {
    let Some(url) = local_llm() else { return };
    let _one_at_a_time = REAL_MODEL.lock().unwrap_or_else(|e| e.into_inner());
    // No summarizer window: one call (plus the split turn's prefix).
    let Some((data, server, id, result)) =
        compact_real_transcript(&url, 20, 200, json!({}), "real")
    else {
        return;
    };
    assert_eq!(result["compacted"], true, "{result}");
    assert_eq!(result["summarizer"], "openai:smollm2", "{result}");
    assert_eq!(
        result["degraded"], false,
        "the model's own summary: {result}"
    );
    let summary = result["summary"].as_str().unwrap();
    assert!(!summary.trim().is_empty());
    // The retention check ran; what the small model missed is preserved.
    let recall = result["recall"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&recall), "{result}");
    if recall < 1.0 {
        assert!(summary.contains("<preserved>\n"), "{summary}");
    }
    let reports = progress_reports(&server, "real");
    assert!(
        reports.iter().any(|m| m.contains("characters received")),
        "{reports:?}"
    );
    let entries = compaction_entries(data.path(), &id);
    let usage = &entries[0]["usage"];
    // llama-server reports a cached prompt prefix as cacheRead.
    let prompt_tokens = usage["input"].as_u64().unwrap() + usage["cacheRead"].as_u64().unwrap();
    assert!(
        prompt_tokens > 100 && usage["output"].as_u64().unwrap() > 0,
        "the real server's usage is stored: {}",
        entries[0]
    );
}

#[test]
fn a_real_model_takes_the_chunked_path_within_its_4096_token_window() {
    let Some(url) = local_llm() else { return };
    let _one_at_a_time = REAL_MODEL.lock().unwrap_or_else(|e| e.into_inner());
    let Some((data, server, id, result)) =
        compact_real_transcript(&url, 40, 300, json!({"contextWindow": 4096}), "chunks")
    else {
        return;
    };
    assert_eq!(result["compacted"], true, "{result}");
    let chunks = result["chunks"].as_u64().unwrap();
    assert!(chunks > 1, "the input exceeded the window: {result}");
    assert!(
        result["summarizer"].as_str().unwrap().starts_with("openai"),
        "{result}"
    );
    let reports = progress_reports(&server, "chunks");
    let chunked = reports.iter().any(|m| {
        m.strip_prefix("summarizing chunk 1 of ")
            .and_then(|n| n.parse::<u64>().ok())
            .is_some_and(|n| n > 1)
    });
    assert!(chunked, "{reports:?}");
    assert!(
        reports.iter().any(|m| m.starts_with("merging ")),
        "partial summaries merged: {reports:?}"
    );
    assert!(
        reports.iter().any(|m| m.contains("characters received")),
        "{reports:?}"
    );
    let entries = compaction_entries(data.path(), &id);
    let usage = &entries.last().unwrap()["usage"];
    assert!(
        usage["output"].as_u64().unwrap_or(0) > 0,
        "usage summed over the calls: {}",
        entries.last().unwrap()
    );
}

#[test]
fn a_real_model_streams_and_answers_without_streaming() {
    use compactd::config::{SummarizerConfig, SummarizerProvider};
    use compactd::conversation::Message;
    use compactd::summarize::{self, Progress, SummaryRequest};

    let Some(url) = local_llm() else { return };
    let _one_at_a_time = REAL_MODEL.lock().unwrap_or_else(|e| e.into_inner());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let request = SummaryRequest {
        previous_summary: None,
        messages: vec![
            Message::user(
                "u1",
                "Fix the panic in src/parse.rs when the input is empty.",
            ),
            Message::assistant(
                "a1",
                "I changed parse() to return an Option instead of unwrapping.",
                vec![],
            ),
            Message::user("u2", "Now add a test."),
        ]
        .into_iter()
        .map(Into::into)
        .collect(),
        partial_summaries: Vec::new(),
        later: Vec::new(),
        earlier: Vec::new(),
        instructions: None,
        max_tool_output_chars: 200,
        compact_prompt: None,
        update_prompt: None,
    };
    for stream in [true, false] {
        let config = SummarizerConfig {
            provider: SummarizerProvider::Openai,
            base_url: Some(url.clone()),
            model: Some("smollm2".into()),
            temperature: Some(0.0),
            seed: Some(42),
            max_tokens: Some(200),
            extra_body: tiny_model_sampling().as_object().cloned(),
            stream,
            ..SummarizerConfig::default()
        };
        let reports = Mutex::new(Vec::<Progress>::new());
        let sink = |p: Progress| reports.lock().unwrap().push(p);
        let summarizer = summarize::from_config(&config);
        let output = runtime
            .block_on(summarizer.summarize(request.clone(), &sink))
            .unwrap_or_else(|e| panic!("stream {stream}: {e}"));
        assert!(!output.text.is_empty());
        let usage = output.usage.expect("llama-server reports usage");
        // llama-server caches the prompt prefix between the two calls.
        assert!(
            usage.input + usage.cache_read > 50 && usage.output > 0,
            "{usage:?}"
        );
        let reports = reports.into_inner().unwrap();
        assert_eq!(
            reports.last().map(|p| p.message.clone()),
            Some(format!(
                "openai: {} characters received",
                output.text.chars().count()
            )),
            "stream {stream}"
        );
    }

    // The real server's overflow error is classified as one.
    let huge = SummaryRequest {
        messages: vec![Message::user("u1", "word ".repeat(9000)).into()],
        ..request
    };
    let config = SummarizerConfig {
        provider: SummarizerProvider::Openai,
        base_url: Some(url),
        max_tokens: Some(50),
        ..SummarizerConfig::default()
    };
    let outcome = runtime.block_on(summarize::from_config(&config).summarize(huge, &|_| {}));
    assert!(
        matches!(
            outcome,
            Err(compactd::summarize::SummarizeError::ContextOverflow(_))
        ),
        "{outcome:?}"
    );
}
