use std::process::Command;

fn compactd() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_compactd"));
    c.arg("--no-user-config");
    c
}

#[test]
fn version_prints_the_crate_version() {
    let out = compactd().arg("--version").output().unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("compactd {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn compact_the_shipped_example() {
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/conversation.json");
    let out = compactd()
        .args(["compact", example, "--keep-recent-tokens", "300"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout.lines().last().unwrap();
    let rest = line
        .strip_prefix("Conversation compacted: ")
        .unwrap_or_else(|| panic!("{stdout}"));
    let (messages, tokens) = rest.split_once(" messages → summary; tokens ").unwrap();
    assert!(messages.parse::<u32>().unwrap() > 0);
    let (a, rest) = tokens.split_once(" → ").unwrap();
    let (b, saved) = rest.split_once(" (saved ").unwrap();
    let (saved, percent) = saved.split_once(", ").unwrap();
    assert_eq!(
        saved.parse::<u64>().unwrap(),
        a.parse::<u64>().unwrap() - b.parse::<u64>().unwrap()
    );
    assert!(percent.ends_with("%)"), "{line}");
    assert!(
        b.parse::<u64>().unwrap() < a.parse::<u64>().unwrap(),
        "{line}"
    );
    assert!(stdout.starts_with("## Task\n"), "{stdout}");
    assert!(stdout.contains("<modified-files>"));

    let out = compactd()
        .args(["compact", example, "--keep-recent-tokens", "300", "--json"])
        .output()
        .unwrap();
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["compacted"], true);
}

#[test]
fn compact_reports_bad_files_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("empty.json", &b""[..]),
        ("binary.bin", &[0xff, 0xfe, 0x00, 0x01][..]),
        ("broken.json", &b"[{\"role\": \"us"[..]),
    ];
    for (name, bytes) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let out = compactd().arg("compact").arg(&path).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{name}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.trim().lines().count(), 1, "{name}: {stderr}");
        assert!(stderr.contains(name), "{stderr}");
    }
    let out = compactd().args(["compact"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "usage error");
}

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::support::transcripts_dir;

/// The seven shared sessions (pi, Claude Code, SWE-agent).
fn shared_sessions(dir: &Path) -> Vec<PathBuf> {
    let mut files = vec![
        dir.join("pi-session-jsonl/large-session.jsonl"),
        dir.join("pi-session-jsonl/before-compaction.jsonl"),
        dir.join("swe-agent-traj/marshmallow-code__marshmallow-1867.traj"),
    ];
    for project in std::fs::read_dir(dir.join("claude-code-jsonl")).unwrap() {
        for file in std::fs::read_dir(project.unwrap().path()).unwrap() {
            files.push(file.unwrap().path());
        }
    }
    files
}

/// `(before, after, saved, percent)` from the compacted line.
fn compacted_line(stdout: &str) -> (u64, u64, u64, f64) {
    let line = stdout
        .lines()
        .find(|l| l.starts_with("Conversation compacted: "))
        .unwrap_or_else(|| panic!("no compacted line in:\n{stdout}"));
    let tokens = line.split_once("; tokens ").unwrap().1;
    let (before, rest) = tokens.split_once(" → ").unwrap();
    let (after, rest) = rest.split_once(" (saved ").unwrap();
    let (saved, percent) = rest.split_once(", ").unwrap();
    (
        before.parse().unwrap(),
        after.parse().unwrap(),
        saved.parse().unwrap(),
        percent.trim_end_matches("%)").parse().unwrap(),
    )
}

#[test]
fn compact_each_shared_session_offline() {
    let Some(dir) = transcripts_dir() else { return };
    for file in shared_sessions(&dir) {
        // The SWE-agent run is small: keep less so there is something to cut.
        let keep = if file.extension().is_some_and(|e| e == "traj") {
            "2000"
        } else {
            "20000"
        };
        let out = compactd()
            .args(["compact", "--keep-recent-tokens", keep])
            .arg(&file)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{}: {stderr}", file.display());
        let (before, after, saved, percent) = compacted_line(&stdout);
        assert!(after < before, "{}: {before} → {after}", file.display());
        assert_eq!(saved, before - after);
        assert!((percent - saved as f64 * 100.0 / before as f64).abs() < 0.06);
        assert!(!stderr.contains("panicked"), "{stderr}");
        // Piped: no progress bar, at most the one note on skipped lines.
        assert!(
            !stderr.contains('\r') && stderr.lines().count() <= 1,
            "{stderr}"
        );
    }
}

#[test]
fn compact_writes_the_compacted_session_as_a_log() {
    let Some(dir) = transcripts_dir() else { return };
    let source = dir.join("pi-session-jsonl/before-compaction.jsonl");
    let work = tempfile::tempdir().unwrap();
    let out_file = work.path().join("compacted.jsonl");
    let out = compactd()
        .args([
            "compact",
            "--json",
            "--quiet",
            "--strategy",
            "checkpoint",
            "--summarizer",
            "offline",
        ])
        .arg(&source)
        .arg("--out")
        .arg(&out_file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "--quiet: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["format"], "pi");
    assert_eq!(result["compacted"], true);
    assert_eq!(result["skipped"], 5);
    assert_eq!(result["summarizer"], "offline");

    // The log holds every original message and all three compactions, and
    // reads back as a compactd session.
    let text = std::fs::read_to_string(&out_file).unwrap();
    let entries: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(entries[0]["type"], "header");
    assert_eq!(entries[0]["sessionId"], "compacted");
    let count = |kind: &str| entries.iter().filter(|e| e["type"] == kind).count();
    assert_eq!(count("message"), 990);
    assert_eq!(count("compaction"), 3);
    let stats = compactd()
        .args(["stats", "--json", "--quiet"])
        .arg(&out_file)
        .output()
        .unwrap();
    let stats: Vec<Value> = serde_json::from_slice(&stats.stdout).unwrap();
    assert_eq!(stats[0]["format"], "compactd");
    assert_eq!(stats[0]["sourceCompactions"], 3);

    // History is never rewritten in place.
    let refused = compactd()
        .arg("compact")
        .arg(&out_file)
        .arg("--out")
        .arg(&out_file)
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(&out_file).unwrap(), text);
}

#[test]
fn bad_flag_values_are_usage_errors() {
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/conversation.json");
    let cases: [(&[&str], &str); 4] = [
        (
            &["--summarizer", "nope"],
            "--summarizer nope: unknown variant `nope`",
        ),
        (&["--strategy", "nope"], "--strategy nope:"),
        (
            &["--format", "aider"],
            "invalid value 'aider' for '--format",
        ),
        (&["--keep-recent-tokens", "lots"], "invalid value 'lots'"),
    ];
    for (flags, needle) in cases {
        let out = compactd()
            .arg("compact")
            .arg(example)
            .args(flags)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {stderr}");
        assert!(stderr.contains(needle), "{flags:?}: {stderr}");
        assert!(out.stdout.is_empty());
    }
    let out = compactd().args(["replay", example]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "--window is required");
}

#[test]
fn help_lists_every_command_and_flag() {
    let out = compactd().arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    for word in [
        "compact",
        "stats",
        "replay",
        "Exit codes: 0 success",
        "1 failure",
    ] {
        assert!(help.contains(word), "{word}: {help}");
    }
    // `-h` and `--help` describe the program alike.
    let short = compactd().arg("-h").output().unwrap();
    let short = String::from_utf8_lossy(&short.stdout);
    let first = |text: &str| {
        text.lines()
            .next()
            .unwrap_or("")
            .trim_end_matches('.')
            .to_string()
    };
    assert_eq!(first(&short), first(&help));
    let statusline = compactd().args(["statusline", "--help"]).output().unwrap();
    let statusline = String::from_utf8_lossy(&statusline.stdout);
    assert!(statusline.contains("auto-compact ~177k"), "{statusline}");
    let out = compactd().args(["compact", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--format",
        "claude-code",
        "--strategy",
        "--summarizer",
        "--model",
        "--instructions",
        "--keep-recent-tokens",
        "--out",
        "--json",
        "--quiet",
    ] {
        assert!(help.contains(flag), "{flag}: {help}");
    }
}

#[test]
fn stats_scores_the_meter_against_provider_usage() {
    let Some(dir) = transcripts_dir() else { return };
    let files: Vec<PathBuf> = shared_sessions(&dir)
        .into_iter()
        .filter(|f| f.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    let out = compactd()
        .args(["stats", "--json"])
        .args(&files)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reports: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    for report in &reports {
        let meter = &report["accuracy"]["meter"];
        let turns = meter["turns"].as_u64().unwrap();
        let assistants = report["byRole"]["assistant"].as_u64().unwrap();
        assert!(
            turns > 0 && turns < assistants,
            "{}: {turns}",
            report["file"]
        );
        // Anchored on the provider's own count, the meter stays close.
        assert!(
            meter["meanAbsPercent"].as_f64().unwrap() < 2.0,
            "{}",
            report["file"]
        );
        assert!(report["accuracy"]["estimate"]["turns"].as_u64().unwrap() > 0);
        assert!(report["peakReportedContext"].as_u64().unwrap() > 50_000);
        // Without the overhead the count is far off; calibrated from the
        // turns before, it is close to the provider's.
        let accuracy = &report["accuracy"];
        let (alone, calibrated) = (
            accuracy["estimate"]["meanAbsPercent"].as_f64().unwrap(),
            accuracy["calibrated"]["meanAbsPercent"].as_f64().unwrap(),
        );
        assert!(
            alone > 10.0 && calibrated < 2.5,
            "{}: {accuracy}",
            report["file"]
        );
        if report["format"] == "claude-code" {
            // Claude Code's system prompt and tools: 15k–24k tokens.
            let overhead = accuracy["overheadTokens"].as_u64().unwrap();
            assert!((12_000..30_000).contains(&overhead), "{overhead}");
        }
        // Right after each compaction pi recorded, the meter has only the
        // calibrated count, and it is within 5% of the next request.
        for after in accuracy["afterCompactions"].as_array().unwrap() {
            let provider = after["provider"].as_f64().unwrap();
            let off = |field: &str| (after[field].as_f64().unwrap() - provider).abs() / provider;
            assert!(off("meter") < 0.05 && off("estimate") > 0.2, "{after}");
        }
    }
    let compacted = reports
        .iter()
        .find(|r| {
            r["file"]
                .as_str()
                .unwrap()
                .ends_with("before-compaction.jsonl")
        })
        .unwrap();
    assert_eq!(
        compacted["accuracy"]["afterCompactions"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let text = compactd().arg("stats").args(&files).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert_eq!(
        text.matches("meter (latest usage + count of newer messages, else the calibrated count)")
            .count(),
        files.len()
    );
    assert!(text.contains("mean error"), "{text}");
    // The worst turn is named with what came before it.
    let worst = reports[0]["accuracy"]["meter"]["worstAfter"]
        .as_str()
        .unwrap();
    assert!(
        worst.contains("tool result") || worst.contains("user message"),
        "{worst}"
    );
    assert!(text.contains(&format!(", after {worst})")), "{text}");
    assert_eq!(
        text.matches("count calibrated (overhead ").count(),
        files.len(),
        "{text}"
    );
    // `--turns` lists every reported turn, the worst among them as scored.
    assert!(reports.iter().all(|r| r["accuracy"].get("turns").is_none()));
    let out = compactd()
        .args(["stats", "--turns", "--json"])
        .arg(&files[0])
        .output()
        .unwrap();
    let report: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let accuracy = &report[0]["accuracy"];
    let turns = accuracy["turns"].as_array().unwrap();
    assert_eq!(
        turns.len() as u64,
        accuracy["estimate"]["turns"].as_u64().unwrap()
    );
    let worst = accuracy["meter"]["worstMessage"].as_u64().unwrap();
    let turn = turns.iter().find(|t| t["message"] == worst).unwrap();
    let (meter, provider) = (
        turn["meter"].as_f64().unwrap(),
        turn["provider"].as_f64().unwrap(),
    );
    let off = ((meter - provider) * 100.0 / provider).abs();
    assert!(
        (off - accuracy["meter"]["maxAbsPercent"].as_f64().unwrap()).abs() < 1e-9,
        "{turn}"
    );
    assert_eq!(turn["source"], "usage");
    assert_eq!(turn["after"], accuracy["meter"]["worstAfter"]);
}

/// `stats` scores the meter with what Claude Code attached after a
/// message (an `attachment` line: a file changed on disk), as a follow
/// counts it, and names it before the turn.
/// `compactd stats --turns --json` of one transcript: its turns.
fn turns_of(file: &std::path::Path) -> Vec<Value> {
    let out = compactd()
        .args(["stats", "--turns", "--json"])
        .arg(file)
        .output()
        .unwrap();
    let report: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    report[0]["accuracy"]["turns"].as_array().unwrap().clone()
}

#[test]
fn stats_counts_what_claude_code_attached_after_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let response = |id: &str, n: u64, content: Value| {
        json!({"type": "assistant", "uuid": format!("a{n}"), "sessionId": "s",
            "message": {"id": id, "role": "assistant", "model": "claude-sonnet-4-5", "content": content,
                "usage": {"input_tokens": 20_000 + n * 100, "output_tokens": 40}}})
        .to_string()
    };
    let head = [
        json!({"type": "user", "uuid": "u1", "sessionId": "s", "message": {"role": "user", "content": "format it"}}).to_string(),
        response("msg_1", 1, json!([{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "make fmt"}}])),
        json!({"type": "user", "uuid": "r1", "sessionId": "s", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}}).to_string(),
    ];
    let snippet: String = (0..400)
        .map(|n| format!("{n:>5}\tlet value_{n} = compute(input, {n})?;\n"))
        .collect();
    let attachment = json!({"type": "attachment", "sessionId": "s",
        "attachment": {"type": "edited_text_file", "filename": "/w/src/lib.rs", "snippet": snippet}})
    .to_string();
    let last = response("msg_2", 2, json!([{"type": "text", "text": "formatted"}]));
    let turn = |lines: &[&String]| {
        let file = dir.path().join("t.jsonl");
        let text: Vec<&str> = lines.iter().map(|l| l.as_str()).collect();
        std::fs::write(&file, text.join("\n")).unwrap();
        turns_of(&file)[1].clone()
    };
    let without = turn(&[&head[0], &head[1], &head[2], &last]);
    let with = turn(&[&head[0], &head[1], &head[2], &attachment, &last]);
    let (before, after) = (
        without["meter"].as_u64().unwrap(),
        with["meter"].as_u64().unwrap(),
    );
    assert!(after > before + 5_000, "{without} -> {with}");
    let named = with["after"].as_str().unwrap();
    assert!(named.contains("tokens the agent attached"), "{named}");
}

/// Claude Code's SDK mode (VS Code's extension, which writes a prompt as
/// text blocks) attaches a note of a file it wrote then edited to the
/// request after the next prompt; the terminal (a prompt as a string)
/// attaches none.
#[test]
fn stats_counts_the_note_of_an_edited_file_under_claude_codes_sdk() {
    let dir = tempfile::tempdir().unwrap();
    let plan: String = (0..120)
        .map(|n| format!("- step {n}: do the thing number {n}\n"))
        .collect();
    let line = |value: Value| value.to_string();
    let response = |n: u64, content: Value| {
        line(
            json!({"type": "assistant", "uuid": format!("a{n}"), "sessionId": "s", "version": "2.1.11",
            "timestamp": format!("2026-01-21T16:0{n}:00Z"),
            "message": {"id": format!("msg_{n}"), "role": "assistant", "model": "claude-opus-4-5", "content": content,
                "usage": {"input_tokens": 20_000 + n * 1_000, "output_tokens": 40}}}),
        )
    };
    let result = |n: u64, id: &str, tool_result: Value| {
        line(
            json!({"type": "user", "uuid": format!("r{n}"), "sessionId": "s", "version": "2.1.11",
            "timestamp": format!("2026-01-21T16:0{n}:30Z"), "toolUseResult": tool_result,
            "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": "done"}]}}),
        )
    };
    let prompt = |n: u64, text: &str, blocks: bool| {
        let content = match blocks {
            true => json!([{"type": "text", "text": text}]),
            false => json!(text),
        };
        line(
            json!({"type": "user", "uuid": format!("p{n}"), "sessionId": "s", "version": "2.1.11",
            "timestamp": format!("2026-01-21T16:0{n}:45Z"), "message": {"role": "user", "content": content}}),
        )
    };
    let transcript = |blocks: bool| {
        [
            prompt(0, "write the plan", blocks),
            response(1, json!([{"type": "tool_use", "id": "w", "name": "Write",
                "input": {"file_path": "/w/plan.md", "content": plan}}])),
            result(1, "w", json!({"type": "create", "filePath": "/w/plan.md", "content": plan})),
            response(2, json!([{"type": "tool_use", "id": "e", "name": "Edit",
                "input": {"file_path": "/w/plan.md", "old_string": "step 3:", "new_string": "step three:"}}])),
            result(2, "e", json!({"filePath": "/w/plan.md", "originalFile": plan,
                "oldString": "step 3:", "newString": "step three:", "replaceAll": false})),
            response(3, json!([{"type": "text", "text": "planned"}])),
            prompt(4, "go on", blocks),
            response(5, json!([{"type": "text", "text": "going"}])),
        ]
        .join("\n")
    };
    let last_turn = |blocks: bool| {
        let file = dir.path().join("t.jsonl");
        std::fs::write(&file, transcript(blocks)).unwrap();
        turns_of(&file).last().unwrap().clone()
    };
    let (terminal, sdk) = (last_turn(false), last_turn(true));
    let named = sdk["after"].as_str().unwrap();
    assert!(named.contains("tokens the agent attached"), "{named}");
    let note = sdk["meter"].as_u64().unwrap() - terminal["meter"].as_u64().unwrap();
    assert!((100..1_000).contains(&note), "{terminal} -> {sdk}");
    assert!(
        !terminal["after"].as_str().unwrap().contains("attached"),
        "{terminal}"
    );
}

#[test]
fn stats_reports_where_auto_compaction_fires() {
    let Some(dir) = transcripts_dir() else { return };
    let file = dir.join("pi-session-jsonl/large-session.jsonl");
    let out = compactd()
        .args(["stats", "--json", "--window", "128000"])
        .arg(&file)
        .output()
        .unwrap();
    let report: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let auto = &report[0]["autoCompaction"];
    assert_eq!(auto["autoCompactAt"], 111_617, "128000 − 16384 reserve + 1");
    let at = auto["firesAfterMessage"].as_u64().unwrap();
    assert!(auto["contextTokens"].as_u64().unwrap() >= 111_617);
    // It is the first point: a replay with the same window compacts there.
    let out = compactd()
        .args(["replay", "--json", "--window", "128000"])
        .arg(&file)
        .output()
        .unwrap();
    let replay: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(replay["compactions"][0]["afterMessage"].as_u64(), Some(at));
}

#[test]
fn replay_reports_each_compaction_that_fires() {
    let Some(dir) = transcripts_dir() else { return };
    let file = dir.join("pi-session-jsonl/large-session.jsonl");
    let out = compactd()
        .args(["replay", "--window", "128000"])
        .arg(&file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("with a 128,000-token window; auto-compaction at 111,617 tokens"),
        "{stdout}"
    );
    let fired: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("compaction "))
        .collect();
    assert!(!fired.is_empty(), "{stdout}");
    for line in &fired {
        assert!(
            line.contains(" after message ") && line.contains("/914 (line "),
            "{line}"
        );
        assert!(line.contains("trigger ") && line.contains(" ms"), "{line}");
    }

    let out = compactd()
        .args(["replay", "--json", "--window", "128000"])
        .arg(&file)
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let compactions = report["compactions"].as_array().unwrap();
    assert_eq!(compactions.len(), fired.len());
    let mut previous = 0;
    for c in compactions {
        let before = c["tokensBefore"].as_u64().unwrap();
        assert!(before >= 111_617, "{c}");
        assert!(c["tokensAfter"].as_u64().unwrap() < before, "{c}");
        let position = c["afterMessage"].as_u64().unwrap();
        assert!(position > previous && position <= 914, "{c}");
        previous = position;
        assert!(!c["triggers"].as_array().unwrap().is_empty());
    }
    assert!(report["finalTokens"].as_u64().unwrap() < 128_000);
}

#[test]
fn malformed_input_is_a_one_line_error_or_a_skip_count() {
    let Some(dir) = transcripts_dir() else { return };
    let work = tempfile::tempdir().unwrap();
    let raw = std::fs::read(dir.join("pi-session-jsonl/large-session.jsonl")).unwrap();
    // A truncated last line (a crash mid-write): skipped and counted.
    let torn = work.path().join("torn.jsonl");
    std::fs::write(&torn, &raw[..raw.len() - 40]).unwrap();
    let out = compactd()
        .args(["stats", "--json"])
        .arg(&torn)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let report: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report[0]["messages"], 913);
    assert!(
        report[0]["skippedReasons"][1]
            .as_str()
            .unwrap()
            .starts_with("unreadable lines: 1"),
        "{}",
        report[0]["skippedReasons"]
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("torn last line"), "{stderr}");

    let cases: Vec<(&str, Vec<u8>, &[&str], &str)> = vec![
        ("empty.jsonl", Vec::new(), &[], "the file is empty"),
        (
            "binary.bin",
            vec![0x7f, b'E', b'L', b'F', 0, 0, 1, 0xff],
            &[],
            "binary",
        ),
        (
            "pi.jsonl",
            raw.clone(),
            &["--format", "codex"],
            "not a Codex rollout JSONL file",
        ),
        (
            "pi-as-openai.jsonl",
            raw.clone(),
            &["--format", "openai"],
            "not an OpenAI chat message array",
        ),
    ];
    for (name, bytes, flags, needle) in cases {
        let path = work.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        for command in ["compact", "stats", "replay"] {
            let mut c = compactd();
            c.arg(command).arg(&path).args(flags);
            if command == "replay" {
                c.args(["--window", "128000"]);
            }
            let out = c.output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{command} {name}: {stderr}");
            assert!(
                stderr.contains(needle) && stderr.contains(name),
                "{command} {name}: {stderr}"
            );
            let own: Vec<&str> = stderr.lines().filter(|l| l.contains(needle)).collect();
            assert_eq!(own.len(), 1, "{stderr}");
            assert!(!stderr.contains("panicked"), "{stderr}");
        }
    }
    // Formats compactd does not read name what was tried.
    for other in [
        "openhands-trajectory/basic_gui_mode.json",
        "aider-chat-history-md/AlexShchuka-mozgoslav/.aider.chat.history.md",
    ] {
        let out = compactd()
            .arg("compact")
            .arg(dir.join(other))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains("Claude Code JSONL, Codex rollout JSONL, pi session JSONL"),
            "{stderr}"
        );
    }
}

#[test]
fn progress_shows_on_a_terminal_only() {
    let Some(dir) = transcripts_dir() else { return };
    if Command::new("script").arg("--version").output().is_err() {
        crate::support::skip(
            "`script` (util-linux) is absent; it provides the terminal for this test",
        );
        return;
    }
    let file = dir.join("pi-session-jsonl/large-session.jsonl");
    let run = |quiet: bool| {
        let command = format!(
            "{} --no-user-config replay {} --window 128000{}",
            env!("CARGO_BIN_EXE_compactd"),
            file.display(),
            if quiet { " --quiet" } else { "" }
        );
        let out = Command::new("script")
            .args(["-qec", &command, "/dev/null"])
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let shown = run(false);
    assert!(
        shown.contains("replaying [") && shown.contains("/914"),
        "{shown}"
    );
    assert!(shown.contains("1 compaction"), "{shown}");
    let quiet = run(true);
    assert!(!quiet.contains("replaying ["), "{quiet}");
    assert!(quiet.contains("1 compaction"), "{quiet}");
}

#[test]
fn compact_runs_every_strategy_from_the_command_line() {
    let Some(dir) = transcripts_dir() else { return };
    let file = dir.join("pi-session-jsonl/large-session.jsonl");
    let work = tempfile::tempdir().unwrap();
    for (strategy, change) in [
        ("prune", "Conversation pruned: "),
        ("incremental", "Conversation compacted: "),
        ("handoff", "Conversation handed off: "),
    ] {
        let out_file = work.path().join(format!("{strategy}.jsonl"));
        let out = compactd()
            .args(["compact", "--quiet", "--strategy", strategy])
            .args(["--instructions", "finish the refactor"])
            .arg(&file)
            .arg("--out")
            .arg(&out_file)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{strategy}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let line = stdout
            .lines()
            .find(|l| l.starts_with(change))
            .unwrap_or_else(|| panic!("{strategy}: {stdout}"));
        assert!(line.contains(" (saved "), "{line}");
        let log = std::fs::read_to_string(&out_file).unwrap();
        let messages = log
            .lines()
            .filter(|l| l.contains(r#""type":"message""#))
            .count();
        // A handoff starts a new session from its one first message; the
        // others keep every message and add a compaction.
        let expected = if strategy == "handoff" { 1 } else { 914 };
        assert_eq!(messages, expected, "{strategy}");
    }
}

#[test]
fn commands_read_regular_files_under_the_cap_only() {
    let work = tempfile::tempdir().unwrap();
    let fifo = work.path().join("pipe.json");
    crate::support::mkfifo(&fifo);
    // A FIFO first: reading one would hang the command for good.
    let cases = [
        (fifo.as_path(), "not a regular file (a FIFO or pipe)"),
        (
            Path::new("/dev/zero"),
            "not a regular file (a character device)",
        ),
        (work.path(), "not a regular file (a directory)"),
    ];
    for (path, needle) in cases {
        for command in ["compact", "stats", "replay"] {
            let mut c = compactd();
            c.arg(command).arg(path).arg("--quiet");
            if command != "compact" {
                c.args(["--window", "128000"]);
            }
            let out = crate::support::output_within_patience(&mut c);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{command} {path:?}: {stderr}");
            let own: Vec<&str> = stderr.lines().filter(|l| l.contains(needle)).collect();
            assert_eq!(own.len(), 1, "{command} {path:?}: {stderr}");
            assert!(
                own[0].contains(&path.display().to_string()),
                "{command} {path:?}: {stderr}"
            );
        }
    }
    // The cap comes from the configuration (here the workspace's file).
    std::fs::write(work.path().join("compactd.toml"), "maxImportBytes = 10\n").unwrap();
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/conversation.json");
    let out = crate::support::output_within_patience(
        compactd().current_dir(work.path()).args(["stats", example]),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("more than maxImportBytes (10 bytes)"),
        "{stderr}"
    );
}

/// A reader that stops reading (`| head -1`) ends a transcript command
/// quietly with exit 0: no panic, no error line. The reader here closes
/// its end before the command writes anything, so every write fails.
#[test]
fn a_closed_pipe_ends_a_command_quietly() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/conversation.json");
    let example = example.to_str().unwrap();
    let runs: [&[&str]; 5] = [
        &["compact", example, "--keep-recent-tokens", "300"],
        &["compact", example, "--keep-recent-tokens", "300", "--json"],
        &["stats", example],
        &["stats", example, "--json"],
        &["replay", example, "--window", "2000"],
    ];
    for args in runs {
        let mut child = compactd()
            .args(args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(!stderr.contains("Broken pipe"), "{args:?}: {stderr}");
    }
}

/// On a terminal, `stats` over several files draws one bar and prints its
/// notes above it; once the report is out, no copy of the bar is left on
/// the screen. The screen is tmux's, as a person would see it.
#[test]
fn stats_leaves_no_frozen_bar_on_the_terminal() {
    let Some(dir) = transcripts_dir() else { return };
    if Command::new("tmux").arg("-V").output().is_err() {
        crate::support::skip("tmux is absent; it renders the terminal for this test");
        return;
    }
    let mut files: Vec<String> = std::fs::read_dir(dir.join("claude-code-jsonl"))
        .unwrap()
        .flatten()
        .flat_map(|d| std::fs::read_dir(d.path()).unwrap().flatten())
        .map(|f| f.path().display().to_string())
        .filter(|f| f.ends_with(".jsonl"))
        .collect();
    files.sort();
    let socket = format!("compactd-test-{}", std::process::id());
    let tmux = |args: &[&str]| {
        Command::new("tmux")
            .args(["-L", &socket])
            .args(args)
            .output()
            .unwrap()
    };
    let command = format!(
        "{} --no-user-config stats {}; tmux -L {socket} wait-for -S stats-done; sleep 600",
        env!("CARGO_BIN_EXE_compactd"),
        files.join(" ")
    );
    let started = tmux(&[
        "new-session",
        "-d",
        "-s",
        "t",
        "-x",
        "220",
        "-y",
        "300",
        &command,
    ]);
    assert!(started.status.success(), "{started:?}");
    // Blocks until the shell in the pane signals that stats ended.
    tmux(&["wait-for", "stats-done"]);
    let screen =
        String::from_utf8_lossy(&tmux(&["capture-pane", "-p", "-S", "-", "-t", "t"]).stdout)
            .into_owned();
    tmux(&["kill-server"]);
    assert!(screen.contains("skipped"), "notes are shown: {screen}");
    assert!(screen.contains("auto-compact  window"), "{screen}");
    assert!(
        !screen.contains("reading transcripts ["),
        "a frozen bar: {screen}"
    );
}

/// When the configured LLM summarizer fails and the offline one writes the
/// summary, text output says so on stdout, not only on stderr and in
/// `--json`; and "nothing to compact" is said once. The summarizer is the
/// user's own choice (a workspace's `compactd.toml` may not choose one
/// that sends anything: `config::resolve`).
#[test]
fn compact_says_on_stdout_which_summarizer_wrote_the_summary() {
    let work = tempfile::tempdir().unwrap();
    let user = work.path().join("config/compactd");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(
        user.join("compactd.toml"),
        "[summarizer]\nprovider = \"openai\"\nbaseUrl = \"http://127.0.0.1:9/v1\"\nmodel = \"gone\"\napiKeyEnv = \"COMPACTD_TEST_GONE_KEY\"\n",
    )
    .unwrap();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/conversation.json");
    let out = Command::new(env!("CARGO_BIN_EXE_compactd"))
        .current_dir(work.path())
        .env("XDG_CONFIG_HOME", work.path().join("config"))
        .env("COMPACTD_TEST_GONE_KEY", "sk-test-0123456789abcdef")
        .arg("compact")
        .arg(&example)
        .args(["--keep-recent-tokens", "300", "--quiet"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let note = stdout
        .lines()
        .find(|l| l.starts_with("Written by the offline summarizer: openai:gone failed"))
        .unwrap_or_else(|| panic!("no note on stdout: {stdout}"));
    assert!(note.contains("Connection refused"), "{note}");
    let nothing = compactd()
        .arg("compact")
        .arg(&example)
        .args(["--keep-recent-tokens", "100000"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&nothing.stdout);
    assert!(
        stdout.starts_with("Nothing to compact: the history"),
        "{stdout}"
    );
    assert!(
        !stdout
            .to_lowercase()
            .contains("compact: nothing to compact"),
        "{stdout}"
    );
}

/// Every line type Claude Code 2.1.330 writes is known: `stats` names the
/// bookkeeping it skipped and reports no unknown line type.
#[test]
fn stats_knows_every_line_type_of_claude_code_2_1_330() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/claude-code/5217d838-5181-433d-a8b8-c96b9ad7bfb3.jsonl");
    let out = compactd().arg("stats").arg(&fixture).output().unwrap();
    assert!(out.status.success());
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(all.contains("permission-mode lines"), "{all}");
    assert!(all.contains("file-history-delta lines"), "{all}");
    assert!(!all.contains("unknown line type"), "{all}");
}

/// A failure whose retry worked in the messages kept verbatim is not
/// listed as still open above them (the built-in summary reads what it
/// keeps, and summarizes none of it).
#[test]
fn compact_does_not_call_open_what_the_kept_messages_settled() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.jsonl");
    // A Claude Code transcript: failed results carry `is_error`.
    let mut n = 0;
    let mut line = |kind: &str, content: serde_json::Value| {
        n += 1;
        json!({"type": kind, "uuid": format!("m{n}"), "parentUuid": if n == 1 { json!(null) } else { json!(format!("m{}", n - 1)) }, "sessionId": "s", "timestamp": "2026-11-27T00:00:00Z", "message": {"role": kind, "content": content}}).to_string()
    };
    let bash = |line: &mut dyn FnMut(&str, serde_json::Value) -> String,
                id: &str,
                command: &str,
                output: &str,
                failed: bool| {
        [
            line(
                "assistant",
                json!([{"type": "tool_use", "id": id, "name": "Bash", "input": {"command": command}}]),
            ),
            line(
                "user",
                json!([{"type": "tool_result", "tool_use_id": id, "content": output, "is_error": failed}]),
            ),
        ]
    };
    let listing = "scripts/rename.sh: 225 lines\n".repeat(200);
    let mut lines = vec![line(
        "user",
        json!("Write scripts/rename.sh and try it in dry-run mode."),
    )];
    lines.extend(bash(
        &mut line,
        "c0",
        "cat scripts/rename.sh",
        &listing,
        false,
    ));
    lines.extend(bash(&mut line, "c1", "./scripts/rename.sh new --dry-run", "Exit code 127\n(eval):1: ./scripts/rename.sh: bad interpreter: /bin/bash^M: no such file or directory", true));
    lines.extend(bash(
        &mut line,
        "c2",
        "sed -i 's/\\r$//' scripts/rename.sh",
        "",
        false,
    ));
    let settled = lines.len();
    lines.extend(bash(
        &mut line,
        "c3",
        "./scripts/rename.sh new --dry-run 2>&1 | head -60",
        "would rename 12 files",
        false,
    ));
    lines.push(line(
        "assistant",
        json!([{"type": "text", "text": "The dry run works now."}]),
    ));
    let summary = |lines: &[String], keep: &str| {
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let out = compactd()
            .args([
                "compact",
                "--summarizer",
                "offline",
                "--keep-recent-tokens",
                "1",
            ])
            .args(["--keep-recent-messages", keep])
            .arg(&path)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            stdout.contains("Conversation compacted: 7 messages"),
            "{stdout}"
        );
        stdout
    };
    // Summarized up to the fix; the retry that worked is kept verbatim.
    let kept = summary(&lines, "3");
    assert!(!kept.contains("Errors still open"), "{kept}");
    assert!(
        kept.contains("failed: (eval):1: ./scripts/rename.sh: bad interpreter"),
        "the failure is still told: {kept}"
    );
    // Without the retry after it, the same summary calls it open.
    let mut unsettled = lines[..settled].to_vec();
    unsettled.push(line(
        "assistant",
        json!([{"type": "text", "text": "Fixed the line endings."}]),
    ));
    unsettled.push(line("user", json!("Thanks. What does it print?")));
    unsettled.push(line(
        "assistant",
        json!([{"type": "text", "text": "Let me check."}]),
    ));
    let open = summary(&unsettled, "3");
    assert!(
        open.contains("## Errors still open\n- `./scripts/rename.sh new --dry-run`"),
        "{open}"
    );
}

/// Configuration and settings files a cloned workspace (or a home) holds
/// are read only when they are regular files of a sane size: a
/// `compactd.toml`, `.claude.json` or `settings.json` that is a FIFO would
/// hang the hook, the status line or the command, and a symlink to
/// `/dev/zero` would be read until memory ran out. Each process runs under
/// a 2 GiB address-space cap, so an endless read fails it instead of the
/// machine, and within the tests' patience, so a hang fails it too.
#[cfg(unix)]
#[test]
fn workspace_and_agent_settings_that_are_fifos_or_devices_are_not_read() {
    use std::os::unix::fs::symlink;
    const CAP: u64 = 2 << 30;
    let work = tempfile::tempdir().unwrap();
    let (w, home) = (work.path().join("repo"), work.path().join("home"));
    std::fs::create_dir_all(w.join(".claude")).unwrap();
    std::fs::create_dir_all(home.join(".claude")).unwrap();
    symlink("/dev/zero", w.join(".claude/settings.json")).unwrap();
    symlink("/dev/zero", home.join(".claude/settings.json")).unwrap();
    crate::support::mkfifo(&home.join(".claude.json"));
    let transcript = w.join("t.jsonl");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/claude-code/5217d838-5181-433d-a8b8-c96b9ad7bfb3.jsonl"),
        &transcript,
    )
    .unwrap();
    let run = |args: &[&str], stdin: &str| {
        let mut command = compactd();
        command
            .args(args)
            .current_dir(&w)
            .env("HOME", &home)
            .env("XDG_DATA_HOME", work.path().join("data"))
            .env_remove("CLAUDE_CONFIG_DIR")
            .stderr(std::process::Stdio::piped());
        crate::support::cap_memory(&mut command, CAP);
        crate::support::output_with_stdin(&mut command, stdin)
    };
    let input = serde_json::json!({"session_id": "s", "transcript_path": transcript, "cwd": w,
        "hook_event_name": "PreCompact", "trigger": "auto"})
    .to_string();
    for config in ["fifo", "zero", "none"] {
        let toml = w.join("compactd.toml");
        let _ = std::fs::remove_file(&toml);
        match config {
            "fifo" => crate::support::mkfifo(&toml),
            "zero" => symlink("/dev/zero", &toml).unwrap(),
            _ => {}
        }
        let hook = run(&["hook", "claude-code"], &input);
        assert!(hook.status.success(), "{config}: {hook:?}");
        let line = run(&["statusline"], &input);
        assert!(line.status.success(), "{config}: {line:?}");
        assert!(
            String::from_utf8_lossy(&line.stdout).starts_with("⛁ "),
            "{config}: {line:?}"
        );
        let stats = run(&["stats", transcript.to_str().unwrap(), "--quiet"], "");
        let stderr = String::from_utf8_lossy(&stats.stderr);
        let kind = match config {
            "fifo" => "not a regular file (a FIFO or pipe)",
            "zero" => "not a regular file (a character device)",
            _ => {
                assert!(stats.status.success(), "{stderr}");
                continue;
            }
        };
        assert_eq!(stats.status.code(), Some(1), "{config}: {stderr}");
        assert!(
            stderr.contains("compactd.toml") && stderr.contains(kind),
            "{config}: {stderr}"
        );
    }
}

/// A transcript line too long to be anyone's message (over 64 MiB) is
/// passed over, never held, and so is a last line still being written:
/// the hook answers from the rest, under a 384 MiB address-space cap
/// (the 100 MB line made it abort there, needing 400 MB; a 300 MB line
/// aborted it under 3 GiB).
#[cfg(unix)]
#[test]
fn the_hook_reads_past_a_line_too_long_and_a_last_line_still_being_written() {
    use std::io::Write;
    const CAP: u64 = 384 << 20;
    let work = tempfile::tempdir().unwrap();
    let w = work.path().join("repo");
    std::fs::create_dir_all(&w).unwrap();
    let transcript = w.join("t.jsonl");
    let fixture = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/claude-code/5217d838-5181-433d-a8b8-c96b9ad7bfb3.jsonl"),
    )
    .unwrap();
    let last: Value = serde_json::from_str(fixture.lines().last().unwrap()).unwrap();
    let mut file = std::io::BufWriter::new(std::fs::File::create(&transcript).unwrap());
    file.write_all(fixture.as_bytes()).unwrap();
    let filler = vec![b'x'; 1 << 20];
    file.write_all(b"{\"type\":\"progress\",\"data\":\"")
        .unwrap();
    for _ in 0..100 {
        file.write_all(&filler).unwrap();
    }
    file.write_all(b"\"}\n").unwrap();
    let request = serde_json::json!({"parentUuid": last["uuid"], "isSidechain": false,
        "type": "user", "uuid": "after-the-long-line", "sessionId": last["sessionId"],
        "cwd": last["cwd"], "timestamp": "2026-11-22T20:10:00.000Z",
        "message": {"role": "user", "content": "Rename the flag to --frobnicate-widgets everywhere."}});
    writeln!(file, "{request}").unwrap();
    file.write_all(b"{\"type\":\"assistant\",\"message\":{\"content\":\"")
        .unwrap();
    for _ in 0..80 {
        file.write_all(&filler).unwrap();
    }
    file.flush().unwrap();
    drop(file);
    let input = serde_json::json!({"session_id": last["sessionId"], "transcript_path": transcript,
        "cwd": w, "hook_event_name": "PreCompact", "trigger": "auto"})
    .to_string();
    let mut command = compactd();
    command
        .args(["hook", "claude-code"])
        .current_dir(&w)
        .env("HOME", work.path().join("home"))
        .env("XDG_DATA_HOME", work.path().join("data"))
        .env_remove("CLAUDE_CONFIG_DIR")
        .stderr(std::process::Stdio::piped());
    crate::support::cap_memory(&mut command, CAP);
    let hook = crate::support::output_with_stdin(&mut command, &input);
    let stdout = String::from_utf8_lossy(&hook.stdout);
    assert!(hook.status.success(), "{hook:?}");
    assert!(stdout.contains("--frobnicate-widgets"), "{stdout}");
}

/// A hook counts without the vocabulary (its answer is bounded in
/// characters and shows no count; loading o200k was most of its cost), and
/// still hands over the record the server's `conversation/recap` gives for
/// the same transcript: before the compaction, and after it when no hook
/// before it kept anything.
#[test]
fn a_hook_hands_over_the_record_the_server_recaps() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path().join("repo");
    std::fs::create_dir_all(&w).unwrap();
    let transcript = w.join("t.jsonl");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/claude-code/5217d838-5181-433d-a8b8-c96b9ad7bfb3.jsonl"),
        &transcript,
    )
    .unwrap();
    let hook = |event: &str, data: &str| {
        let input = serde_json::json!({"session_id": "s", "transcript_path": transcript,
            "cwd": w, "hook_event_name": event, "trigger": "auto", "source": "compact"})
        .to_string();
        let mut command = compactd();
        command
            .args(["hook", "claude-code"])
            .current_dir(&w)
            .env("HOME", work.path().join("home"))
            .env("XDG_DATA_HOME", work.path().join(data));
        let out = crate::support::output_with_stdin(&mut command, &input);
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let instructions = hook("PreCompact", "data-before");
    let after: Value = serde_json::from_str(&hook("SessionStart", "data-after")).unwrap();
    let context = after["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    let mut server = crate::support::Server::start(&work.path().join("server"), json!({}));
    let id = server
        .request("conversation/follow", json!({"path": transcript}))
        .unwrap()["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let recap = server
        .request(
            "conversation/recap",
            json!({"sessionId": id, "recallTools": true}),
        )
        .unwrap();
    assert!(context.contains("edit a.txt and write c.md"), "{context}");
    assert_eq!(
        instructions.trim_end(),
        recap["instructions"].as_str().unwrap()
    );
    assert_eq!(context, recap["context"].as_str().unwrap());
}

/// The command line names the agents the registry holds, as `initialize`
/// does: `sessions` and `setup` (which also sets up opencode) check the
/// name and list the possible values; the hook's help names them (a hook
/// checks nothing itself: it exits 0 whatever it is given).
#[test]
fn the_command_line_names_the_agents_initialize_lists() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = crate::support::Server::spawn(dir.path());
    let init = server.initialize(json!({}));
    let agents: Vec<String> = init["capabilities"]["experimental"]["compactd"]["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap().to_string())
        .collect();
    assert!(agents.len() >= 4, "{agents:?}");
    let listed = |args: &[&str]| {
        let out = compactd().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        let values = stderr
            .split("[possible values: ")
            .nth(1)
            .and_then(|v| v.split(']').next())
            .unwrap_or_else(|| panic!("{stderr}"))
            .to_string();
        values.split(", ").map(str::to_string).collect::<Vec<_>>()
    };
    assert_eq!(listed(&["sessions", "no-such-agent"]), agents);
    assert_eq!(listed(&["setup", "no-such-agent"]), agents);
    let help = compactd().args(["hook", "--help"]).output().unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    assert!(help.contains(&agents.join(", ")), "{help}");
}

/// A hosted provider without a key is refused before any request: no
/// retries, no waiting, the offline summary at once, and it says why.
#[test]
fn a_hosted_summarizer_without_a_key_falls_back_before_any_request() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/conversation.json");
    let out =
        crate::support::output_within_patience(compactd().arg("compact").arg(&example).args([
            "--summarizer",
            "openai",
            "--keep-recent-tokens",
            "300",
            "--quiet",
        ]));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("needs an API key and none is configured"),
        "{stdout}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("retrying"),
        "no attempt was made: {stderr}"
    );
}
