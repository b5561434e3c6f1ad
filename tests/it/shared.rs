//! The shared sidecar: the real binary serving `--listen`, driven by real
//! WebSocket clients (tokio-tungstenite, an implementation independent of
//! the server's), and by `compactd connect` bridging stdio to it.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use futures_util::SinkExt;
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::{self, Message as WsMessage};

use crate::support;

/// A `compactd serve --listen` process.
struct Shared {
    child: Child,
    url: String,
    token: String,
    discovery: PathBuf,
    dir: tempfile::TempDir,
}

impl Shared {
    fn start() -> Shared {
        Self::start_with(&[])
    }

    /// Starts the server in a fresh directory (its workspace, HOME and data
    /// dir) and reads the address it prints and the discovery file.
    fn start_with(args: &[&str]) -> Shared {
        Self::start_configured(args, "")
    }

    /// Starts with `config` as the `compactd.toml` of its workspace.
    fn start_configured(args: &[&str], config: &str) -> Shared {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("compactd.toml"), config).unwrap();
        let discovery = dir.path().join("run/server.json");
        let mut child = Self::command(dir.path(), &discovery, args)
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn compactd serve");
        let stdout = child.stdout.take().unwrap();
        let mut line = String::new();
        std::io::BufReader::new(stdout)
            .read_line(&mut line)
            .unwrap();
        let url = line
            .trim()
            .strip_prefix("compactd listening on ")
            .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
            .to_string();
        let found: Value =
            serde_json::from_slice(&std::fs::read(&discovery).expect("discovery file")).unwrap();
        assert_eq!(found["url"], url.as_str());
        assert_eq!(found["pid"], child.id());
        Shared {
            token: found["token"].as_str().unwrap().to_string(),
            child,
            url,
            discovery,
            dir,
        }
    }

    fn command(dir: &Path, discovery: &Path, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_compactd"));
        command
            .args(["--no-user-config", "serve", "--discovery-file"])
            .arg(discovery)
            .args(args)
            .current_dir(dir)
            .env("HOME", dir)
            .env("XDG_DATA_HOME", dir.join("data"))
            .env("XDG_CONFIG_HOME", dir.join("config"))
            .env("COMPACTD_LOG", "info")
            .stdin(Stdio::null())
            // SHARED_TEST_STDERR=1 shows the server's log while debugging a test.
            .stderr(if std::env::var_os("SHARED_TEST_STDERR").is_some() {
                Stdio::inherit()
            } else {
                Stdio::null()
            });
        if !args.contains(&"--listen") {
            command.args(["--listen", "127.0.0.1:0"]);
        }
        command
    }

    fn sessions_dir(&self) -> PathBuf {
        self.dir.path().join("data/compactd/sessions")
    }

    async fn client(&self) -> Client {
        Client::connect(&self.url, Some(&self.token), None)
            .await
            .expect("connect")
    }

    /// SIGTERM, as a service manager stops it; returns the exit code.
    fn terminate(&mut self) -> i32 {
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        self.child.wait().unwrap().code().unwrap_or(-1)
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A JSON-RPC client over one WebSocket.
struct Client {
    stream: support::WsStream,
    next_id: i64,
    /// Notifications and server requests received while waiting for
    /// responses, in arrival order.
    received: Vec<Value>,
}

impl Client {
    async fn connect(
        url: &str,
        token: Option<&str>,
        origin: Option<&str>,
    ) -> Result<Client, tungstenite::Error> {
        Ok(Client {
            stream: support::ws_connect(url, token, origin).await?,
            next_id: 0,
            received: Vec::new(),
        })
    }

    async fn send(&mut self, message: Value) {
        self.stream
            .send(WsMessage::text(message.to_string()))
            .await
            .unwrap();
    }

    async fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await;
    }

    async fn send_request(&mut self, method: &str, params: Value) -> i64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        id
    }

    /// The next message; `None` once the server closed the connection.
    async fn next(&mut self) -> Option<Value> {
        let message = support::ws_next(&mut self.stream).await?;
        assert_eq!(message["jsonrpc"], "2.0", "{message}");
        Some(message)
    }

    /// Reads until a message matching `pred`, keeping the others.
    async fn next_where(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        loop {
            let message = self.next().await.expect("connection closed");
            if pred(&message) {
                return message;
            }
            self.received.push(message);
        }
    }

    async fn response(&mut self, id: i64) -> Result<Value, Value> {
        let message = self
            .next_where(|m| m["id"] == json!(id) && m.get("method").is_none())
            .await;
        match message.get("error") {
            Some(error) => Err(error.clone()),
            None => Ok(message["result"].clone()),
        }
    }

    async fn request(&mut self, method: &str, params: Value) -> Result<Value, Value> {
        let id = self.send_request(method, params).await;
        self.response(id).await
    }

    async fn initialize(&mut self) -> Value {
        let result = self
            .request("initialize", json!({"processId": null, "capabilities": {}}))
            .await
            .expect("initialize");
        self.notify("initialized", json!({})).await;
        result
    }

    fn notifications(&self, method: &str, session: &str) -> Vec<&Value> {
        self.received
            .iter()
            .filter(|m| m["method"] == method && m["params"]["sessionId"] == session)
            .collect()
    }
}

/// The HTTP status a refused handshake got.
fn refused_status(result: Result<Client, tungstenite::Error>) -> u16 {
    match result {
        Err(tungstenite::Error::Http(response)) => response.status().as_u16(),
        Err(e) => panic!("refused otherwise: {e}"),
        Ok(_) => panic!("the connection was accepted"),
    }
}

fn user(i: usize) -> Value {
    json!({"role": "user", "content": format!("message {i}: please look at module {i} and keep the tests passing")})
}

/// The ids of a session's logged messages, in log order.
fn logged_contents(sessions: &Path, id: &str) -> Vec<String> {
    let log = std::fs::read_to_string(sessions.join(format!("{id}.jsonl"))).unwrap();
    log.lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|entry| entry["type"] == "message")
        .map(|entry| entry["message"]["content"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editor_sees_the_meter_and_compactions_of_a_session_an_agent_drives() {
    let server = Shared::start();
    let mut editor = server.client().await;
    let mut agent = server.client().await;
    editor.initialize().await;
    agent.initialize().await;
    // The editor follows the session before the agent opens it.
    let subscribed = editor
        .request("conversation/subscribe", json!({"sessionId": "agent-1"}))
        .await
        .unwrap();
    assert_eq!(subscribed["open"], false);
    let opened = agent
        .request(
            "conversation/open",
            json!({"sessionId": "agent-1", "contextWindow": 6000}),
        )
        .await
        .unwrap();
    assert_eq!(opened["resumed"], false);
    // 1,000 appends as notifications: nothing answers them, so nothing
    // orders them but the server.
    for i in 0..1000 {
        agent
            .notify(
                "conversation/append",
                json!({"sessionId": "agent-1", "messages": [user(i)]}),
            )
            .await;
    }
    let history = agent
        .request("conversation/history", json!({"sessionId": "agent-1"}))
        .await
        .unwrap();
    let last = history["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(last["content"], user(999)["content"]);
    // 1,000 messages in a 6,000-token window compact: the editor sees it.
    let first = editor
        .next_where(|m| m["method"] == "conversation/didCompact")
        .await;
    editor.received.push(first);
    // Every compaction applied before the editor's request was announced to
    // it before the answer (notifications first, on its own connection).
    let compactions = editor
        .request("conversation/compactions", json!({"sessionId": "agent-1"}))
        .await
        .unwrap();
    let applied = compactions["compactions"].as_array().unwrap().len();
    let expected: Vec<String> = (0..1000)
        .map(|i| user(i)["content"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(logged_contents(&server.sessions_dir(), "agent-1"), expected);

    let meters = editor.notifications("conversation/tokens", "agent-1");
    assert!(
        meters.len() >= 1000,
        "one meter per append: {}",
        meters.len()
    );
    let compacted = editor.notifications("conversation/didCompact", "agent-1");
    assert_eq!(compacted.len(), applied);
    assert!(compacted
        .iter()
        .all(|m| m["params"]["trigger"] == "threshold" && m["params"]["compacted"] == true));
    // The meter the editor saw last is the session's meter now.
    let now = editor
        .request("conversation/subscribe", json!({"sessionId": "agent-1"}))
        .await
        .unwrap();
    assert_eq!(now["open"], true);
    let seen = editor.notifications("conversation/tokens", "agent-1");
    let shown = &seen.last().unwrap()["params"];
    assert_eq!(shown["contextTokens"], now["meter"]["contextTokens"]);
    // The agent, the sender, saw them too.
    assert!(agent.notifications("conversation/tokens", "agent-1").len() >= 1000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_connection_has_its_lifecycle_and_its_own_answers() {
    let server = Shared::start();
    let mut a = server.client().await;
    let mut b = server.client().await;
    // Before its own initialize, a connection is refused (-32002), even
    // after another initialized.
    a.initialize().await;
    let early = b
        .request("conversation/open", json!({"sessionId": "s"}))
        .await
        .unwrap_err();
    assert_eq!(early["code"], -32002);
    b.initialize().await;
    // Both use id 10 at once: each gets its own answer.
    a.send(json!({"jsonrpc": "2.0", "id": 10, "method": "conversation/open", "params": {"sessionId": "s"}})).await;
    let a_open = a.response(10).await.unwrap();
    b.send(json!({"jsonrpc": "2.0", "id": 10, "method": "conversation/open", "params": {"sessionId": "s"}})).await;
    let b_open = b.response(10).await.unwrap();
    // One session, shared: the second open resumes it, no lock error.
    assert_eq!(a_open["resumed"], false);
    assert_eq!(b_open["resumed"], true);
    let appended = b
        .request(
            "conversation/append",
            json!({"sessionId": "s", "messages": [user(1)]}),
        )
        .await
        .unwrap();
    assert_eq!(appended["ids"].as_array().unwrap().len(), 1);
    // Both follow it (they opened it): a's meter moved with b's append.
    let meter = a
        .next_where(|m| {
            m["method"] == "conversation/tokens"
                && m["params"]["contextTokens"] == appended["meter"]["contextTokens"]
        })
        .await;
    assert_eq!(meter["params"]["sessionId"], "s");
    // Configuration is the server's: initializationOptions are ignored.
    let c_init = {
        let mut c = server.client().await;
        c.request(
            "initialize",
            json!({"capabilities": {}, "initializationOptions": {"keepRecentTokens": "not a number"}}),
        )
        .await
    };
    assert!(c_init.is_ok(), "options are not even read: {c_init:?}");
    // shutdown + exit close one connection; the server serves the other.
    assert_eq!(
        a.request("shutdown", json!(null)).await.unwrap(),
        Value::Null
    );
    a.notify("exit", json!(null)).await;
    while a.next().await.is_some() {}
    let history = b
        .request("conversation/history", json!({"sessionId": "s"}))
        .await
        .unwrap();
    assert_eq!(history["messages"].as_array().unwrap().len(), 1);
    let after = b
        .request("conversation/unsubscribe", json!({"sessionId": "s"}))
        .await
        .unwrap();
    assert_eq!(after["wasSubscribed"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_without_the_token_or_from_a_web_page_are_refused() {
    let server = Shared::start_with(&["--allow-origin", "http://localhost:5173"]);
    // No token: the first message must authenticate; a request instead is
    // answered -32001 and the connection closed.
    let mut anonymous = Client::connect(&server.url, None, None).await.unwrap();
    let refused = anonymous
        .request("initialize", json!({"capabilities": {}}))
        .await
        .unwrap_err();
    assert_eq!(refused["code"], -32001);
    assert!(anonymous.next().await.is_none(), "closed after the refusal");
    // A wrong token in the header: refused before the upgrade.
    let wrong = "0".repeat(server.token.len());
    assert_eq!(
        refused_status(Client::connect(&server.url, Some(&wrong), None).await),
        401
    );
    // The token as the first message works (for clients that cannot set
    // headers); a wrong one closes the connection.
    let mut late = Client::connect(&server.url, None, None).await.unwrap();
    late.notify("connection/authenticate", json!({"token": server.token}))
        .await;
    late.initialize().await;
    let mut guess = Client::connect(&server.url, None, None).await.unwrap();
    guess
        .notify("connection/authenticate", json!({"token": wrong}))
        .await;
    assert!(guess.next().await.is_none());
    // A web page: refused whatever it knows, unless its origin is allowed.
    let page = Client::connect(
        &server.url,
        Some(&server.token),
        Some("https://evil.example"),
    )
    .await;
    assert_eq!(refused_status(page), 403);
    let allowed = Client::connect(
        &server.url,
        Some(&server.token),
        Some("http://localhost:5173"),
    )
    .await;
    allowed.unwrap().initialize().await;
    // Plain HTTP gets no JSON-RPC.
    let http_url = server.url.replace("ws://", "http://");
    let plain = tokio::task::spawn_blocking(move || {
        let (host, _) = http_url
            .trim_start_matches("http://")
            .split_once('/')
            .unwrap();
        let mut stream = std::net::TcpStream::connect(host).unwrap();
        use std::io::{Read, Write};
        write!(
            stream,
            "POST / HTTP/1.1\r\nHost: {host}\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}"
        )
        .unwrap();
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        answer
    })
    .await
    .unwrap();
    assert!(plain.starts_with("HTTP/1.1 426"), "{plain}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_and_messages_are_limited() {
    let server = Shared::start_configured(&["--max-connections", "2"], "maxFrameBytes = 4096\n");
    let mut first = server.client().await;
    let _second = server.client().await;
    let third = Client::connect(&server.url, Some(&server.token), None).await;
    assert_eq!(refused_status(third), 503);
    // A message over maxFrameBytes (the server's compactd.toml) is refused
    // with -32600 and skipped; the connection goes on.
    first.initialize().await;
    first
        .send(json!({"jsonrpc": "2.0", "id": 99, "method": "conversation/open", "params": {"systemPrompt": "x".repeat(5000)}}))
        .await;
    let refused = first.next_where(|m| m.get("error").is_some()).await;
    assert_eq!(refused["error"]["code"], -32600);
    assert_eq!(refused["id"], Value::Null);
    let opened = first
        .request("conversation/open", json!({"sessionId": "small"}))
        .await
        .unwrap();
    assert_eq!(opened["sessionId"], "small");
}

#[test]
fn a_non_loopback_address_needs_allow_remote() {
    let dir = tempfile::tempdir().unwrap();
    let discovery = dir.path().join("server.json");
    let output = support::output_within_patience(&mut Shared::command(
        dir.path(),
        &discovery,
        &["--listen", "0.0.0.0:0"],
    ));
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--allow-remote"), "{stderr}");
    assert!(!discovery.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_discovery_file_is_private_removed_on_exit_and_stale_ones_are_replaced() {
    let mut server = Shared::start();
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&server.discovery)
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    // A second server over a live file refuses to start.
    let output = support::output_within_patience(&mut Shared::command(
        server.dir.path(),
        &server.discovery,
        &[],
    ));
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("already running"));
    assert_eq!(server.terminate(), 0);
    let (discovery, dir) = (&server.discovery, server.dir.path());
    assert!(!discovery.exists(), "removed on a clean exit");
    // A file left by a process that died is replaced.
    std::fs::write(
        discovery,
        json!({"url": "ws://127.0.0.1:1/", "address": "127.0.0.1:1", "token": "old", "pid": 999_999_999, "version": "0"}).to_string(),
    )
    .unwrap();
    let mut child = Shared::command(dir, discovery, &[])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(
        line.starts_with("compactd listening on ws://127.0.0.1:"),
        "{line}"
    );
    let found: Value = serde_json::from_slice(&std::fs::read(discovery).unwrap()).unwrap();
    assert_eq!(found["pid"], child.id());
    assert_ne!(found["token"], "old");
    let _ = child.kill();
    let _ = child.wait();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_client_attaches_through_compactd_connect() {
    let server = Shared::start();
    let mut agent = server.client().await;
    agent.initialize().await;
    // The editor side: a stdio client spawning `compactd connect`, as
    // Neovim does with `connect = "auto"`.
    let discovery = server.discovery.clone();
    let data_dir = server.sessions_dir();
    let mut editor = tokio::task::spawn_blocking(move || {
        let mut editor = support::Server::spawn_args(
            &data_dir,
            &["connect", "--discovery-file", discovery.to_str().unwrap()],
            &[],
        );
        editor
            .request("initialize", json!({"processId": null, "capabilities": {}}))
            .unwrap();
        let subscribed = editor
            .request("conversation/subscribe", json!({"sessionId": "a"}))
            .unwrap();
        assert_eq!(subscribed["open"], false);
        editor
    })
    .await
    .unwrap();
    agent
        .request("conversation/open", json!({"sessionId": "a"}))
        .await
        .unwrap();
    let appended = agent
        .request(
            "conversation/append",
            json!({"sessionId": "a", "messages": [user(0)]}),
        )
        .await
        .unwrap();
    let tokens = appended["meter"]["contextTokens"].clone();
    let code = tokio::task::spawn_blocking(move || {
        let meter = editor.next_where(|m| {
            m["method"] == "conversation/tokens" && m["params"]["contextTokens"] == tokens
        });
        assert_eq!(meter["params"]["sessionId"], "a");
        editor.shutdown_and_exit()
    })
    .await
    .unwrap();
    assert_eq!(code, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_and_cancellation_stay_with_the_connection_that_asked() {
    let config = "keepRecentTokens = 10\n[summarizer]\nprovider = \"test\"\ndelayMs = 30000\n";
    let server = Shared::start_configured(&[], config);
    let mut agent = server.client().await;
    let mut editor = server.client().await;
    agent.initialize().await;
    editor
        .request(
            "initialize",
            json!({"capabilities": {"window": {"workDoneProgress": true}}}),
        )
        .await
        .unwrap();
    agent
        .request("conversation/open", json!({"sessionId": "s"}))
        .await
        .unwrap();
    let messages: Vec<Value> = (0..8).map(user).collect();
    agent
        .request(
            "conversation/append",
            json!({"sessionId": "s", "messages": messages}),
        )
        .await
        .unwrap();
    // The editor compacts the agent's session under its own token and id 7.
    editor
        .send(json!({"jsonrpc": "2.0", "id": 7, "method": "conversation/compact", "params": {"sessionId": "s", "workDoneToken": "editor-token"}}))
        .await;
    let begin = editor.next_where(|m| m["method"] == "$/progress").await;
    assert_eq!(begin["params"]["token"], "editor-token");
    assert_eq!(begin["params"]["value"]["kind"], "begin");
    // The agent's `$/cancelRequest` for its own id 7 cancels nothing of the
    // editor's; its own request 7 is answered to it.
    agent.notify("$/cancelRequest", json!({"id": 7})).await;
    agent
        .send(json!({"jsonrpc": "2.0", "id": 7, "method": "conversation/check", "params": {"sessionId": "s"}}))
        .await;
    let check = agent.response(7).await.unwrap();
    assert_eq!(
        check["compacting"], true,
        "the editor's compaction still runs"
    );
    // The agent compacts another session under the same token: tokens are
    // per connection, like ids.
    agent
        .request("conversation/open", json!({"sessionId": "s2"}))
        .await
        .unwrap();
    let more: Vec<Value> = (0..8).map(user).collect();
    agent
        .request(
            "conversation/append",
            json!({"sessionId": "s2", "messages": more}),
        )
        .await
        .unwrap();
    agent
        .send(json!({"jsonrpc": "2.0", "id": 8, "method": "conversation/compact", "params": {"sessionId": "s2", "workDoneToken": "editor-token"}}))
        .await;
    let theirs = agent.next_where(|m| m["method"] == "$/progress").await;
    assert_eq!(theirs["params"]["token"], "editor-token");
    agent.notify("$/cancelRequest", json!({"id": 8})).await;
    assert_eq!(agent.response(8).await.unwrap_err()["code"], -32800);
    // The editor cancels its own: -32800 to it, after its progress ends.
    editor.notify("$/cancelRequest", json!({"id": 7})).await;
    let end = editor.next_where(|m| m["method"] == "$/progress").await;
    assert_eq!(end["params"]["value"]["kind"], "end");
    let cancelled = editor.response(7).await.unwrap_err();
    assert_eq!(cancelled["code"], -32800);
    assert!(
        editor.received.iter().all(|m| m["method"] != "$/progress"),
        "the agent's progress under the same token never reached the editor"
    );
    // The agent never saw the editor's progress, and gets its own answers.
    let history = agent
        .request("conversation/history", json!({"sessionId": "s"}))
        .await
        .unwrap();
    assert_eq!(history["messages"].as_array().unwrap().len(), 8);
    assert!(agent
        .received
        .iter()
        .all(|m| m["method"] != "$/progress" || m["params"]["value"]["kind"] == "end"));
    // A server-created token goes to the connection whose message started
    // the work: the editor's append fires auto-compaction.
    editor
        .request(
            "conversation/open",
            json!({"sessionId": "small", "contextWindow": 400}),
        )
        .await
        .unwrap();
    let long: Vec<Value> = (0..40).map(user).collect();
    editor
        .send(json!({"jsonrpc": "2.0", "id": 20, "method": "conversation/append", "params": {"sessionId": "small", "messages": long}}))
        .await;
    let create = editor
        .next_where(|m| m["method"] == "window/workDoneProgress/create")
        .await;
    assert!(create["id"].is_string());
    editor.response(20).await.unwrap();
    let check = agent
        .request("conversation/check", json!({"sessionId": "s"}))
        .await
        .unwrap();
    assert_eq!(check["compacting"], false);
    assert!(agent
        .received
        .iter()
        .all(|m| m["method"] != "window/workDoneProgress/create"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn created_tokens_follow_lsp_on_each_connection_and_initialize_is_once_per_connection() {
    let config = "keepRecentTokens = 10\n[summarizer]\nprovider = \"test\"\ndelayMs = 30000\n";
    let server = Shared::start_configured(&[], config);
    let creates = json!({"capabilities": {"window": {"workDoneProgress": true}}});
    let mut a = server.client().await;
    let mut b = server.client().await;
    a.request("initialize", creates.clone()).await.unwrap();
    // A second initialize on a connection is refused, as on stdio; another
    // connection's first one is its own.
    let again = a.request("initialize", creates.clone()).await.unwrap_err();
    assert_eq!(again["code"], -32600);
    assert!(
        again["message"]
            .as_str()
            .unwrap()
            .contains("already initialized"),
        "{again}"
    );
    b.request("initialize", creates).await.unwrap();
    for (client, session) in [(&mut a, "a"), (&mut b, "b")] {
        client
            .request("conversation/open", json!({"sessionId": session}))
            .await
            .unwrap();
        let messages: Vec<Value> = (0..8).map(user).collect();
        client
            .request(
                "conversation/append",
                json!({"sessionId": session, "messages": messages}),
            )
            .await
            .unwrap();
    }
    // Each connection is asked to create its own token: both are called
    // `compactd/1`, and neither gets progress before it answered.
    let mut created = Vec::new();
    for (client, session) in [(&mut a, "a"), (&mut b, "b")] {
        client
            .send(json!({"jsonrpc": "2.0", "id": 50, "method": "conversation/compact", "params": {"sessionId": session}}))
            .await;
        let create = client
            .next_where(|m| m["method"] == "window/workDoneProgress/create")
            .await;
        assert_eq!(create["params"]["token"], "compactd/1");
        assert!(client.received.iter().all(|m| m["method"] != "$/progress"));
        created.push(create["id"].clone());
    }
    // a accepts: its held begin arrives. b refuses: it gets nothing.
    a.send(json!({"jsonrpc": "2.0", "id": created[0], "result": null}))
        .await;
    let begin = a.next_where(|m| m["method"] == "$/progress").await;
    assert_eq!(begin["params"]["token"], "compactd/1");
    assert_eq!(begin["params"]["value"]["kind"], "begin");
    b.send(json!({"jsonrpc": "2.0", "id": created[1], "error": {"code": -32603, "message": "no progress UI"}}))
        .await;
    // b cancels `compactd/1`: its own compaction stops, a's goes on.
    b.notify(
        "window/workDoneProgress/cancel",
        json!({"token": "compactd/1"}),
    )
    .await;
    assert_eq!(b.response(50).await.unwrap_err()["code"], -32800);
    let check = a
        .request("conversation/check", json!({"sessionId": "a"}))
        .await
        .unwrap();
    assert_eq!(check["compacting"], true, "b's cancel stopped a's work");
    // a cancels its own from its progress: it ends, then -32800.
    a.notify(
        "window/workDoneProgress/cancel",
        json!({"token": "compactd/1"}),
    )
    .await;
    let end = a.next_where(|m| m["method"] == "$/progress").await;
    assert_eq!(end["params"]["value"]["kind"], "end");
    assert_eq!(a.response(50).await.unwrap_err()["code"], -32800);
    let history = b
        .request("conversation/history", json!({"sessionId": "b"}))
        .await
        .unwrap();
    assert_eq!(history["messages"].as_array().unwrap().len(), 8);
    assert!(
        b.received.iter().all(|m| m["method"] != "$/progress"),
        "no progress under a refused token"
    );
}

/// On a shared compactd, `conversation/close` closes a session only once
/// no other connection uses it, and a connection that ends closes the
/// sessions only it used (their locks go, so another process may open
/// them). A WebSocket message with a lone surrogate is read like a frame
/// on stdio: U+FFFD.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_close_when_no_connection_uses_them() {
    let server = Shared::start();
    let mut agent = server.client().await;
    let mut editor = server.client().await;
    agent.initialize().await;
    editor.initialize().await;
    for id in ["watched", "alone"] {
        agent
            .request("conversation/open", json!({"sessionId": id}))
            .await
            .unwrap();
    }
    agent
        .stream
        .send(WsMessage::text(
            r#"{"jsonrpc":"2.0","id":"lone","method":"conversation/append","params":{"sessionId":"alone","messages":[{"role":"user","content":"cut \ud83d"}]}}"#,
        ))
        .await
        .unwrap();
    let appended = agent
        .next_where(|m| m["id"] == "lone" && m.get("method").is_none())
        .await;
    assert!(appended.get("result").is_some(), "{appended}");
    editor
        .request("conversation/subscribe", json!({"sessionId": "watched"}))
        .await
        .unwrap();
    let kept = agent
        .request("conversation/close", json!({"sessionId": "watched"}))
        .await
        .unwrap();
    assert_eq!(kept["closed"], false, "the editor still uses it");
    let history = editor
        .request("conversation/history", json!({"sessionId": "watched"}))
        .await;
    assert!(history.is_ok(), "{history:?}");

    // The agent goes: `alone` is closed with it, `watched` stays open for
    // the editor; closing it there closes it.
    agent.stream.close(None).await.unwrap();
    drop(agent);
    let mut other = support::Server::start(&server.sessions_dir(), json!({}));
    let reopened = loop {
        // The connection's end reaches the server on its own schedule: the
        // editor's round trip orders nothing on the agent's connection, so
        // ask until the lock is free, as a client would.
        match other.request("conversation/open", json!({"sessionId": "alone"})) {
            Ok(opened) => break opened,
            Err(e) => {
                assert_eq!(e.code, -32010, "{e:?}");
                editor
                    .request("conversation/subscribe", json!({"sessionId": "watched"}))
                    .await
                    .unwrap();
            }
        }
    };
    assert_eq!(reopened["messageCount"], 1);
    let history = other
        .request("conversation/history", json!({"sessionId": "alone"}))
        .unwrap();
    assert_eq!(history["messages"][0]["content"], "cut \u{fffd}");
    let locked = other.request("conversation/open", json!({"sessionId": "watched"}));
    assert_eq!(
        locked.map_err(|e| e.code),
        Err(-32010),
        "the editor uses it"
    );
    let closed = editor
        .request("conversation/close", json!({"sessionId": "watched"}))
        .await
        .unwrap();
    assert_eq!(closed["closed"], true);
    other.open(json!({"sessionId": "watched"}));
}

/// `compactd connect` answers everything it read before its input ended,
/// as the stdio server does: a request piped in and stdin closed at once
/// gets its answer, every time (it lost most of them before).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compactd_connect_answers_what_it_read_before_its_input_ended() {
    let server = Shared::start();
    let discovery = server.discovery.clone();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"processId": null, "capabilities": {}}}).to_string();
    let frame = format!("Content-Length: {}\r\n\r\n{body}", body.len());
    let answered = tokio::task::spawn_blocking(move || {
        (0..40)
            .filter(|_| {
                let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_compactd"));
                command.args(["connect", "--discovery-file", discovery.to_str().unwrap()]);
                let out = support::output_with_stdin(&mut command, &frame);
                let stdout = String::from_utf8_lossy(&out.stdout);
                out.status.success()
                    && stdout.contains("\"id\":1")
                    && stdout.contains("capabilities")
            })
            .count()
    })
    .await
    .unwrap();
    assert_eq!(answered, 40, "answers out of 40 runs");
}
