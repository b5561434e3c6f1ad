//! Clients that hold on to the shared sidecar without doing their part:
//! one that never reads what it asked for, and connections that never
//! present the token. The real binary serves `--listen`; the clients are
//! tokio-tungstenite's, and the server's memory is read from /proc.

use std::io::{BufRead, Read};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::SinkExt;
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::{self, Message as WsMessage};

use crate::support::{self, PATIENCE};

/// A `compactd serve --listen` process whose log is kept.
struct Sidecar {
    child: Child,
    url: String,
    token: String,
    log: Arc<Mutex<String>>,
    _dir: tempfile::TempDir,
}

impl Sidecar {
    fn start() -> Sidecar {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path();
        let mut child = Command::new(env!("CARGO_BIN_EXE_compactd"))
            .args(["--no-user-config", "serve", "--listen", "127.0.0.1:0"])
            .arg("--discovery-file")
            .arg(home.join("server.json"))
            .current_dir(home)
            .env("HOME", home)
            .env("XDG_DATA_HOME", home.join("data"))
            .env("XDG_CONFIG_HOME", home.join("config"))
            .env("COMPACTD_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn compactd serve");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .trim()
            .strip_prefix("compactd listening on ")
            .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
            .to_string();
        let log = Arc::new(Mutex::new(String::new()));
        let sink = log.clone();
        let mut stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = stderr.read(&mut buf) {
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        let found: Value =
            serde_json::from_slice(&std::fs::read(home.join("server.json")).unwrap()).unwrap();
        Sidecar {
            token: found["token"].as_str().unwrap().to_string(),
            child,
            url,
            log,
            _dir: dir,
        }
    }

    fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// A field of the server's /proc/<pid>/status, in kB.
    fn status_kb(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let line = status
            .lines()
            .find(|l| l.starts_with(field))
            .unwrap_or_else(|| panic!("no {field} in {status}"));
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    }

    async fn connect(&self, token: Option<&str>) -> Result<Client, tungstenite::Error> {
        let stream = support::ws_connect(&self.url, token, None).await?;
        Ok(Client { stream, next_id: 0 })
    }
}

impl Drop for Sidecar {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Polls `condition` until it holds; fails the test at the patience.
async fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !condition() {
        assert!(Instant::now() < deadline, "not within {PATIENCE:?}: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

struct Client {
    stream: support::WsStream,
    next_id: i64,
}

impl Client {
    async fn send_request(
        &mut self,
        method: &str,
        params: Value,
    ) -> Result<i64, tungstenite::Error> {
        self.next_id += 1;
        let id = self.next_id;
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.stream
            .send(WsMessage::text(message.to_string()))
            .await?;
        Ok(id)
    }

    /// The next message; `None` once the connection is gone (closed or
    /// reset).
    async fn next(&mut self) -> Option<Value> {
        support::ws_next(&mut self.stream).await
    }

    async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params).await.unwrap();
        loop {
            let message = self.next().await.expect("connection closed");
            if message["id"] == id && message.get("method").is_none() {
                assert!(message.get("error").is_none(), "{message}");
                return message["result"].clone();
            }
        }
    }

    async fn initialize(&mut self) {
        self.request("initialize", json!({"capabilities": {}}))
            .await;
    }
}

/// A client that asks for 4 MB answers and never reads one: its
/// connection is dropped once 64 MiB wait for it, the server's memory
/// stays well below what it asked for, and another client is answered
/// throughout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_reads_is_dropped_and_costs_bounded_memory() {
    let server = Sidecar::start();
    let mut silent = server.connect(Some(&server.token)).await.unwrap();
    let mut other = server.connect(Some(&server.token)).await.unwrap();
    silent.initialize().await;
    other.initialize().await;
    // One 4 MB message: each `conversation/history` answer carries it.
    let big = "lorem ipsum dolor sit amet ".repeat((4 << 20) / 27);
    silent
        .request("conversation/open", json!({"sessionId": "big"}))
        .await;
    silent
        .request(
            "conversation/append",
            json!({"sessionId": "big", "messages": [{"role": "user", "content": big}]}),
        )
        .await;
    let before_kb = server.status_kb("VmRSS:");
    // 80 answers of 4 MB: 320 MB if the server kept them all.
    const ASKED: usize = 80;
    for _ in 0..ASKED {
        let sent = silent
            .send_request("conversation/history", json!({"sessionId": "big"}))
            .await;
        if sent.is_err() {
            break; // dropped already
        }
    }
    // The other client is answered while the server deals with it.
    let opened = other
        .request("conversation/open", json!({"sessionId": "small"}))
        .await;
    assert_eq!(opened["sessionId"], "small");
    eventually("the silent connection is dropped and logged", || {
        server.log().contains("connection 1 dropped")
    })
    .await;
    let log = server.log();
    assert!(
        log.contains("connection 1 from 127.0.0.1:")
            && log.contains("over the bound of 67108864 bytes; the connection is dropped"),
        "{log}"
    );
    let peak_kb = server.status_kb("VmHWM:");
    let grown_mb = peak_kb.saturating_sub(before_kb) / 1024;
    println!(
        "RSS {} MB before, peak {} MB",
        before_kb / 1024,
        peak_kb / 1024
    );
    // The bound (64 MiB) and the message being written, with room for a
    // debug build's transients; without a bound it grew by 300+ MB.
    assert!(
        grown_mb < 150,
        "peak RSS grew by {grown_mb} MB over {} MB asked for",
        ASKED * 4
    );
    // Its connection is gone: what reaches it ends.
    let mut received = 0;
    while silent.next().await.is_some() {
        received += 1;
    }
    println!("{received} answers of {ASKED} reached it");
    assert!(received < ASKED, "{received} answers of {ASKED} reached it");
    // The other client goes on.
    other
        .request(
            "conversation/append",
            json!({"sessionId": "small", "messages": [{"role": "user", "content": "still here"}]}),
        )
        .await;
    let history = other
        .request("conversation/history", json!({"sessionId": "small"}))
        .await;
    assert_eq!(history["messages"][0]["content"], "still here");
}

/// 33 connections that upgrade without the token and say nothing: the real
/// client, with the token, is still let in and answered; the anonymous
/// ones are closed once their time to authenticate is up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_without_the_token_never_take_the_real_clients_slots() {
    let server = Sidecar::start();
    let mut anonymous = Vec::new();
    let mut refused = 0;
    for _ in 0..33 {
        match server.connect(None).await {
            Ok(client) => anonymous.push(client),
            Err(tungstenite::Error::Http(response)) if response.status() == 503 => refused += 1,
            Err(e) => panic!("refused otherwise: {e}"),
        }
    }
    // 32 wait to authenticate (as many as there are slots, apart from
    // them); the 33rd is refused before its upgrade.
    assert_eq!((anonymous.len(), refused), (32, 1));
    let mut real = server
        .connect(Some(&server.token))
        .await
        .expect("the real client is let in");
    real.initialize().await;
    let opened = real
        .request("conversation/open", json!({"sessionId": "real"}))
        .await;
    assert_eq!(opened["sessionId"], "real");
    // Each anonymous connection is closed when its 10 s are up.
    let started = Instant::now();
    for client in &mut anonymous {
        assert_eq!(client.next().await, None);
    }
    assert!(started.elapsed() < PATIENCE);
    let log = server.log();
    assert!(log.contains("no token within 10 s"), "{log}");
    // Then a client that authenticates with its first message gets in too.
    let mut late = server.connect(None).await.unwrap();
    let authenticate = json!({"jsonrpc": "2.0", "method": "connection/authenticate", "params": {"token": server.token}});
    late.stream
        .send(WsMessage::text(authenticate.to_string()))
        .await
        .unwrap();
    late.initialize().await;
}

/// On stdio the one client that stops reading ends the server: it says so
/// on stderr, exits 1, and what it acknowledged is in the session log.
#[test]
fn a_stdio_client_that_stops_reading_stops_the_server_in_order() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("sessions");
    let mut child = Command::new(env!("CARGO_BIN_EXE_compactd"))
        .arg("--no-user-config")
        .env("HOME", dir.path())
        .env("XDG_DATA_HOME", dir.path().join("data"))
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .env("COMPACTD_LOG", "info")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn compactd");
    let mut stdin = child.stdin.take().unwrap();
    // Kept open and read no more once the append is acknowledged.
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut stderr = child.stderr.take().unwrap();
    let log = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let mut send = |id: usize, method: &str, params: Value| {
        let body =
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
        // A server that stopped reading its input makes this fail: fine.
        let _ = write!(stdin, "Content-Length: {}\r\n\r\n{body}", body.len());
    };
    let big = "lorem ipsum dolor sit amet ".repeat((4 << 20) / 27);
    let options = json!({"dataDir": data});
    send(
        1,
        "initialize",
        json!({"capabilities": {}, "initializationOptions": options}),
    );
    send(2, "conversation/open", json!({"sessionId": "big"}));
    let message = json!({"id": "m1", "role": "user", "content": big});
    send(
        3,
        "conversation/append",
        json!({"sessionId": "big", "messages": [message]}),
    );
    loop {
        let answer = crate::support::read_frame(&mut stdout).expect("answers");
        assert!(answer.get("error").is_none(), "{answer}");
        if answer["id"] == 3 {
            break;
        }
    }
    for id in 4..84 {
        send(id, "conversation/history", json!({"sessionId": "big"}));
    }
    let deadline = Instant::now() + PATIENCE;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "still running after {PATIENCE:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let log = log.join().unwrap();
    assert_eq!(status.code(), Some(1), "{log}");
    assert!(
        log.contains("the stdio client: ")
            && log.contains("over the bound of 67108864 bytes; the connection is dropped")
            && log.contains("compactd stops: its only client, on stdio, left more than 67108864 bytes of output unread"),
        "{log}"
    );
    let logged = std::fs::read_to_string(data.join("big.jsonl")).unwrap();
    assert!(
        logged.contains(r#""id":"m1""#),
        "the acknowledged append is in the log"
    );
    drop(stdout);
}
