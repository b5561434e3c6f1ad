//! `compactd statusline` through the binary, fed the JSON real Claude Code
//! 2.1.330 sent its statusLine command (captured under tmux at startup,
//! after a tool turn and after `/compact`; committed fixtures) with the
//! transcript of that session (trimmed fixture), plus the cache, colours
//! and failures. `agents.rs` runs it under a live interactive Claude Code.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

/// A captured JSON with its transcript moved to `transcript`.
fn captured(name: &str, transcript: &Path) -> Value {
    let mut json: Value = serde_json::from_str(
        &std::fs::read_to_string(crate::support::fixture(&format!("claude-code/{}", name)))
            .unwrap(),
    )
    .unwrap();
    json["transcript_path"] = json!(transcript);
    json
}

struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Home {
        Home {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn cache_dir(&self) -> PathBuf {
        self.path().join("data/compactd/sessions/statusline")
    }

    /// Runs `compactd statusline` with `input` on stdin; returns stdout,
    /// after checking it exited 0 with one line.
    fn render(&self, input: &str, flags: &[&str], env: &[(&str, &str)]) -> String {
        let mut command = Command::new(env!("CARGO_BIN_EXE_compactd"));
        command
            .args(["--no-user-config", "statusline"])
            .args(flags)
            .env("HOME", self.path())
            .env("XDG_DATA_HOME", self.path().join("data"))
            .env_remove("NO_COLOR")
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE")
            .env_remove("CLAUDE_CODE_AUTO_COMPACT_WINDOW")
            .stderr(Stdio::piped());
        for (k, v) in env {
            command.env(k, v);
        }
        let output = crate::support::output_with_stdin(&mut command, input);
        assert!(output.status.success(), "{output:?}");
        let stdout = String::from_utf8(output.stdout).unwrap();
        assert_eq!(stdout.lines().count(), 1, "{stdout:?}");
        stdout.trim_end().to_string()
    }
}

#[test]
fn the_json_real_claude_code_sends_renders_its_own_figures() {
    let home = Home::new();
    let transcript = home.path().join("5217d838.jsonl");
    // After the tool turn (the transcript as it was then, up to the turn's
    // last response): the last request's usage (5 + 200 + 14,450 + 12),
    // the default model's window and compaction point, and the two files
    // its Edit and Write changed (its Reads and Bash changed none).
    std::fs::write(&transcript, fixture_lines(37)).unwrap();
    let after_tools = captured("statusline-stdin-after-tools.json", &transcript).to_string();
    assert_eq!(
        home.render(&after_tools, &[], &[]),
        "⛁ 14.7k/1M 1% · auto-compact 977k · 2 files changed"
    );
    std::fs::copy(
        crate::support::fixture("claude-code/5217d838-5181-433d-a8b8-c96b9ad7bfb3.jsonl"),
        &transcript,
    )
    .unwrap();
    // At startup and right after /compact Claude Code sends no usage
    // (null, then zeros), and the size it recorded after compacting
    // (3,061) leaves out its system prompt and tools: the line shows what
    // following the session shows, one number from one calibration.
    let followed = follow_meter(&transcript);
    assert!((14_000..15_000).contains(&followed), "{followed}");
    for name in [
        "statusline-stdin-start.json",
        "statusline-stdin-after-compact.json",
    ] {
        let json = captured(name, &transcript).to_string();
        assert_eq!(
            home.render(&json, &[], &[]),
            format!(
                "⛁ {}/1M 1% · auto-compact 977k · 2 files changed",
                thousands(followed)
            ),
            "{name}"
        );
    }
}

/// The real session's first `n` lines.
fn fixture_lines(n: usize) -> String {
    let text = std::fs::read_to_string(crate::support::fixture(
        "claude-code/5217d838-5181-433d-a8b8-c96b9ad7bfb3.jsonl",
    ))
    .unwrap();
    text.split_inclusive('\n').take(n).collect()
}

/// A tool result after the latest usage is in the next request and in no
/// usage yet: the status line shows the follow meter, which counts it, as
/// an editor following the session does, not Claude Code's last figure.
#[test]
fn the_status_line_and_a_follow_show_one_meter_when_results_follow_the_usage() {
    let home = Home::new();
    let transcript = home.path().join("t.jsonl");
    // Up to the response that asked for `ls` (usage 14,515), then its
    // result: a long listing.
    let listing: String = (0..1500)
        .map(|n| format!("src/module_{n}/file_{n}.rs\n"))
        .collect();
    let result = json!({"parentUuid": "1a07a91d-2f67-46bd-8c69-b2c9e5614666", "isSidechain": false,
        "type": "user", "uuid": "d64a5c43-9803-4308-8be2-95fa6e584243", "sessionId": "5217d838-5181-433d-a8b8-c96b9ad7bfb3",
        "message": {"role": "user", "content": [{"tool_use_id": "toolu_bash_ls", "type": "tool_result", "content": listing, "is_error": false}]}});
    std::fs::write(&transcript, fixture_lines(33) + &result.to_string() + "\n").unwrap();
    let mut json = captured("statusline-stdin-after-tools.json", &transcript);
    json["context_window"]["current_usage"] = json!({"input_tokens": 5, "output_tokens": 50,
        "cache_creation_input_tokens": 10, "cache_read_input_tokens": 14450});
    let followed = follow_meter(&transcript);
    assert!(
        followed > 14_515 + 10_000,
        "the listing is counted: {followed}"
    );
    let line = home.render(&json.to_string(), &[], &[]);
    assert!(
        line.starts_with(&format!("⛁ {}/1M", thousands(followed))),
        "status line {line:?}, follow {followed}"
    );
    // The next response's usage covers it all: Claude Code's figure again.
    std::fs::write(&transcript, fixture_lines(33)).unwrap();
    assert!(home
        .render(&json.to_string(), &[], &[])
        .starts_with("⛁ 14.5k/1M"));
}

/// What Claude Code attaches after a message and writes as an
/// `attachment` line (here a file a formatter changed on disk) is in its
/// next request and in no usage yet: a follow counts it, and the status
/// line shows that figure.
#[test]
fn an_attachment_after_the_usage_is_in_the_status_line_and_a_follow() {
    let home = Home::new();
    let transcript = home.path().join("t.jsonl");
    let result = json!({"parentUuid": "1a07a91d-2f67-46bd-8c69-b2c9e5614666", "isSidechain": false,
        "type": "user", "uuid": "d64a5c43-9803-4308-8be2-95fa6e584243", "sessionId": "5217d838-5181-433d-a8b8-c96b9ad7bfb3",
        "message": {"role": "user", "content": [{"tool_use_id": "toolu_bash_ls", "type": "tool_result", "content": "src", "is_error": false}]}});
    let snippet: String = (0..1200)
        .map(|n| format!("{n:>5}\tlet value_{n} = compute(input, {n})?;\n"))
        .collect();
    let attachment = json!({"parentUuid": "d64a5c43-9803-4308-8be2-95fa6e584243", "isSidechain": false,
        "type": "attachment", "uuid": "0b6c3a43-5e0e-4a55-9f55-3c1f2b8a9d10", "sessionId": "5217d838-5181-433d-a8b8-c96b9ad7bfb3",
        "attachment": {"type": "edited_text_file", "filename": "/w/src/lib.rs", "snippet": snippet}});
    let before = fixture_lines(33) + &result.to_string() + "\n";
    std::fs::write(&transcript, &before).unwrap();
    let without = follow_meter(&transcript);
    std::fs::write(&transcript, before + &attachment.to_string() + "\n").unwrap();
    let followed = follow_meter(&transcript);
    assert!(
        followed > without + 15_000,
        "the changed file is counted: {without} -> {followed}"
    );
    let mut json = captured("statusline-stdin-after-tools.json", &transcript);
    json["context_window"]["current_usage"] = json!({"input_tokens": 5, "output_tokens": 50,
        "cache_creation_input_tokens": 10, "cache_read_input_tokens": 14450});
    let line = home.render(&json.to_string(), &[], &[]);
    assert!(
        line.starts_with(&format!("⛁ {}/1M", thousands(followed))),
        "status line {line:?}, follow {followed}"
    );
}

/// The meter `conversation/follow` of the transcript shows.
fn follow_meter(transcript: &Path) -> u64 {
    let data = tempfile::tempdir().unwrap();
    let mut server = crate::support::Server::start(data.path(), json!({"follow": "off"}));
    let followed = server
        .request("conversation/follow", json!({"path": transcript}))
        .unwrap();
    followed["meter"]["contextTokens"].as_u64().unwrap()
}

/// 14,210 → `14.2k`, as the status line writes it.
fn thousands(n: u64) -> String {
    format!("{:.1}k", n as f64 / 1000.0).replace(".0k", "k")
}

#[test]
fn a_render_reads_only_what_the_transcript_gained_and_agrees_with_a_fresh_read() {
    let home = Home::new();
    let transcript = home.path().join("t.jsonl");
    let text = std::fs::read_to_string(crate::support::fixture(
        "claude-code/5217d838-5181-433d-a8b8-c96b9ad7bfb3.jsonl",
    ))
    .unwrap();
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut json = captured("statusline-stdin-start.json", &transcript);
    json["context_window"]["context_window_size"] = json!(200_000);
    let input = json.to_string();
    let mut written = String::new();
    for (n, line) in lines.iter().enumerate() {
        // Every other step leaves a torn half line for the next render.
        let (now, later) = if n % 2 == 0 {
            line.split_at(line.len() / 2)
        } else {
            (*line, "")
        };
        written.push_str(now);
        std::fs::write(&transcript, &written).unwrap();
        let incremental = home.render(&input, &[], &[]);
        std::fs::remove_dir_all(home.cache_dir()).unwrap();
        assert_eq!(
            incremental,
            home.render(&input, &[], &[]),
            "after {} lines",
            n + 1
        );
        written.push_str(later);
    }
    assert_eq!(
        home.render(&input, &[], &[]),
        format!(
            "⛁ {}/200k 7% · auto-compact ~177k · 2 files changed",
            thousands(follow_meter(&transcript))
        )
    );
    // (With a 200k window the point is Claude Code's rule where it was not
    // seen to compact: an estimate, marked `~`.) Rewritten shorter, then
    // rewritten in place at the same size: read again from the start.
    let first_turn: String =
        lines[..lines.iter().position(|l| l.contains("msg_27dd")).unwrap()].concat();
    std::fs::write(&transcript, &first_turn).unwrap();
    assert_eq!(
        home.render(&input, &[], &[]),
        "⛁ 13.6k/200k 7% · auto-compact ~177k"
    );
    let same_size = first_turn.replace(
        "\"cache_read_input_tokens\":12000",
        "\"cache_read_input_tokens\":12900",
    );
    assert_eq!(same_size.len(), first_turn.len());
    std::fs::write(&transcript, &same_size).unwrap();
    let file = std::fs::File::options()
        .write(true)
        .open(&transcript)
        .unwrap();
    file.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5))
        .unwrap();
    assert_eq!(
        home.render(&input, &[], &[]),
        "⛁ 14.5k/200k 7% · auto-compact ~177k"
    );
}

#[test]
fn colours_follow_the_thresholds_and_no_color() {
    let home = Home::new();
    let transcript = home.path().join("t.jsonl");
    // Up to the response whose usage the JSON gives.
    std::fs::write(&transcript, fixture_lines(37)).unwrap();
    let at = |tokens: u64| {
        let mut json = captured("statusline-stdin-after-tools.json", &transcript);
        json["context_window"]["context_window_size"] = json!(100_000);
        json["context_window"]["current_usage"] = json!({"input_tokens": tokens, "output_tokens": 0,
            "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0});
        json.to_string()
    };
    let meter = |line: String| line.split(" · ").next().unwrap().to_string();
    assert_eq!(meter(home.render(&at(50_000), &[], &[])), "⛁ 50k/100k 50%");
    assert_eq!(
        meter(home.render(&at(80_000), &[], &[])),
        "\x1b[33m⛁ 80k/100k 80%\x1b[0m"
    );
    assert_eq!(
        meter(home.render(&at(95_000), &[], &[])),
        "\x1b[31m⛁ 95k/100k 95%\x1b[0m"
    );
    assert_eq!(
        meter(home.render(&at(95_000), &[], &[("NO_COLOR", "1")])),
        "⛁ 95k/100k 95%"
    );
    assert_eq!(
        meter(home.render(&at(50_000), &["--warn", "40", "--error", "60"], &[])),
        "\x1b[33m⛁ 50k/100k 50%\x1b[0m"
    );
    // Claude Code switched off by its own setting.
    std::fs::write(
        home.path().join(".claude.json"),
        r#"{"autoCompactEnabled": false}"#,
    )
    .unwrap();
    assert!(home
        .render(&at(50_000), &[], &[])
        .contains(" · auto-compact off"));
}

#[test]
fn any_failure_prints_a_short_fallback_and_exits_0() {
    let home = Home::new();
    let cases = [
        (
            "not json",
            "⛁ compactd: stdin is not JSON: expected ident at line 1 column 2",
        ),
        ("{}", "⛁ compactd: no transcript_path in the JSON"),
    ];
    for (input, line) in cases {
        assert_eq!(home.render(input, &[], &[]), line);
    }
    // At startup the transcript is named before it is written.
    let unwritten = captured(
        "statusline-stdin-start.json",
        &home.path().join("not-yet.jsonl"),
    );
    assert_eq!(
        home.render(&unwritten.to_string(), &[], &[]),
        "⛁ –/1M · auto-compact 977k"
    );
    let directory = json!({"transcript_path": home.path()}).to_string();
    assert!(home
        .render(&directory, &[], &[])
        .starts_with("⛁ compactd: "));
    let fifo = home.path().join("fifo");
    crate::support::mkfifo(&fifo);
    let fifo_input = json!({"transcript_path": fifo}).to_string();
    let line = home.render(&fifo_input, &[], &[]);
    assert!(
        line.starts_with("⛁ compactd: ") && line.ends_with("not a regular file (a FIFO or pipe)"),
        "{line}"
    );
}

/// The status line always prints a line and exits 0, bad flags included
/// (Claude Code would show nothing for an exit 2).
#[test]
fn bad_thresholds_print_a_line_and_exit_zero() {
    let home = Home::new();
    let line = home.render("{}", &["--warn", "abc"], &[]);
    assert!(line.starts_with("⛁ compactd: --warn \"abc\""), "{line}");
    let line = home.render("{}", &["--warn", "95", "--error", "90"], &[]);
    assert_eq!(line, "⛁ compactd: --warn 95 is above --error 90");
}

/// A session Claude Code just started: its transcript is still empty, so
/// neither the model nor the window is known from it. `follow --once` and
/// the status line (given no model either) give the same window and point.
#[test]
fn an_empty_transcript_has_one_window_in_follow_and_the_status_line() {
    let home = Home::new();
    let projects = home.path().join(".claude/projects/-w");
    std::fs::create_dir_all(&projects).unwrap();
    let transcript = projects.join("11111111-1111-1111-1111-111111111111.jsonl");
    std::fs::write(&transcript, "").unwrap();
    let line = home.render(
        &json!({"transcript_path": transcript}).to_string(),
        &[],
        &[],
    );
    let output = Command::new(env!("CARGO_BIN_EXE_compactd"))
        .args(["--no-user-config", "follow", "--once"])
        .arg(&transcript)
        .env("HOME", home.path())
        .env("XDG_DATA_HOME", home.path().join("data"))
        .env("NO_COLOR", "1")
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE")
        .env_remove("CLAUDE_CODE_AUTO_COMPACT_WINDOW")
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let followed = String::from_utf8(output.stdout).unwrap();
    assert_eq!(line, "⛁ –/200k · auto-compact ~177k");
    assert!(
        followed.contains("0/200k") && followed.contains("~177k"),
        "follow: {followed:?}, status line: {line:?}"
    );
}
