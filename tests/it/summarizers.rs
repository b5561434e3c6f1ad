//! The HTTP summarizers against the scripted fixture provider: wire
//! format, streaming, usage, retries and how each failure is classified.
//! (Through the binary: `llm.rs`.)

use std::sync::Mutex;
use std::time::Duration;

use compactd::config::{SummarizerConfig, SummarizerProvider};
use compactd::conversation::{Message, ToolCall};
use compactd::summarize::{self, Progress, SummarizeError, SummaryOutput, SummaryRequest};
use serde_json::{json, Value};

use crate::fixture::{openai_completion, openai_stream, sse, End, Fixture, Piece, Reply, SUMMARY};

fn config(fixture: &Fixture) -> SummarizerConfig {
    SummarizerConfig {
        provider: SummarizerProvider::Openai,
        model: Some("fixture".into()),
        base_url: Some(fixture.url.clone()),
        max_tokens: Some(100),
        timeout_ms: 2_000,
        ..SummarizerConfig::default()
    }
}

fn anthropic_config(fixture: &Fixture) -> SummarizerConfig {
    SummarizerConfig {
        provider: SummarizerProvider::Anthropic,
        model: Some("claude-haiku-4-5".into()),
        ..config(fixture)
    }
}

fn request() -> SummaryRequest {
    SummaryRequest {
        previous_summary: None,
        messages: vec![
            Message::user("u1", "Fix the parser in src/parse.rs"),
            Message::assistant(
                "a1",
                "Reading it.",
                vec![ToolCall {
                    id: "c1".into(),
                    name: "read".into(),
                    arguments: json!({"path": "src/parse.rs"}),
                }],
            ),
            Message::tool_result("t1", "c1", "fn parse() {}", false),
        ]
        .into_iter()
        .map(Into::into)
        .collect(),
        partial_summaries: Vec::new(),
        later: Vec::new(),
        earlier: Vec::new(),
        instructions: None,
        max_tool_output_chars: 2000,
        compact_prompt: None,
        update_prompt: None,
    }
}

/// Runs one summary call; returns its outcome and the progress reports.
fn summarize(config: &SummarizerConfig) -> (Result<SummaryOutput, SummarizeError>, Vec<Progress>) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let reports = Mutex::new(Vec::new());
    let sink = |p: Progress| reports.lock().unwrap().push(p);
    let summarizer = summarize::from_config(config);
    let outcome = runtime.block_on(summarizer.summarize(request(), &sink));
    (outcome, reports.into_inner().unwrap())
}

/// The message of a `Failed` outcome.
fn failure(outcome: Result<SummaryOutput, SummarizeError>) -> String {
    match outcome {
        Err(SummarizeError::Failed(m)) => m,
        other => panic!("expected a failure, got {other:?}"),
    }
}

fn gaps_ms(fixture: &Fixture) -> Vec<u128> {
    let requests = fixture.requests();
    requests
        .windows(2)
        .map(|w| (w[1].at - w[0].at).as_millis())
        .collect()
}

fn anthropic_stream(pieces: &[&str], stop_reason: &str) -> Vec<String> {
    let event = |name: &str, data: Value| format!("event: {name}\ndata: {data}\n\n");
    let mut events = vec![
        event(
            "message_start",
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 410, "cache_read_input_tokens": 0, "output_tokens": 1}}}),
        ),
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        event("ping", json!({"type": "ping"})),
    ];
    for piece in pieces {
        events.push(event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}}),
        ));
    }
    events.push(event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop_reason}, "usage": {"output_tokens": 37}}),
    ));
    events.push(event("message_stop", json!({"type": "message_stop"})));
    events
}

#[test]
fn openai_streams_a_summary_with_usage_and_progress() {
    let fixture = Fixture::script(vec![Reply::stream(
        openai_stream(
            &[
                "## Goal\n",
                "- Fix the parser.",
                "\n## Next step\n- Add a test.",
            ],
            "stop",
        ),
        End::Complete,
    )]);
    let (outcome, reports) = summarize(&config(&fixture));
    let output = outcome.unwrap();
    let text = "## Goal\n- Fix the parser.\n## Next step\n- Add a test.";
    assert_eq!(output.text, text);
    assert_eq!(output.summarizer, "openai:fixture");
    assert_eq!(output.chunks, 1);
    let usage = output.usage.unwrap();
    assert_eq!((usage.input, usage.output), (321, 45));
    let last = reports.last().expect("progress while streaming");
    assert_eq!(
        last.message,
        format!("openai: {} characters received", text.chars().count())
    );

    let requests = fixture.requests();
    assert_eq!(requests.len(), 1);
    let sent = &requests[0];
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(sent.header("authorization"), None, "no apiKeyEnv, no key");
    assert_eq!(sent.body["model"], "fixture");
    assert_eq!(sent.body["max_tokens"], 100);
    assert_eq!(sent.body["stream"], true);
    assert_eq!(sent.body["stream_options"]["include_usage"], true);
    assert_eq!(sent.body["messages"][0]["role"], "system");
    let user = sent.body["messages"][1]["content"].as_str().unwrap();
    assert!(
        user.contains("<conversation>\n[user u1]: Fix the parser in src/parse.rs\n[assistant]: Reading it.\n[tool call read]: {\"path\":\"src/parse.rs\"}\n[tool result]: fn parse() {}\n</conversation>"),
        "{user}"
    );
}

#[test]
fn openai_without_streaming() {
    let fixture = Fixture::script(vec![Reply::json(200, openai_completion(SUMMARY))]);
    let config = SummarizerConfig {
        stream: false,
        temperature: Some(0.0),
        seed: Some(42),
        extra_body:
            json!({"frequency_penalty": 0.5, "chat_template_kwargs": {"enable_thinking": false}})
                .as_object()
                .cloned(),
        ..config(&fixture)
    };
    let (outcome, reports) = summarize(&config);
    let output = outcome.unwrap();
    assert_eq!(output.text, SUMMARY);
    assert_eq!(output.usage.unwrap().output, 20);
    assert_eq!(reports.len(), 1, "one report for the whole reply");
    let body = &fixture.requests()[0].body;
    assert_eq!(body["stream"], false);
    assert!(body.get("stream_options").is_none());
    assert_eq!(
        (body["temperature"].clone(), body["seed"].clone()),
        (json!(0.0), json!(42))
    );
}

#[test]
fn server_errors_are_retried_with_growing_backoff_then_given_up() {
    let fixture = Fixture::script(vec![Reply::json(
        503,
        json!({"error": {"message": "upstream unavailable"}}),
    )]);
    let (outcome, reports) = summarize(&config(&fixture));
    let m = failure(outcome);
    assert!(
        m.contains("HTTP 503") && m.contains("upstream unavailable"),
        "{m}"
    );
    assert!(m.contains("after 4 attempts"), "{m}");
    assert_eq!(fixture.requests().len(), 4, "at most 4 attempts");
    // 200 ms · 2ⁿ with ±10% jitter.
    let gaps = gaps_ms(&fixture);
    for (gap, nominal) in gaps.iter().zip([200u128, 400, 800]) {
        assert!(*gap >= nominal * 9 / 10, "gaps {gaps:?}");
    }
    assert!(gaps[2] > gaps[0], "backoff grows: {gaps:?}");
    assert_eq!(
        reports
            .iter()
            .filter(|p| p.message.contains("retrying"))
            .count(),
        3
    );
}

#[test]
fn request_timeouts_are_retried_and_other_client_errors_are_not() {
    let fixture = Fixture::script(vec![
        Reply::json(408, json!({"error": {"message": "request timeout"}})),
        Reply::stream(openai_stream(&[SUMMARY], "stop"), End::Complete),
    ]);
    assert!(summarize(&config(&fixture)).0.is_ok());
    assert_eq!(fixture.requests().len(), 2);

    for status in [400, 404, 422] {
        let fixture = Fixture::script(vec![Reply::json(
            status,
            json!({"error": {"message": "model `fixture` does not exist", "type": "invalid_request_error"}}),
        )]);
        let m = failure(summarize(&config(&fixture)).0);
        assert!(
            m.contains(&format!("HTTP {status}")) && m.contains("does not exist"),
            "{m}"
        );
        assert_eq!(
            fixture.requests().len(),
            1,
            "HTTP {status} is never retried"
        );
    }
}

#[test]
fn overflow_bodies_from_several_providers_are_context_overflows() {
    let cases = [
        (
            "openai",
            Reply::json(
                400,
                json!({"error": {"message": "This model's maximum context length is 4096 tokens. However, you requested 8828 tokens (8572 in the messages, 256 in the completion).", "type": "invalid_request_error", "code": "context_length_exceeded"}}),
            ),
        ),
        (
            "llama.cpp",
            Reply::json(
                400,
                json!({"error": {"code": 400, "message": "request (8796 tokens) exceeds the available context size (4096 tokens), try increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": 8796, "n_ctx": 4096}}),
            ),
        ),
        (
            "vllm",
            Reply::json(
                400,
                json!({"object": "error", "message": "This model's maximum context length is 131072 tokens. However, you requested 156632 tokens.", "type": "BadRequestError", "code": 400}),
            ),
        ),
        ("cerebras", Reply::text(413, "")),
        (
            "openrouter",
            Reply::json(
                400,
                json!({"error": {"message": "This endpoint's maximum context length is 131072 tokens. However, you requested about 141607 tokens.", "code": 400}}),
            ),
        ),
    ];
    for (provider, reply) in cases {
        let fixture = Fixture::script(vec![reply]);
        match summarize(&config(&fixture)).0 {
            Err(SummarizeError::ContextOverflow(_)) => {}
            other => panic!("{provider}: expected ContextOverflow, got {other:?}"),
        }
        assert_eq!(
            fixture.requests().len(),
            1,
            "{provider}: an overflow is not retried"
        );
    }
    let fixture = Fixture::script(vec![Reply::json(
        400,
        json!({"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 213462 tokens > 200000 maximum"}}),
    )]);
    assert!(matches!(
        summarize(&anthropic_config(&fixture)).0,
        Err(SummarizeError::ContextOverflow(_))
    ));
}

#[test]
fn rate_limit_waits_are_bounded() {
    let fixture = Fixture::script(vec![
        Reply::json(429, json!({"error": {"message": "Rate limit reached"}}))
            .with_header("retry-after-ms", "300"),
        Reply::stream(openai_stream(&[SUMMARY], "stop"), End::Complete),
    ]);
    assert!(summarize(&config(&fixture)).0.is_ok());
    let gap = gaps_ms(&fixture)[0];
    assert!(gap >= 300, "retry-after-ms honoured: {gap} ms");

    // A provider asking for minutes is not waited out: fail, fall back.
    let fixture = Fixture::script(vec![Reply::json(
        429,
        json!({"error": {"message": "Rate limit reached"}}),
    )
    .with_header("retry-after", "600")]);
    let m = failure(summarize(&config(&fixture)).0);
    assert!(m.contains("600 s"), "{m}");
    assert_eq!(fixture.requests().len(), 1);
}

#[test]
fn a_slow_first_byte_is_waited_for_until_the_timeout_then_retried() {
    let fixture = Fixture::script(vec![Reply::after(
        Duration::from_millis(400),
        Reply::stream(openai_stream(&[SUMMARY], "stop"), End::Complete),
    )]);
    assert!(summarize(&config(&fixture)).0.is_ok());
    assert_eq!(fixture.requests().len(), 1, "slow but within timeoutMs");

    let fixture = Fixture::script(vec![
        Reply::after(
            Duration::from_secs(30),
            Reply::stream(openai_stream(&["late"], "stop"), End::Complete),
        ),
        Reply::stream(openai_stream(&[SUMMARY], "stop"), End::Complete),
    ]);
    let config = SummarizerConfig {
        timeout_ms: 300,
        ..config(&fixture)
    };
    let (outcome, reports) = summarize(&config);
    assert_eq!(outcome.unwrap().text, SUMMARY);
    assert_eq!(fixture.requests().len(), 2);
    let gap = gaps_ms(&fixture)[0];
    assert!(
        gap >= 300 + 180,
        "timed out at 300 ms, then backed off: {gap} ms"
    );
    assert!(reports
        .iter()
        .any(|p| p.message.contains("no response within 300 ms")));
}

#[test]
fn a_stream_that_stalls_mid_way_is_retried() {
    let mut pieces: Vec<Piece> = vec![Piece::Bytes(sse(
        &json!({"choices": [{"index": 0, "delta": {"content": "## Go"}, "finish_reason": null}]}),
    ))];
    pieces.push(Piece::Pause(Duration::from_secs(30)));
    let fixture = Fixture::script(vec![
        Reply::Stream {
            pieces,
            end: End::Complete,
        },
        Reply::stream(openai_stream(&[SUMMARY], "stop"), End::Complete),
    ]);
    let config = SummarizerConfig {
        timeout_ms: 300,
        ..config(&fixture)
    };
    let (outcome, _) = summarize(&config);
    assert_eq!(
        outcome.unwrap().text,
        SUMMARY,
        "the partial first attempt is discarded"
    );
    assert_eq!(fixture.requests().len(), 2);
}

#[test]
fn streams_that_end_without_done() {
    // A finish reason says the reply is whole even without `[DONE]`.
    let mut events = openai_stream(&[SUMMARY], "stop");
    events.truncate(2);
    let fixture = Fixture::script(vec![Reply::stream(events, End::Complete)]);
    let output = summarize(&config(&fixture)).0.unwrap();
    assert_eq!(output.text, SUMMARY);
    assert_eq!(output.usage, None, "the usage chunk never came");
    assert_eq!(fixture.requests().len(), 1);

    // Text but no finish reason and no `[DONE]`: cut short, asked again.
    let mut events = openai_stream(&["## Goal"], "stop");
    events.truncate(1);
    let fixture = Fixture::script(vec![
        Reply::stream(events, End::Complete),
        Reply::stream(openai_stream(&[SUMMARY], "stop"), End::Complete),
    ]);
    assert_eq!(summarize(&config(&fixture)).0.unwrap().text, SUMMARY);
    assert_eq!(fixture.requests().len(), 2);

    // An empty 200 stream (llama-cpp-python hides overflows this way): the
    // question is asked again without streaming, which tells the truth.
    let fixture = Fixture::script(vec![
        Reply::stream(vec![": ping\n\n".into()], End::Complete),
        Reply::json(
            400,
            json!({"error": {"message": "This model's maximum context length is 4096 tokens. However, you requested 8828 tokens", "code": "context_length_exceeded"}}),
        ),
    ]);
    assert!(matches!(
        summarize(&config(&fixture)).0,
        Err(SummarizeError::ContextOverflow(_))
    ));
    let requests = fixture.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].body["stream"], true);
    assert_eq!(requests[1].body["stream"], false);
}

#[test]
fn error_events_inside_a_stream() {
    let fixture = Fixture::script(vec![
        Reply::stream(
            vec![sse(
                &json!({"error": {"message": "upstream provider overloaded", "code": 502}}),
            )],
            End::Complete,
        ),
        Reply::stream(openai_stream(&[SUMMARY], "stop"), End::Complete),
    ]);
    assert_eq!(summarize(&config(&fixture)).0.unwrap().text, SUMMARY);
    assert_eq!(
        fixture.requests().len(),
        2,
        "a server error mid-stream is retried"
    );

    let fixture = Fixture::script(vec![Reply::stream(
        vec![sse(
            &json!({"error": {"message": "This model's maximum context length is 8192 tokens", "code": 400}}),
        )],
        End::Complete,
    )]);
    assert!(matches!(
        summarize(&config(&fixture)).0,
        Err(SummarizeError::ContextOverflow(_))
    ));
}

#[test]
fn unusable_replies_are_reported_as_unusable() {
    let cases = [
        ("truncated", openai_stream(&["## Goal\n- Fix the"], "length"), "length"),
        ("empty", openai_stream(&["  \n"], "stop"), "empty"),
        (
            "echo",
            openai_stream(
                &["Do not continue the conversation, do not answer its questions, and do not mention these instructions."],
                "stop",
            ),
            "instructions",
        ),
    ];
    for (name, events, needle) in cases {
        let fixture = Fixture::script(vec![Reply::stream(events, End::Complete)]);
        match summarize(&config(&fixture)).0 {
            Err(SummarizeError::Unusable(m)) => assert!(m.contains(needle), "{name}: {m}"),
            other => panic!("{name}: expected Unusable, got {other:?}"),
        }
        assert_eq!(
            fixture.requests().len(),
            1,
            "{name}: the caller decides whether to ask again"
        );
    }
}

#[test]
fn anthropic_streams_with_its_headers_and_usage() {
    let fixture = Fixture::script(vec![
        Reply::json(529, json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})),
        Reply::stream(
            vec![
                "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n".to_string(),
            ],
            End::Complete,
        ),
        Reply::stream(anthropic_stream(&["## Goal\n", "- Fix the parser."], "end_turn"), End::Complete),
    ]);
    let (outcome, reports) = summarize(&anthropic_config(&fixture));
    let output = outcome.unwrap();
    assert_eq!(output.text, "## Goal\n- Fix the parser.");
    assert_eq!(output.summarizer, "anthropic:claude-haiku-4-5");
    let usage = output.usage.unwrap();
    assert_eq!((usage.input, usage.output), (410, 37));
    assert!(reports
        .iter()
        .any(|p| p.message.contains("characters received")));
    let requests = fixture.requests();
    assert_eq!(
        requests.len(),
        3,
        "529 and an overloaded error event are retried"
    );
    let sent = &requests[2];
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(sent.body["thinking"], json!({"type": "disabled"}));
    assert_eq!(sent.body["model"], "claude-haiku-4-5");
    assert!(sent.body["system"].as_str().unwrap().contains("## Goal"));

    let fixture = Fixture::script(vec![Reply::stream(
        anthropic_stream(&["## Goal\n- Fix"], "max_tokens"),
        End::Complete,
    )]);
    assert!(matches!(
        summarize(&anthropic_config(&fixture)).0,
        Err(SummarizeError::Unusable(_))
    ));
}

#[test]
fn connection_errors_are_retried() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let config = SummarizerConfig {
        provider: SummarizerProvider::Openai,
        base_url: Some(format!("http://127.0.0.1:{port}/v1")),
        timeout_ms: 2_000,
        ..SummarizerConfig::default()
    };
    let (outcome, reports) = summarize(&config);
    let m = failure(outcome);
    assert!(m.contains("after 4 attempts"), "{m}");
    assert_eq!(
        reports
            .iter()
            .filter(|p| p.message.contains("retrying"))
            .count(),
        3
    );
}

#[test]
fn keys_come_from_the_environment_and_stay_out_of_errors() {
    let key = "sk-test-LIBRARYKEY-0123456789";
    // A unique variable per test: the environment is shared by the process.
    std::env::set_var("COMPACTD_TEST_LIBRARY_KEY", key);
    let fixture = Fixture::script(vec![
        Reply::stream(openai_stream(&[SUMMARY], "stop"), End::Complete),
        Reply::json(
            401,
            json!({"error": {"message": format!("Incorrect API key provided: {key}")}}),
        ),
        Reply::json(
            400,
            json!({"error": {"message": format!("bad request for key {key}")}}),
        ),
    ]);
    let config = SummarizerConfig {
        api_key_env: Some("COMPACTD_TEST_LIBRARY_KEY".into()),
        ..config(&fixture)
    };
    assert!(summarize(&config).0.is_ok());
    assert_eq!(
        fixture.requests()[0].header("authorization"),
        Some(format!("Bearer {key}").as_str())
    );
    for expected_status in ["401", "400"] {
        let error = summarize(&config).0.unwrap_err().to_string();
        assert!(error.contains(expected_status), "{error}");
        assert!(!error.contains("LIBRARYKEY"), "key echoed: {error}");
    }

    let anthropic = Fixture::script(vec![Reply::stream(
        anthropic_stream(&[SUMMARY], "end_turn"),
        End::Complete,
    )]);
    let config = SummarizerConfig {
        api_key_env: Some("COMPACTD_TEST_LIBRARY_KEY".into()),
        ..anthropic_config(&anthropic)
    };
    assert!(summarize(&config).0.is_ok());
    assert_eq!(anthropic.requests()[0].header("x-api-key"), Some(key));

    let config = SummarizerConfig {
        api_key_env: Some("COMPACTD_TEST_UNSET_KEY".into()),
        ..config
    };
    let m = failure(summarize(&config).0);
    assert!(
        m.contains("COMPACTD_TEST_UNSET_KEY") && m.contains("not set"),
        "{m}"
    );
    assert_eq!(anthropic.requests().len(), 1, "no request without the key");
}
