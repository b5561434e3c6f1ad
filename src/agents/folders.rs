//! What the agents' finders share: the workspace as the agents name it
//! (its real path), whether a path lies in a folder, a folder's `*.jsonl`
//! files, and the cwd a transcript's first line names (remembered).

use std::collections::HashMap;
use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::Value;

/// The workspace as the agents see their cwd: its real path (they run
/// `getcwd`), else as given.
pub fn real_workspace(workspace: &Path) -> PathBuf {
    fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf())
}

/// The cwd each transcript's first line names, remembered once read: a
/// first line never changes, and auto-follow looks every second, across
/// every recent Codex rollout of every workspace.
#[derive(Debug, Default)]
pub struct Cwds(Mutex<HashMap<PathBuf, String>>);

impl Cwds {
    /// The cwd at `pointer` in `path`'s first line.
    pub fn of(&self, path: &Path, pointer: &str) -> Option<String> {
        let mut known = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(cwd) = known.get(path) {
            return Some(cwd.clone());
        }
        // Not cached until it could be read: the line may not be written yet.
        let cwd = first_line_cwd(path, pointer)?;
        known.insert(path.to_path_buf(), cwd.clone());
        Some(cwd)
    }
}

/// Whether `path` (a real path) lies under `dir`, as its real path.
pub fn under(path: &Path, dir: &Path) -> bool {
    path.starts_with(real_workspace(dir))
}

/// The `*.jsonl` files directly in `dir`.
pub fn jsonl_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl") && p.is_file())
        .collect()
}

/// The cwd a transcript's first line names, at `pointer`.
fn first_line_cwd(path: &Path, pointer: &str) -> Option<String> {
    let file = crate::regular_file::open_read(path).ok()?;
    let mut line = Vec::new();
    BufReader::new(file.take(4 << 20))
        .read_until(b'\n', &mut line)
        .ok()?;
    let value: Value = serde_json::from_slice(&line).ok()?;
    value.pointer(pointer)?.as_str().map(str::to_string)
}
