//! JSON-RPC with LSP framing on a spawned server's pipes, one request at a
//! time (`resume`, `recall`).

use std::io::BufReader;
use std::process::{ChildStdin, ChildStdout};

use serde_json::{json, Value};

pub struct Client {
    pub stdin: ChildStdin,
    pub stdout: BufReader<ChildStdout>,
}

impl Client {
    pub fn send(&mut self, message: Value) {
        super::write_message(&mut self.stdin, &message);
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request and reads until its response.
    pub fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let message = self.read();
            if message["id"] == json!(id) && message.get("method").is_none() {
                assert!(message.get("error").is_none(), "{method}: {message}");
                return message;
            }
        }
    }

    pub fn read(&mut self) -> Value {
        super::read_message(&mut self.stdout).expect("compactd closed its output")
    }
}
