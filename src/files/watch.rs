//! The only filesystem watcher. It watches directories (the ones holding
//! ledger files, then the workspace roots), never recursively and never
//! more than `maxWatchedPaths` of them, so editors' atomic saves (write a
//! temporary file, rename it over the original) and deletions stay visible.
//! Native notifications (inotify) where possible; polling where they are
//! unavailable or their limits are exhausted.
//!
//! Events are debounced on a thread of their own and handed to a sink as
//! `DiskChange`s; the server's sink forwards them to the state owner's
//! channel. Nothing here touches session state.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use notify::event::{AccessKind, AccessMode, ModifyKind, RenameMode};
use notify::{Event, EventKind, PollWatcher, RecommendedWatcher, RecursiveMode, Watcher};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A burst of events ends after this much quiet...
const QUIET: Duration = Duration::from_millis(100);
/// ...or, under a constant stream, after this long.
const MAX_DELAY: Duration = Duration::from_secs(1);
/// How often the polling fallback looks at the watched directories.
const POLL_INTERVAL: Duration = Duration::from_millis(500);

/// What changed on disk, as seen once a burst of events settled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiskChange {
    /// Written or created; it exists now.
    Changed(PathBuf),
    /// It does not exist any more.
    Removed(PathBuf),
    Renamed {
        from: PathBuf,
        to: PathBuf,
    },
    /// Events were lost (the kernel queue overflowed): anything may have
    /// changed.
    Rescan,
}

/// How files are watched (config `fileWatcher`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum WatchMode {
    /// Native notifications, falling back to polling when unavailable or
    /// exhausted.
    #[default]
    Auto,
    /// Polling only.
    Poll,
    /// No watching.
    Off,
}

type RawEvents = Sender<notify::Result<Event>>;

pub struct FileWatcher {
    backend: Box<dyn Watcher + Send>,
    polling: bool,
    raw: RawEvents,
    watched: HashSet<PathBuf>,
    max_paths: usize,
}

impl FileWatcher {
    /// Starts watching nothing yet; `sink` receives each settled burst.
    /// `None` when `mode` is `Off` or no watcher could be created at all.
    pub fn start(
        mode: WatchMode,
        max_paths: usize,
        sink: impl Fn(Vec<DiskChange>) + Send + 'static,
    ) -> Option<FileWatcher> {
        if mode == WatchMode::Off {
            return None;
        }
        let (raw, events) = mpsc::channel();
        let (backend, polling) = match mode {
            WatchMode::Auto => {
                match RecommendedWatcher::new(raw.clone(), notify::Config::default()) {
                    Ok(native) => (Box::new(native) as Box<dyn Watcher + Send>, false),
                    Err(e) => {
                        tracing::warn!("native file watching unavailable ({e}); polling instead");
                        (poll_backend(raw.clone())?, true)
                    }
                }
            }
            _ => (poll_backend(raw.clone())?, true),
        };
        let spawned = std::thread::Builder::new()
            .name("compactd-watch".into())
            .spawn(move || debounce(events, sink));
        if let Err(e) = spawned {
            tracing::error!("could not start the file watcher thread: {e}");
            return None;
        }
        Some(FileWatcher {
            backend,
            polling,
            raw,
            watched: HashSet::new(),
            max_paths,
        })
    }

    pub fn is_watching(&self, dir: &Path) -> bool {
        self.watched.contains(dir)
    }

    /// Watches the first `maxWatchedPaths` existing directories of
    /// `wanted` (most important first) and nothing else.
    pub fn set_dirs(&mut self, wanted: impl IntoIterator<Item = PathBuf>) {
        let mut target: Vec<PathBuf> = Vec::new();
        let mut seen = HashSet::new();
        for dir in wanted {
            if target.len() >= self.max_paths {
                break;
            }
            if seen.insert(dir.clone()) && dir.is_dir() {
                target.push(dir);
            }
        }
        let stale: Vec<PathBuf> = self
            .watched
            .iter()
            .filter(|d| !seen.contains(*d))
            .cloned()
            .collect();
        for dir in stale {
            let _ = self.backend.unwatch(&dir);
            self.watched.remove(&dir);
        }
        for dir in target {
            if self.watched.contains(&dir) {
                continue;
            }
            match self.backend.watch(&dir, RecursiveMode::NonRecursive) {
                Ok(()) => {
                    self.watched.insert(dir);
                }
                Err(e) if !self.polling && is_exhaustion(&e) => {
                    tracing::warn!(
                        "native file watching exhausted at {} ({e}); polling instead",
                        dir.display()
                    );
                    if self.switch_to_polling() {
                        if self
                            .backend
                            .watch(&dir, RecursiveMode::NonRecursive)
                            .is_ok()
                        {
                            self.watched.insert(dir);
                        }
                    } else {
                        break;
                    }
                }
                Err(e) => tracing::debug!("not watching {}: {e}", dir.display()),
            }
        }
    }

    /// Moves every watched directory to a polling backend.
    fn switch_to_polling(&mut self) -> bool {
        let Some(mut poll) = poll_backend(self.raw.clone()) else {
            return false;
        };
        let dirs: Vec<PathBuf> = self.watched.drain().collect();
        for dir in dirs {
            if poll.watch(&dir, RecursiveMode::NonRecursive).is_ok() {
                self.watched.insert(dir);
            }
        }
        self.backend = poll;
        self.polling = true;
        true
    }
}

fn poll_backend(raw: RawEvents) -> Option<Box<dyn Watcher + Send>> {
    // Modification times have one-second resolution here, so contents
    // are compared too: a quick second write would be missed otherwise.
    let config = notify::Config::default()
        .with_poll_interval(POLL_INTERVAL)
        .with_compare_contents(true);
    match PollWatcher::new(raw, config) {
        Ok(poll) => Some(Box::new(poll)),
        Err(e) => {
            tracing::error!("file watching unavailable: {e}");
            None
        }
    }
}

/// inotify's limits: too many watches (ENOSPC) or instances (EMFILE).
fn is_exhaustion(error: &notify::Error) -> bool {
    match &error.kind {
        notify::ErrorKind::MaxFilesWatch => true,
        notify::ErrorKind::Io(e) => matches!(e.raw_os_error(), Some(28 | 24)),
        _ => false,
    }
}

/// Collects raw events into bursts and hands each settled burst to `sink`.
fn debounce(events: Receiver<notify::Result<Event>>, sink: impl Fn(Vec<DiskChange>)) {
    let mut burst: Vec<Event> = Vec::new();
    let mut started = Instant::now();
    let mut last = Instant::now();
    loop {
        let received = if burst.is_empty() {
            events.recv().map_err(|_| RecvTimeoutError::Disconnected)
        } else {
            let deadline = (last + QUIET).min(started + MAX_DELAY);
            match deadline.checked_duration_since(Instant::now()) {
                Some(wait) if !wait.is_zero() => events.recv_timeout(wait),
                _ => Err(RecvTimeoutError::Timeout),
            }
        };
        match received {
            Ok(Ok(event)) if matters(&event) => {
                last = Instant::now();
                if burst.is_empty() {
                    started = last;
                }
                burst.push(event);
            }
            Ok(Ok(_)) => {}
            Ok(Err(e)) => tracing::warn!("file watcher: {e}"),
            Err(RecvTimeoutError::Timeout) => {
                let changes =
                    coalesce(std::mem::take(&mut burst), |p| p.symlink_metadata().is_ok());
                if !changes.is_empty() {
                    sink(changes);
                }
            }
            Err(RecvTimeoutError::Disconnected) => break,
        }
    }
}

/// Opening and reading a file (our own hashing among them) is not a change.
fn matters(event: &Event) -> bool {
    match event.kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        _ => true,
    }
}

/// A burst of events as changes: each path once, judged by whether it
/// exists now; a rename whose source is gone and target exists stays a
/// rename.
pub fn coalesce(events: Vec<Event>, exists: impl Fn(&Path) -> bool) -> Vec<DiskChange> {
    let mut touched: Vec<PathBuf> = Vec::new();
    let mut seen: HashSet<PathBuf> = HashSet::new();
    let mut renames: Vec<(PathBuf, PathBuf)> = Vec::new();
    let mut rescan = false;
    for event in events {
        rescan |= event.need_rescan();
        if event.kind == EventKind::Modify(ModifyKind::Name(RenameMode::Both))
            && event.paths.len() == 2
        {
            let mut paths = event.paths.into_iter();
            renames.push((paths.next().unwrap(), paths.next().unwrap()));
            continue;
        }
        for path in event.paths {
            if seen.insert(path.clone()) {
                touched.push(path);
            }
        }
    }
    let mut changes = Vec::new();
    let mut renamed: HashSet<PathBuf> = HashSet::new();
    for (from, to) in renames {
        if !exists(&from) && exists(&to) {
            renamed.insert(from.clone());
            renamed.insert(to.clone());
            changes.push(DiskChange::Renamed { from, to });
        } else {
            for path in [from, to] {
                if seen.insert(path.clone()) {
                    touched.push(path);
                }
            }
        }
    }
    for path in touched {
        if renamed.contains(&path) {
            continue;
        }
        changes.push(if exists(&path) {
            DiskChange::Changed(path)
        } else {
            DiskChange::Removed(path)
        });
    }
    if rescan {
        changes.push(DiskChange::Rescan);
    }
    changes
}

#[cfg(test)]
mod tests {
    use super::*;
    use notify::event::{CreateKind, DataChange, RemoveKind};

    fn event(kind: EventKind, paths: &[&str]) -> Event {
        let mut e = Event::new(kind);
        for p in paths {
            e = e.add_path(PathBuf::from(p));
        }
        e
    }

    #[test]
    fn bursts_coalesce_by_path_and_keep_renames() {
        let exists = |p: &Path| ["/d/a", "/d/new", "/d/b"].contains(&p.to_str().unwrap());
        let events = vec![
            event(EventKind::Create(CreateKind::File), &["/d/a"]),
            event(
                EventKind::Modify(ModifyKind::Data(DataChange::Any)),
                &["/d/a"],
            ),
            event(EventKind::Remove(RemoveKind::File), &["/d/gone"]),
            event(
                EventKind::Modify(ModifyKind::Name(RenameMode::From)),
                &["/d/old"],
            ),
            event(
                EventKind::Modify(ModifyKind::Name(RenameMode::Both)),
                &["/d/old", "/d/new"],
            ),
            // An atomic save: the temporary file replaced b.
            event(
                EventKind::Modify(ModifyKind::Name(RenameMode::Both)),
                &["/d/b.tmp", "/d/b"],
            ),
        ];
        assert_eq!(
            coalesce(events, exists),
            vec![
                DiskChange::Renamed {
                    from: "/d/old".into(),
                    to: "/d/new".into()
                },
                DiskChange::Renamed {
                    from: "/d/b.tmp".into(),
                    to: "/d/b".into()
                },
                DiskChange::Changed("/d/a".into()),
                DiskChange::Removed("/d/gone".into()),
            ]
        );
    }

    #[test]
    fn lost_events_ask_for_a_rescan() {
        let overflow = Event::new(EventKind::Other).set_flag(notify::event::Flag::Rescan);
        assert_eq!(coalesce(vec![overflow], |_| true), vec![DiskChange::Rescan]);
    }

    #[test]
    fn reads_are_not_changes() {
        assert!(!matters(&event(
            EventKind::Access(AccessKind::Open(AccessMode::Any)),
            &["/d/a"]
        )));
        assert!(!matters(&event(
            EventKind::Access(AccessKind::Close(AccessMode::Read)),
            &["/d/a"]
        )));
        assert!(matters(&event(
            EventKind::Access(AccessKind::Close(AccessMode::Write)),
            &["/d/a"]
        )));
    }

    #[test]
    fn exhaustion_is_recognised() {
        assert!(is_exhaustion(&notify::Error::new(
            notify::ErrorKind::MaxFilesWatch
        )));
        assert!(is_exhaustion(&notify::Error::io(
            std::io::Error::from_raw_os_error(28)
        )));
        assert!(!is_exhaustion(&notify::Error::path_not_found()));
    }
}
