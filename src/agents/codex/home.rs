//! Where Codex keeps its files, and what it calls them.

use std::fs;
use std::path::{Path, PathBuf};

use crate::agents::Homes;

/// Its name on the wire, and its transcript format's.
pub const NAME: &str = "codex";

pub(super) const HOME: &str = "CODEX_HOME";

pub(super) fn home(homes: &Homes) -> PathBuf {
    homes
        .var(HOME)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| homes.home().join(".codex"))
}

pub(super) fn sessions_root(homes: &Homes) -> PathBuf {
    home(homes).join("sessions")
}

/// `sessions/YYYY/MM/DD` folders, newest first.
pub(super) fn day_dirs(root: &Path) -> Vec<PathBuf> {
    let children = |dir: &Path| -> Vec<PathBuf> {
        let mut names: Vec<PathBuf> = fs::read_dir(dir)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        names.sort_by(|a, b| b.cmp(a));
        names
    };
    children(root)
        .iter()
        .flat_map(|year| children(year))
        .flat_map(|month| children(&month))
        .collect()
}
