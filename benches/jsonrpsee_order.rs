//! Why the shared sidecar does not run compactd's protocol through
//! jsonrpsee's own RPC layer: measured against jsonrpsee 0.26's standard
//! server, with a middleware (`RpcServiceT`) that records what reaches it.
//!
//! One client sends N appends as notifications (`{"seq": i}`), then one as a
//! request, as fast as it can; the figures are how many notifications the
//! middleware saw out of the order they were sent, how many the registered
//! method ran for (its default service drops notifications), and what a
//! client's answer to a server request gets. Then the same N appends
//! through `compactd serve --listen` and `conversation/history`, whose log
//! order is read back.
//!
//! `cargo bench --bench jsonrpsee_order` (prints figures; asserts nothing).

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures_util::{SinkExt, StreamExt};
use jsonrpsee::server::middleware::rpc::{
    Batch, Notification, Request, RpcServiceBuilder, RpcServiceT,
};
use jsonrpsee::server::{RpcModule, Server};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

const N: usize = 1000;
const ROUNDS: usize = 5;

/// Records the `seq` of every notification, in the order the middleware
/// is called.
#[derive(Clone)]
struct Recorder<S> {
    inner: S,
    seen: Arc<Mutex<Vec<u64>>>,
}

impl<S> RpcServiceT for Recorder<S>
where
    S: RpcServiceT + Send + Sync + Clone + 'static,
{
    type MethodResponse = S::MethodResponse;
    type NotificationResponse = S::NotificationResponse;
    type BatchResponse = S::BatchResponse;

    fn call<'a>(
        &self,
        request: Request<'a>,
    ) -> impl Future<Output = Self::MethodResponse> + Send + 'a {
        self.inner.call(request)
    }

    fn batch<'a>(&self, batch: Batch<'a>) -> impl Future<Output = Self::BatchResponse> + Send + 'a {
        self.inner.batch(batch)
    }

    fn notification<'a>(
        &self,
        n: Notification<'a>,
    ) -> impl Future<Output = Self::NotificationResponse> + Send + 'a {
        let seq = n
            .params
            .as_ref()
            .and_then(|p| serde_json::from_str::<Value>(p.get()).ok())
            .and_then(|p| p["seq"].as_u64());
        if let Some(seq) = seq {
            self.seen.lock().unwrap().push(seq);
        }
        self.inner.notification(n)
    }
}

/// Notifications seen after one with a higher `seq`.
fn out_of_order(seen: &[u64]) -> usize {
    let mut highest = None;
    let mut late = 0;
    for &seq in seen {
        if highest.is_some_and(|h| seq < h) {
            late += 1;
        }
        highest = highest.max(Some(seq));
    }
    late
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn next_text(ws: &mut Ws) -> Value {
    loop {
        match ws.next().await.expect("open").expect("no error") {
            Message::Text(text) => return serde_json::from_str(&text).unwrap(),
            _ => continue,
        }
    }
}

async fn jsonrpsee_round() -> (usize, usize, usize, Value) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let ran = Arc::new(AtomicUsize::new(0));
    let recorder = seen.clone();
    let middleware = RpcServiceBuilder::new().layer_fn(move |inner| Recorder {
        inner,
        seen: recorder.clone(),
    });
    let server = Server::builder()
        .set_rpc_middleware(middleware)
        .build("127.0.0.1:0")
        .await
        .unwrap();
    let addr = server.local_addr().unwrap();
    let mut module = RpcModule::new(ran.clone());
    module
        .register_method("append", |_, ran, _| {
            ran.fetch_add(1, Ordering::Relaxed);
            "ok"
        })
        .unwrap();
    let handle = server.start(module);
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/"))
        .await
        .unwrap();
    for seq in 0..N {
        let note = json!({"jsonrpc": "2.0", "method": "append", "params": {"seq": seq}});
        ws.feed(Message::text(note.to_string())).await.unwrap();
    }
    ws.flush().await.unwrap();
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "append", "params": {"seq": N}});
    ws.send(Message::text(call.to_string())).await.unwrap();
    let answer = next_text(&mut ws).await;
    assert_eq!(answer["result"], "ok");
    // A client answering a server request, as LSP clients answer
    // `window/workDoneProgress/create`.
    let response = json!({"jsonrpc": "2.0", "id": "compactd-progress-1", "result": null});
    ws.send(Message::text(response.to_string())).await.unwrap();
    let refused = next_text(&mut ws).await;
    // Each message runs in a task of its own, so some notifications may
    // still be on their way to the middleware: wait for all of them.
    let deadline = Instant::now() + std::time::Duration::from_secs(10);
    while seen.lock().unwrap().len() < N && Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    let seen = seen.lock().unwrap().clone();
    let notifications_ran = ran.load(Ordering::Relaxed) - 1;
    handle.stop().unwrap();
    handle.stopped().await;
    (out_of_order(&seen), seen.len(), notifications_ran, refused)
}

/// The same appends through the real binary; returns out-of-order count
/// and milliseconds.
async fn compactd_round() -> (usize, u128) {
    let dir = tempfile::tempdir().unwrap();
    let discovery = dir.path().join("server.json");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_compactd"))
        .args([
            "--no-user-config",
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--discovery-file",
        ])
        .arg(&discovery)
        .current_dir(dir.path())
        .env("XDG_DATA_HOME", dir.path().join("data"))
        .env("COMPACTD_DISABLE_AUTOCOMPACT", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let found: Value = serde_json::from_slice(&std::fs::read(&discovery).unwrap()).unwrap();
    let mut request =
        tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(
            found["url"].as_str().unwrap(),
        )
        .unwrap();
    let bearer = format!("Bearer {}", found["token"].as_str().unwrap());
    request
        .headers_mut()
        .insert("authorization", bearer.parse().unwrap());
    let (mut ws, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    let send = |id: u64, method: &str, params: Value| {
        Message::text(
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
        )
    };
    ws.send(send(1, "initialize", json!({"capabilities": {}})))
        .await
        .unwrap();
    ws.send(send(2, "conversation/open", json!({"sessionId": "s"})))
        .await
        .unwrap();
    let started = Instant::now();
    for seq in 0..N {
        let params =
            json!({"sessionId": "s", "messages": [{"role": "user", "content": seq.to_string()}]});
        let note = json!({"jsonrpc": "2.0", "method": "conversation/append", "params": params});
        ws.feed(Message::text(note.to_string())).await.unwrap();
    }
    ws.send(send(3, "conversation/history", json!({"sessionId": "s"})))
        .await
        .unwrap();
    let history = loop {
        let message = next_text(&mut ws).await;
        if message["id"] == 3 {
            break message;
        }
    };
    let elapsed = started.elapsed().as_millis();
    let seen: Vec<u64> = history["result"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap().parse().unwrap())
        .collect();
    assert_eq!(seen.len(), N);
    let _ = child.kill();
    let _ = child.wait();
    (out_of_order(&seen), elapsed)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    println!("{N} notifications from one client, {ROUNDS} rounds, 2 worker threads");
    for round in 1..=ROUNDS {
        let (late, arrived, ran, refused) = runtime.block_on(jsonrpsee_round());
        println!(
            "jsonrpsee 0.26 round {round}: {late} of {arrived} notifications reached the middleware out of order; the registered method ran for {ran} of {N} notifications; a client's response to a server request got {}",
            refused["error"]
        );
    }
    for round in 1..=ROUNDS {
        let (late, ms) = runtime.block_on(compactd_round());
        println!("compactd serve --listen round {round}: {late} of {N} appends out of order in the log; {ms} ms for all of them");
    }
}
