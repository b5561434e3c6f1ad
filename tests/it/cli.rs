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
    let (a, b) = tokens.split_once(" → ").unwrap();
    assert!(
        b.parse::<u64>().unwrap() < a.parse::<u64>().unwrap(),
        "{line}"
    );
    assert!(stdout.contains("## Goals and requests"));
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
