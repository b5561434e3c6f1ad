//! The real Claude Code (pinned in `tests/agents`, installed by `npm ci`
//! there) against the scripted Anthropic server, offline: compactd follows
//! the transcript the real program writes while it runs (Read, Edit,
//! Write, Bash with usage), and renders the status line from the JSON the
//! real program sends its `statusLine` command, in an interactive session
//! under tmux. Skipped (`support::skip`: a failure when CI requires
//! every prerequisite), with the reason printed, when the agents are not
//! installed (or python3 or tmux is missing).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;

use serde_json::{json, Value};

use crate::follow::{claude_dir, follow_line_by_line};
use crate::support::{
    agent_binary, agents_dir, file_uri, installed, output_within, ScriptedModel, Server,
    MODEL_PATIENCE,
};

/// The claude binary, or why the test is skipped.
fn claude() -> Result<PathBuf, String> {
    agent_binary("claude")
}

macro_rules! or_skip {
    ($found:expr) => {
        match $found {
            Ok(found) => found,
            Err(why) => {
                crate::support::skip(&why);
                return;
            }
        }
    };
}

/// The API key Claude Code is given (the scripted model takes any).
const API_KEY: &str = "sk-ant-scripted-0000000000000000000000";

fn claude_command(claude: &Path, home: &Path, model: &ScriptedModel, workspace: &Path) -> Command {
    let mut command = Command::new(claude);
    command
        .current_dir(workspace)
        .env("HOME", home)
        .env("ANTHROPIC_BASE_URL", &model.url)
        .env("ANTHROPIC_API_KEY", API_KEY)
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env_remove("CLAUDE_CONFIG_DIR");
    command
}

/// The shell line that starts Claude Code interactively in `ws` with
/// `args` and `claude_command`'s environment, for tmux; first writes a
/// `~/.claude.json` with onboarding done, the key approved and `ws`
/// trusted, so that no dialog comes first.
fn interactive_claude(
    claude: &Path,
    home: &Path,
    model: &ScriptedModel,
    ws: &Path,
    args: &str,
) -> String {
    let state = json!({"hasCompletedOnboarding": true, "theme": "dark",
        "customApiKeyResponses": {"approved": [&API_KEY[API_KEY.len() - 20..]], "rejected": []},
        "projects": {ws.display().to_string(): {"hasTrustDialogAccepted": true, "hasCompletedProjectOnboarding": true}}});
    std::fs::write(home.join(".claude.json"), state.to_string()).unwrap();
    let environment = claude_command(claude, home, model, ws);
    let envs: Vec<String> = environment
        .get_envs()
        .filter_map(|(k, v)| Some(format!("{}={}", k.to_str()?, v?.to_str()?)))
        .collect();
    format!(
        "env -u CLAUDE_CONFIG_DIR {} {} {args}",
        envs.join(" "),
        claude.display()
    )
}

/// A workspace as the scenario wants it: `a.txt` and `src/b.py`.
fn workspace(root: &Path) -> PathBuf {
    let ws = root.join("ws");
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(ws.join("a.txt"), "alpha\nbeta\n").unwrap();
    std::fs::write(ws.join("src/b.py"), "print('b')\n").unwrap();
    ws.canonicalize().unwrap()
}

/// Claude Code's home in `dir`, created.
fn claude_home(dir: &Path) -> PathBuf {
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    home
}

/// Each response's usage in a Claude Code transcript, by `message.id`, in
/// order: input, cache write, cache read and output, summed.
fn response_usage(transcript: &Path) -> Vec<(String, u64)> {
    let mut by_id: BTreeMap<String, (usize, u64)> = BTreeMap::new();
    for (n, line) in std::fs::read_to_string(transcript)
        .unwrap()
        .lines()
        .enumerate()
    {
        let value: Value = serde_json::from_str(line).unwrap();
        if value["type"] != "assistant" {
            continue;
        }
        let usage = &value["message"]["usage"];
        let total = [
            "input_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
            "output_tokens",
        ]
        .iter()
        .map(|k| usage[*k].as_u64().unwrap_or(0))
        .sum();
        let id = value["message"]["id"].as_str().unwrap().to_string();
        let first = by_id.get(&id).map_or(n, |(first, _)| *first);
        by_id.insert(id, (first, total));
    }
    let mut ordered: Vec<(String, (usize, u64))> = by_id.into_iter().collect();
    ordered.sort_by_key(|(_, (first, _))| *first);
    ordered
        .into_iter()
        .map(|(id, (_, total))| (id, total))
        .collect()
}

#[test]
fn real_claude_code_is_followed_while_it_runs() {
    let claude = or_skip!(claude());
    let temp = tempfile::tempdir().unwrap();
    let ws = workspace(temp.path());
    let mut server = Server::spawn(&temp.path().join("data"));
    server.patience = MODEL_PATIENCE;
    let home = server.home().to_path_buf();
    server.initialize_params(json!({"follow": "auto"}), json!({"rootUri": file_uri(&ws)}));
    let model = ScriptedModel::start(
        "claude-code-tools.json",
        &temp.path().join("requests.jsonl"),
        &ws,
    );

    let mut command = claude_command(&claude, &home, &model, &ws);
    command.args([
        "-p",
        "edit a.txt and write c.md",
        "--output-format",
        "stream-json",
        "--verbose",
        "--allowedTools",
        "Read,Edit,Write,Bash",
    ]);
    let output = output_within(&mut command, MODEL_PATIENCE);
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    let result: Value = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["type"] == "result")
        .expect("a result line");
    assert_eq!(result["terminal_reason"], "completed", "{result}");
    let transcript =
        claude_dir(&home, &ws).join(format!("{}.jsonl", result["session_id"].as_str().unwrap()));

    // Auto-follow found the session Claude Code started.
    let followed = server.next_where(|m| m["method"] == "conversation/didFollow")["params"].clone();
    assert_eq!(followed["path"], transcript.display().to_string());
    let id = followed["sessionId"].as_str().unwrap().to_string();
    // Following it by agent is the same session, read up to now.
    let now = server
        .request("conversation/follow", json!({"agent": "claude-code"}))
        .unwrap();
    assert_eq!(now["sessionId"], id.as_str());
    let usage = response_usage(&transcript);
    assert_eq!(usage.len(), 5, "{usage:?}");
    let last = usage.last().unwrap().1;
    assert_eq!(
        (
            now["meter"]["contextTokens"].as_u64(),
            now["meter"]["source"].as_str()
        ),
        (Some(last), Some("usage"))
    );
    let meters: Vec<u64> = server
        .received_notifications("conversation/tokens")
        .iter()
        .filter(|n| n["sessionId"] == id.as_str())
        .map(|n| n["contextTokens"].as_u64().unwrap())
        .collect();
    assert!(
        meters.windows(2).all(|w| w[0] <= w[1]),
        "no compaction, so no drop: {meters:?}"
    );
    assert_eq!(meters.last(), Some(&last));

    // One message per response, with the usage its lines carry.
    let history = server
        .request("conversation/history", json!({"sessionId": id}))
        .unwrap();
    let responses: Vec<u64> = history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .map(|m| {
            ["input", "cacheWrite", "cacheRead", "output"]
                .iter()
                .map(|k| m["usage"][*k].as_u64().unwrap())
                .sum()
        })
        .collect();
    assert_eq!(
        responses,
        usage.iter().map(|(_, total)| *total).collect::<Vec<_>>()
    );
    let files = server
        .request("files/list", json!({"sessionId": id}))
        .unwrap();
    assert_eq!(files["readFiles"], json!(["src/b.py"]));
    assert_eq!(files["modifiedFiles"], json!(["c.md", "a.txt"]));

    // The same transcript written again line by line: at every line the
    // meter is what a batch import of the lines so far gives, and after a
    // response's line, its usage exactly.
    let lines: Vec<String> = std::fs::read_to_string(&transcript)
        .unwrap()
        .lines()
        .map(|l| format!("{l}\n"))
        .collect();
    let copy = temp.path().join("copy.jsonl");
    follow_line_by_line(&mut server, &copy, &lines);
    server.shutdown_and_exit();
}

/// Reads each line written to the FIFO at `path`, one writer at a time,
/// and hands it over.
fn fifo_lines(path: PathBuf) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || loop {
        // Blocks until the status line command opens it to write.
        let Ok(mut fifo) = std::fs::File::open(&path) else {
            return;
        };
        let mut text = String::new();
        let _ = fifo.read_to_string(&mut text);
        if tx.send(text).is_err() {
            return;
        }
    });
    rx
}

/// The JSON Claude Code sent each status line render, as captured.
fn captured_inputs(dir: &Path) -> Vec<Value> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.unwrap().path()).ok())
        .filter_map(|text| serde_json::from_str(&text).ok())
        .collect()
}

/// The one session of a `Tmux`.
const TMUX_SESSION: &str = "agent";

/// `tmux` on a socket of its own in the test's folder `dir`, running one
/// program; killed when dropped.
struct Tmux {
    dir: PathBuf,
}

impl Tmux {
    /// Whether tmux is there, or why the test is skipped.
    fn installed() -> Result<(), String> {
        Command::new("tmux")
            .arg("-V")
            .output()
            .map(drop)
            .map_err(|_| "tmux is missing".to_string())
    }

    /// Runs `line` in `cwd`, in a 160×45 window. What it draws also goes
    /// to a file in `dir`, so that drawing wakes `until`.
    fn start(dir: &Path, cwd: &Path, line: &str) -> Tmux {
        let tmux = Tmux {
            dir: dir.to_path_buf(),
        };
        let started = tmux.run(&[
            "new-session",
            "-d",
            "-s",
            TMUX_SESSION,
            "-x",
            "160",
            "-y",
            "45",
            "-c",
            cwd.to_str().unwrap(),
            line,
        ]);
        assert!(started.status.success(), "{started:?}");
        let drawn = format!("cat > {}", dir.join("drawn").display());
        tmux.run(&["pipe-pane", "-t", TMUX_SESSION, &drawn]);
        tmux
    }

    fn run(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux")
            .arg("-S")
            .arg(self.dir.join("tmux.sock"))
            .args(args)
            .output()
            .unwrap()
    }

    /// What the window shows now.
    fn screen(&self) -> String {
        let shown = self.run(&["capture-pane", "-p", "-t", TMUX_SESSION]);
        String::from_utf8_lossy(&shown.stdout).into_owned()
    }

    /// Blocks until the window shows `text`.
    fn until_shown(&self, text: &str) {
        let what = || format!("{text:?} on the screen: {}", self.screen());
        until(&self.dir, what, || {
            self.screen().contains(text).then_some(())
        });
    }

    /// Types `text`, then Enter once `drawn` shows: typed keys that come
    /// fast are a paste to Codex, and Enter inside a paste is no submit.
    fn type_line(&self, text: &str, drawn: &str) {
        self.run(&["send-keys", "-t", TMUX_SESSION, "-l", text]);
        self.until_shown(drawn);
        self.run(&["send-keys", "-t", TMUX_SESSION, "Enter"]);
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.run(&["kill-server"]);
    }
}

#[test]
fn real_claude_code_sends_its_status_line_json_to_compactd_statusline() {
    let claude = or_skip!(claude());
    or_skip!(Tmux::installed());
    let temp = tempfile::tempdir().unwrap();
    let ws = workspace(temp.path());
    let home = claude_home(temp.path());
    let captured = temp.path().join("captured");
    std::fs::create_dir_all(home.join(".claude")).unwrap();
    std::fs::create_dir_all(&captured).unwrap();
    let fifo = temp.path().join("rendered");
    crate::support::mkfifo(&fifo);
    // The JSON is kept for the test, compactd renders, and the line goes
    // to Claude Code and to the test.
    let command = format!(
        "sh -c 'cat > {dir}/in.$$.json; XDG_DATA_HOME={data} {bin} --no-user-config statusline < {dir}/in.$$.json | tee {fifo}'",
        dir = captured.display(),
        data = temp.path().join("data").display(),
        bin = env!("CARGO_BIN_EXE_compactd"),
        fifo = fifo.display()
    );
    let settings = json!({"statusLine": {"type": "command", "command": command}});
    std::fs::write(home.join(".claude/settings.json"), settings.to_string()).unwrap();
    let rendered = fifo_lines(fifo.clone());
    let model = ScriptedModel::start(
        "claude-code-tools.json",
        &temp.path().join("requests.jsonl"),
        &ws,
    );

    let line = interactive_claude(
        &claude,
        &home,
        &model,
        &ws,
        "--allowedTools Read,Edit,Write,Bash",
    );
    let tmux = Tmux::start(temp.path(), &ws, &line);
    let next = || {
        rendered
            .recv_timeout(MODEL_PATIENCE)
            .expect("a status line render")
    };
    let first = next();
    assert!(
        first.starts_with("⛁ –/1M · auto-compact 977k"),
        "at startup: {first:?}"
    );
    let sent = tmux.run(&[
        "send-keys",
        "-t",
        TMUX_SESSION,
        "edit a.txt and write c.md",
        "Enter",
    ]);
    assert!(sent.status.success());
    let after_turn = loop {
        let line = next();
        if line.contains("files changed") {
            break line;
        }
    };
    assert_eq!(
        after_turn.trim_end(),
        "⛁ 14.7k/1M 1% · auto-compact 977k · 2 files changed"
    );

    // `/compact`: Claude Code's own figure for the compacted context leaves
    // out its system prompt and tools; the line shows what following the
    // session shows, within 1% (the line rounds to 0.1k).
    let sent = tmux.run(&["send-keys", "-t", TMUX_SESSION, "/compact", "Enter"]);
    assert!(sent.status.success());
    let transcript = loop {
        let inputs = captured_inputs(&captured);
        if let Some(path) = inputs.iter().find_map(|v| v["transcript_path"].as_str()) {
            break PathBuf::from(path);
        }
    };
    let after_compact = loop {
        let line = next();
        let compacted =
            std::fs::read_to_string(&transcript).is_ok_and(|t| t.contains("\"compact_boundary\""));
        if compacted && line != after_turn {
            break line;
        }
    };
    let shown: f64 = after_compact
        .trim_start_matches("⛁ ")
        .split('/')
        .next()
        .and_then(|k| k.strip_suffix('k'))
        .and_then(|k| k.parse().ok())
        .unwrap_or_else(|| panic!("a meter in thousands: {after_compact:?}"));
    let mut server = Server::start(&temp.path().join("follow-data"), json!({"follow": "off"}));
    let followed = server
        .request("conversation/follow", json!({"path": transcript}))
        .unwrap();
    let meter = followed["meter"]["contextTokens"].as_u64().unwrap() as f64;
    assert!(
        (shown * 1000.0 - meter).abs() <= meter * 0.01,
        "status line {after_compact:?}, follow meter {meter}"
    );

    // What the real program sent: the fields compactd reads.
    let inputs = captured_inputs(&captured);
    let with_usage = inputs
        .iter()
        .find(|v| v["context_window"]["current_usage"].is_object())
        .expect("a render after the turn");
    assert!(Path::new(with_usage["transcript_path"].as_str().unwrap()).exists());
    assert_eq!(
        with_usage["context_window"]["context_window_size"],
        1_000_000
    );
    assert_eq!(with_usage["model"]["id"], "claude-opus-5-5");
    // Releases the reader thread waiting on the FIFO.
    drop(tmux);
    drop(rendered);
    let _ = std::fs::OpenOptions::new().write(true).open(&fifo);
}

// ---------------------------------------------------------------------
// compactd inside Claude Code's own compactions, through its hooks.

/// A later request carrying a constraint in a short session (the reply
/// to it reports usage near the window, so the next prompt compacts
/// automatically): it must reach the model after that compaction.
const LATER_CONSTRAINT: &str =
    "note the size of this context, and from now on answer in French only";

/// The task, with two rules; what must outlive a compaction.
const HOOKED_TASK: &str =
    "Edit a.txt and write c.md. Never use sudo. Keep it to the files in this folder.";

/// What the model's first request after each compaction holds of the
/// session: the task, the rules and the files, as `(item, present)`.
fn kept_items(request: &str) -> Vec<(&'static str, bool)> {
    [
        ("the task", "Edit a.txt and write c.md."),
        ("rule: never use sudo", "Never use sudo."),
        (
            "rule: keep to this folder",
            "Keep it to the files in this folder.",
        ),
        ("modified a.txt", "a.txt"),
        ("modified c.md", "c.md"),
        ("read src/b.py", "src/b.py"),
    ]
    .into_iter()
    .map(|(item, needle)| (item, request.contains(needle)))
    .collect()
}

/// Runs the real Claude Code through a session of tools, a `/compact`, a
/// reply near its window and a prompt that compacts automatically, with
/// compactd's hooks set up (`compactd setup claude-code`) or not. Gives
/// each compaction's summarization request and the model request right
/// after it, as text, and the session's transcript.
fn claude_code_compactions(hooks: bool) -> Option<(Vec<(String, String)>, PathBuf)> {
    let claude = match claude() {
        Ok(claude) => claude,
        Err(why) => {
            crate::support::skip(&why);
            return None;
        }
    };
    let temp = tempfile::tempdir().unwrap().keep();
    let ws = workspace(&temp);
    let home = claude_home(&temp);
    if hooks {
        let setup = Command::new(env!("CARGO_BIN_EXE_compactd"))
            .args(["setup", "claude-code"])
            .env("HOME", &home)
            .env_remove("CLAUDE_CONFIG_DIR")
            .output()
            .unwrap();
        assert!(setup.status.success(), "{setup:?}");
    }
    let log = temp.join("requests.jsonl");
    let model = ScriptedModel::start("claude-code-hooks.json", &log, &ws);
    let run = |args: &[&str]| -> Value {
        let mut command = claude_command(&claude, &home, &model, &ws);
        command.args(["-p"]).args(args).args([
            "--output-format",
            "json",
            "--allowedTools",
            "Read,Edit,Write,Bash",
        ]);
        let output = output_within(&mut command, MODEL_PATIENCE);
        assert!(output.status.success(), "{output:?}");
        serde_json::from_slice(&output.stdout).unwrap()
    };
    let first = run(&[HOOKED_TASK]);
    let session = first["session_id"].as_str().unwrap().to_string();
    for prompt in ["/compact", LATER_CONSTRAINT, "what is left to do?"] {
        run(&["--resume", &session, prompt]);
    }
    let requests = logged_requests(&log, "anthropic");
    let mut pairs = Vec::new();
    for (i, request) in requests.iter().enumerate() {
        if request["compaction"] != true {
            continue;
        }
        let next = requests[i + 1..]
            .iter()
            .find(|r| {
                r["compaction"] != true
                    && r["body"]["messages"]
                        .as_array()
                        .is_some_and(|m| m.len() > 1)
            })
            .map(|r| r["body"].to_string())
            .unwrap_or_default();
        pairs.push((request["body"].to_string(), next));
    }
    let transcript = claude_dir(&home, &ws).join(format!("{session}.jsonl"));
    Some((pairs, transcript))
}

#[test]
fn real_claude_code_compacts_with_what_compactd_knows() {
    let Some((without, _)) = claude_code_compactions(false) else {
        return;
    };
    let (with, transcript) = claude_code_compactions(true).unwrap();
    assert_eq!(without.len(), 2, "a /compact and an automatic compaction");
    assert_eq!(with.len(), 2, "a /compact and an automatic compaction");
    let mut table = vec![
        "| after | without compactd's hooks | with them |".to_string(),
        "|---|---|---|".to_string(),
    ];
    for (kind, ((_, plain), (summarizing, next))) in ["/compact", "auto-compaction"]
        .iter()
        .zip(without.iter().zip(&with))
    {
        // The summarization request carries compactd's instructions…
        assert!(
            summarizing.contains("compactd follows this session")
                && summarizing.contains("Never use sudo."),
            "{kind}: the PreCompact instructions are missing from the summarization request"
        );
        // …and the next request compactd's record, where the same lossy
        // summary alone keeps less.
        let kept = kept_items(next);
        let plain = kept_items(plain);
        let count = |items: &[(&str, bool)]| items.iter().filter(|(_, k)| *k).count();
        assert!(
            kept.iter().all(|(_, k)| *k),
            "{kind}: missing from the context after compacting: {:?}",
            kept.iter().filter(|(_, k)| !k).collect::<Vec<_>>()
        );
        assert!(
            count(&plain) < kept.len(),
            "{kind}: the summary alone kept everything"
        );
        table.push(format!(
            "| {kind} | {}/{} | {}/{} |",
            count(&plain),
            plain.len(),
            count(&kept),
            kept.len()
        ));
    }
    println!("{}", table.join("\n"));
    // The constraint of the later request, in a session this short, is in
    // compactd's record after the automatic compaction; the lossy summary
    // alone drops it.
    let constraint = "from now on answer in French only";
    assert!(
        with[1].1.contains(constraint),
        "the later request's constraint is missing"
    );
    assert!(
        !without[1].1.contains(constraint),
        "the summary alone kept it"
    );
    for (_, next) in &with {
        assert!(
            next.contains("compactd's record of this session"),
            "the SessionStart context"
        );
    }

    // compactd's own reading of the transcript records each of Claude
    // Code's compactions with what its summary dropped.
    let temp = tempfile::tempdir().unwrap();
    let mut server = Server::spawn(&temp.path().join("data"));
    server.initialize_params(json!({}), json!({}));
    let imported = server
        .request("conversation/import", json!({"path": transcript}))
        .unwrap();
    let listed = server
        .request(
            "conversation/compactions",
            json!({"sessionId": imported["sessionId"]}),
        )
        .unwrap();
    let compactions = listed["compactions"].as_array().unwrap();
    assert_eq!(compactions.len(), 2, "{listed}");
    for compaction in compactions {
        assert_eq!(
            compaction["dropped"],
            json!([
                "2 of 2 modified files",
                "2 of 2 rules",
                "the task",
                "the latest request"
            ]),
            "{compaction}"
        );
        assert!(compaction["recall"].as_f64().unwrap() < 0.2, "{compaction}");
    }
    server.shutdown_and_exit();
}

// ---------------------------------------------------------------------
// compactd inside Codex's own compactions.

/// The codex binary, or why the test is skipped.
fn codex() -> Result<PathBuf, String> {
    agent_binary("codex")
}

/// The task of the Codex and opencode runs, with two rules.
const CODEX_TASK: &str = "Run the tests. Never use sudo. Keep it to the files in this folder.";

/// What the model's first request after the agent's compaction holds of
/// the session: the task, the rules, the file it changed (when it changed
/// one), the failed command and its error.
fn codex_kept_items(request: &str, modified: Option<&str>) -> Vec<(&'static str, bool)> {
    let file = modified.map(|file| ("the modified file", file));
    [
        ("the task", "Run the tests."),
        ("rule: never use sudo", "Never use sudo."),
        (
            "rule: keep to this folder",
            "Keep it to the files in this folder.",
        ),
    ]
    .into_iter()
    .chain(file)
    .chain([
        ("the failed command", "sys.exit"),
        ("its error", "tests failed: 2 of 5"),
    ])
    .map(|(item, needle)| (item, request.contains(needle)))
    .collect()
}

/// The requests the scripted model logged for `api`, in order.
fn logged_requests(log: &Path, api: &str) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|r: &Value| r["api"] == api)
        .collect()
}

/// Codex's config for the scripted model: it compacts at 5,000 tokens and
/// runs commands without asking.
fn write_codex_config(codex_home: &Path, model: &ScriptedModel) {
    std::fs::write(
        codex_home.join("config.toml"),
        format!(
            "model = \"scripted-model\"\nmodel_provider = \"local\"\nmodel_auto_compact_token_limit = 5000\napproval_policy = \"never\"\nsandbox_mode = \"danger-full-access\"\n\n[model_providers.local]\nname = \"local\"\nbase_url = \"{}/v1\"\nwire_api = \"responses\"\n",
            model.url
        ),
    )
    .unwrap();
}

/// Runs `codex exec` with `task` in `ws` against the scripted `model`
/// (`write_codex_config`), compactd's hook set up first when `hooks`,
/// offline and trusting the hook; asserts it succeeded.
fn codex_exec(
    codex: &Path,
    ws: &Path,
    home: &Path,
    codex_home: &Path,
    model: &ScriptedModel,
    hooks: bool,
    task: &str,
) {
    write_codex_config(codex_home, model);
    if hooks {
        let setup = Command::new(env!("CARGO_BIN_EXE_compactd"))
            .args(["setup", "codex"])
            .env("CODEX_HOME", codex_home)
            .env("HOME", home)
            .output()
            .unwrap();
        assert!(setup.status.success(), "{setup:?}");
    }
    let mut command = Command::new(codex);
    command
        .current_dir(ws)
        .env("CODEX_HOME", codex_home)
        .env("HOME", home)
        .env("OPENAI_API_KEY", "sk-scripted")
        .args([
            "exec",
            "--skip-git-repo-check",
            "--dangerously-bypass-hook-trust",
            task,
        ]);
    let output = output_within(&mut command, MODEL_PATIENCE);
    assert!(output.status.success(), "{output:?}");
}

/// Runs the real Codex through a failing test run and a reply over its
/// auto-compaction limit, with compactd's hook set up (`compactd setup
/// codex`) or not: the summarization request and the request after it.
fn codex_compaction(hooks: bool) -> Option<(String, String)> {
    let codex = match codex() {
        Ok(codex) => codex,
        Err(why) => {
            crate::support::skip(&why);
            return None;
        }
    };
    let temp = tempfile::tempdir().unwrap().keep();
    let ws = temp.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let codex_home = temp.join("codex-home");
    std::fs::create_dir_all(&codex_home).unwrap();
    let log = temp.join("requests.jsonl");
    let model = ScriptedModel::start("codex-hooks.json", &log, &ws);
    codex_exec(&codex, &ws, &temp, &codex_home, &model, hooks, CODEX_TASK);
    let requests = logged_requests(&log, "responses");
    let at = requests.iter().position(|r| r["compaction"] == true)?;
    let next = requests
        .get(at + 1)
        .map(|r| r["body"].to_string())
        .unwrap_or_default();
    Some((requests[at]["body"].to_string(), next))
}

#[test]
fn real_codex_goes_on_after_compacting_with_what_compactd_knows() {
    let Some((_, without)) = codex_compaction(false) else {
        return;
    };
    let (_, with) = codex_compaction(true).expect("Codex compacted");
    let (plain, kept) = (
        codex_kept_items(&without, None),
        codex_kept_items(&with, None),
    );
    let count = |items: &[(&str, bool)]| items.iter().filter(|(_, k)| *k).count();
    assert!(
        kept.iter().all(|(_, k)| *k),
        "missing after Codex compacted with compactd's hook: {:?}",
        kept.iter().filter(|(_, k)| !k).collect::<Vec<_>>()
    );
    assert!(with.contains("compactd's record of this session"));
    assert!(
        count(&plain) < kept.len(),
        "the summary alone kept everything: {plain:?}"
    );
    println!(
        "| Codex auto-compaction | {}/{} | {}/{} |",
        count(&plain),
        plain.len(),
        count(&kept),
        kept.len()
    );
}

/// The lines of the `<tag>` section in the text of `request` (a logged
/// request body) that holds compactd's record, if any.
fn record_section(request: &Value, tag: &str) -> Option<Vec<String>> {
    fn texts<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
        match value {
            Value::String(s) => out.push(s),
            Value::Array(items) => items.iter().for_each(|v| texts(v, out)),
            Value::Object(map) => map.values().for_each(|v| texts(v, out)),
            _ => {}
        }
    }
    let mut all = Vec::new();
    texts(request, &mut all);
    let record = all
        .into_iter()
        .find(|t| t.contains("compactd's record of this session"))?;
    let (_, rest) = record.split_once(&format!("<{tag}>\n"))?;
    let (section, _) = rest.split_once(&format!("</{tag}>"))?;
    Some(section.lines().map(str::to_string).collect())
}

/// Codex 0.169 edits with `apply_patch` and reads with `cat` through its
/// `exec_command` tool: after it compacts, compactd's record (its
/// SessionStart hook) lists the patched file as modified and the one it
/// read as read, not the file it added and deleted again; so do a follow
/// and an import of the rollout.
#[test]
fn real_codex_edits_and_reads_through_its_shell_are_in_compactds_record() {
    let codex = or_skip!(codex());
    let temp = tempfile::tempdir().unwrap();
    let ws = workspace(temp.path());
    let home = temp.path().canonicalize().unwrap();
    let codex_home = home.join("codex-home");
    std::fs::create_dir_all(&codex_home).unwrap();
    let log = home.join("requests.jsonl");
    let model = ScriptedModel::start("codex-shell-edits.json", &log, &ws);
    let task = "Fix b.py and look at a.txt.";
    codex_exec(&codex, &ws, &home, &codex_home, &model, true, task);
    assert_eq!(
        std::fs::read_to_string(ws.join("src/b.py")).unwrap(),
        "print('B')\n"
    );
    assert!(!ws.join("scratch.md").exists());
    let requests = logged_requests(&log, "responses");
    let at = requests
        .iter()
        .position(|r| r["compaction"] == true)
        .expect("Codex compacted");
    let next = &requests.get(at + 1).expect("a request after it")["body"];
    assert_eq!(
        record_section(next, "modified-files"),
        Some(vec!["src/b.py".to_string()]),
        "{next}"
    );
    assert_eq!(
        record_section(next, "read-files"),
        Some(vec!["a.txt".to_string()]),
        "{next}"
    );

    // Followed or imported, the rollout has the same files.
    let rollout = {
        let mut dirs = vec![codex_home.join("sessions")];
        let mut found = None;
        while let Some(dir) = dirs.pop() {
            for path in std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()) {
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "jsonl") {
                    found = Some(path);
                }
            }
        }
        found.expect("a rollout")
    };
    let mut server = Server::start_in_workspace(&home.join("data"), &ws, json!({"follow": "off"}));
    let followed = server
        .request("conversation/follow", json!({"path": rollout}))
        .unwrap();
    let imported = server
        .request("conversation/import", json!({"path": rollout}))
        .unwrap();
    for session in [&followed["sessionId"], &imported["sessionId"]] {
        let files = server
            .request("files/list", json!({"sessionId": session}))
            .unwrap();
        assert_eq!(files["modifiedFiles"], json!(["src/b.py"]), "{files}");
        assert_eq!(files["readFiles"], json!(["a.txt"]), "{files}");
    }
    server.shutdown_and_exit();
}

/// Blocks until `ready` holds, checking again whenever something changes
/// under `dir` (bounded by `MODEL_PATIENCE`; `what` says what was awaited,
/// and what there was instead, when it gives up).
fn until<T>(dir: &Path, what: impl Fn() -> String, mut ready: impl FnMut() -> Option<T>) -> T {
    use notify::Watcher;
    let (tx, rx) = mpsc::channel();
    let mut watcher = notify::recommended_watcher(tx).unwrap();
    watcher
        .watch(dir, notify::RecursiveMode::Recursive)
        .unwrap();
    let deadline = std::time::Instant::now() + MODEL_PATIENCE;
    loop {
        if let Some(found) = ready() {
            return found;
        }
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        assert!(!left.is_zero(), "gave up waiting for {}", what());
        let _ = rx.recv_timeout(left);
    }
}

/// How many lines of the Codex rollout under `codex_home` hold `needle`.
fn rollout_lines(codex_home: &Path, needle: &str) -> usize {
    let mut dirs = vec![codex_home.join("sessions")];
    let mut count = 0;
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if let Ok(text) = std::fs::read_to_string(&path) {
                count += text.lines().filter(|l| l.contains(needle)).count();
            }
        }
    }
    count
}

#[test]
fn real_codex_tui_gets_one_record_after_back_to_back_compactions() {
    let codex = or_skip!(codex());
    or_skip!(Tmux::installed());
    let temp = tempfile::tempdir().unwrap();
    let ws = temp.path().join("ws");
    let codex_home = temp.path().join("codex-home");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&codex_home).unwrap();
    let log = temp.path().join("requests.jsonl");
    let model = ScriptedModel::start("codex-hooks.json", &log, &ws);
    write_codex_config(&codex_home, &model);
    let setup = Command::new(env!("CARGO_BIN_EXE_compactd"))
        .args(["setup", "codex"])
        .env("CODEX_HOME", &codex_home)
        .env("HOME", temp.path())
        .output()
        .unwrap();
    assert!(setup.status.success(), "{setup:?}");
    let line = format!(
        "env CODEX_HOME={} HOME={} OPENAI_API_KEY=sk-scripted {} --dangerously-bypass-hook-trust",
        codex_home.display(),
        temp.path().display(),
        codex.display()
    );
    let tmux = Tmux::start(temp.path(), &ws, &line);
    let screen = || tmux.screen();
    let idle = |turns: usize| {
        let what = || format!("Codex to finish turn {turns}: {}", screen());
        until(temp.path(), what, || {
            (rollout_lines(&codex_home, "\"task_complete\"") >= turns
                && screen().contains("Ask Codex to do anything"))
            .then_some(())
        })
    };
    tmux.until_shown("Ask Codex to do anything");
    tmux.type_line(CODEX_TASK, CODEX_TASK);
    idle(1);
    // Two `/compact`s with no turn in between: Codex runs SessionStart's
    // hooks when the next turn starts, each of them.
    for turns in [2, 3] {
        tmux.type_line("/compact", "summarize conversation");
        idle(turns);
    }
    tmux.type_line("What next?", "What next?");
    let what = || format!("the request after the compactions: {}", screen());
    let next = until(temp.path(), what, || {
        let requests = std::fs::read_to_string(&log).ok()?;
        requests
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|r| r["api"] == "responses" && r["compaction"] != true)
            .map(|r| r["body"].to_string())
            .find(|body| body.contains("What next?"))
    });
    let copies = next.matches("compactd's record of this session").count();
    assert_eq!(copies, 1, "the model got {copies} copies of the record");
    assert!(next.contains("tests failed: 2 of 5"), "{next}");
}

// ---------------------------------------------------------------------
// compactd inside opencode's own compactions (its plugin).

/// The opencode binary (opencode-ai's linux-x64 build, which the
/// `opencode-ai` launcher runs), or why the test is skipped.
fn opencode() -> Result<PathBuf, String> {
    installed(agents_dir().join("node_modules/opencode-linux-x64-baseline/bin/opencode"))
}

/// What one opencode run left: the summarization request, the request
/// after it, opencode's log (stderr) and its data folder.
struct OpencodeRun {
    compaction: String,
    next: String,
    log: String,
    data: PathBuf,
    /// Its HOME and workspace.
    home: PathBuf,
    ws: PathBuf,
}

/// Runs the real opencode (`opencode run`) reading and editing
/// `src/b.py`, a failing test run and a reply over its auto-compaction
/// point, with compactd's plugin set up (`compactd setup opencode
/// --project`) or not; `compactd_bin` overrides the binary the plugin runs.
fn opencode_compaction(plugin: bool, compactd_bin: Option<&str>) -> Option<OpencodeRun> {
    let opencode = match opencode() {
        Ok(opencode) => opencode,
        Err(why) => {
            crate::support::skip(&why);
            return None;
        }
    };
    let temp = tempfile::tempdir().unwrap().keep().canonicalize().unwrap();
    let ws = temp.join("ws");
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(ws.join("src/b.py"), "print('b')\n").unwrap();
    let log = temp.join("requests.jsonl");
    let model = ScriptedModel::start("opencode-hooks.json", &log, &ws);
    let config = json!({
        "$schema": "https://opencode.ai/config.json",
        "provider": {"local": {
            "npm": "@ai-sdk/openai-compatible",
            "options": {"baseURL": format!("{}/v1", model.url), "apiKey": "scripted"},
            "models": {"scripted": {"limit": {"context": 8000, "output": 1000}}}
        }},
        "model": "local/scripted",
        "autoupdate": false,
        "share": "disabled"
    });
    std::fs::write(ws.join("opencode.json"), config.to_string()).unwrap();
    let data = temp.join("data");
    // A project's plugin runs `compactd` from PATH (setup writes no path of
    // this machine into a project): this build is on it, as an install is.
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_compactd")).parent().unwrap();
    let path = std::env::join_paths(std::iter::once(bin_dir.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let isolate = |command: &mut Command| {
        // opencode takes its directory from PWD.
        command
            .env("PATH", &path)
            .current_dir(&ws)
            .env("PWD", &ws)
            .env("HOME", &temp)
            .env("XDG_CONFIG_HOME", temp.join("config"))
            .env("XDG_DATA_HOME", &data)
            .env("XDG_STATE_HOME", temp.join("state"))
            .env("OPENCODE_DISABLE_MODELS_FETCH", "1")
            .env_remove("COMPACTD_BIN");
    };
    if plugin {
        let mut setup = Command::new(env!("CARGO_BIN_EXE_compactd"));
        isolate(&mut setup);
        let setup = setup
            .args(["setup", "opencode", "--project"])
            .output()
            .unwrap();
        assert!(setup.status.success(), "{setup:?}");
        assert!(ws.join(".opencode/plugins/compactd.ts").is_file());
    }
    let mut command = Command::new(&opencode);
    isolate(&mut command);
    if let Some(bin) = compactd_bin {
        command.env("COMPACTD_BIN", bin);
    }
    command.args(["run", "--print-logs"]);
    // Separate words: `opencode run` quotes an argument holding a space.
    command.args(CODEX_TASK.split(' '));
    let output = output_within(&mut command, MODEL_PATIENCE);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{output:?}");
    let requests = logged_requests(&log, "chat");
    let at = requests.iter().position(|r| r["compaction"] == true)?;
    let next = requests
        .get(at + 1)
        .map(|r| r["body"].to_string())
        .unwrap_or_default();
    Some(OpencodeRun {
        compaction: requests[at]["body"].to_string(),
        next,
        log: stderr,
        data,
        home: temp,
        ws,
    })
}

/// `compactd` as a terminal runs it where opencode ran (`run`'s HOME, data
/// folder and workspace).
fn compactd_after(run: &OpencodeRun) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_compactd"));
    command
        .arg("--no-user-config")
        .current_dir(&run.ws)
        .env("HOME", &run.home)
        .env("XDG_DATA_HOME", &run.data)
        .env_remove("OPENCODE_DB");
    command
}

/// The locator of the session opencode wrote in `run`, as `compactd
/// sessions` lists it (the only one of the workspace).
fn opencode_locator(run: &OpencodeRun) -> String {
    let out = output_within(
        compactd_after(run).args(["sessions", "opencode"]),
        MODEL_PATIENCE,
    );
    assert!(out.status.success(), "{out:?}");
    let listed = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<&str> = listed.lines().collect();
    assert_eq!(lines.len(), 1, "{listed}");
    assert!(lines[0].starts_with("opencode "), "{listed}");
    lines[0]
        .split_whitespace()
        .find(|word| word.contains("opencode.db#ses_"))
        .unwrap_or_else(|| panic!("no locator in {listed}"))
        .to_string()
}

#[test]
fn real_opencode_goes_on_after_compacting_with_what_compactd_knows() {
    let Some(without) = opencode_compaction(false, None) else {
        return;
    };
    let with = opencode_compaction(true, None).expect("opencode compacted");
    assert!(
        with.compaction.contains("compactd follows this session")
            && with.compaction.contains("Never use sudo."),
        "the summarization prompt lacks compactd's instructions: {}",
        with.compaction
    );
    assert!(!without.compaction.contains("compactd follows this session"));
    let (plain, kept) = (
        codex_kept_items(&without.next, Some("src/b.py")),
        codex_kept_items(&with.next, Some("src/b.py")),
    );
    let count = |items: &[(&str, bool)]| items.iter().filter(|(_, k)| *k).count();
    assert!(
        kept.iter().all(|(_, k)| *k),
        "missing after opencode compacted with compactd's plugin: {:?}\n{}",
        kept.iter().filter(|(_, k)| !k).collect::<Vec<_>>(),
        with.next
    );
    assert!(with.next.contains("compactd's record of this session"));
    assert!(
        count(&plain) < kept.len(),
        "the summary alone kept everything: {plain:?}"
    );
    // The mirror: opencode's session is a compactd session with its messages.
    let sessions = with.data.join("compactd/sessions");
    let mirror = std::fs::read_dir(&sessions)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            name.starts_with("opencode-") && name.ends_with(".jsonl")
        })
        .unwrap_or_else(|| panic!("no opencode session in {}", sessions.display()));
    let logged = std::fs::read_to_string(&mirror).unwrap();
    assert!(
        logged.contains("tests failed: 2 of 5") && logged.contains("\"toolCallId\""),
        "{logged}"
    );
    // What opencode's summary left out, in opencode's log.
    assert!(
        with.log
            .contains("compactd: opencode's summary dropped 1 of 1 modified files"),
        "{}",
        with.log
    );
    // What opencode wrote, read from its own store without the plugin:
    // listed, followed, and served over MCP.
    let locator = opencode_locator(&without);
    let followed = output_within(
        compactd_after(&without).args(["follow", &locator, "--once"]),
        MODEL_PATIENCE,
    );
    assert!(followed.status.success(), "{followed:?}");
    let meter = String::from_utf8_lossy(&followed.stdout);
    assert!(
        meter.contains(&format!("following opencode {locator}"))
            && meter.contains("opencode compacts at 7k")
            && meter.contains("1 files changed"),
        "{meter}"
    );
    let mcp = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "search_history", "arguments": {"query": "sudo"}}}),
    ]
    .map(|m| m.to_string() + "\n")
    .concat();
    let served = crate::support::output_with_stdin(
        compactd_after(&without).args(["mcp", "--transcript", &locator]),
        &mcp,
    );
    let answers = String::from_utf8_lossy(&served.stdout);
    assert!(answers.contains("Never use sudo."), "{served:?}");
    // With the plugin, following opencode's session is following the
    // plugin's session of it: one session, not two.
    let with_locator = opencode_locator(&with);
    let mut editor = Server::spawn_at(&sessions, &with.home, &with.ws, &[], &[]);
    editor.initialize(json!({}));
    let one = editor
        .request("conversation/follow", json!({"path": with_locator}))
        .unwrap();
    let plugin_session = mirror.file_stem().unwrap().to_string_lossy().into_owned();
    assert_eq!(one["sessionId"], plugin_session.as_str(), "{one}");
    assert_eq!(editor.shutdown_and_exit(), 0);
    // Without a compactd to run, opencode compacts as it would alone.
    let broken = opencode_compaction(true, Some("/nonexistent/compactd"))
        .expect("opencode compacted without compactd");
    assert_eq!(codex_kept_items(&broken.next, Some("src/b.py")), plain);
    assert!(
        broken
            .log
            .contains("compactd (/nonexistent/compactd) could not start"),
        "{}",
        broken.log
    );
    println!(
        "| opencode auto-compaction | {}/{} | {}/{} |",
        count(&plain),
        plain.len(),
        count(&kept),
        kept.len()
    );
}

// ---------------------------------------------------------------------
// Recall: what /compact dropped, searched through `compactd mcp`.

/// `--mcp-config` for this build's `compactd mcp` as the MCP server
/// `compactd`, written in `dir`. With `answers`, what the server answers
/// the agent and its stderr also go to that file, then `MCP_EXITED`.
fn compactd_mcp_config(dir: &Path, answers: Option<&Path>) -> PathBuf {
    let bin = env!("CARGO_BIN_EXE_compactd");
    let server = match answers {
        None => json!({"command": bin, "args": ["--no-user-config", "mcp"]}),
        Some(answers) => {
            let tee = format!(
                "\"$1\" --no-user-config mcp 2>>\"$0\" | tee -a \"$0\"; echo {MCP_EXITED} >>\"$0\""
            );
            json!({"command": "sh", "args": ["-c", tee, answers, bin]})
        }
    };
    let config = dir.join("mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"compactd": server}}).to_string(),
    )
    .unwrap();
    config
}

/// What `compactd_mcp_config`'s `answers` end with.
const MCP_EXITED: &str = "compactd-mcp-exited";

/// The tools the recall runs allow without asking.
const RECALL_TOOLS: &str = "Bash,mcp__compactd__search_history";

/// `claude -p` with `args` in `ws`, compactd mcp configured by `mcp`;
/// asserts it succeeded and gives its JSON result.
fn claude_print(
    claude: &Path,
    home: &Path,
    model: &ScriptedModel,
    ws: &Path,
    args: &[&str],
    mcp: Option<&Path>,
) -> Value {
    let mut command = claude_command(claude, home, model, ws);
    command.args(["-p"]).args(args).args([
        "--output-format",
        "json",
        "--allowedTools",
        RECALL_TOOLS,
    ]);
    if let Some(config) = mcp {
        command.arg("--mcp-config").arg(config);
    }
    let output = output_within(&mut command, MODEL_PATIENCE);
    assert!(output.status.success(), "{output:?}");
    serde_json::from_slice(&output.stdout).unwrap()
}

/// The text of the result of tool call `id` that Claude Code sent the
/// scripted model, from its `log`; none until it did.
fn tool_result(log: &Path, id: &str) -> Option<String> {
    let requests = std::fs::read_to_string(log).ok()?;
    let block = requests
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .flat_map(|r| {
            r["body"]["messages"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .find(|block| block["type"] == "tool_result" && block["tool_use_id"] == id)?;
    Some(match &block["content"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        other => other.to_string(),
    })
}

/// How many Claude Code transcripts `ws` has in `home`.
fn transcripts(home: &Path, ws: &Path) -> usize {
    std::fs::read_dir(claude_dir(home, ws)).map_or(0, |dir| {
        dir.flatten()
            .filter(|e| e.path().extension() == Some("jsonl".as_ref()))
            .count()
    })
}

/// What `claude-code-recall*.json`'s search after `/compact` gave the model,
/// from the scripted model's `log`: asserts that the model was asked for
/// the code without it in the request, offered compactd's search, and got
/// the code back in the search's result.
fn assert_recalled(log: &Path) -> String {
    let requests = logged_requests(log, "anthropic");
    let asked = requests
        .iter()
        .find(|r| r["turn"] == 3)
        .expect("the model was asked for the code after the compaction");
    assert!(
        !asked["body"].to_string().contains("ZQX-DEPLOY-4417"),
        "the code was compacted away before the search"
    );
    assert!(asked["body"]
        .to_string()
        .contains("mcp__compactd__search_history"));
    let result = tool_result(log, "toolu_recall").expect("the search's result went to the model");
    assert!(
        result.contains("ZQX-DEPLOY-4417"),
        "the search returned the compacted-away code: {result}"
    );
    // The hit is marked as summarized away, also when the compaction
    // happened while this server ran.
    assert!(
        result.contains("· compacted"),
        "the hit is not marked compacted: {result}"
    );
    result
}

#[test]
fn real_claude_code_gets_back_what_its_compaction_dropped_through_compactd_mcp() {
    let claude = or_skip!(claude());
    let temp = tempfile::tempdir().unwrap().keep();
    let ws = workspace(&temp);
    let home = claude_home(&temp);
    let log = temp.join("requests.jsonl");
    let model = ScriptedModel::start("claude-code-recall.json", &log, &ws);
    let config = compactd_mcp_config(&temp, None);
    let run = |args: &[&str], mcp: bool| {
        claude_print(&claude, &home, &model, &ws, args, mcp.then_some(&*config))
    };
    let first = run(&["Find the deploy code for staging."], false);
    let session = first["session_id"].as_str().unwrap().to_string();
    run(&["--resume", &session, "/compact"], false);
    run(&["--resume", &session, "What was the deploy code?"], true);
    let result = assert_recalled(&log);
    println!("recall over MCP: {result}");
}

/// A second session in a directory, started after another one there,
/// searches its own history through `compactd mcp`, not the first one's:
/// the server, started by the new `claude -p` before its transcript
/// exists, serves the session that appeared since.
#[test]
fn real_claude_code_new_session_searches_its_own_history_not_the_older_one() {
    let claude = or_skip!(claude());
    let temp = tempfile::tempdir().unwrap();
    let ws = workspace(temp.path());
    let home = claude_home(temp.path());
    let log = temp.path().join("requests.jsonl");
    let model = ScriptedModel::start("claude-code-recall-sessions.json", &log, &ws);
    let config = compactd_mcp_config(temp.path(), None);
    let first = claude_print(
        &claude,
        &home,
        &model,
        &ws,
        &["Find the deploy code for staging."],
        None,
    );
    let second = claude_print(
        &claude,
        &home,
        &model,
        &ws,
        &["Print the build marker."],
        Some(&config),
    );
    assert_ne!(first["session_id"], second["session_id"], "a new session");
    assert_eq!(transcripts(&home, &ws), 2, "two sessions in the directory");

    let result = |id| tool_result(&log, id).expect("the search's result went to the model");
    let own = result("toolu_search_own");
    assert!(
        own.contains("Bash: build marker: KVN-BUILD-9203"),
        "the search found the session's own Bash output: {own}"
    );
    // Claude Code writes the call to its transcript before making it: the
    // search does not list the call that asks it.
    assert!(
        !own.contains("search_history"),
        "the search listed its own call: {own}"
    );
    let other = result("toolu_search_other");
    assert!(
        !other.contains("staging deploy code") && !other.contains("Find the deploy code"),
        "the older session's messages were searched: {other}"
    );
    assert!(
        other.starts_with("No message of the ")
            && other.ends_with(" in this session holds all of: ZQX-DEPLOY-4417"),
        "nothing of the session holds the older one's code: {other}"
    );
}

/// The first session of a directory, in one interactive Claude Code
/// process: `compactd mcp` starts with it, before the session has a
/// transcript, and after `/compact` the search gives back what the
/// compaction dropped.
#[test]
fn real_claude_code_first_session_gets_back_what_compact_dropped_in_the_same_process() {
    let claude = or_skip!(claude());
    or_skip!(Tmux::installed());
    let temp = tempfile::tempdir().unwrap();
    let home = claude_home(temp.path());
    let ws = temp.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let ws = ws.canonicalize().unwrap();
    let log = temp.path().join("requests.jsonl");
    let model = ScriptedModel::start("claude-code-recall-interactive.json", &log, &ws);
    let answers = temp.path().join("mcp-answers");
    let config = compactd_mcp_config(temp.path(), Some(&answers));
    // Servers of --mcp-config start without asking; manual mode runs the
    // allowed tools without asking too, and adds no auto mode reminder
    // after their results.
    let args = format!(
        "--mcp-config {} --allowedTools {RECALL_TOOLS} --permission-mode manual",
        config.display()
    );
    let line = interactive_claude(&claude, &home, &model, &ws, &args);
    let tmux = Tmux::start(temp.path(), &ws, &line);
    // Claude Code has compactd's tools before the first prompt, and no
    // transcript yet.
    let what = || format!("compactd mcp's tools: {}", tmux.screen());
    let answered = until(temp.path(), what, || {
        let answered = std::fs::read_to_string(&answers).unwrap_or_default();
        (answered.contains("\"search_history\"") || answered.contains(MCP_EXITED))
            .then_some(answered)
    });
    assert!(
        answered.contains("\"search_history\""),
        "compactd mcp gave no tools: {answered}"
    );
    assert_eq!(
        transcripts(&home, &ws),
        0,
        "compactd mcp started before the transcript"
    );

    tmux.until_shown("❯");
    tmux.type_line(
        "Find the deploy code for staging.",
        "Find the deploy code for staging.",
    );
    tmux.until_shown("Got it.");
    tmux.type_line("/compact", "/compact");
    tmux.until_shown("Compacted");
    tmux.type_line("What was the deploy code?", "What was the deploy code?");
    let what = || format!("the search's result: {}", tmux.screen());
    until(temp.path(), what, || tool_result(&log, "toolu_recall"));
    assert_eq!(transcripts(&home, &ws), 1, "one session");
    let result = assert_recalled(&log);
    println!("recall over MCP in one process: {result}");
}
