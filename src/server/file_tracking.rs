//! File tracking: the workspace, the tool mapping, the watcher and the
//! editor's open buffers, and the routing of file events from editors,
//! notifications and the watcher to the sessions they concern. The
//! decisions are in `crate::files` and `engine::disk`; logging then
//! applying an event is `engine::append::record_file_events`.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::effects::Effects;
use super::jobs::{JobResult, JobSender};
use super::rpc::RpcResult;
use super::sessions::Sessions;
use crate::config::Config;
use crate::engine::{self, Access};
use crate::files::watch::{DiskChange, FileWatcher, WatchMode};
use crate::files::{disk, path_from_uri, FileEvent, FileTools, SessionFileLedger, Workspace};
use crate::protocol::{methods, FileDidChangeNotification};

pub(crate) struct FileTracking {
    pub workspace: Workspace,
    pub tools: Arc<FileTools>,
    pub watcher: Option<FileWatcher>,
    /// Open editor buffers: the hash of each one's text, `None` once an
    /// incremental change made it unknown. A change on disk to a buffer's
    /// content is the editor saving it.
    pub documents: HashMap<PathBuf, Option<String>>,
    /// The watcher's mode and cap, to restart it when they change.
    watch_settings: (WatchMode, usize),
}

impl Default for FileTracking {
    fn default() -> FileTracking {
        FileTracking {
            workspace: disk::workspace(Vec::new()),
            tools: Arc::new(FileTools::default()),
            watcher: None,
            documents: HashMap::new(),
            watch_settings: (WatchMode::Off, 0),
        }
    }
}

impl FileTracking {
    pub fn start(config: &Config, roots: Vec<PathBuf>, job_results: &JobSender) -> FileTracking {
        let mut tracking = FileTracking {
            workspace: disk::workspace(roots),
            ..FileTracking::default()
        };
        tracking.reconfigure(config, job_results);
        tracking
    }

    /// Takes the file settings of `config`; the watcher restarts (watching
    /// nothing until the next `sync_watches`) when its mode or cap changed.
    pub fn reconfigure(&mut self, config: &Config, job_results: &JobSender) {
        self.tools = Arc::new(FileTools::new(&config.file_tools));
        let settings = (config.file_watcher, config.max_watched_paths);
        if settings != self.watch_settings {
            self.watch_settings = settings;
            // The old watcher stops before the new one starts.
            self.watcher = None;
            let job_results = job_results.clone();
            self.watcher = FileWatcher::start(settings.0, settings.1, move |changes| {
                // The state owner applies them; if it is gone, so is the need.
                let _ = job_results.send(JobResult::FilesChanged(changes));
            });
        }
    }

    /// A path from a client: absolute, workspace-relative, `~/…` or a
    /// `file://` URI.
    pub fn resolve(&self, raw: &str) -> Option<PathBuf> {
        if raw.starts_with("file://") {
            return self.resolve_uri(raw);
        }
        self.workspace.resolve(raw)
    }

    /// A document URI from an editor; `None` for anything but `file://`
    /// (unsaved buffers, virtual documents).
    pub fn resolve_uri(&self, uri: &str) -> Option<PathBuf> {
        let path = path_from_uri(uri)?;
        path.is_absolute()
            .then(|| self.workspace.resolve(&path.to_string_lossy()))
            .flatten()
    }

    pub fn is_watched(&self, path: &Path) -> bool {
        match (&self.watcher, path.parent()) {
            (Some(watcher), Some(dir)) => watcher.is_watching(dir),
            _ => false,
        }
    }

    /// The sessions an event applies to: the one named, else every open
    /// one (they all share this server's workspace), in a stable order.
    /// Sessions open read-only are left out: their ledgers stay what their
    /// logs say, and no `files/didChange` is sent for them.
    pub fn targets(sessions: &Sessions, session_id: Option<&str>) -> RpcResult<Vec<String>> {
        let mut ids: Vec<String> = match session_id {
            Some(id) => sessions.get(id).map(|_| vec![id.to_string()])?,
            None => sessions.ids(),
        };
        ids.retain(|id| {
            sessions
                .find(id)
                .is_some_and(|o| o.access() == Access::Write)
        });
        Ok(ids)
    }

    /// Records an event reported from outside the conversation (an editor,
    /// an explicit notification) in the target sessions for which `wanted`
    /// holds, stamped with each session's newest message.
    pub fn record_external(
        sessions: &mut Sessions,
        session_id: Option<&str>,
        event: FileEvent,
        wanted: fn(&SessionFileLedger, &FileEvent) -> bool,
    ) -> RpcResult<()> {
        let mut result = Ok(());
        for id in Self::targets(sessions, session_id)? {
            let Some(open) = sessions.find_mut(&id) else {
                continue;
            };
            if !wanted(&open.session.file_ledger, &event) {
                continue;
            }
            let mut event = event.clone();
            event.message_id = open.session.last_message_id().map(str::to_string);
            if let Err(e) = engine::append::record_file_events(open, &[event]) {
                result = result.and(Err(e.into()));
            }
        }
        sessions.mark_changed();
        result
    }

    /// Changes the watcher saw: each session tracking the file records the
    /// ones that are news (origin `disk`, `engine::disk::news`) and says
    /// what to tell the clients.
    pub fn on_disk_changes(
        &self,
        sessions: &mut Sessions,
        changes: Vec<DiskChange>,
        effects: &mut Effects,
    ) {
        let changes: Vec<DiskChange> = changes
            .into_iter()
            .flat_map(|c| expand_rescan(sessions, c))
            .collect();
        for change in changes {
            let target = match &change {
                DiskChange::Changed(path) | DiskChange::Renamed { to: path, .. } => Some(path),
                DiskChange::Removed(_) | DiskChange::Rescan => None,
            };
            let hash = target.and_then(|p| disk::content_hash(p));
            let Some(change) = engine::disk::news(change, hash.as_deref(), &self.documents) else {
                continue;
            };
            for id in Self::targets(sessions, None).unwrap_or_default() {
                self.record_disk_change(sessions, &id, &change, hash.as_deref(), effects);
            }
        }
        sessions.mark_changed();
    }

    fn record_disk_change(
        &self,
        sessions: &mut Sessions,
        id: &str,
        change: &DiskChange,
        hash: Option<&str>,
        effects: &mut Effects,
    ) {
        let Some(open) = sessions.find_mut(id) else {
            return;
        };
        let Some((mut events, kind)) =
            open.session
                .file_ledger
                .disk_events(change, hash, &self.tools)
        else {
            return;
        };
        let newest = open.session.last_message_id().map(str::to_string);
        for event in &mut events {
            event.message_id = newest.clone();
        }
        if let Err(e) = engine::append::record_file_events(open, &events) {
            tracing::error!("session {id}: {e}");
            return;
        }
        let (path, new_path) = match change {
            DiskChange::Renamed { from, to } if events.len() == 2 => {
                (from, Some(to.display().to_string()))
            }
            DiskChange::Renamed { to, .. } => (to, None),
            DiskChange::Changed(path) | DiskChange::Removed(path) => (path, None),
            DiskChange::Rescan => return,
        };
        effects.notify::<methods::FilesDidChange>(
            id,
            FileDidChangeNotification {
                session_id: id.to_string(),
                path: path.display().to_string(),
                kind,
                new_path,
            },
        );
    }

    /// Points the watcher at `first` (the folders of followed
    /// transcripts), then the directories of the ledger files of every
    /// session disk changes reach, most recently touched first (sessions
    /// taking turns), then the workspace roots; the watcher keeps the cap.
    pub fn sync_watches(&mut self, sessions: &Sessions, first: Vec<PathBuf>) {
        let Some(watcher) = self.watcher.as_mut() else {
            return;
        };
        let per_session: Vec<Vec<PathBuf>> = sessions
            .all()
            .filter(|open| open.access() == Access::Write)
            .map(|open| {
                open.session
                    .file_ledger
                    .ledger
                    .records()
                    .iter()
                    .filter_map(|r| r.path.parent().map(Path::to_path_buf))
                    .collect()
            })
            .collect();
        let longest = per_session.iter().map(Vec::len).max().unwrap_or(0);
        let dirs = first
            .into_iter()
            .chain(
                (0..longest)
                    .flat_map(|rank| per_session.iter().filter_map(move |dirs| dirs.get(rank)))
                    .cloned(),
            )
            .chain(self.workspace.roots.iter().cloned());
        watcher.set_dirs(dirs.collect::<Vec<_>>());
    }
}

/// After lost events every ledger file is looked at again; the ledger
/// then tells what is news (by its known content hashes).
fn expand_rescan(sessions: &Sessions, change: DiskChange) -> Vec<DiskChange> {
    if change != DiskChange::Rescan {
        return vec![change];
    }
    let paths: BTreeSet<PathBuf> = sessions
        .all()
        .filter(|open| open.access() == Access::Write)
        .flat_map(|open| open.session.file_ledger.ledger.records())
        .map(|record| record.path.clone())
        .collect();
    paths
        .into_iter()
        .map(|path| {
            if path.symlink_metadata().is_ok() {
                DiskChange::Changed(path)
            } else {
                DiskChange::Removed(path)
            }
        })
        .collect()
}
