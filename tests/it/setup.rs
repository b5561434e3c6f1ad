//! `compactd setup <agent>` over settings files that are not plain ones,
//! through the binary, with HOME in a temporary folder: a symlink into a
//! dotfiles folder, a user's private file set up by root, a read-only
//! file, a FIFO, a device or a folder where the file should be, and files
//! `--uninstall` must give back byte for byte though a parser could not
//! (nesting past serde_json's 128 levels, a lone surrogate, a
//! `config.toml` whose last line has no newline).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The binary with HOME at `home` and no agent folder moved elsewhere.
fn compactd(home: &Path) -> Command {
    crate::support::compactd_at_home(home)
}

/// Runs `compactd setup <agent> <args>`: whether it succeeded, and what it
/// printed (stdout then stderr). Setup never hangs: a run over 30 s is
/// killed and fails the test.
fn setup(home: &Path, agent: &str, args: &[&str]) -> (bool, String) {
    let mut child = compactd(home)
        .args(["setup", agent])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("`compactd setup {agent} {args:?}` still ran after 30 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let printed =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), printed)
}

fn settings(home: &Path) -> PathBuf {
    home.join(".claude/settings.json")
}

/// Writes `bytes` as Claude Code's settings in a new home.
fn home_with_settings(bytes: &[u8]) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".claude")).unwrap();
    std::fs::write(settings(home.path()), bytes).unwrap();
    home
}

/// Set up, then undone: the settings file is `before` again, byte for
/// byte, and nothing of compactd's is left beside it.
fn assert_round_trip(before: &[u8]) {
    let home = home_with_settings(before);
    let (ok, printed) = setup(home.path(), "claude-code", &[]);
    assert!(ok, "{printed}");
    let installed = std::fs::read(settings(home.path())).unwrap();
    assert!(
        String::from_utf8_lossy(&installed).contains("hook claude-code"),
        "{printed}"
    );
    let (ok, printed) = setup(home.path(), "claude-code", &["--uninstall"]);
    assert!(ok, "{printed}");
    assert!(
        std::fs::read(settings(home.path())).unwrap() == before,
        "not byte for byte: {}",
        String::from_utf8_lossy(&std::fs::read(settings(home.path())).unwrap())
    );
    let left: Vec<_> = std::fs::read_dir(home.path().join(".claude"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["settings.json"]);
}

/// The file names in `dir`.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A settings file kept in a dotfiles folder and linked (relatively) into
/// `~/.claude`: setup writes the file the link points to, in its folder,
/// and the link stays a link; uninstall gives the file back. A link whose
/// file does not exist yet gets it there, and uninstall takes it away
/// again, the link left as it was.
#[cfg(unix)]
#[test]
fn setup_writes_through_a_symlinked_settings_file_and_keeps_the_link() {
    let home = tempfile::tempdir().unwrap();
    let dotfiles = home.path().join("dotfiles/claude");
    std::fs::create_dir_all(&dotfiles).unwrap();
    std::fs::create_dir_all(home.path().join(".claude")).unwrap();
    let before = "{\n    \"model\": \"opus\"\n}\n";
    std::fs::write(dotfiles.join("settings.json"), before).unwrap();
    let link = settings(home.path());
    std::os::unix::fs::symlink("../dotfiles/claude/settings.json", &link).unwrap();
    let is_link = |p: &Path| p.symlink_metadata().unwrap().file_type().is_symlink();

    let (ok, printed) = setup(home.path(), "claude-code", &[]);
    assert!(ok, "{printed}");
    assert!(is_link(&link), "the link stays a link");
    let written = std::fs::read_to_string(dotfiles.join("settings.json")).unwrap();
    assert!(written.contains("hook claude-code"), "{written}");
    assert!(written.contains("\"model\": \"opus\""), "{written}");
    assert_eq!(names(&dotfiles), ["settings.json"], "no temporary left");

    let (ok, printed) = setup(home.path(), "claude-code", &["--uninstall"]);
    assert!(ok, "{printed}");
    assert!(is_link(&link));
    assert_eq!(
        std::fs::read_to_string(dotfiles.join("settings.json")).unwrap(),
        before
    );

    // A link to a file not written yet: created where the link points.
    std::fs::remove_file(dotfiles.join("settings.json")).unwrap();
    let (ok, printed) = setup(home.path(), "claude-code", &[]);
    assert!(ok, "{printed}");
    assert!(is_link(&link));
    assert!(std::fs::read_to_string(dotfiles.join("settings.json"))
        .unwrap()
        .contains("hook claude-code"));
    let (ok, printed) = setup(home.path(), "claude-code", &["--uninstall"]);
    assert!(ok, "{printed}");
    assert!(is_link(&link), "the link is left as it was");
    assert!(!dotfiles.join("settings.json").exists(), "{printed}");
}

/// Run as root (as `sudo` does, with HOME still the user's) over a user's
/// private files: they stay the user's and 0600, and so does the copy kept
/// beside them. Without root the owner cannot be another's; the mode is
/// still checked.
#[cfg(unix)]
#[test]
fn setup_run_as_root_keeps_a_users_private_settings_theirs_and_0600() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let root = unsafe { libc::geteuid() } == 0;
    let home = home_with_settings(b"{\"model\": \"opus\"}\n");
    let state = home.path().join(".claude.json");
    std::fs::write(&state, "{\"userID\": \"u1\"}\n").unwrap();
    for file in [settings(home.path()), state.clone()] {
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        if root {
            std::os::unix::fs::chown(&file, Some(4242), Some(4243)).unwrap();
        }
    }
    let owner_and_mode = |path: &Path| {
        let meta = std::fs::metadata(path).unwrap();
        (meta.uid(), meta.gid(), meta.permissions().mode() & 0o7777)
    };
    let theirs = owner_and_mode(&state);
    if root {
        assert_eq!(theirs, (4242, 4243, 0o600));
    }

    let (ok, printed) = setup(home.path(), "claude-code", &[]);
    assert!(ok, "{printed}");
    let copy = |file: &Path| {
        let mut name = file.file_name().unwrap().to_os_string();
        name.push(".before-compactd");
        file.with_file_name(name)
    };
    for file in [settings(home.path()), state.clone()] {
        assert!(std::fs::read_to_string(&file).unwrap().contains("compactd"));
        assert_eq!(owner_and_mode(&file), theirs, "{}", file.display());
        assert_eq!(owner_and_mode(&copy(&file)), theirs, "its copy");
    }
    let (ok, printed) = setup(home.path(), "claude-code", &["--uninstall"]);
    assert!(ok, "{printed}");
    for file in [settings(home.path()), state.clone()] {
        assert_eq!(owner_and_mode(&file), theirs, "{}", file.display());
    }
    assert_eq!(
        std::fs::read_to_string(&state).unwrap(),
        "{\"userID\": \"u1\"}\n"
    );
}

/// A read-only settings file (0444) is not rewritten behind its mode, not
/// even by root who could: setup exits non-zero naming the file and
/// saying it is read-only, and changes nothing: not that file, nor the
/// other file it would have changed before it, nor a copy beside it.
/// Uninstall over a file made read-only since refuses the same way.
#[cfg(unix)]
#[test]
fn setup_refuses_a_read_only_settings_file_and_changes_nothing() {
    use std::os::unix::fs::PermissionsExt;
    let read_only = |p: &Path| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o444)).unwrap();
    };
    let before = b"{\"model\": \"opus\"}\n";
    let home = home_with_settings(before);
    read_only(&settings(home.path()));
    let (ok, printed) = setup(home.path(), "claude-code", &[]);
    assert!(!ok, "{printed}");
    let file = settings(home.path()).display().to_string();
    assert!(
        printed.contains(&format!("{file} is read-only")),
        "{printed}"
    );
    assert!(printed.contains("nothing was changed"), "{printed}");
    assert_eq!(std::fs::read(settings(home.path())).unwrap(), before);
    assert_eq!(names(&home.path().join(".claude")), ["settings.json"]);
    assert!(!home.path().join(".claude.json").exists(), "{printed}");

    // The second file read-only: the first is not changed either.
    let home = home_with_settings(before);
    let state = home.path().join(".claude.json");
    std::fs::write(&state, "{}\n").unwrap();
    read_only(&state);
    let (ok, printed) = setup(home.path(), "claude-code", &[]);
    assert!(!ok, "{printed}");
    assert!(printed.contains(".claude.json is read-only"), "{printed}");
    assert_eq!(std::fs::read(settings(home.path())).unwrap(), before);
    assert_eq!(std::fs::read_to_string(&state).unwrap(), "{}\n");
    assert_eq!(names(&home.path().join(".claude")), ["settings.json"]);

    // Set up, then made read-only: uninstall refuses and keeps it.
    let home = home_with_settings(before);
    let (ok, printed) = setup(home.path(), "claude-code", &[]);
    assert!(ok, "{printed}");
    let installed = std::fs::read(settings(home.path())).unwrap();
    read_only(&settings(home.path()));
    let (ok, printed) = setup(home.path(), "claude-code", &["--uninstall"]);
    assert!(!ok && printed.contains("is read-only"), "{printed}");
    assert_eq!(std::fs::read(settings(home.path())).unwrap(), installed);
}

/// A FIFO, a device (a link to `/dev/zero`) or a folder where the settings
/// file should be: setup says what it is, exits non-zero at once (it
/// never blocks opening a FIFO nor reads a device without end) and leaves
/// it as it is.
#[cfg(unix)]
#[test]
fn setup_refuses_a_fifo_a_device_or_a_folder_as_settings_and_never_hangs() {
    type Make = fn(&Path);
    let kinds: [(&str, Make); 3] = [
        ("a FIFO", |p| {
            let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        }),
        ("a character device", |p| {
            std::os::unix::fs::symlink("/dev/zero", p).unwrap()
        }),
        ("a directory", |p| std::fs::create_dir(p).unwrap()),
    ];
    for (kind, make) in kinds {
        for args in [&[][..], &["--uninstall"], &["--dry-run"]] {
            let home = tempfile::tempdir().unwrap();
            std::fs::create_dir_all(home.path().join(".claude")).unwrap();
            make(&settings(home.path()));
            let (ok, printed) = setup(home.path(), "claude-code", args);
            assert!(!ok, "{kind} {args:?}: {printed}");
            assert!(
                printed.contains("settings.json: not a regular file") && printed.contains(kind),
                "{kind} {args:?}: {printed}"
            );
            assert_eq!(names(&home.path().join(".claude")), ["settings.json"]);
            assert!(!home.path().join(".claude.json").exists(), "{printed}");
        }
    }
}

/// JSON nested past serde_json's 128 levels (in a value setup does not
/// touch), 200 deep and 100,000 deep, with no final newline: set up and
/// undone, the file is as it was, byte for byte.
#[test]
fn setup_uninstall_gives_back_json_nested_past_128_levels_byte_for_byte() {
    for depth in [200, 100_000] {
        let before = format!(
            "{{\"deep\": {}{}, \"model\": \"opus\"}}",
            "[".repeat(depth),
            "]".repeat(depth)
        );
        assert_round_trip(before.as_bytes());
    }
}

/// A string holding a lone surrogate escape (`"\ud800"`: valid JSON text,
/// no Unicode string) is kept as written and given back byte for byte; a
/// key holding one is refused, the file left as it is.
#[test]
fn setup_uninstall_gives_back_a_lone_surrogate_byte_for_byte() {
    let before = "{\n\t\"note\": \"\\ud800\",\n\t\"env\": {\"X\": \"a\\udfffb\"}\n}";
    assert_round_trip(before.as_bytes());
    // The surrogate inside the value setup changes: kept as it was.
    let hooks = "{\"hooks\": {\"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"say \\ud800\"}]}]}}\n";
    assert_round_trip(hooks.as_bytes());

    let key = "{\"\\ud800\": 1}\n";
    let home = home_with_settings(key.as_bytes());
    let (ok, printed) = setup(home.path(), "claude-code", &[]);
    assert!(!ok, "{printed}");
    assert!(printed.contains("left as it is"), "{printed}");
    assert_eq!(std::fs::read_to_string(settings(home.path())).unwrap(), key);
}

/// Codex's `config.toml` gets `[mcp_servers.compactd]` appended; uninstall
/// gives the file back byte for byte whatever its end: a last line without
/// a newline, one with, blank lines, an empty file, no file.
#[test]
fn setup_codex_uninstall_gives_back_config_toml_byte_for_byte() {
    let cases: [Option<&str>; 5] = [
        Some("model = \"o4\""),
        Some("model = \"o4\"\n"),
        Some("model = \"o4\"\n\n\n"),
        Some(""),
        None,
    ];
    for before in cases {
        let home = tempfile::tempdir().unwrap();
        let codex = home.path().join(".codex");
        std::fs::create_dir_all(&codex).unwrap();
        let config = codex.join("config.toml");
        if let Some(before) = before {
            std::fs::write(&config, before).unwrap();
        }
        let (ok, printed) = setup(home.path(), "codex", &[]);
        assert!(ok, "{printed}");
        let installed = std::fs::read_to_string(&config).unwrap();
        let value: toml::Table = toml::from_str(&installed).unwrap();
        assert_eq!(
            value["mcp_servers"]["compactd"]["args"][0].as_str(),
            Some("mcp"),
            "{installed}"
        );
        if let Some(before) = before.filter(|b| !b.is_empty()) {
            assert_eq!(value["model"].as_str(), Some("o4"), "{before:?}");
        }
        let (ok, printed) = setup(home.path(), "codex", &["--uninstall"]);
        assert!(ok, "{printed}");
        match before {
            Some(before) => assert_eq!(
                std::fs::read_to_string(&config).unwrap(),
                before,
                "{installed}"
            ),
            None => assert!(!config.exists(), "no file before, none after"),
        }
    }
}

/// Gemini CLI's settings as a person keeps them: their own BeforeAgent
/// hook, another MCP server, their own spacing and key order.
const GEMINI_SETTINGS: &str = r#"{
    "model": {"compressionThreshold": 0.3},
    "hooks": {
        "BeforeAgent": [{"hooks": [{"type": "command", "command": "./mine.sh"}]}]
    },
    "mcpServers": {"other": {"command": "other-server"}},
    "zeta": [1,2,  3]
}
"#;

/// `compactd setup gemini`: `--dry-run` writes nothing; the hook goes
/// after theirs and the server beside theirs, in `~/.gemini/settings.json`;
/// a second run changes nothing; `--uninstall` gives the file back byte
/// for byte and leaves nothing of compactd's beside it.
#[test]
fn setup_gemini_merges_is_idempotent_and_uninstalls_byte_for_byte() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join(".gemini");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("settings.json");
    std::fs::write(&file, GEMINI_SETTINGS).unwrap();
    let (ok, printed) = setup(home.path(), "gemini", &["--dry-run"]);
    assert!(ok && printed.contains("add hooks.BeforeAgent"), "{printed}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), GEMINI_SETTINGS);

    let (ok, printed) = setup(home.path(), "gemini", &[]);
    assert!(ok, "{printed}");
    let installed = std::fs::read_to_string(&file).unwrap();
    let value: serde_json::Value = serde_json::from_str(&installed).unwrap();
    let groups = value["hooks"]["BeforeAgent"].as_array().unwrap();
    assert_eq!(groups.len(), 2, "{installed}");
    assert_eq!(groups[0]["hooks"][0]["command"], "./mine.sh");
    let ours = &groups[1]["hooks"][0];
    assert!(
        ours["command"].as_str().unwrap().ends_with(" hook gemini"),
        "{installed}"
    );
    assert_eq!(
        ours["timeout"], 30_000,
        "milliseconds, as Gemini CLI reads it"
    );
    assert_eq!(value["mcpServers"]["other"]["command"], "other-server");
    assert_eq!(value["mcpServers"]["compactd"]["args"][0], "mcp");
    assert_eq!(value["model"]["compressionThreshold"], 0.3);
    assert!(
        installed.contains("\"zeta\": [1,2,  3]"),
        "untouched values as written: {installed}"
    );

    let (ok, printed) = setup(home.path(), "gemini", &[]);
    assert!(ok && !printed.contains("add "), "{printed}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), installed);

    let (ok, printed) = setup(home.path(), "gemini", &["--uninstall"]);
    assert!(ok, "{printed}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), GEMINI_SETTINGS);
    assert_eq!(names(&dir), ["settings.json"]);
}

/// No settings before: the file is created, and `--uninstall` takes it
/// away again. `--project` writes the workspace's `.gemini/settings.json`
/// with `compactd` (never this machine's path) and says Gemini CLI reads
/// it only in a trusted folder.
#[test]
fn setup_gemini_creates_and_removes_its_file_and_sets_up_a_project() {
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join(".gemini/settings.json");
    let (ok, printed) = setup(home.path(), "gemini", &[]);
    assert!(ok, "{printed}");
    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(value["mcpServers"]["compactd"]["args"][0], "mcp");
    let (ok, printed) = setup(home.path(), "gemini", &["--uninstall"]);
    assert!(ok, "{printed}");
    assert!(!file.exists(), "no file before, none after");

    let project = home.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let out = compactd(home.path())
        .args(["setup", "gemini", "--project"])
        .current_dir(&project)
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{out:?}");
    assert!(printed.contains("trust"), "{printed}");
    let shared = std::fs::read_to_string(project.join(".gemini/settings.json")).unwrap();
    assert!(shared.contains("\"compactd hook gemini\""), "{shared}");
    assert!(!shared.contains(env!("CARGO_BIN_EXE_compactd")), "{shared}");
    assert!(!file.exists(), "the user's settings untouched");
}
