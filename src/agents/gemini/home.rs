//! Where Gemini CLI keeps its files, and what it calls them.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::agents::{read_json, Homes};

/// Its name on the wire, and its transcript format's.
pub const NAME: &str = "gemini";

/// Moves its home: its folder is `$GEMINI_CLI_HOME/.gemini`.
pub(super) const CLI_HOME: &str = "GEMINI_CLI_HOME";

/// `~/.gemini`, or `$GEMINI_CLI_HOME/.gemini`.
pub(super) fn gemini_dir(homes: &Homes) -> PathBuf {
    homes.var(CLI_HOME).unwrap_or(homes.home()).join(".gemini")
}

/// Where every workspace's folder is (`<gemini>/tmp`).
pub(super) fn tmp_dir(homes: &Homes) -> PathBuf {
    gemini_dir(homes).join("tmp")
}

/// The workspace's session folder: `<gemini>/tmp/<id>/chats`, the id its
/// `projects.json` gives the workspace's path, else (a workspace it has not
/// registered yet) the id it would give it first: the folder's name,
/// lowercased, every run of other characters than `[a-z0-9]` one `-`.
pub(super) fn chats_dir(homes: &Homes, workspace: &Path) -> PathBuf {
    tmp_dir(homes)
        .join(project_id(homes, workspace))
        .join("chats")
}

/// Where a Gemini CLI older than its project registry kept them:
/// `<gemini>/tmp/<sha-256 of the path>/chats` (it moves them on start).
pub(super) fn legacy_chats_dir(homes: &Homes, workspace: &Path) -> PathBuf {
    tmp_dir(homes).join(project_hash(workspace)).join("chats")
}

/// The `projectHash` its session files record: the SHA-256 of the path.
pub(super) fn project_hash(workspace: &Path) -> String {
    Sha256::digest(workspace.to_string_lossy().as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn project_id(homes: &Homes, workspace: &Path) -> String {
    let registry = read_json(&gemini_dir(homes).join("projects.json"));
    let key = workspace.to_string_lossy();
    match registry
        .as_ref()
        .and_then(|r| r.get("projects")?.get(&*key)?.as_str())
    {
        Some(id) => id.to_string(),
        None => slug(workspace),
    }
}

fn slug(workspace: &Path) -> String {
    let name = workspace
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let dashed: Vec<&str> = name
        .split(|c: char| !c.is_ascii_lowercase() && !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .collect();
    match dashed.join("-") {
        s if s.is_empty() => "project".to_string(),
        s => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As measured with Gemini CLI 0.61.0: `/tmp/gem1/ws` was registered
    /// as `ws`, and its files record this hash.
    #[test]
    fn folders_match_the_agent() {
        let dir = tempfile::tempdir().unwrap();
        let homes = Homes::under(dir.path());
        let ws = Path::new("/tmp/gem1/ws");
        assert_eq!(
            project_hash(ws),
            "921a6a4d991144cd41c68d45ab2f2f0755493e60b2937aa7b6ff565a3c4333a7"
        );
        assert_eq!(
            chats_dir(&homes, ws),
            dir.path().join(".gemini/tmp/ws/chats")
        );
        assert_eq!(slug(Path::new("/a/My Proj_v2.x")), "my-proj-v2-x");
        assert_eq!(slug(Path::new("/a/ünï")), "n");
        assert_eq!(slug(Path::new("/")), "project");
        std::fs::create_dir_all(dir.path().join(".gemini")).unwrap();
        std::fs::write(
            dir.path().join(".gemini/projects.json"),
            r#"{"projects": {"/tmp/gem1/ws": "ws-1"}}"#,
        )
        .unwrap();
        assert_eq!(
            chats_dir(&homes, ws),
            dir.path().join(".gemini/tmp/ws-1/chats")
        );
        let moved = Homes::under(dir.path()).with_var(CLI_HOME, "/elsewhere");
        assert_eq!(gemini_dir(&moved), Path::new("/elsewhere/.gemini"));
    }
}
