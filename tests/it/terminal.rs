//! compactd for a terminal and inside an agent's own settings, through
//! the binary: `setup`, `hook`, `sessions`, `follow`.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;

use serde_json::{json, Value};

use crate::follow::claude_dir;
use crate::support::{compactd_at_home, output_with_stdin, PATIENCE};

fn compactd(home: &Path) -> Command {
    compactd_at_home(home)
}

const FIXTURE: &str = "5217d838-5181-433d-a8b8-c96b9ad7bfb3.jsonl";

// ---------------------------------------------------------------------
// `compactd setup claude-code`

/// One `check()` for setup: `args` run in a home whose settings file holds
/// `before` (none when `None`); the exit status, stdout and the file after.
fn setup(home: &Path, args: &[&str]) -> (bool, String, Option<String>) {
    let out = compactd(home)
        .args(["setup", "claude-code"])
        .args(args)
        .output()
        .unwrap();
    let settings = std::fs::read_to_string(home.join(".claude/settings.json")).ok();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
        settings,
    )
}

#[test]
fn setup_merges_into_existing_settings_twice_is_once_and_uninstall_restores_them() {
    let home = tempfile::tempdir().unwrap();
    let before = "{\n\t\"model\": \"opus\",\n\t\"hooks\": {\"PreCompact\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"./mine.sh\"}]}], \"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"say done\"}]}]},\n\t\"env\": {\"A\": \"1\"}\n}\n";
    std::fs::create_dir_all(home.path().join(".claude")).unwrap();
    std::fs::write(home.path().join(".claude/settings.json"), before).unwrap();

    let (ok, printed, after) = setup(home.path(), &["--dry-run"]);
    assert!(ok && printed.contains("would change"), "{printed}");
    assert_eq!(after.as_deref(), Some(before), "a dry run writes nothing");

    let (ok, printed, installed) = setup(home.path(), &[]);
    assert!(ok, "{printed}");
    let installed = installed.unwrap();
    let value: Value = serde_json::from_str(&installed).unwrap();
    let ours = format!("{} hook claude-code", env!("CARGO_BIN_EXE_compactd"));
    assert_eq!(value["model"], "opus");
    assert_eq!(value["env"], json!({"A": "1"}));
    assert_eq!(value["hooks"]["Stop"][0]["hooks"][0]["command"], "say done");
    assert_eq!(
        value["hooks"]["PreCompact"][0]["hooks"][0]["command"],
        "./mine.sh"
    );
    assert_eq!(
        value["hooks"]["PreCompact"][1]["hooks"][0]["command"],
        ours.as_str()
    );
    assert_eq!(value["hooks"]["SessionStart"][0]["matcher"], "compact");
    assert_eq!(
        value["hooks"]["PostCompact"][0]["hooks"][0]["command"],
        ours.as_str()
    );
    assert!(value["statusLine"]["command"]
        .as_str()
        .unwrap()
        .ends_with("compactd statusline"));

    // compactd mcp as Claude Code's MCP server `compactd` (user scope).
    let state: Value =
        serde_json::from_str(&std::fs::read_to_string(home.path().join(".claude.json")).unwrap())
            .unwrap();
    assert_eq!(
        state["mcpServers"]["compactd"],
        json!({"type": "stdio", "command": env!("CARGO_BIN_EXE_compactd"), "args": ["mcp"]})
    );

    let (ok, printed, again) = setup(home.path(), &[]);
    assert!(ok && printed.contains("nothing to change"), "{printed}");
    assert_eq!(again.as_deref(), Some(installed.as_str()), "twice is once");

    let (ok, printed, restored) = setup(home.path(), &["--uninstall"]);
    assert!(ok, "{printed}");
    assert_eq!(restored.as_deref(), Some(before), "byte for byte");
    assert!(
        !home.path().join(".claude.json").exists(),
        "it made the file: it goes"
    );
    let leftovers: Vec<_> = std::fs::read_dir(home.path().join(".claude"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers, ["settings.json"]);
}

/// Claude Code creates its `.claude.json` (user id, account, projects)
/// 0600 and keeps whatever mode it finds: setup must not create it
/// readable by everyone. A file that exists keeps its mode and owner (run
/// as root, as CI is, the owner is another user's), and a settings file
/// that is a symlink into a dotfiles folder stays a symlink.
#[cfg(unix)]
#[test]
fn setup_creates_the_state_file_private_and_keeps_an_existing_ones_mode_and_owner() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    let fresh = tempfile::tempdir().unwrap();
    let (ok, printed, _) = setup(fresh.path(), &[]);
    assert!(ok, "{printed}");
    assert_eq!(mode(&fresh.path().join(".claude.json")), 0o600);

    let home = tempfile::tempdir().unwrap();
    let state = home.path().join(".claude.json");
    std::fs::write(&state, "{\"theme\": \"dark\"}\n").unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o640)).unwrap();
    if unsafe { libc::geteuid() } == 0 {
        std::os::unix::fs::chown(&state, Some(4242), Some(4243)).unwrap();
    }
    let owner = |path: &Path| {
        let meta = std::fs::metadata(path).unwrap();
        (meta.uid(), meta.gid())
    };
    let before = owner(&state);
    let dotfiles = home.path().join("dotfiles");
    std::fs::create_dir_all(&dotfiles).unwrap();
    std::fs::create_dir_all(home.path().join(".claude")).unwrap();
    std::fs::write(dotfiles.join("settings.json"), "{}\n").unwrap();
    let link = home.path().join(".claude/settings.json");
    std::os::unix::fs::symlink(dotfiles.join("settings.json"), &link).unwrap();

    let (ok, printed, _) = setup(home.path(), &[]);
    assert!(ok, "{printed}");
    assert!(std::fs::read_to_string(&state)
        .unwrap()
        .contains("mcpServers"));
    assert_eq!(mode(&state), 0o640);
    assert_eq!(owner(&state), before);
    assert!(link.symlink_metadata().unwrap().file_type().is_symlink());
    let linked = std::fs::read_to_string(dotfiles.join("settings.json")).unwrap();
    assert!(linked.contains("hook claude-code"), "{linked}");
}

/// Another install's compactd (`/opt/other/compactd`) is not this setup's:
/// setup adds its own hooks beside it, keeps its status line, and
/// uninstall removes only what it wrote.
#[test]
fn setup_counts_and_removes_only_what_it_wrote() {
    let home = tempfile::tempdir().unwrap();
    let before = "{\n  \"hooks\": {\"PreCompact\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"/opt/other/compactd hook claude-code\"}]}]},\n  \"statusLine\": {\"type\": \"command\", \"command\": \"/opt/other/compactd statusline\"}\n}\n";
    std::fs::create_dir_all(home.path().join(".claude")).unwrap();
    std::fs::write(home.path().join(".claude/settings.json"), before).unwrap();
    let (ok, printed, installed) = setup(home.path(), &[]);
    assert!(ok, "{printed}");
    let value: Value = serde_json::from_str(&installed.unwrap()).unwrap();
    let ours = format!("{} hook claude-code", env!("CARGO_BIN_EXE_compactd"));
    let pre = &value["hooks"]["PreCompact"];
    assert_eq!(
        pre[0]["hooks"][0]["command"],
        "/opt/other/compactd hook claude-code"
    );
    assert_eq!(pre[1]["hooks"][0]["command"], ours.as_str(), "{value}");
    assert_eq!(
        value["statusLine"]["command"],
        "/opt/other/compactd statusline"
    );
    assert!(printed.contains("statusLine: kept yours"), "{printed}");
    // Again: nothing changes, and it says so (what it kept is no change).
    let (ok, printed, _) = setup(home.path(), &[]);
    assert!(ok && !printed.contains("changed:"), "{printed}");
    assert!(
        printed.contains("settings.json: nothing to change"),
        "{printed}"
    );
    let (ok, printed, restored) = setup(home.path(), &["--uninstall"]);
    assert!(ok, "{printed}");
    assert_eq!(
        restored.as_deref(),
        Some(before),
        "theirs stay, byte for byte"
    );
}

#[test]
fn setup_leaves_a_settings_file_it_cannot_parse_alone() {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".claude")).unwrap();
    let broken = "{ \"model\": \"opus\", // a comment\n}";
    std::fs::write(home.path().join(".claude/settings.json"), broken).unwrap();
    let (ok, printed, after) = setup(home.path(), &[]);
    assert!(!ok);
    assert!(
        printed.contains("is not a JSON object compactd can merge into"),
        "{printed}"
    );
    assert_eq!(after.as_deref(), Some(broken));
}

// ---------------------------------------------------------------------
// `compactd setup opencode`: a plugin file compactd owns

#[test]
fn setup_opencode_writes_its_plugin_once_leaves_others_alone_and_removes_only_its_own() {
    let home = tempfile::tempdir().unwrap();
    let plugins = home.path().join(".config/opencode/plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::write(
        plugins.join("mine.ts"),
        "export const Mine = async () => ({})\n",
    )
    .unwrap();
    let run = |args: &[&str]| {
        let out = compactd(home.path())
            .env_remove("XDG_CONFIG_HOME")
            .args(["setup", "opencode"])
            .args(args)
            .output()
            .unwrap();
        let printed = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.success(), printed)
    };
    let ours = plugins.join("compactd.ts");

    let (ok, printed) = run(&["--dry-run"]);
    assert!(ok && printed.contains("would change"), "{printed}");
    assert!(!ours.exists(), "a dry run writes nothing");
    let (ok, printed) = run(&[]);
    assert!(ok && printed.contains("add "), "{printed}");
    let plugin = std::fs::read_to_string(&ours).unwrap();
    let path_line = format!(
        "const COMPACTD_PATH = {};",
        serde_json::to_string(env!("CARGO_BIN_EXE_compactd")).unwrap()
    );
    assert!(plugin.contains(&path_line), "the plugin runs this compactd");
    assert!(plugin.contains("experimental.session.compacting"));
    let (ok, printed) = run(&[]);
    assert!(ok && printed.contains("nothing to change"), "{printed}");
    // The user edits compactd's plugin: setup again keeps their version
    // beside it and says so.
    let edited = format!("{plugin}// my own tweak\n");
    std::fs::write(&ours, &edited).unwrap();
    let (ok, printed) = run(&[]);
    assert!(
        ok && printed.contains("with any edits of yours"),
        "{printed}"
    );
    let kept = plugins.join("compactd.ts.compactd-old");
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), edited);
    assert_eq!(std::fs::read_to_string(&ours).unwrap(), plugin);
    std::fs::remove_file(&kept).unwrap();

    let (ok, printed) = run(&["--uninstall"]);
    assert!(ok && printed.contains("remove"), "{printed}");
    assert!(!ours.exists());
    assert!(plugins.join("mine.ts").exists(), "another plugin is kept");

    // A compactd.ts that is not compactd's is someone else's.
    std::fs::write(&ours, "export const Other = async () => ({})\n").unwrap();
    for args in [&[][..], &["--uninstall"]] {
        let (ok, printed) = run(args);
        assert!(!ok && printed.contains("is not compactd's"), "{printed}");
        assert_eq!(
            std::fs::read_to_string(&ours).unwrap(),
            "export const Other = async () => ({})\n"
        );
    }
}

/// With this binary on PATH, setup writes `compactd`, so a binary moved
/// (or upgraded into another folder on PATH) keeps every hook working; a
/// project's settings name `compactd` always, never this machine's path.
#[test]
fn setup_names_compactd_from_path_so_a_moved_binary_still_runs() {
    let temp = tempfile::tempdir().unwrap();
    let (home, first, second) = (
        temp.path().join("home"),
        temp.path().join("bin1"),
        temp.path().join("bin2"),
    );
    for dir in [&home, &first, &second] {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::copy(env!("CARGO_BIN_EXE_compactd"), first.join("compactd")).unwrap();
    let path_with = |dir: &Path| format!("{}:/usr/bin:/bin", dir.display());
    let run = |binary: &Path, path: &str, args: &[&str]| {
        let out = Command::new(binary)
            .arg("--no-user-config")
            .args(args)
            .env("HOME", &home)
            .env("XDG_DATA_HOME", home.join("data"))
            .env("PATH", path)
            .env_remove("CLAUDE_CONFIG_DIR")
            .current_dir(temp.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    run(
        &first.join("compactd"),
        &path_with(&first),
        &["setup", "claude-code"],
    );
    let settings = || -> Value {
        serde_json::from_str(&std::fs::read_to_string(home.join(".claude/settings.json")).unwrap())
            .unwrap()
    };
    let command = settings()["hooks"]["SessionStart"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(command, "compactd hook claude-code");
    let state: Value =
        serde_json::from_str(&std::fs::read_to_string(home.join(".claude.json")).unwrap()).unwrap();
    assert_eq!(state["mcpServers"]["compactd"]["command"], "compactd");

    // Moved: the hook as Claude Code runs it (a shell, the user's PATH).
    std::fs::rename(first.join("compactd"), second.join("compactd")).unwrap();
    let input = json!({"session_id": "s", "transcript_path": crate::support::fixture(&format!("claude-code/{}", FIXTURE)), "cwd": temp.path(),
        "hook_event_name": "SessionStart", "source": "compact"});
    let mut shell = Command::new("sh");
    shell
        .args(["-c", &command])
        .env("HOME", &home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("PATH", path_with(&second));
    let out = output_with_stdin(&mut shell, &input.to_string());
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && said.contains("compactd's record of this session"),
        "{out:?}"
    );
    // The moved binary's setup finds its own entries: nothing to change.
    let again = run(
        &second.join("compactd"),
        &path_with(&second),
        &["setup", "claude-code"],
    );
    assert!(!again.contains("changed:"), "{again}");

    // An earlier setup's absolute path to the same binary is its own too.
    let absolute = format!("{} hook claude-code", second.join("compactd").display());
    let text = std::fs::read_to_string(home.join(".claude/settings.json")).unwrap();
    std::fs::write(
        home.join(".claude/settings.json"),
        text.replace("\"compactd hook claude-code\"", &format!("{absolute:?}")),
    )
    .unwrap();
    let again = run(
        &second.join("compactd"),
        &path_with(&second),
        &["setup", "claude-code"],
    );
    assert!(!again.contains("add hooks"), "{again}");

    // A project's settings: `compactd`, and a note when PATH lacks it.
    let project = temp.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let out = Command::new(second.join("compactd"))
        .args(["--no-user-config", "setup", "claude-code", "--project"])
        .env("HOME", &home)
        .env("PATH", "/usr/bin:/bin")
        .current_dir(&project)
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && printed.contains("is not on it"),
        "{out:?}"
    );
    let shared = std::fs::read_to_string(project.join(".claude/settings.json")).unwrap();
    assert!(shared.contains("\"compactd hook claude-code\""), "{shared}");
    assert!(!shared.contains(temp.path().to_str().unwrap()), "{shared}");
}

// ---------------------------------------------------------------------
// `compactd hook claude-code`

fn hook(home: &Path, input: &str) -> (bool, String) {
    let mut command = compactd(home);
    command.args(["hook", "claude-code"]).stderr(Stdio::null());
    let out = output_with_stdin(&mut command, input);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn hooks_answer_from_the_transcript_and_never_fail_the_agent() {
    let home = tempfile::tempdir().unwrap();
    let transcript = crate::support::fixture(&format!("claude-code/{}", FIXTURE));
    let input = |event: &str| {
        json!({"session_id": "s", "transcript_path": transcript, "cwd": home.path(),
            "hook_event_name": event, "source": "compact", "trigger": "manual",
            "compact_summary": "Nothing much happened."})
        .to_string()
    };
    let (ok, before) = hook(home.path(), &input("PreCompact"));
    assert!(
        ok && before.starts_with("compactd follows this session."),
        "{before}"
    );
    let (ok, after) = hook(home.path(), &input("SessionStart"));
    assert!(ok);
    let after: Value = serde_json::from_str(&after).unwrap();
    let context = after["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert_eq!(after["hookSpecificOutput"]["hookEventName"], "SessionStart");
    assert!(
        context.starts_with("compactd's record of this session"),
        "{context}"
    );
    assert!(context.chars().count() <= 10_000);
    let (ok, dropped) = hook(home.path(), &input("PostCompact"));
    assert!(
        ok && dropped.contains("Claude Code's summary dropped"),
        "{dropped}"
    );
    // Without `compact_summary` nothing can be checked: it says so, and
    // does not claim the summary dropped everything.
    let mut unsent: Value = serde_json::from_str(&input("PostCompact")).unwrap();
    unsent.as_object_mut().unwrap().remove("compact_summary");
    let (ok, said) = hook(home.path(), &unsent.to_string());
    assert!(ok && said.contains("could not check"), "{said}");
    assert!(!said.contains("dropped"), "{said}");
    // Nothing for what it does not take part in, and nothing harmful on
    // any error: exit 0, empty stdout.
    for input in [
        json!({"hook_event_name": "Stop", "transcript_path": transcript}).to_string(),
        json!({"hook_event_name": "PreCompact", "transcript_path": "/no/such/file.jsonl", "cwd": "/"}).to_string(),
        "not json".to_string(),
        String::new(),
    ] {
        assert_eq!(hook(home.path(), &input), (true, String::new()), "{input}");
    }
}

#[test]
fn the_hooks_after_a_compaction_answer_from_what_the_hook_before_it_read() {
    let home = tempfile::tempdir().unwrap();
    let transcript = home.path().join("session.jsonl");
    std::fs::copy(
        crate::support::fixture(&format!("claude-code/{}", FIXTURE)),
        &transcript,
    )
    .unwrap();
    let input = |event: &str| {
        json!({"session_id": "s", "transcript_path": transcript, "cwd": home.path(),
            "hook_event_name": event, "source": "compact", "trigger": "manual"})
        .to_string()
    };
    let context = |home: &Path| {
        let (ok, out) = hook(home, &input("SessionStart"));
        assert!(ok, "{out}");
        let out: Value = serde_json::from_str(&out).unwrap();
        out["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let append = |line: Value| {
        let mut text = std::fs::read_to_string(&transcript).unwrap();
        text.push_str(&format!("{line}\n"));
        std::fs::write(&transcript, text).unwrap();
    };
    let last_uuid = std::fs::read_to_string(&transcript)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["uuid"].as_str().map(str::to_string))
        .next_back()
        .unwrap();

    let (ok, _) = hook(home.path(), &input("PreCompact"));
    assert!(ok);
    let before = context(home.path());
    // What the transcript gains after the hook before the compaction (the
    // compaction's own lines) is not read again.
    append(
        json!({"type": "user", "uuid": "later-1", "parentUuid": last_uuid, "sessionId": "s",
        "message": {"role": "user", "content": "ZQX-LATER-REQUEST: now the docs"}}),
    );
    assert_eq!(
        context(home.path()),
        before,
        "answered from the hook before"
    );
    // Grown by more than a compaction writes: read again.
    append(
        json!({"type": "file-history-snapshot", "messageId": "later-1", "snapshot": {"pad": "x".repeat(5 << 20)}}),
    );
    assert!(context(home.path()).contains("ZQX-LATER-REQUEST"));
}

// ---------------------------------------------------------------------
// `compactd sessions` and `compactd follow`

/// A workspace and, in a temporary home, Claude Code's folder for it.
fn claude_workspace(home: &Path) -> (PathBuf, PathBuf) {
    let ws = home.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let ws = ws.canonicalize().unwrap();
    let dir = claude_dir(home, &ws);
    std::fs::create_dir_all(&dir).unwrap();
    (ws, dir)
}

#[test]
fn sessions_lists_the_workspaces_agent_sessions() {
    let home = tempfile::tempdir().unwrap();
    let (ws, dir) = claude_workspace(home.path());
    let out = compactd(home.path())
        .arg("sessions")
        .current_dir(&ws)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout)
        .starts_with("no Claude Code, Codex, pi, Gemini CLI, opencode session of"));
    std::fs::copy(
        crate::support::fixture(&format!("claude-code/{}", FIXTURE)),
        dir.join(FIXTURE),
    )
    .unwrap();
    let out = compactd(home.path())
        .arg("sessions")
        .current_dir(&ws)
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(listed.starts_with("claude-code "), "{listed}");
    assert!(
        listed.contains(&dir.join(FIXTURE).display().to_string()),
        "{listed}"
    );
    let unknown = compactd(home.path())
        .args(["sessions", "cursor"])
        .current_dir(&ws)
        .output()
        .unwrap();
    assert_eq!(unknown.status.code(), Some(2));
}

#[test]
fn follow_prints_the_meter_as_the_agent_writes_and_its_compactions() {
    let home = tempfile::tempdir().unwrap();
    let (ws, dir) = claude_workspace(home.path());
    let lines: Vec<String> =
        std::fs::read_to_string(crate::support::fixture(&format!("claude-code/{}", FIXTURE)))
            .unwrap()
            .lines()
            .map(|l| format!("{l}\n"))
            .collect();
    // The session up to just before Claude Code's compaction boundary.
    let boundary = lines
        .iter()
        .position(|l| l.contains("compact_boundary"))
        .unwrap();
    let path = dir.join(FIXTURE);
    std::fs::write(&path, lines[..boundary].concat()).unwrap();
    let mut child = compactd(home.path())
        .args(["follow", "claude-code"])
        .current_dir(&ws)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let next = || {
        rx.recv_timeout(PATIENCE)
            .expect("a line from compactd follow")
    };
    assert_eq!(next(), format!("following Claude Code {}", path.display()));
    let first = next();
    assert!(
        first.starts_with("⛁ ") && first.contains("Claude Code compacts at"),
        "{first}"
    );
    // The agent compacts: the line says so, then the meter drops.
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    file.write_all(lines[boundary..].concat().as_bytes())
        .unwrap();
    drop(file);
    let compacted = next();
    assert!(
        compacted.starts_with("Claude Code compacted: "),
        "{compacted}"
    );
    let after = next();
    assert!(
        after.starts_with("⛁ ") && after != first,
        "{first} → {after}"
    );
    child.kill().unwrap();
    child.wait().unwrap();
}

/// `compactd follow` shows an estimated point with `~`, as the status line
/// and the editors do, and honours `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE` as
/// Claude Code does (the fixture's window is 1M: 5% of 980k is 49k).
#[test]
fn follow_marks_an_estimated_point_and_honours_the_override() {
    let home = tempfile::tempdir().unwrap();
    let out = compactd(home.path())
        .args(["follow", "--once"])
        .arg(crate::support::fixture(&format!("claude-code/{}", FIXTURE)))
        .env("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE", "5")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(stdout.contains("Claude Code compacts at ~49k"), "{stdout}");
    let plain = compactd(home.path())
        .args(["follow", "--once"])
        .arg(crate::support::fixture(&format!("claude-code/{}", FIXTURE)))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&plain.stdout);
    assert!(stdout.contains("Claude Code compacts at 977k"), "{stdout}");
}
