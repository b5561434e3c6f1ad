//! pi (`@mariozechner/pi-coding-agent`), as measured with 0.73.1:
//!
//! - **Folders**: `$PI_CODING_AGENT_DIR`, else `~/.pi/agent` (`sessions/`,
//!   `settings.json`, `models.json`); `$PI_CODING_AGENT_SESSION_DIR` puts
//!   every workspace's sessions in one folder instead.
//! - **Sessions**: `<agentDir>/sessions/--<cwd without its leading '/',
//!   with '/', '\' and ':' as '-'>--/*.jsonl` (other characters kept), or
//!   every file of `$PI_CODING_AGENT_SESSION_DIR` whose header names the
//!   workspace.
//! - **Transcript**: `transcript.rs`, linear or the tree layout (the reader
//!   of a followed file keeps to its active branch).
//! - **Auto-compaction**: above `contextWindow − compaction.reserveTokens`
//!   (default 16,384; `compaction.enabled` false turns it off), from
//!   `<agentDir>/settings.json` with the workspace's `.pi/settings.json`
//!   over it (`shouldCompact` in its code). The window is the model's in
//!   `<agentDir>/models.json`, else compactd's table (then an estimate).

mod auto_compact;
mod home;
mod setup;
pub mod transcript;

use std::io;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::folders::{jsonl_files, under, Cwds};
use super::{AgentKind, AutoCompactPoint, Homes, LimitsInput};
use crate::transcript::tail::Tail;
use crate::transcript::{Imported, Line, Reader};
use auto_compact::{config, point};
use home::{agent_dir, AGENT_DIR, SESSION_DIR};
pub use home::{dir_name, NAME};

/// The agent.
pub struct Pi;

impl AgentKind for Pi {
    fn supports(&self) -> super::Supports {
        super::Supports {
            setup: true,
            hooks: false,
            status_line: false,
        }
    }

    fn name(&self) -> &'static str {
        NAME
    }

    fn setup(
        &self,
        homes: &Homes,
        project: Option<&Path>,
        compactd: &Path,
    ) -> Result<Vec<super::setup::Setup>, String> {
        Ok(setup::setup(homes, project, compactd))
    }

    fn display_name(&self) -> &'static str {
        "pi"
    }

    fn format_description(&self) -> &'static str {
        "pi session JSONL"
    }

    fn env_vars(&self) -> &'static [&'static str] {
        &[AGENT_DIR, SESSION_DIR]
    }

    fn sessions(&self, homes: &Homes, cwds: &Cwds, workspace: &Path, _: usize) -> Vec<PathBuf> {
        let cwd = workspace.to_string_lossy();
        let files = jsonl_files(&self.session_dir(homes, workspace));
        match homes.var(SESSION_DIR) {
            // One folder for every workspace: the header names the cwd.
            Some(_) => files
                .into_iter()
                .filter(|path| cwds.of(path, "/cwd").as_deref() == Some(&*cwd))
                .collect(),
            None => files,
        }
    }

    fn session_dir(&self, homes: &Homes, workspace: &Path) -> PathBuf {
        match homes.var(SESSION_DIR) {
            Some(dir) => dir.to_path_buf(),
            None => agent_dir(homes)
                .join("sessions")
                .join(dir_name(&workspace.to_string_lossy())),
        }
    }

    fn owns(&self, homes: &Homes, path: &Path) -> bool {
        under(path, &agent_dir(homes).join("sessions"))
            || homes.var(SESSION_DIR).is_some_and(|dir| under(path, dir))
    }

    fn classify(&self, line: &Value) -> bool {
        transcript::classify(line)
    }

    /// For a followed file, the reader keeps to the branch the file's
    /// entries end on so far (`active_path`).
    fn reader(&self, path: Option<&Path>) -> io::Result<Box<dyn Reader + Send>> {
        let branch = match path {
            Some(path) => active_path_of(path)?,
            None => None,
        };
        Ok(Box::new(transcript::Reader::on_path(branch)))
    }

    /// The name given with `/name` (a `session_info` line).
    fn session_name(&self, lines: &[Line]) -> Option<String> {
        lines
            .iter()
            .filter_map(|l| l.value.as_ref().ok())
            .find_map(|v| {
                (v.get("type")?.as_str()? == "session_info").then(|| v.get("name")?.as_str())?
            })
            .map(str::to_string)
    }

    /// A whole file keeps to the branch its entries end on.
    fn import(&self, lines: &[Line]) -> Imported {
        transcript::import(lines)
    }

    /// Its import finds the active branch of the whole tree first.
    fn batch_reader(&self) -> Option<Box<dyn Reader + Send>> {
        None
    }

    fn limits(&self, input: &LimitsInput) -> (u64, AutoCompactPoint) {
        let config = config(input.homes, input.workspace, input.model);
        let window = input
            .stated_window
            .or(config.model_window)
            .or(input.table_window)
            .unwrap_or(input.default_window);
        (
            window,
            point(&config, window, config.model_window.is_some()),
        )
    }
}

/// The ids on the active branch of the file at `path` so far.
fn active_path_of(path: &Path) -> io::Result<Option<std::collections::HashSet<String>>> {
    let mut entries = Vec::new();
    Tail::new(path).step(|line| {
        if let Ok(value) = line.value {
            let keep = |k: &str| value.get(k).cloned();
            entries.push(serde_json::json!({
                "type": keep("type"), "id": keep("id"), "parentId": keep("parentId")
            }));
            // `null` parents must stay present: only a key tells the tree
            // layout from the linear one.
            if value.get("parentId").is_none() {
                if let Some(map) = entries.last_mut().and_then(|e| e.as_object_mut()) {
                    map.remove("parentId");
                }
            }
        }
    })?;
    Ok(transcript::active_path(entries.iter()))
}
