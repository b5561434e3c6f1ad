//! The compaction engine through the binary: triggers, strategies,
//! chunking, retention, inspection and control.

use serde_json::{json, Value};

use crate::support::{read_pi_session, transcripts_dir, Server};

fn text(words: usize, tag: &str) -> String {
    format!("{tag}: {}", "lorem ipsum dolor sit amet ".repeat(words / 5))
}

/// `n` user/assistant pairs of about `words` words each.
fn chat(n: usize, words: usize, tag: &str) -> Vec<Value> {
    (0..n)
        .flat_map(|i| {
            [
                json!({"role": "user", "content": text(words, &format!("{tag} request {i}"))}),
                json!({"role": "assistant", "content": text(words, &format!("{tag} answer {i}"))}),
            ]
        })
        .collect()
}

fn check_session(server: &mut Server, id: &str) -> Value {
    server
        .request("conversation/check", json!({"sessionId": id}))
        .unwrap()
}

fn append(server: &mut Server, id: &str, messages: Vec<Value>) -> Value {
    server
        .request(
            "conversation/append",
            json!({"sessionId": id, "messages": messages}),
        )
        .unwrap()
}

#[test]
fn auto_compaction_fires_at_the_limit_with_trigger_threshold() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(
        dir.path(),
        json!({"autoCompactTokenLimit": 3000, "keepRecentTokens": 500}),
    );
    let id = server.open(json!({}));
    let mut fired_at = None;
    for round in 0..20 {
        let result = append(&mut server, &id, chat(1, 100, &format!("r{round}")));
        let tokens = result["meter"]["contextTokens"].as_u64().unwrap();
        if result["shouldCompact"] == true {
            assert!(tokens >= 3000, "fired below the limit at {tokens}");
            assert_eq!(result["compacting"], true);
            fired_at = Some(round);
            break;
        }
        assert!(tokens < 3000, "did not fire at {tokens}");
    }
    assert!(fired_at.is_some(), "never fired");
    let did = server.next_where(|m| m["method"] == "conversation/didCompact")["params"].clone();
    assert_eq!(did["trigger"], "threshold");
    assert_eq!(did["compacted"], true);
    assert!(did["tokensAfter"].as_u64().unwrap() < 3000);
    let check = check_session(&mut server, &id);
    assert_eq!(check["shouldCompact"], false);
    assert_eq!(check["autoCompact"], true);
}

#[test]
fn auto_compaction_does_not_loop_when_the_kept_tail_exceeds_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    // What no compaction can remove (the system prompt) is already over
    // the limit, and the kept tail alone (keepRecentTokens) is larger
    // than the limit too.
    let mut server = Server::start_with_progress(
        dir.path(),
        json!({"autoCompactTokenLimit": 1500, "keepRecentTokens": 4000}),
    );
    let id = server.open(json!({"systemPrompt": text(1800, "rules")}));
    let mut jobs = 0;
    for round in 0..12 {
        let result = append(&mut server, &id, chat(1, 150, &format!("r{round}")));
        assert_eq!(
            result["shouldCompact"], true,
            "over the limit from the start"
        );
        // Wait for any compaction this append started before the next one.
        if result["compacting"] == true {
            jobs += 1;
            server.wait_progress_end();
        }
    }
    // Three attempts (full, half, no tail; an attempt with nothing to
    // cut counts too), then the breaker stops it.
    assert!((1..=3).contains(&jobs), "{jobs} jobs");
    let stopped = server.received_notifications("conversation/autoCompactStopped");
    assert_eq!(stopped.len(), 1);
    assert!(
        stopped[0]["reason"]
            .as_str()
            .unwrap()
            .contains("3 attempts that did not help"),
        "{}",
        stopped[0]
    );
    let check = check_session(&mut server, &id);
    assert_eq!(check["shouldCompact"], true);
    assert_eq!(check["autoCompact"], false);
    assert_eq!(
        check["compacting"], false,
        "a tripped breaker starts nothing"
    );
    assert!(check["stoppedReason"].is_string());
    // Switching it on again resets the breaker.
    let on = server
        .request(
            "conversation/setAutoCompact",
            json!({"sessionId": id, "enabled": true}),
        )
        .unwrap();
    assert_eq!(on["enabled"], true);
}

#[test]
fn the_kept_tail_shrinks_after_a_compaction_that_did_not_help() {
    let dir = tempfile::tempdir().unwrap();
    // The limit is no more than half the tail: a compaction that keeps the
    // half tail cannot get under it, whatever the summary's size, so the
    // next attempt keeps none.
    let mut server = Server::start_with_progress(
        dir.path(),
        json!({"autoCompactTokenLimit": 1500, "keepRecentTokens": 3000}),
    );
    let id = server.open(json!({}));
    let mut kept = Vec::new();
    for round in 0..40 {
        let result = append(&mut server, &id, chat(1, 120, &format!("r{round}")));
        if result["compacting"] == true {
            server.wait_progress_end();
            let list = server
                .request("conversation/compactions", json!({"sessionId": id}))
                .unwrap();
            kept = list["compactions"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["tokensAfter"].as_u64().unwrap())
                .collect();
        }
        if kept.len() >= 2 {
            break;
        }
    }
    assert!(kept.len() >= 2, "{kept:?}");
    assert!(
        kept[1] < kept[0],
        "the second attempt keeps a smaller tail: {kept:?}"
    );
}

#[test]
fn auto_compaction_can_be_switched_off() {
    let dir = tempfile::tempdir().unwrap();
    for (options, env, toggle) in [
        (json!({"autoCompact": false}), None, false),
        (json!({}), Some("1"), false),
        (json!({}), None, true),
    ] {
        let mut server = match env {
            Some(v) => {
                let mut s =
                    Server::spawn_with_env(dir.path(), &[("COMPACTD_DISABLE_AUTOCOMPACT", v)]);
                s.initialize(json!({"autoCompactTokenLimit": 1000, "keepRecentTokens": 100}));
                s
            }
            None => {
                let mut opts = json!({"autoCompactTokenLimit": 1000, "keepRecentTokens": 100});
                crate::support::merge(&mut opts, options.clone());
                Server::start(dir.path(), opts)
            }
        };
        let id = server.open(json!({}));
        if toggle {
            let off = server
                .request(
                    "conversation/setAutoCompact",
                    json!({"sessionId": id, "enabled": false}),
                )
                .unwrap();
            assert_eq!(off["enabled"], false);
        }
        let result = append(&mut server, &id, chat(10, 100, "x"));
        assert_eq!(result["shouldCompact"], true, "the trigger still reports");
        assert_eq!(
            result["compacting"], false,
            "{options} env {env:?} toggle {toggle}"
        );
        let check = check_session(&mut server, &id);
        assert_eq!(check["autoCompact"], false);
        assert_eq!(check["compacting"], false);
    }
}

#[test]
fn message_and_turn_thresholds() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(
        dir.path(),
        json!({"messageThreshold": 10, "keepRecentTokens": 20, "autoCompact": false}),
    );
    let id = server.open(json!({}));
    let r = append(&mut server, &id, chat(4, 5, "a"));
    assert_eq!(r["shouldCompact"], false);
    let r = append(&mut server, &id, chat(1, 5, "b"));
    assert_eq!(r["shouldCompact"], true);
    let check = check_session(&mut server, &id);
    assert_eq!(check["triggers"], json!(["messages"]));

    let mut server = Server::start(
        dir.path(),
        json!({"turnThreshold": 3, "autoCompact": false}),
    );
    let id = server.open(json!({}));
    let r = append(&mut server, &id, chat(2, 5, "a"));
    assert_eq!(r["shouldCompact"], false);
    let r = append(
        &mut server,
        &id,
        vec![json!({"role": "user", "content": "third"})],
    );
    assert_eq!(r["shouldCompact"], true);
}

#[test]
fn chunked_compaction_of_a_real_session_with_a_small_summarizer_window() {
    let Some(dir) = transcripts_dir() else { return };
    let messages = read_pi_session(&dir.join("pi-session-jsonl/large-session.jsonl"));
    let data = tempfile::tempdir().unwrap();
    // The test summarizer's window (8,000 tokens) is far smaller than the
    // conversation (~250,000 tokens).
    let mut server = Server::start(
        data.path(),
        json!({"autoCompact": false, "summarizer": {"provider": "test", "delayMs": 0, "contextWindow": 8000}}),
    );
    let id = server.open(json!({"model": "claude-sonnet-4-5"}));
    for batch in messages.chunks(150) {
        append(&mut server, &id, batch.to_vec());
    }
    let result = server
        .request(
            "conversation/compact",
            json!({"sessionId": id, "workDoneToken": "c"}),
        )
        .unwrap();
    assert_eq!(result["compacted"], true);
    let chunks = result["chunks"].as_u64().unwrap();
    assert!(chunks > 10, "chunks {chunks}");
    assert_eq!(result["degraded"], false);
    assert!(result["tokensAfter"].as_u64().unwrap() < result["tokensBefore"].as_u64().unwrap());
    let reports: Vec<String> = server
        .received_notifications("$/progress")
        .iter()
        .filter(|p| p["value"]["kind"] == "report")
        .map(|p| p["value"]["message"].as_str().unwrap().to_string())
        .collect();
    let last = reports
        .iter()
        .rev()
        .find(|r| r.starts_with("summarizing chunk"))
        .unwrap();
    let (i, n) = last
        .trim_start_matches("summarizing chunk ")
        .split_once(" of ")
        .unwrap();
    assert_eq!(i, n, "every chunk reported: {reports:?}");
    assert!(n.parse::<u64>().unwrap() > 10 && n.parse::<u64>().unwrap() <= chunks);
    assert!(
        reports.iter().any(|r| r.starts_with("merging")),
        "{reports:?}"
    );
}

#[test]
fn incremental_replaces_only_the_earliest_assistant_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(
        dir.path(),
        json!({"autoCompact": false, "retentionWindow": 2}),
    );
    let id = server.open(json!({}));
    let call = |i: usize| json!({"id": format!("c{i}"), "name": "bash", "arguments": {"command": format!("step {i}")}});
    append(
        &mut server,
        &id,
        vec![
            json!({"id": "u1", "role": "user", "content": "first task"}),
            json!({"id": "a1", "role": "assistant", "content": "working", "toolCalls": [call(1)]}),
            json!({"id": "t1", "role": "tool", "toolCallId": "c1", "content": text(300, "out")}),
            json!({"id": "a2", "role": "assistant", "content": "more", "toolCalls": [call(2)]}),
            json!({"id": "t2", "role": "tool", "toolCallId": "c2", "content": text(300, "out")}),
            json!({"id": "u2", "role": "user", "content": "second task"}),
            json!({"id": "a3", "role": "assistant", "content": "on it", "toolCalls": [call(3)]}),
            json!({"id": "t3", "role": "tool", "toolCallId": "c3", "content": "ok"}),
            json!({"id": "a4", "role": "assistant", "content": "done"}),
        ],
    );
    let result = server
        .request(
            "conversation/compact",
            json!({"sessionId": id, "strategy": "incremental"}),
        )
        .unwrap();
    assert_eq!(result["compacted"], true);
    assert_eq!(result["strategy"], "incremental");
    assert_eq!(result["messagesSummarized"], 4);
    let history = server
        .request("conversation/history", json!({"sessionId": id}))
        .unwrap();
    let ids: Vec<&str> = history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids[0], "u1");
    assert!(ids[1].starts_with("summary-"));
    assert_eq!(&ids[2..], ["u2", "a3", "t3", "a4"]);
    assert_eq!(history["messages"][1]["role"], "assistant");
    // Repeat: the next run is inside the retention window, nothing to do.
    let again = server
        .request(
            "conversation/compact",
            json!({"sessionId": id, "strategy": "incremental"}),
        )
        .unwrap();
    assert_eq!(again["compacted"], false);
}

#[test]
fn prune_replaces_old_tool_outputs_only_when_it_frees_enough() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), json!({"autoCompact": false}));
    let id = server.open(json!({}));
    // 12 tool outputs of ~5,000 tokens: the newest 40,000 are protected.
    let mut messages = vec![json!({"role": "user", "content": "scan everything"})];
    for i in 0..12 {
        messages.push(json!({"role": "assistant", "content": "", "toolCalls": [{"id": format!("c{i}"), "name": "read", "arguments": {"path": format!("f{i}")}}]}));
        messages.push(json!({"id": format!("t{i}"), "role": "tool", "toolCallId": format!("c{i}"), "content": format!("{i} ").repeat(5000)}));
    }
    append(&mut server, &id, messages);
    let preview = server
        .request(
            "conversation/preview",
            json!({"sessionId": id, "strategy": "prune"}),
        )
        .unwrap();
    let would = preview["pruneMessageIds"].as_array().unwrap().clone();
    assert!(!would.is_empty() && would.len() < 12, "{preview}");
    let result = server
        .request(
            "conversation/compact",
            json!({"sessionId": id, "strategy": "prune"}),
        )
        .unwrap();
    assert_eq!(result["compacted"], true);
    assert_eq!(result["summarizer"], "none");
    assert_eq!(result["prunedMessageIds"], json!(would));
    assert!(
        result["tokensBefore"].as_u64().unwrap() - result["tokensAfter"].as_u64().unwrap()
            >= 20_000
    );
    let history = server
        .request("conversation/history", json!({"sessionId": id}))
        .unwrap();
    let t0 = history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == "t0")
        .unwrap();
    assert!(t0["content"]
        .as_str()
        .unwrap()
        .starts_with("[compactd] Output pruned"));
    let t11 = history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == "t11")
        .unwrap();
    assert!(t11["content"].as_str().unwrap().starts_with("11 11"));
    // What is left is protected: nothing more to prune.
    let again = server
        .request(
            "conversation/compact",
            json!({"sessionId": id, "strategy": "prune"}),
        )
        .unwrap();
    assert_eq!(again["compacted"], false);
    assert!(again["reason"]
        .as_str()
        .unwrap()
        .contains("nothing to prune"));
}

#[test]
fn retention_check_preserves_rules_task_and_pins() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(
        dir.path(),
        json!({"autoCompact": false, "keepRecentTokens": 10}),
    );
    let id = server.open(json!({}));
    let task = "Port the parser to the new AST.";
    let rule = "Never edit files under vendor/.";
    let long_rule_turn = format!(
        "{} {rule} Thanks.",
        "We looked at the old parser and its tests today. ".repeat(30)
    );
    append(
        &mut server,
        &id,
        vec![
            json!({"role": "user", "content": task}),
            json!({"role": "assistant", "content": "ok"}),
            json!({"role": "user", "content": long_rule_turn}),
            json!({"role": "assistant", "content": "understood"}),
            json!({"role": "assistant", "content": text(400, "a long answer")}),
            json!({"role": "user", "content": "now continue"}),
            json!({"role": "assistant", "content": "continuing"}),
        ],
    );
    let pins = server
        .request(
            "conversation/pin",
            json!({"sessionId": id, "text": "The API key lives in VAULT_PATH, not in code."}),
        )
        .unwrap();
    assert_eq!(pins["pins"].as_array().unwrap().len(), 1);
    let result = server
        .request("conversation/compact", json!({"sessionId": id}))
        .unwrap();
    let summary = result["summary"].as_str().unwrap();
    let recall = result["recall"].as_f64().unwrap();
    assert!(
        recall < 1.0,
        "only the retention check knows the pin, so it was missing: {recall}"
    );
    let (body, preserved) =
        summary.split_at(summary.find("<preserved>").expect("preserved section"));
    assert!(
        body.contains(&format!("## User rules\n- \"{rule}\"")),
        "the offline summary finds the rule in the long turn itself: {body}"
    );
    assert!(!preserved.contains(rule), "{preserved}");
    assert!(
        preserved.contains("The API key lives in VAULT_PATH"),
        "{preserved}"
    );
    assert!(
        summary.contains(task),
        "the task statement is kept verbatim"
    );

    // The rule survives the next compaction too, through retainedRules.
    append(&mut server, &id, chat(3, 300, "later"));
    let second = server
        .request("conversation/compact", json!({"sessionId": id}))
        .unwrap();
    assert!(second["summary"].as_str().unwrap().contains(rule));
    let list = server
        .request("conversation/compactions", json!({"sessionId": id}))
        .unwrap();
    let list = list["compactions"].as_array().unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["trigger"], "manual");
    assert!(list[1]["recall"].as_f64().is_some());
}

#[test]
fn preview_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(
        dir.path(),
        json!({"autoCompact": false, "keepRecentTokens": 30}),
    );
    let id = server.open(json!({}));
    append(&mut server, &id, chat(6, 10, "p"));
    let before = server
        .request("conversation/history", json!({"sessionId": id}))
        .unwrap();
    let preview = server
        .request("conversation/preview", json!({"sessionId": id}))
        .unwrap();
    assert_eq!(preview["compacted"], false);
    let summarize = preview["summarizeMessageIds"].as_array().unwrap();
    let keep = preview["keepMessageIds"].as_array().unwrap();
    assert_eq!(summarize.len() + keep.len(), 12);
    assert_eq!(preview["firstKeptMessageId"], keep[0]);
    assert!(
        preview["estimatedTokensAfter"].as_u64().unwrap()
            < preview["tokensBefore"].as_u64().unwrap()
    );
    let after = server
        .request("conversation/history", json!({"sessionId": id}))
        .unwrap();
    assert_eq!(before, after);
    let result = server
        .request("conversation/compact", json!({"sessionId": id}))
        .unwrap();
    assert_eq!(
        result["firstKeptMessageId"], preview["firstKeptMessageId"],
        "the preview matches what happens"
    );
}

#[test]
fn branching_before_a_compaction_undoes_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(
        dir.path(),
        json!({"autoCompact": false, "keepRecentTokens": 10}),
    );
    let id = server.open(json!({"sessionId": "trunk"}));
    let first: Vec<Value> = (0..6)
        .map(|i| json!({"id": format!("m{i}"), "role": if i % 2 == 0 {"user"} else {"assistant"}, "content": text(300, &format!("turn {i}"))}))
        .collect();
    append(&mut server, &id, first);
    server
        .request("conversation/compact", json!({"sessionId": id}))
        .unwrap();
    append(
        &mut server,
        &id,
        vec![json!({"id": "m6", "role": "user", "content": "after the compaction"})],
    );

    let after = server
        .request(
            "conversation/branch",
            json!({"sessionId": id, "beforeMessageId": "m6"}),
        )
        .unwrap();
    let branch = after["sessionId"].as_str().unwrap();
    assert_eq!(after["messageCount"], 6);
    let history = server
        .request("conversation/history", json!({"sessionId": branch}))
        .unwrap();
    assert!(
        history["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("<summary>"),
        "the compaction came along"
    );

    let before = server
        .request(
            "conversation/branch",
            json!({"sessionId": id, "beforeMessageId": "m3"}),
        )
        .unwrap();
    let branch = before["sessionId"].as_str().unwrap();
    let history = server
        .request("conversation/history", json!({"sessionId": branch}))
        .unwrap();
    let ids: Vec<&str> = history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        ["m0", "m1", "m2"],
        "branching before the compaction undoes it"
    );
    // Branches are sessions of their own, on disk.
    assert!(dir.path().join(format!("{branch}.jsonl")).exists());
    let err = server
        .request(
            "conversation/branch",
            json!({"sessionId": id, "beforeMessageId": "nope"}),
        )
        .unwrap_err();
    assert_eq!(err.code, -32602);
}

#[test]
fn handoff_starts_a_new_session_and_leaves_this_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), json!({"autoCompact": false}));
    let id = server.open(json!({"systemPrompt": "sys"}));
    append(&mut server, &id, chat(4, 20, "h"));
    let before = server
        .request("conversation/history", json!({"sessionId": id}))
        .unwrap();
    let err = server
        .request(
            "conversation/compact",
            json!({"sessionId": id, "strategy": "handoff"}),
        )
        .unwrap_err();
    assert_eq!(err.code, -32602);
    assert!(err.message.contains("goal"));
    let result = server
        .request(
            "conversation/compact",
            json!({"sessionId": id, "strategy": "handoff", "goal": "write the release notes"}),
        )
        .unwrap();
    assert_eq!(result["compacted"], false);
    let new_id = result["handoffSessionId"].as_str().unwrap();
    let history = server
        .request("conversation/history", json!({"sessionId": new_id}))
        .unwrap();
    let messages = history["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0]["content"], "sys");
    assert!(messages[1]["content"]
        .as_str()
        .unwrap()
        .contains("write the release notes"));
    assert_eq!(
        server
            .request("conversation/history", json!({"sessionId": id}))
            .unwrap(),
        before
    );
    assert!(server
        .received_notifications("conversation/didCompact")
        .is_empty());
}

#[test]
fn a_second_compaction_does_not_cross_the_first_and_loading_honours_the_latest() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(
        dir.path(),
        json!({"autoCompact": false, "keepRecentTokens": 10}),
    );
    let id = server.open(json!({"sessionId": "twice"}));
    append(&mut server, &id, chat(3, 200, "one"));
    let first = server
        .request("conversation/compact", json!({"sessionId": id}))
        .unwrap();
    append(&mut server, &id, chat(3, 200, "two"));
    let second = server
        .request("conversation/compact", json!({"sessionId": id}))
        .unwrap();
    assert_eq!(second["compacted"], true);
    // The second summarized only what came after the first's cut.
    let summarized = second["messagesSummarized"].as_u64().unwrap();
    assert!(
        summarized <= 6,
        "crossed the first compaction: {summarized}"
    );
    assert!(
        second["summary"]
            .as_str()
            .unwrap()
            .contains("one request 0"),
        "the first summary was updated, not dropped"
    );
    assert_ne!(first["firstKeptMessageId"], second["firstKeptMessageId"]);
    let live = server
        .request("conversation/history", json!({"sessionId": id}))
        .unwrap();
    assert_eq!(server.shutdown_and_exit(), 0);
    let mut server = Server::start(dir.path(), json!({"autoCompact": false}));
    server.open(json!({"sessionId": "twice"}));
    let loaded = server
        .request("conversation/history", json!({"sessionId": "twice"}))
        .unwrap();
    assert_eq!(live["messages"], loaded["messages"]);
    assert_eq!(
        loaded["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["content"].as_str().unwrap_or("").contains("<summary>"))
            .count(),
        1
    );
}

#[test]
fn overflow_errors_compact_and_ask_for_a_retry_while_look_alikes_do_not() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(
        dir.path(),
        json!({"autoCompact": false, "keepRecentTokens": 200}),
    );
    let id = server.open(json!({}));
    append(&mut server, &id, chat(8, 60, "o"));
    for (status, message, kind) in [
        (json!(429), "", "rateLimit"),
        (
            json!(null),
            "Rate limit exceeded, please try again later",
            "rateLimit",
        ),
        (
            json!(400),
            "max_tokens: 100000 > 64000, which is the maximum allowed number of output tokens",
            "outputLimit",
        ),
        (json!(500), "internal server error", "other"),
    ] {
        let result = server
            .request(
                "conversation/reportError",
                json!({"sessionId": id, "status": status, "message": message}),
            )
            .unwrap();
        assert_eq!(result["overflow"], false, "{message}");
        assert_eq!(result["kind"], kind, "{message}");
        assert_eq!(result["retry"], false);
        assert!(result.get("compaction").is_none());
    }
    assert!(server
        .received_notifications("conversation/didCompact")
        .is_empty());

    let result = server
        .request(
            "conversation/reportError",
            json!({"sessionId": id, "status": 400, "message": "prompt is too long: 213462 tokens > 200000 maximum"}),
        )
        .unwrap();
    assert_eq!(result["overflow"], true);
    assert_eq!(result["kind"], "overflow");
    assert_eq!(result["retry"], true);
    assert_eq!(result["compaction"]["compacted"], true);
    let did = server.received_notifications("conversation/didCompact");
    assert_eq!(did.len(), 1);
    assert_eq!(did[0]["trigger"], "overflow");
}

/// 10,000 appends sent without waiting for their answers: each automatic
/// compaction is judged by what it removed, not by the messages appended
/// while it ran, so the breaker never trips and the session ends under
/// its limit.
#[test]
fn appends_made_while_a_compaction_runs_never_count_against_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start_with_progress(
        dir.path(),
        json!({"autoCompactTokenLimit": 20_000, "keepRecentTokens": 2_000}),
    );
    let id = server.open(json!({}));
    let sent: Vec<i64> = chat(5_000, 40, "flood")
        .into_iter()
        .map(|message| {
            server.send_request(
                "conversation/append",
                json!({"sessionId": id, "messages": [message]}),
            )
        })
        .collect();
    let mut compactions_started = 0;
    for request in sent {
        let answer = server.response(request).unwrap();
        compactions_started += usize::from(answer["compacting"] == true);
    }
    let check = loop {
        let check = check_session(&mut server, &id);
        if check["compacting"] != true {
            break check;
        }
        server.wait_progress_end();
    };
    assert!(compactions_started > 0, "the flood compacted");
    let stopped = server.received_notifications("conversation/autoCompactStopped");
    assert!(stopped.is_empty(), "{stopped:?}");
    assert_eq!(check["autoCompact"], true, "{check}");
    assert_eq!(check["shouldCompact"], false, "{check}");
    let tokens = check["meter"]["contextTokens"].as_u64().unwrap();
    assert!(tokens < 20_000, "{check}");
}
