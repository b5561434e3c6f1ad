//! A small scripted HTTP/1.1 server on 127.0.0.1 standing in for an LLM
//! provider where a real one cannot misbehave on demand: error statuses,
//! `Retry-After`, slow first bytes, streams that break off or stall. It
//! records every request (arrival time, headers, body) and when a stalled
//! connection was closed by the client.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One scripted response.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A complete response with a body.
    Full {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// A 200 `text/event-stream` response in chunked encoding.
    Stream { pieces: Vec<Piece>, end: End },
    /// Waits before sending anything (a slow first byte).
    After(Duration, Box<Reply>),
}

#[derive(Debug, Clone)]
pub enum Piece {
    Bytes(String),
    Pause(Duration),
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum End {
    /// The chunked body ends properly.
    Complete,
    /// The connection is dropped mid-body.
    Disconnect,
    /// The connection stays open, sending nothing, until the client closes it.
    Stall,
}

impl Reply {
    pub fn json(status: u16, body: Value) -> Reply {
        Reply::Full {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.to_string(),
        }
    }

    pub fn text(status: u16, body: &str) -> Reply {
        Reply::Full {
            status,
            headers: vec![("content-type".into(), "text/plain".into())],
            body: body.into(),
        }
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Reply {
        if let Reply::Full { headers, .. } = &mut self {
            headers.push((name.into(), value.into()));
        }
        self
    }

    pub fn stream(events: Vec<String>, end: End) -> Reply {
        Reply::Stream {
            pieces: events.into_iter().map(Piece::Bytes).collect(),
            end,
        }
    }

    pub fn after(delay: Duration, reply: Reply) -> Reply {
        Reply::After(delay, Box::new(reply))
    }
}

/// What the fixture saw.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub at: Instant,
    pub path: String,
    /// Header names lowercased.
    pub headers: Vec<(String, String)>,
    pub body: Value,
    /// When the client closed a stalled connection.
    pub closed_at: Option<Instant>,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

type Handler = dyn Fn(usize, &Recorded) -> Reply + Send + Sync;

#[derive(Default)]
struct State {
    requests: Vec<Recorded>,
}

pub struct Fixture {
    /// The base URL (`http://127.0.0.1:PORT/v1`).
    pub url: String,
    state: Arc<Mutex<State>>,
    changed: Arc<tokio::sync::Notify>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Fixture {
    /// Serves the replies in order; once they run out, the last one repeats.
    pub fn script(replies: Vec<Reply>) -> Fixture {
        let replies = Mutex::new(VecDeque::from(replies));
        let last = Mutex::new(None::<Reply>);
        Fixture::with(move |_, _| {
            let next = replies.lock().unwrap().pop_front();
            let mut last = last.lock().unwrap();
            if let Some(reply) = next {
                *last = Some(reply);
            }
            last.clone().expect("the fixture needs at least one reply")
        })
    }

    /// Answers each request with `handler(index, request)`.
    pub fn with(handler: impl Fn(usize, &Recorded) -> Reply + Send + Sync + 'static) -> Fixture {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let listener = runtime.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(State::default()));
        let changed = Arc::new(tokio::sync::Notify::new());
        let handler: Arc<Handler> = Arc::new(handler);
        let (task_state, task_changed) = (state.clone(), changed.clone());
        runtime.spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let (state, changed, handler) =
                    (task_state.clone(), task_changed.clone(), handler.clone());
                tokio::spawn(async move {
                    let _ = serve(socket, state, changed, handler).await;
                });
            }
        });
        Fixture {
            url,
            state,
            changed,
            runtime: Some(runtime),
        }
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.state.lock().unwrap().requests.clone()
    }

    /// Blocks until `pred` holds for the recorded requests (bounded by a
    /// failure guard).
    pub fn wait_for(&self, what: &str, pred: impl Fn(&[Recorded]) -> bool) -> Vec<Recorded> {
        let deadline = Instant::now() + crate::support::PATIENCE;
        let runtime = self.runtime.as_ref().unwrap();
        loop {
            let notified = self.changed.notified();
            {
                let requests = &self.state.lock().unwrap().requests;
                if pred(requests) {
                    return requests.clone();
                }
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "fixture: gave up waiting for {what}");
            runtime.block_on(async {
                let _ = tokio::time::timeout(left, notified).await;
            });
        }
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

async fn serve(
    mut socket: TcpStream,
    state: Arc<Mutex<State>>,
    changed: Arc<tokio::sync::Notify>,
    handler: Arc<Handler>,
) -> std::io::Result<()> {
    let Some(recorded) = read_request(&mut socket).await? else {
        return Ok(());
    };
    let index = {
        let mut state = state.lock().unwrap();
        state.requests.push(recorded.clone());
        state.requests.len() - 1
    };
    changed.notify_waiters();
    let mut reply = handler(index, &recorded);
    while let Reply::After(delay, inner) = reply {
        tokio::time::sleep(delay).await;
        reply = *inner;
    }
    match reply {
        Reply::Full {
            status,
            headers,
            body,
        } => {
            let mut head = format!(
                "HTTP/1.1 {status} Fixture\r\ncontent-length: {}\r\nconnection: close\r\n",
                body.len()
            );
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str("\r\n");
            socket.write_all(head.as_bytes()).await?;
            socket.write_all(body.as_bytes()).await?;
            socket.shutdown().await?;
        }
        Reply::Stream { pieces, end } => {
            socket
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n")
                .await?;
            for piece in pieces {
                match piece {
                    Piece::Bytes(data) => {
                        socket
                            .write_all(format!("{:x}\r\n{data}\r\n", data.len()).as_bytes())
                            .await?;
                        socket.flush().await?;
                    }
                    Piece::Pause(d) => tokio::time::sleep(d).await,
                }
            }
            match end {
                End::Complete => {
                    socket.write_all(b"0\r\n\r\n").await?;
                    socket.shutdown().await?;
                }
                End::Disconnect => drop(socket),
                End::Stall => {
                    // Nothing more is sent; the client's close ends the read.
                    let mut buf = [0u8; 256];
                    while socket.read(&mut buf).await.unwrap_or(0) > 0 {}
                    let mut state = state.lock().unwrap();
                    state.requests[index].closed_at = Some(Instant::now());
                    drop(state);
                    changed.notify_waiters();
                }
            }
        }
        Reply::After(..) => unreachable!("unwrapped above"),
    }
    Ok(())
}

async fn read_request(socket: &mut TcpStream) -> std::io::Result<Option<Recorded>> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let at = Instant::now();
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let path = request_line
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Ok(Some(Recorded {
        at,
        path,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        closed_at: None,
    }))
}

/// An OpenAI chat-completions stream of `pieces`, ending with `finish`,
/// a usage chunk and `[DONE]`.
pub fn openai_stream(pieces: &[&str], finish: &str) -> Vec<String> {
    let mut events: Vec<String> = pieces
        .iter()
        .map(|p| {
            sse(&json!({"choices": [{"index": 0, "delta": {"content": p}, "finish_reason": null}]}))
        })
        .collect();
    events.push(sse(
        &json!({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}),
    ));
    events.push(sse(&json!({"choices": [], "usage": {"prompt_tokens": 321, "completion_tokens": 45, "total_tokens": 366}})));
    events.push("data: [DONE]\n\n".into());
    events
}

/// A non-streamed OpenAI chat completion.
pub fn openai_completion(text: &str) -> Value {
    json!({
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 200, "completion_tokens": 20, "total_tokens": 220}
    })
}

pub fn sse(data: &Value) -> String {
    format!("data: {data}\n\n")
}

/// A summary with the sections compactd asks for.
pub const SUMMARY: &str = "## Goal\n- Fix the parser.\n\n## Progress\n- Read src/parse.rs.\n\n## Next step\n- Add a test.";
