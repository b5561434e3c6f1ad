//! The server's side of file tracking: the workspace, the tool mapping, the
//! watcher and the editor's open buffers, and the plumbing that routes file
//! events from editors, notifications and the watcher to the sessions they
//! concern. The decisions are in `crate::files`; logging then applying an
//! event is `engine::append::record_file_events`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::mpsc::UnboundedSender;

use super::{JobResult, RpcResult, Server};
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
    pub fn start(
        config: &Config,
        roots: Vec<PathBuf>,
        job_results: &UnboundedSender<JobResult>,
    ) -> FileTracking {
        let mut tracking = FileTracking {
            workspace: disk::workspace(roots),
            ..FileTracking::default()
        };
        tracking.reconfigure(config, job_results);
        tracking
    }

    /// Takes the file settings of `config`; the watcher restarts (watching
    /// nothing until the next `sync_watches`) when its mode or cap changed.
    pub fn reconfigure(&mut self, config: &Config, job_results: &UnboundedSender<JobResult>) {
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
}

impl Server {
    /// The sessions an event applies to: the one named, else every open
    /// one (they all share this server's workspace), in a stable order.
    /// Sessions open read-only are left out: their ledgers stay what their
    /// logs say, and no `files/didChange` is sent for them.
    pub fn file_targets(&self, session_id: Option<&str>) -> RpcResult<Vec<String>> {
        let mut ids: Vec<String> = match session_id {
            Some(id) => self.session(id).map(|_| vec![id.to_string()])?,
            None => self.sessions.keys().cloned().collect(),
        };
        ids.retain(|id| self.sessions[id].access() == Access::Write);
        ids.sort();
        Ok(ids)
    }

    /// Logs file events, then applies them to the session's ledger.
    pub fn record_file_events(&mut self, session_id: &str, events: &[FileEvent]) -> RpcResult<()> {
        let open = self.session_mut(session_id)?;
        Ok(engine::append::record_file_events(open, events)?)
    }

    /// Records an event reported from outside the conversation (an editor,
    /// an explicit notification) in the target sessions for which `wanted`
    /// holds, stamped with each session's newest message.
    pub fn record_external(
        &mut self,
        session_id: Option<&str>,
        event: FileEvent,
        wanted: fn(&SessionFileLedger, &FileEvent) -> bool,
    ) -> RpcResult<()> {
        let mut result = Ok(());
        for id in self.file_targets(session_id)? {
            let session = &self.sessions[&id].session;
            if !wanted(&session.file_ledger, &event) {
                continue;
            }
            let mut event = event.clone();
            event.message_id = session.last_message_id().map(str::to_string);
            if let Err(e) = self.record_file_events(&id, &[event]) {
                result = result.and(Err(e));
            }
        }
        self.sync_watches();
        result
    }

    /// Changes the watcher saw: each session tracking the file records the
    /// ones that are news (origin `disk`) and the client hears of them.
    pub fn on_disk_changes(&mut self, changes: Vec<DiskChange>) {
        let changes: Vec<DiskChange> = changes
            .into_iter()
            .flat_map(|c| self.expand_rescan(c))
            .collect();
        for change in changes {
            let target = match &change {
                DiskChange::Changed(path) | DiskChange::Renamed { to: path, .. } => Some(path),
                DiskChange::Removed(_) | DiskChange::Rescan => None,
            };
            let hash = target.and_then(|p| disk::content_hash(p));
            // The editor saving one of its buffers is not someone else;
            // after an atomic save only the source's disappearance can be.
            let own_save = matches!((target, &hash), (Some(path), Some(hash))
                if self.file_tracking.documents.get(path) == Some(&Some(hash.clone())));
            let change = match change {
                DiskChange::Changed(_) if own_save => continue,
                DiskChange::Renamed { from, .. } if own_save => DiskChange::Removed(from),
                change => change,
            };
            for id in self.file_targets(None).unwrap_or_default() {
                let session = &self.sessions[&id].session;
                let Some((mut events, kind)) = session.file_ledger.disk_events(
                    &change,
                    hash.as_deref(),
                    &self.file_tracking.tools,
                ) else {
                    continue;
                };
                let newest = session.last_message_id().map(str::to_string);
                for event in &mut events {
                    event.message_id = newest.clone();
                }
                if let Err(e) = self.record_file_events(&id, &events) {
                    tracing::error!("session {id}: {}", e.message);
                    continue;
                }
                let (path, new_path) = match &change {
                    DiskChange::Renamed { from, to } if events.len() == 2 => {
                        (from, Some(to.display().to_string()))
                    }
                    DiskChange::Renamed { to, .. } => (to, None),
                    DiskChange::Changed(path) | DiskChange::Removed(path) => (path, None),
                    DiskChange::Rescan => continue,
                };
                self.notify_session(
                    &id,
                    methods::FILES_DID_CHANGE,
                    FileDidChangeNotification {
                        session_id: id.clone(),
                        path: path.display().to_string(),
                        kind,
                        new_path,
                    },
                );
            }
        }
        self.sync_watches();
    }

    /// After lost events every ledger file is looked at again; the ledger
    /// then tells what is news (by its known content hashes).
    fn expand_rescan(&self, change: DiskChange) -> Vec<DiskChange> {
        if change != DiskChange::Rescan {
            return vec![change];
        }
        let paths: std::collections::BTreeSet<PathBuf> = self
            .sessions
            .values()
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

    /// Applies changed configuration to the file side: the tool mapping,
    /// every open session's listing cap, the watcher.
    pub fn apply_file_config(&mut self) {
        self.file_tracking
            .reconfigure(&self.config, &self.job_results_tx);
        let env = self.session_env();
        // A followed session keeps its agent's workspace.
        for open in self
            .sessions
            .values_mut()
            .filter(|open| open.access() != Access::Follows)
        {
            env.configure(&mut open.session);
        }
        self.sync_watches();
    }

    /// Points the watcher at the folders of followed transcripts, then the
    /// directories of the ledger files of every session disk changes reach
    /// (`file_targets`), most recently touched first (sessions taking
    /// turns), then the workspace roots; the watcher keeps the cap.
    pub fn sync_watches(&mut self) {
        if self.file_tracking.watcher.is_none() {
            return;
        }
        let per_session: Vec<Vec<PathBuf>> = self
            .sessions
            .values()
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
        // Followed transcripts' folders first: their meters depend on them.
        let follow_dirs = self.follow_watch_dirs();
        let Some(watcher) = self.file_tracking.watcher.as_mut() else {
            return;
        };
        let dirs = follow_dirs
            .into_iter()
            .chain(
                (0..longest)
                    .flat_map(|rank| per_session.iter().filter_map(move |dirs| dirs.get(rank)))
                    .cloned(),
            )
            .chain(self.file_tracking.workspace.roots.iter().cloned());
        watcher.set_dirs(dirs.collect::<Vec<_>>());
    }
}
