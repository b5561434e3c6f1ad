//! Spawns the real `compactd` binary and talks JSON-RPC to it over stdio.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

/// A bound on waiting for output, so a broken server fails the test instead
/// of hanging it. Never used to wait for something to happen.
pub const PATIENCE: Duration = Duration::from_secs(60);
/// The same guard for tests that wait on a real model, whose prompt
/// processing alone can take minutes on a loaded 2-core machine.
pub const MODEL_PATIENCE: Duration = Duration::from_secs(600);

pub struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    incoming: Receiver<Value>,
    /// What the server wrote to stderr so far, and a signal for each new
    /// piece of it.
    stderr: Arc<(Mutex<String>, Condvar)>,
    stderr_reader: Option<std::thread::JoinHandle<()>>,
    next_id: i64,
    /// Every message received, in arrival order.
    pub received: Vec<Value>,
    /// For each request sent, how many messages had been received then:
    /// its answer is among the later ones (a raw frame may reuse its id).
    sent_at: std::collections::HashMap<i64, usize>,
    /// How long `next` waits before failing the test.
    pub patience: Duration,
    /// Accept every progress token the server asks to create, as editors
    /// do (`start_with_progress`).
    pub accept_progress_tokens: bool,
    pub data_dir: PathBuf,
    home: PathBuf,
    /// The throwaway HOME, removed with the server (`None` when the caller
    /// gave one: `spawn_at`).
    _home: Option<tempfile::TempDir>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
}

impl Server {
    /// Starts the binary with sessions in `data_dir` and a throwaway HOME.
    pub fn spawn(data_dir: &Path) -> Server {
        Self::spawn_with_env(data_dir, &[])
    }

    pub fn spawn_with_env(data_dir: &Path, env: &[(&str, &str)]) -> Server {
        Self::spawn_args(data_dir, &[], env)
    }

    /// Spawns the binary with `args` after `--no-user-config` (a command,
    /// such as `connect`, that speaks JSON-RPC on stdio).
    pub fn spawn_args(data_dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Server {
        Self::spawn_limited(data_dir, args, env, None)
    }

    /// Spawns the binary with its open file limit (soft and hard, as
    /// `ulimit -n` sets them) at `nofile`, when given.
    pub fn spawn_limited(
        data_dir: &Path,
        args: &[&str],
        env: &[(&str, &str)],
        nofile: Option<u64>,
    ) -> Server {
        let home = tempfile::tempdir().unwrap();
        let mut server = Self::spawn_command(data_dir, home.path(), None, args, env, nofile);
        server._home = Some(home);
        server
    }

    /// Spawns the binary with `home` as its HOME and `cwd` as its working
    /// directory, both the caller's to keep and remove.
    pub fn spawn_at(
        data_dir: &Path,
        home: &Path,
        cwd: &Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Server {
        Self::spawn_command(data_dir, home, Some(cwd), args, env, None)
    }

    fn spawn_command(
        data_dir: &Path,
        home: &Path,
        cwd: Option<&Path>,
        args: &[&str],
        env: &[(&str, &str)],
        nofile: Option<u64>,
    ) -> Server {
        let mut command = Command::new(env!("CARGO_BIN_EXE_compactd"));
        command
            .arg("--no-user-config")
            .args(args)
            .env("HOME", home)
            .env("XDG_DATA_HOME", home.join("data"))
            .env("XDG_CONFIG_HOME", home.join("config"))
            .env("COMPACTD_LOG", "debug")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            command.env(k, v);
        }
        if let Some(cwd) = cwd {
            command.current_dir(cwd);
        }
        #[cfg(unix)]
        if let Some(nofile) = nofile {
            set_rlimit(&mut command, libc::RLIMIT_NOFILE, nofile);
        }
        #[cfg(not(unix))]
        let _ = nofile;
        let mut child = command.spawn().expect("spawn compactd");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            while let Some(message) = read_frame(&mut reader) {
                if tx.send(message).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new((Mutex::new(String::new()), Condvar::new()));
        let sink = stderr.clone();
        let mut child_stderr = child.stderr.take().unwrap();
        let stderr_reader = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = child_stderr.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let (text, grew) = &*sink;
                text.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
                grew.notify_all();
            }
        });
        Server {
            stdin: child.stdin.take(),
            child,
            incoming: rx,
            stderr,
            stderr_reader: Some(stderr_reader),
            next_id: 0,
            received: Vec::new(),
            sent_at: std::collections::HashMap::new(),
            patience: PATIENCE,
            accept_progress_tokens: false,
            data_dir: data_dir.to_path_buf(),
            home: home.to_path_buf(),
            _home: None,
        }
    }

    /// Spawns and initializes with `options` merged over the data dir.
    pub fn start(data_dir: &Path, options: Value) -> Server {
        let mut server = Server::spawn(data_dir);
        server.initialize(options);
        server
    }

    pub fn initialize(&mut self, options: Value) -> Value {
        self.initialize_params(options, json!({}))
    }

    pub fn initialize_with(&mut self, capabilities: Value, options: Value) -> Value {
        self.initialize_params(options, json!({"capabilities": capabilities}))
    }

    /// Initializes with `extra` merged into the `initialize` params.
    pub fn initialize_params(&mut self, options: Value, extra: Value) -> Value {
        let mut init = json!({"dataDir": self.data_dir});
        merge(&mut init, options);
        let mut params =
            json!({"processId": null, "capabilities": {}, "initializationOptions": init});
        merge(&mut params, extra);
        let result = self.request("initialize", params).expect("initialize");
        self.notify("initialized", json!({}));
        result
    }

    /// Starts a server whose client advertises `window.workDoneProgress`
    /// and accepts every token the server creates, so every compaction
    /// (automatic ones included) reports `$/progress` begin and end: a
    /// definite signal that a job finished.
    pub fn start_with_progress(data_dir: &Path, options: Value) -> Server {
        let mut server = Server::start_creating_progress(data_dir, options);
        server.accept_progress_tokens = true;
        server
    }

    /// Starts a server whose client advertises `window.workDoneProgress`
    /// but leaves answering `window/workDoneProgress/create` to the test.
    pub fn start_creating_progress(data_dir: &Path, options: Value) -> Server {
        let mut server = Server::spawn(data_dir);
        server.initialize_with(json!({"window": {"workDoneProgress": true}}), options);
        server
    }

    /// Waits for the end of the running compaction's progress.
    pub fn wait_progress_end(&mut self) -> Value {
        self.next_where(|m| m["method"] == "$/progress" && m["params"]["value"]["kind"] == "end")
            ["params"]
            .clone()
    }

    /// Spawns and initializes with `root` as the workspace root.
    pub fn start_in_workspace(data_dir: &Path, root: &Path, options: Value) -> Server {
        let mut server = Server::spawn(data_dir);
        server.initialize_params(options, json!({"rootUri": file_uri(root)}));
        server
    }

    /// The server process's id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The HOME the server runs with.
    pub fn home(&self) -> &Path {
        &self.home
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    pub fn send(&mut self, message: Value) {
        let body = serde_json::to_string(&message).unwrap();
        self.send_raw(format!("Content-Length: {}\r\n\r\n{body}", body.len()).as_bytes());
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request and returns its id without waiting.
    pub fn send_request(&mut self, method: &str, params: Value) -> i64 {
        self.next_id += 1;
        let id = self.next_id;
        self.sent_at.insert(id, self.received.len());
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    pub fn request(&mut self, method: &str, params: Value) -> Result<Value, RpcError> {
        let id = self.send_request(method, params);
        self.response(id)
    }

    /// The response to `id`: one already received since it was sent
    /// (while waiting for another), else read until it arrives.
    pub fn response(&mut self, id: i64) -> Result<Value, RpcError> {
        let answers = |m: &Value| m.get("id") == Some(&json!(id)) && m.get("method").is_none();
        let since = self.sent_at.get(&id).copied().unwrap_or(0);
        let message = match self.received[since..].iter().find(|m| answers(m)) {
            Some(message) => message.clone(),
            None => self.next_where(answers),
        };
        if let Some(error) = message.get("error") {
            return Err(RpcError {
                code: error["code"].as_i64().unwrap(),
                message: error["message"].as_str().unwrap_or("").to_string(),
            });
        }
        Ok(message["result"].clone())
    }

    /// The next message from the server.
    pub fn next(&mut self) -> Value {
        match self.next_message() {
            Some(message) => message,
            None => panic!("compactd closed its output; stderr:\n{}", self.stderr()),
        }
    }

    /// The next message from the server, or `None` once it closed its
    /// output.
    pub fn next_message(&mut self) -> Option<Value> {
        let message = match self.incoming.recv_timeout(self.patience) {
            Ok(message) => message,
            Err(RecvTimeoutError::Timeout) => panic!(
                "no message from compactd in {:?}; stderr:\n{}",
                self.patience,
                self.stderr()
            ),
            Err(RecvTimeoutError::Disconnected) => return None,
        };
        if self.accept_progress_tokens && message["method"] == "window/workDoneProgress/create" {
            self.send(json!({"jsonrpc": "2.0", "id": message["id"], "result": null}));
        }
        self.received.push(message.clone());
        Some(message)
    }

    pub fn next_where(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        loop {
            let message = self.next();
            if pred(&message) {
                return message;
            }
        }
    }

    /// No compaction of session `id` was announced or logged.
    pub fn assert_not_compacted(&self, id: &str) {
        let announced = self.received_notifications("conversation/didCompact");
        assert!(announced.is_empty(), "{announced:?}");
        let log = std::fs::read_to_string(self.data_dir.join(format!("{id}.jsonl"))).unwrap();
        assert!(!log.contains("\"type\":\"compaction\""), "{log}");
    }

    /// Notifications received so far with this method.
    pub fn received_notifications(&self, method: &str) -> Vec<Value> {
        self.received
            .iter()
            .filter(|m| m["method"] == method && m.get("id").is_none())
            .map(|m| m["params"].clone())
            .collect()
    }

    pub fn stderr(&self) -> String {
        self.stderr.0.lock().unwrap().clone()
    }

    /// What the server wrote to stderr after its first `from` bytes, once
    /// that holds `needle` (or `patience` ran out): the server logs on its
    /// own stream, so a log line may arrive after the answer it goes with.
    pub fn stderr_after_containing(&self, from: usize, needle: &str) -> String {
        let (text, grew) = &*self.stderr;
        let guard = text.lock().unwrap();
        let (guard, _) = grew
            .wait_timeout_while(guard, self.patience, |text| !text[from..].contains(needle))
            .unwrap();
        guard[from..].to_string()
    }

    /// `conversation/append` as a request; panics on an error answer.
    pub fn append(&mut self, session_id: &str, messages: impl serde::Serialize) -> Value {
        self.request(
            "conversation/append",
            json!({"sessionId": session_id, "messages": messages}),
        )
        .expect("append")
    }

    /// The ids of the messages `conversation/history` gives for a session.
    pub fn history_ids(&mut self, session: &str) -> Vec<String> {
        let history = self
            .request("conversation/history", json!({"sessionId": session}))
            .expect("history");
        history["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap().to_string())
            .collect()
    }

    pub fn open(&mut self, params: Value) -> String {
        let result = self.request("conversation/open", params).expect("open");
        result["sessionId"].as_str().unwrap().to_string()
    }

    pub fn shutdown_and_exit(mut self) -> i32 {
        self.request("shutdown", json!(null)).expect("shutdown");
        self.notify("exit", json!(null));
        self.wait()
    }

    /// Shuts down and returns everything the server wrote to stderr, read
    /// to its end (what `stderr()` has may still lack the latest lines).
    pub fn exit_and_stderr(mut self) -> String {
        self.request("shutdown", json!(null)).expect("shutdown");
        self.notify("exit", json!(null));
        assert_eq!(self.wait(), 0, "clean exit");
        if let Some(reader) = self.stderr_reader.take() {
            reader.join().unwrap();
        }
        self.stderr()
    }

    /// Closes stdin and waits for the process.
    pub fn wait(&mut self) -> i32 {
        self.stdin.take();
        self.child.wait().unwrap().code().unwrap_or(-1)
    }

    pub fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One LSP frame's JSON body; `None` at the end of the output.
pub fn read_frame(reader: &mut impl BufRead) -> Option<Value> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(v) = line.strip_prefix("Content-Length: ") {
            length = Some(v.parse::<usize>().unwrap());
        }
    }
    let mut body = vec![0; length?];
    reader.read_exact(&mut body).ok()?;
    Some(serde_json::from_slice(&body).expect("server sent valid JSON"))
}

pub fn merge(base: &mut Value, layer: Value) {
    match (base, layer) {
        (Value::Object(base), Value::Object(layer)) => {
            for (k, v) in layer {
                match base.get_mut(&k) {
                    Some(existing) => merge(existing, v),
                    None => {
                        base.insert(k, v);
                    }
                }
            }
        }
        (base, layer) => *base = layer,
    }
}

/// The real binary for a CLI command, without the user's config.
pub fn cli() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_compactd"));
    command.arg("--no-user-config");
    command
}

/// Runs `command` to its end and returns its output; a command still
/// running after `PATIENCE` is killed and fails the test instead of hanging
/// it.
pub fn output_within_patience(command: &mut Command) -> std::process::Output {
    output_within(command, PATIENCE)
}

/// `output_within_patience` with another bound.
pub fn output_within(command: &mut Command, patience: Duration) -> std::process::Output {
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_with_patience(child, patience)
}

/// Waits for a spawned child's output; one still running after `patience`
/// is killed and fails the test instead of hanging it.
/// `command` run with `input` on its stdin and its stdout piped, within
/// `PATIENCE`.
pub fn output_with_stdin(command: &mut Command, input: &str) -> std::process::Output {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    wait_with_patience(child, PATIENCE)
}

pub fn wait_with_patience(child: Child, patience: Duration) -> std::process::Output {
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(patience) {
        Ok(output) => output.unwrap(),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("process {pid} was still running after {patience:?}");
        }
    }
}

/// Caps the address space of the process `command` starts at `bytes`, so a
/// read that never ends fails that process instead of the machine.
#[cfg(unix)]
pub fn cap_memory(command: &mut Command, bytes: u64) -> &mut Command {
    set_rlimit(command, libc::RLIMIT_AS, bytes)
}

/// Sets a resource limit (soft and hard) of the process `command` starts.
#[cfg(unix)]
fn set_rlimit(
    command: &mut Command,
    resource: libc::__rlimit_resource_t,
    value: u64,
) -> &mut Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: setrlimit is async-signal-safe; nothing else runs here.
    unsafe {
        command.pre_exec(move || {
            let limit = libc::rlimit {
                rlim_cur: value,
                rlim_max: value,
            };
            if libc::setrlimit(resource, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    }
}

/// The process's peak resident set (`VmHWM`), in KiB.
#[cfg(unix)]
pub fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// Makes a FIFO (named pipe) at `path` with the system's `mkfifo`.
pub fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success(), "mkfifo {}", path.display());
}

/// `file:///…` for an absolute path (test paths need no escaping).
pub fn file_uri(path: &Path) -> String {
    format!("file://{}", path.display())
}

/// `../shared/transcripts`, or `None` with a printed reason.
pub fn transcripts_dir() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/transcripts");
    if dir.is_dir() {
        Some(dir)
    } else {
        skip(&format!(
            "{} is absent; transcript tests need ../shared beside the repo",
            dir.display()
        ));
        None
    }
}

/// The one way a test skips for a missing prerequisite: with `CI` or
/// `COMPACTD_REQUIRE_PREREQUISITES` set (`.ci/run` sets it) it fails
/// instead (CI installs every prerequisite, so a skip there is a test that
/// did nothing); otherwise it prints a SKIP line naming the test and
/// adds it to `target/tmp/skipped.txt`, which `scripts/test.sh` lists at
/// the end of the run.
pub fn skip(why: &str) {
    let current = std::thread::current();
    let test = current.name().unwrap_or("a test");
    let required = ["CI", "COMPACTD_REQUIRE_PREREQUISITES"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|v| !v.is_empty()));
    if required {
        panic!("{test}: a prerequisite is missing and the run requires them: {why}");
    }
    println!("SKIP: {test}: {why}");
    let list = Path::new(env!("CARGO_TARGET_TMPDIR")).join("skipped.txt");
    let line = format!("{test}: {why}\n");
    let appended = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&list)
        .and_then(|mut f| std::io::Write::write_all(&mut f, line.as_bytes()));
    if let Err(e) = appended {
        eprintln!("{}: {e}", list.display());
    }
}

/// A small test-only reader for pi session JSONL: messages as compactd's
/// wire format.
pub fn read_pi_session(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = Vec::new();
    for line in text.lines() {
        let entry: Value = serde_json::from_str(line).unwrap();
        if entry["type"] != "message" {
            continue;
        }
        let m = &entry["message"];
        let text_of = |content: &Value| -> String {
            match content {
                Value::String(s) => s.clone(),
                Value::Array(parts) => parts
                    .iter()
                    .filter(|p| p["type"] == "text")
                    .filter_map(|p| p["text"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n"),
                _ => String::new(),
            }
        };
        match m["role"].as_str().unwrap() {
            "user" => out.push(json!({"role": "user", "content": text_of(&m["content"])})),
            "assistant" => {
                let calls: Vec<Value> = m["content"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|p| p["type"] == "toolCall")
                    .map(|p| json!({"id": p["id"], "name": p["name"], "arguments": p["arguments"]}))
                    .collect();
                let u = &m["usage"];
                out.push(json!({
                    "role": "assistant",
                    "content": text_of(&m["content"]),
                    "toolCalls": calls,
                    "model": m["model"],
                    "usage": {"input": u["input"], "output": u["output"], "cacheRead": u["cacheRead"], "cacheWrite": u["cacheWrite"]}
                }));
            }
            "toolResult" => out.push(json!({
                "role": "tool",
                "toolCallId": m["toolCallId"],
                "toolName": m["toolName"],
                "content": text_of(&m["content"]),
                "isError": m["isError"],
            })),
            // A command the user ran in pi's shell, not part of the model's turn.
            "bashExecution" => {}
            other => panic!("unexpected role {other}"),
        }
    }
    out
}

/// A small test-only reader for Claude Code JSONL (`~/.claude/projects`):
/// lines sharing `message.id` are one API message and are merged where the
/// first of them stands; `tool_use` parts become calls and `tool_result`
/// parts tool messages. Other line types (summaries, snapshots) are skipped.
pub fn read_claude_code_session(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out: Vec<Value> = Vec::new();
    let mut by_message_id: std::collections::HashMap<String, usize> = Default::default();
    let text_of = |content: &Value| -> String {
        match content {
            Value::String(s) => s.clone(),
            Value::Array(parts) => parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        }
    };
    for line in text.lines() {
        let entry: Value = serde_json::from_str(line).unwrap();
        let m = &entry["message"];
        match entry["type"].as_str() {
            Some("assistant") => {
                let id = m["id"].as_str().unwrap().to_string();
                let index = *by_message_id.entry(id).or_insert_with(|| {
                    out.push(json!({"role": "assistant", "content": "", "toolCalls": [], "model": m["model"]}));
                    out.len() - 1
                });
                for part in m["content"].as_array().unwrap() {
                    let merged = &mut out[index];
                    match part["type"].as_str() {
                        Some("text") => {
                            let joined = format!(
                                "{}{}",
                                merged["content"].as_str().unwrap(),
                                part["text"].as_str().unwrap()
                            );
                            merged["content"] = json!(joined);
                        }
                        Some("tool_use") => merged["toolCalls"]
                            .as_array_mut()
                            .unwrap()
                            .push(json!({"id": part["id"], "name": part["name"], "arguments": part["input"]})),
                        _ => {}
                    }
                }
            }
            Some("user") => match &m["content"] {
                Value::String(s) => out.push(json!({"role": "user", "content": s})),
                Value::Array(parts) => {
                    let mut texts = Vec::new();
                    for part in parts {
                        match part["type"].as_str() {
                            Some("tool_result") => out.push(json!({
                                "role": "tool",
                                "toolCallId": part["tool_use_id"],
                                "content": text_of(&part["content"]),
                                "isError": part["is_error"] == true,
                            })),
                            Some("text") => texts.push(part["text"].as_str().unwrap().to_string()),
                            _ => {}
                        }
                    }
                    if !texts.is_empty() {
                        out.push(json!({"role": "user", "content": texts.join("\n")}));
                    }
                }
                _ => {}
            },
            _ => {}
        }
    }
    out
}

/// Raw paths of pi `edit`/`write` calls (`path`) answered by a result that
/// is not an error, read from the session's raw lines independently of
/// compactd.
pub fn pi_edited_paths(raw: &str) -> std::collections::HashSet<String> {
    let mut calls: Vec<(String, String)> = Vec::new();
    let mut succeeded = std::collections::HashSet::new();
    for line in raw.lines() {
        let entry: Value = serde_json::from_str(line).unwrap();
        let m = &entry["message"];
        if m["role"] == "assistant" {
            for part in m["content"].as_array().unwrap() {
                if part["type"] == "toolCall" && (part["name"] == "edit" || part["name"] == "write")
                {
                    calls.push((
                        part["id"].as_str().unwrap().into(),
                        part["arguments"]["path"].as_str().unwrap().into(),
                    ));
                }
            }
        }
        if m["role"] == "toolResult" && m["isError"] != true {
            succeeded.insert(m["toolCallId"].as_str().unwrap().to_string());
        }
    }
    answered(calls, &succeeded)
}

/// The same for Claude Code JSONL: `Edit`, `MultiEdit`, `Write`
/// (`file_path`) and `NotebookEdit` (`notebook_path`), answered by a
/// `tool_result` without `is_error`.
pub fn claude_code_edited_paths(raw: &str) -> std::collections::HashSet<String> {
    let mut calls: Vec<(String, String)> = Vec::new();
    let mut succeeded = std::collections::HashSet::new();
    for line in raw.lines() {
        let entry: Value = serde_json::from_str(line).unwrap();
        let Some(parts) = entry["message"]["content"].as_array() else {
            continue;
        };
        for part in parts {
            match part["type"].as_str() {
                Some("tool_use") => {
                    let field = match part["name"].as_str() {
                        Some("Edit" | "MultiEdit" | "Write") => "file_path",
                        Some("NotebookEdit") => "notebook_path",
                        _ => continue,
                    };
                    calls.push((
                        part["id"].as_str().unwrap().into(),
                        part["input"][field].as_str().unwrap().into(),
                    ));
                }
                Some("tool_result") if part["is_error"] != true => {
                    succeeded.insert(part["tool_use_id"].as_str().unwrap().to_string());
                }
                _ => {}
            }
        }
    }
    answered(calls, &succeeded)
}

fn answered(
    calls: Vec<(String, String)>,
    succeeded: &std::collections::HashSet<String>,
) -> std::collections::HashSet<String> {
    calls
        .into_iter()
        .filter(|(id, _)| succeeded.contains(id))
        .map(|(_, path)| path)
        .collect()
}

/// The lines of a `<tag>` section of a summary.
pub fn summary_section(summary: &str, tag: &str) -> Vec<String> {
    let open = format!("<{tag}>\n");
    let Some(start) = summary.find(&open) else {
        return Vec::new();
    };
    let body = &summary[start + open.len()..];
    let end = body.find(&format!("</{tag}>")).unwrap();
    body[..end].lines().map(str::to_string).collect()
}

/// `tests/agents`: the pinned real agents and the scripted model server.
pub fn agents_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/agents")
}

/// A pinned agent's binary in tests/agents, or why the test is skipped.
pub fn agent_binary(name: &str) -> Result<PathBuf, String> {
    installed(agents_dir().join("node_modules/.bin").join(name))
}

/// `binary` when `npm ci` installed it and python3 is there.
pub fn installed(binary: PathBuf) -> Result<PathBuf, String> {
    if !binary.exists() {
        return Err(format!(
            "{} is missing: run `npm ci` in {}",
            binary.display(),
            agents_dir().display()
        ));
    }
    if Command::new("python3").arg("--version").output().is_err() {
        return Err("python3 is missing (the scripted model server needs it)".into());
    }
    Ok(binary)
}

/// Whether a test that needs the scripted model server cannot run: `true`,
/// skipped (`skip`), when python3 is missing.
pub fn python3_missing() -> bool {
    let missing = Command::new("python3").arg("--version").output().is_err();
    if missing {
        skip("python3 is missing (the scripted model server needs it)");
    }
    missing
}

/// `scripted_model.py` on a free port; stopped when dropped.
pub struct ScriptedModel {
    child: Child,
    pub url: String,
}

impl ScriptedModel {
    /// A scenario of `tests/agents/scenarios/`, `${WORKSPACE}` set.
    pub fn start(scenario: &str, log: &Path, workspace: &Path) -> ScriptedModel {
        let scenario = agents_dir().join("scenarios").join(scenario);
        let var = format!("WORKSPACE={}", workspace.display());
        ScriptedModel::start_file(&scenario, log, &[&var])
    }

    /// Any scenario file, with `--var NAME=VALUE`s.
    pub fn start_file(scenario: &Path, log: &Path, vars: &[&str]) -> ScriptedModel {
        let mut command = Command::new("python3");
        command
            .arg(agents_dir().join("scripted_model.py"))
            .arg("--scenario")
            .arg(scenario)
            .arg("--log")
            .arg(log);
        for var in vars {
            command.arg("--var").arg(var);
        }
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // The first line is printed once it listens: no polling.
        let mut url = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut url)
            .unwrap();
        assert!(url.starts_with("http://"), "scripted_model.py: {url:?}");
        ScriptedModel {
            child,
            url: url.trim().to_string(),
        }
    }
}

impl Drop for ScriptedModel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A tool call as an assistant message's `toolCalls` entry.
pub fn tool_call(id: &str, name: &str, args: Value) -> Value {
    serde_json::json!({"id": id, "name": name, "arguments": args})
}

/// A file under `tests/fixtures`.
pub fn fixture(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(relative)
}

/// The binary with HOME (and the XDG data and config folders) in `home`,
/// no user configuration, and no agent folder or auto-compaction setting
/// moved elsewhere by the environment: the temporary home the `setup`,
/// `hook` and terminal commands' tests run in.
pub fn compactd_at_home(home: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_compactd"));
    command
        .arg("--no-user-config")
        .env("HOME", home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CONFIG_HOME", home.join("config"));
    for moved in [
        "CLAUDE_CONFIG_DIR",
        "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE",
        "CLAUDE_CODE_AUTO_COMPACT_WINDOW",
        "CODEX_HOME",
        "GEMINI_CLI_HOME",
    ] {
        command.env_remove(moved);
    }
    command
}

/// A WebSocket connection to `compactd serve --listen`.
pub type WsStream =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Connects to `url` with the token as a bearer `Authorization` header and
/// an `Origin` header, each when given.
pub async fn ws_connect(
    url: &str,
    token: Option<&str>,
    origin: Option<&str>,
) -> Result<WsStream, tokio_tungstenite::tungstenite::Error> {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let mut request = url.into_client_request()?;
    if let Some(token) = token {
        let value = format!("Bearer {token}").parse().unwrap();
        request.headers_mut().insert("authorization", value);
    }
    if let Some(origin) = origin {
        request
            .headers_mut()
            .insert("origin", origin.parse().unwrap());
    }
    let (stream, _) = tokio_tungstenite::connect_async(request).await?;
    Ok(stream)
}

/// The next text message as JSON (`None` once the connection is gone:
/// closed, reset, or a message that is not JSON); other frames are passed
/// over. Fails the test when nothing comes within the patience.
pub async fn ws_next(stream: &mut WsStream) -> Option<Value> {
    use futures_util::StreamExt;
    use tokio_tungstenite::tungstenite::Message;
    loop {
        let frame = tokio::time::timeout(PATIENCE, stream.next())
            .await
            .unwrap_or_else(|_| panic!("no WebSocket message within {PATIENCE:?}"));
        match frame {
            Some(Ok(Message::Text(text))) => return serde_json::from_str(&text).ok(),
            Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return None,
            Some(Ok(_)) => continue,
        }
    }
}
