//! `kill -9` at random points of appends and compactions (manual and
//! automatic), round after round on one session: every message the server
//! acknowledged is in the log exactly once, the log loads without losing
//! any message it holds, and the history keeps log order up to the
//! newest message. The
//! kill comes right after a given acknowledgement, or after a request was
//! written and before its answer is read, never after a pause.
//! Each run draws a new sequence and prints its seed;
//! `COMPACTD_CRASH_SEED` replays one.

use std::collections::HashMap;
use std::path::Path;

use serde_json::{json, Value};

use crate::support::Server;

const ROUNDS: usize = 14;
const SESSION: &str = "crash";

#[derive(Default)]
struct Acknowledged {
    /// Message id → content, for every message the server acknowledged.
    messages: HashMap<String, String>,
    /// Appends sent as notifications: acknowledged by the next answer to a
    /// request, since the server handles messages in order.
    unconfirmed: Vec<(String, String)>,
    next_id: usize,
}

impl Acknowledged {
    fn confirm(&mut self) {
        self.messages.extend(self.unconfirmed.drain(..));
    }

    /// 1–3 alternating user and assistant messages of random length.
    fn batch(&mut self, rng: &mut fastrand::Rng, big: bool) -> Vec<(String, String, Value)> {
        (0..rng.usize(1..=3))
            .map(|_| {
                self.next_id += 1;
                let id = format!("m{}", self.next_id);
                let len = if big { 256 << 10 } else { rng.usize(10..400) };
                let word = ["alpha ", "beta ", "fn x() {} ", "{\"k\": 1} "][rng.usize(..4)];
                let content = format!("{id}: {}", word.repeat(len / word.len() + 1));
                let role = ["user", "assistant"][self.next_id % 2];
                let message = json!({"id": id, "role": role, "content": content});
                (id, content, message)
            })
            .collect()
    }
}

#[test]
fn kill_9_during_appends_and_compactions_loses_no_acknowledged_message() {
    let seed = std::env::var("COMPACTD_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        // A new sequence every run, so the kill points keep moving; a
        // failure prints the seed to replay it.
        .unwrap_or_else(|| fastrand::u64(..));
    println!("seed {seed} (COMPACTD_CRASH_SEED replays it)");
    let mut rng = fastrand::Rng::with_seed(seed);
    let dir = tempfile::tempdir().unwrap();
    // Small thresholds, so automatic compactions run often too.
    let options =
        json!({"keepRecentTokens": 2000, "messageThreshold": 10, "autoCompactTokenLimit": 6000});
    let mut acked = Acknowledged::default();
    let mut torn = 0;
    for round in 0..ROUNDS {
        let mut server = Server::start(dir.path(), options.clone());
        verify(&mut server, dir.path(), &acked, round);
        for _ in 0..rng.usize(1..6) {
            operate(&mut server, &mut rng, &mut acked);
        }
        // The kill point: right after the last acknowledgement, or with an
        // append (sometimes a large one, to tear its line) or a compaction
        // written and its answer not read.
        let unanswered = send_and_stop_early(&mut server, &mut rng, &mut acked);
        server.kill();
        if !unanswered.is_empty() && tear_unanswered(dir.path(), &unanswered, &mut rng) {
            torn += 1;
        }
        // Notifications no answer followed were never acknowledged.
        acked.unconfirmed.clear();
    }
    let mut server = Server::start(dir.path(), options);
    let (compactions, unreadable) = verify(&mut server, dir.path(), &acked, ROUNDS);
    println!(
        "{} acknowledged messages, {compactions} compactions and {unreadable} torn lines logged ({torn} cut by the test)",
        acked.messages.len()
    );
    assert!(acked.messages.len() > 20, "the test appended too little");
    assert!(compactions > 0, "the test compacted nothing");
}

/// The kill point, after the acknowledged operations: right away; with an
/// append written and its answer unread (right after sending it, or once
/// its meter notification shows it was logged); or with a compaction
/// written and its answer unread (right after sending it, once its
/// progress began, or once it was applied and announced). Returns the ids
/// of an unanswered append.
fn send_and_stop_early(
    server: &mut Server,
    rng: &mut fastrand::Rng,
    acked: &mut Acknowledged,
) -> Vec<String> {
    let mode = rng.usize(..6);
    if mode == 0 {
        return Vec::new();
    }
    if mode <= 2 {
        let big = rng.bool();
        let batch = acked.batch(rng, big);
        let messages: Vec<Value> = batch.iter().map(|(_, _, m)| m.clone()).collect();
        let id = server.send_request(
            "conversation/append",
            json!({"sessionId": SESSION, "messages": messages}),
        );
        if mode == 2 {
            await_either(server, id, "conversation/tokens");
        }
        return batch.into_iter().map(|(id, _, _)| id).collect();
    }
    let mut params = compact_params(rng);
    params["workDoneToken"] = json!(format!("t{}", rng.u32(..)));
    let id = server.send_request("conversation/compact", params);
    match mode {
        4 => await_either(server, id, "$/progress"),
        5 => await_either(server, id, "conversation/didCompact"),
        _ => {}
    }
    Vec::new()
}

/// Reads until a `method` notification or the answer to request `id`.
fn await_either(server: &mut Server, id: i64, method: &str) {
    server.next_where(|m| m["method"] == method || (m["id"] == id && m.get("method").is_none()));
}

/// A kill inside the write itself is rare to hit by timing alone. When
/// the unanswered append did reach the log (its lines end the file), cut
/// the file at a random byte of them, as such a kill would have left it.
fn tear_unanswered(dir: &Path, ids: &[String], rng: &mut fastrand::Rng) -> bool {
    let path = dir.join(format!("{SESSION}.jsonl"));
    let bytes = std::fs::read(&path).unwrap();
    let text = String::from_utf8_lossy(&bytes);
    let tail = ids
        .iter()
        .map(|id| format!("{{\"type\":\"message\",\"message\":{{\"id\":\"{id}\""))
        .collect::<Vec<_>>();
    let Some(start) = text.rfind(&tail[0]) else {
        return false;
    };
    let lines: Vec<&str> = text[start..].lines().collect();
    let ours = lines.len() == ids.len() && lines.iter().zip(&tail).all(|(l, t)| l.starts_with(t));
    if ours {
        let cut = rng.usize(start..bytes.len() - 1);
        std::fs::write(&path, &bytes[..cut]).unwrap();
    }
    ours
}

fn compact_params(rng: &mut fastrand::Rng) -> Value {
    let strategy = ["checkpoint", "incremental", "prune"][rng.usize(..3)];
    json!({"sessionId": SESSION, "strategy": strategy, "keepRecentTokens": rng.u64(100..1500)})
}

/// One acknowledged operation: an append request, appends sent as
/// notifications, or a compaction.
fn operate(server: &mut Server, rng: &mut fastrand::Rng, acked: &mut Acknowledged) {
    match rng.usize(..10) {
        0..=5 => {
            let batch = acked.batch(rng, false);
            let messages: Vec<Value> = batch.iter().map(|(_, _, m)| m.clone()).collect();
            server.append(SESSION, messages);
            acked.confirm();
            acked
                .messages
                .extend(batch.into_iter().map(|(id, content, _)| (id, content)));
        }
        6..=7 => {
            let batch = acked.batch(rng, false);
            let messages: Vec<Value> = batch.iter().map(|(_, _, m)| m.clone()).collect();
            server.notify(
                "conversation/append",
                json!({"sessionId": SESSION, "messages": messages}),
            );
            acked
                .unconfirmed
                .extend(batch.into_iter().map(|(id, content, _)| (id, content)));
        }
        _ => {
            server
                .request("conversation/compact", compact_params(rng))
                .expect("compact");
            acked.confirm();
        }
    }
}

/// Opens the session and checks it against its log and what was
/// acknowledged before the kills.
/// Returns the compactions and the torn lines the log holds.
fn verify(server: &mut Server, dir: &Path, acked: &Acknowledged, round: usize) -> (usize, usize) {
    let opened = server
        .request("conversation/open", json!({"sessionId": SESSION}))
        .unwrap();
    let text = std::fs::read_to_string(dir.join(format!("{SESSION}.jsonl"))).unwrap_or_default();
    let mut logged: HashMap<String, String> = HashMap::new();
    let mut order = Vec::new();
    let (mut unreadable, mut compactions) = (0, 0);
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(entry) = serde_json::from_str::<Value>(line) else {
            unreadable += 1;
            continue;
        };
        if entry["type"] == "message" {
            let id = entry["message"]["id"].as_str().unwrap().to_string();
            let content = entry["message"]["content"].as_str().unwrap().to_string();
            assert!(
                logged.insert(id.clone(), content).is_none(),
                "round {round}: {id} logged twice"
            );
            order.push(id);
        }
        compactions += usize::from(entry["type"] == "compaction");
    }
    for (id, content) in &acked.messages {
        assert_eq!(
            logged.get(id),
            Some(content),
            "round {round}: acknowledged message {id} lost"
        );
    }
    assert!(
        unreadable <= round,
        "round {round}: {unreadable} torn lines"
    );
    assert_eq!(
        opened["messageCount"].as_u64().unwrap() as usize,
        logged.len(),
        "round {round}: the load lost messages the log holds"
    );
    assert_eq!(
        opened["warnings"].as_array().unwrap().len(),
        unreadable,
        "round {round}: {}",
        opened["warnings"]
    );
    let history = server
        .request("conversation/history", json!({"sessionId": SESSION}))
        .unwrap();
    // The view keeps logged messages in log order and, unless a compaction
    // summarized everything, ends with the newest one.
    let positions: Vec<usize> = history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| order.iter().position(|id| m["id"] == id.as_str()))
        .collect();
    assert!(
        positions.windows(2).all(|w| w[0] < w[1]),
        "round {round}: history out of log order: {positions:?}"
    );
    let last = history["messages"].as_array().unwrap().last().cloned();
    if let Some(last) = last.filter(|m| logged.contains_key(m["id"].as_str().unwrap_or(""))) {
        assert_eq!(
            last["id"].as_str(),
            order.last().map(String::as_str),
            "round {round}: history ends before the newest message"
        );
    }
    (compactions, unreadable)
}
