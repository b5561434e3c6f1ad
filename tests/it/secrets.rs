//! The API key never leaves compactd, through the real binary against the
//! scripted fixture provider: not when a provider echoes it where an error
//! is cut short, not when a summary quotes it, and not when it is written
//! into the base URL or the extra request body. Every check looks at every
//! frame the server sent, the session logs' bytes and its whole stderr, for
//! the key and for its first 8 characters.

use std::path::Path;

use serde_json::{json, Value};

use crate::fixture::{openai_completion, openai_stream, End, Fixture, Reply, SUMMARY};
use crate::support::Server;

const KEY: &str = "sk-LeakQ7vX2m9Pz4Rt8Wn6YbKd";
const KEY_ENV: &str = "COMPACTD_SECRETS_KEY";

/// A server whose openai summarizer is `fixture` (with `summarizer` merged
/// in), sending the key, with one session worth compacting.
fn start(fixture: &Fixture, data: &Path, summarizer: Value) -> (Server, String) {
    let mut server = spawn(data);
    server.initialize(options(fixture, summarizer));
    let id = fill(&mut server);
    (server, id)
}

/// The binary with the key in its environment and every log on.
fn spawn(data: &Path) -> Server {
    Server::spawn_with_env(data, &[(KEY_ENV, KEY), ("COMPACTD_LOG", "trace")])
}

/// Opens a session holding a conversation worth compacting.
fn fill(server: &mut Server) -> String {
    let id = server.open(json!({}));
    let messages: Vec<Value> = (0..4)
        .flat_map(|i| {
            [
                json!({"role": "user", "content": format!("step {i}: fix the parser tables")}),
                json!({"role": "assistant", "content": format!("done {i}: {}", "checked every table again. ".repeat(40))}),
            ]
        })
        .chain([json!({"role": "user", "content": "go on"})])
        .collect();
    server.append(&id, messages);
    id
}

/// Initialization options for the fixture, `summarizer` merged in.
fn options(fixture: &Fixture, summarizer: Value) -> Value {
    let mut options = json!({
        "keepRecentTokens": 1,
        "summarizer": {
            "provider": "openai", "baseUrl": fixture.url, "model": "fixture",
            "apiKeyEnv": KEY_ENV, "maxTokens": 200, "timeoutMs": 5000, "stream": false
        }
    });
    crate::support::merge(&mut options["summarizer"], summarizer);
    options
}

/// Fails when the key or its first 8 characters are anywhere the server
/// wrote: its frames, the files in `data`, its whole stderr (read after it
/// exits).
fn assert_no_key_anywhere(server: Server, data: &Path, case: &str) {
    let frames = serde_json::to_string(&server.received).unwrap();
    let stderr = server.exit_and_stderr();
    assert!(
        stderr.contains("TRACE") || stderr.contains("DEBUG"),
        "{case}: logging was on"
    );
    let mut places = vec![("the frames sent".to_string(), frames.into_bytes())];
    places.push(("stderr".into(), stderr.into_bytes()));
    for entry in std::fs::read_dir(data).unwrap() {
        let path = entry.unwrap().path();
        places.push((path.display().to_string(), std::fs::read(&path).unwrap()));
    }
    for (place, bytes) in places {
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains(&KEY[..8]),
            "{case}: key (or its start) in {place}"
        );
    }
}

#[test]
fn a_key_straddling_the_cut_of_an_error_never_leaks() {
    // Providers echo keys in errors; each body puts it across the point
    // where compactd shortens the text it quotes, so that cutting before
    // redacting would leave its first 10 characters.
    let json_error = |status: u16, before: usize| {
        let message = format!("{}{KEY} was refused", "x".repeat(before));
        Reply::json(status, json!({"error": {"message": message}}))
    };
    let cases = [
        // The message is quoted up to 500 characters.
        ("400 message", json_error(400, 490)),
        // Retried: the message also goes to progress and the retry log.
        ("503 message", json_error(503, 490)),
        (
            "text body",
            Reply::text(400, &format!("{}{KEY}", "y".repeat(490))),
        ),
        // A 200 that is not JSON is quoted up to 300 characters.
        (
            "non-JSON 200",
            Reply::text(200, &format!("{}{KEY}", "z".repeat(290))),
        ),
        // A stream event that is not JSON (it used to be cut at 200).
        (
            "stream event",
            Reply::stream(
                vec![format!("data: {}{KEY}\n\n", "w".repeat(190))],
                End::Complete,
            ),
        ),
    ];
    for (case, reply) in cases {
        let fixture = Fixture::script(vec![reply]);
        let data = tempfile::tempdir().unwrap();
        let stream = case == "stream event";
        let (mut server, id) = start(&fixture, data.path(), json!({"stream": stream}));
        let result = server
            .request(
                "conversation/compact",
                json!({"sessionId": id, "workDoneToken": "t"}),
            )
            .unwrap();
        assert_eq!(result["degraded"], true, "{case}: {result}");
        let reason = result["degradedReason"].as_str().unwrap();
        assert!(!reason.contains(&KEY[..8]), "{case}: key in {reason}");
        assert!(reason.contains("[redacted]"), "{case}: {reason}");
        let sent = &fixture.requests()[0];
        assert_eq!(
            sent.header("authorization"),
            Some(format!("Bearer {KEY}").as_str()),
            "{case}: the key was sent"
        );
        assert_eq!(sent.body["stream"], stream, "{case}");
        if case == "503 message" {
            let reports = server.received_notifications("$/progress");
            assert!(
                reports.iter().any(|p| p["value"]["message"]
                    .as_str()
                    .unwrap_or("")
                    .contains("retrying")),
                "{case}: the retries were reported"
            );
        }
        assert_no_key_anywhere(server, data.path(), case);
    }
}

#[test]
fn a_summary_quoting_the_key_is_stored_and_sent_redacted() {
    // The key arrives split across two stream deltas, then its start again.
    let (head, tail) = KEY.split_at(10);
    let pieces = [
        "## Goal\n- Call the API with ",
        head,
        tail,
        &format!(" (the key starting {}).\n", &KEY[..12]),
        SUMMARY,
    ];
    let fixture = Fixture::script(vec![Reply::stream(
        openai_stream(&pieces, "stop"),
        End::Complete,
    )]);
    let data = tempfile::tempdir().unwrap();
    let (mut server, id) = start(&fixture, data.path(), json!({"stream": true}));
    let result = server
        .request("conversation/compact", json!({"sessionId": id}))
        .unwrap();
    assert_eq!(result["compacted"], true, "{result}");
    assert_eq!(result["degraded"], false, "{result}");
    let summary = result["summary"].as_str().unwrap();
    assert!(
        summary.starts_with(
            "## Goal\n- Call the API with [redacted] (the key starting [redacted]).\n## Goal"
        ),
        "{summary}"
    );
    let history = server
        .request("conversation/history", json!({"sessionId": id}))
        .unwrap();
    assert!(history.to_string().contains("[redacted]"), "{history}");
    assert_eq!(fixture.requests()[0].body["stream"], true);
    assert_no_key_anywhere(server, data.path(), "summary");
}

/// Summarizer settings that hold a credential, each refused.
fn credential_settings(fixture: &Fixture) -> Vec<(&'static str, Value, &'static str)> {
    let host = fixture.url.trim_start_matches("http://");
    vec![
        (
            "userinfo",
            json!({"baseUrl": format!("http://user:{KEY}@{host}")}),
            "summarizer.baseUrl",
        ),
        (
            "query",
            json!({"baseUrl": format!("{}?api_key={KEY}", fixture.url)}),
            "summarizer.baseUrl",
        ),
        (
            "key in the path",
            json!({"baseUrl": format!("{}/{KEY}", fixture.url)}),
            "summarizer.baseUrl",
        ),
        (
            "extraBody field",
            json!({"extraBody": {"x-api-key": KEY}}),
            "summarizer.extraBody",
        ),
        (
            "extraBody value",
            json!({"extraBody": {"metadata": {"note": format!("key {KEY}")}}}),
            "summarizer.extraBody",
        ),
    ]
}

#[test]
fn credentials_in_base_url_or_extra_body_are_refused_without_echo() {
    let fixture = Fixture::script(vec![Reply::json(200, openai_completion(SUMMARY))]);
    let data = tempfile::tempdir().unwrap();
    let mut server = spawn(data.path());
    for (case, summarizer, field) in credential_settings(&fixture) {
        let mut init = json!({"dataDir": data.path()});
        crate::support::merge(&mut init, options(&fixture, summarizer));
        let id = server.send_request(
            "initialize",
            json!({"processId": null, "capabilities": {}, "initializationOptions": init}),
        );
        let error = server.response(id).unwrap_err();
        assert_eq!(error.code, -32602, "{case}");
        assert!(error.message.contains(field), "{case}: {}", error.message);
        assert!(
            !error.message.contains(&KEY[..8]),
            "{case}: {}",
            error.message
        );
    }
    // Refused settings leave the server uninitialized; good ones work.
    server.initialize(options(&fixture, json!({})));
    let id = fill(&mut server);
    for (_, summarizer, _) in credential_settings(&fixture) {
        server.notify(
            "workspace/didChangeConfiguration",
            json!({"settings": options(&fixture, summarizer)}),
        );
    }
    // Every change was refused: the summarizer still posts to the fixture,
    // with no extra field.
    let result = server
        .request("conversation/compact", json!({"sessionId": id}))
        .unwrap();
    assert_eq!(result["compacted"], true, "{result}");
    assert_eq!(result["degraded"], false, "{result}");
    let requests = fixture.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert!(requests[0].body.get("x-api-key").is_none());
    assert!(requests[0].body.get("metadata").is_none());
    let frames = serde_json::to_string(&server.received).unwrap();
    let stderr = server.exit_and_stderr();
    let refusals = stderr
        .lines()
        .filter(|l| l.contains("workspace/didChangeConfiguration ignored"))
        .count();
    assert_eq!(refusals, 5, "{stderr}");
    for text in [&frames, &stderr] {
        assert!(!text.contains(&KEY[..8]), "key echoed: {text}");
    }
}

#[test]
fn connection_errors_show_the_url_without_its_query() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let data = tempfile::tempdir().unwrap();
    let mut server = spawn(data.path());
    // Not a credential, but where one would be: a query is never shown.
    let url = format!("http://127.0.0.1:{port}/v1?tenant=acme-QUERYTEXT");
    let options = json!({"keepRecentTokens": 1, "summarizer": {
        "provider": "openai", "baseUrl": url, "apiKeyEnv": KEY_ENV, "timeoutMs": 5000
    }});
    server.initialize(options);
    let id = fill(&mut server);
    let result = server
        .request("conversation/compact", json!({"sessionId": id}))
        .unwrap();
    let reason = result["degradedReason"].as_str().unwrap();
    assert!(
        reason.contains(&format!("for http://127.0.0.1:{port}/v1")),
        "{reason}"
    );
    assert!(!reason.contains("QUERYTEXT"), "{reason}");
    assert_no_key_anywhere(server, data.path(), "connection error");
}

/// A cloned repository's `compactd.toml` names a URL of its own and the
/// user's key variable: compactd neither sends there nor reads that key
/// (the built-in summarizer writes the summary) and says what it left out.
/// Once the client trusts the workspace (as the user's own `compactd.toml`
/// can, `config::tests`), the same file is obeyed, so the first half could
/// fail.
#[test]
fn a_workspace_config_sends_the_users_key_nowhere_until_trusted() {
    let fixture = Fixture::script(vec![Reply::json(200, openai_completion(SUMMARY))]);
    let data = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(
        workspace.path().join("compactd.toml"),
        format!(
            "keepRecentTokens = 1\n[summarizer]\nprovider = \"openai\"\nbaseUrl = \"{}\"\napiKeyEnv = \"{KEY_ENV}\"\nmodel = \"fixture\"\nstream = false\ntimeoutMs = 5000\n",
            fixture.url
        ),
    )
    .unwrap();
    let compact = |trusted: bool| {
        let mut server = spawn(data.path());
        let options = match trusted {
            true => json!({"trustedWorkspaces": [workspace.path()]}),
            false => json!({}),
        };
        let root = crate::support::file_uri(workspace.path());
        server.initialize_params(options, json!({"rootUri": root}));
        let id = fill(&mut server);
        let result = server
            .request("conversation/compact", json!({"sessionId": id}))
            .unwrap();
        (server, result)
    };

    let (server, result) = compact(false);
    assert_eq!(result["summarizer"], "offline", "{result}");
    assert!(fixture.requests().is_empty(), "nothing was sent");
    let stderr = server.stderr();
    for field in [
        "summarizer.provider",
        "summarizer.baseUrl",
        "summarizer.apiKeyEnv",
    ] {
        assert!(stderr.contains(&format!("`{field}` ignored")), "{stderr}");
    }
    assert_no_key_anywhere(server, data.path(), "untrusted workspace");

    let (_server, result) = compact(true);
    assert_eq!(result["summarizer"], "openai:fixture", "{result}");
    let requests = fixture.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
}
