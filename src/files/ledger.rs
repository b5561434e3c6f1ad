//! The file ledger: for every file a session touched, what was done to it,
//! by whom and when. Pure: events arrive already resolved (paths absolute,
//! content hashes computed at the edge) and are applied in log order, so
//! replaying a session log rebuilds the same ledger.

use std::collections::{BTreeSet, HashMap};
use std::path::{Component, Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::compaction::FileSections;

/// What an event did to a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum FileOp {
    Read,
    Modify,
    Create,
    Delete,
}

impl FileOp {
    pub fn is_modification(self) -> bool {
        self != FileOp::Read
    }
}

/// Who reported an event.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub enum Origin {
    /// An editor, through LSP text-document notifications.
    Lsp,
    /// A tool call in the conversation.
    Tool,
    /// A `files/did*` notification.
    Explicit,
    /// The file watcher saw someone else change the file.
    Disk,
}

/// A zero-based position, as LSP defines it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Position {
    pub line: u32,
    pub character: u32,
}

/// A range in a file, as LSP defines it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Range {
    pub start: Position,
    pub end: Position,
}

/// One change to the ledger, as the session log records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileEvent {
    /// Absolute and normalized (see `Workspace::resolve`).
    pub path: PathBuf,
    pub op: FileOp,
    pub origin: Origin,
    /// The message that made the call (tool events), else the newest
    /// message of the session when the event arrived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// The file's content hash right after the event, when it was readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_hash: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<Range>,
}

impl FileEvent {
    pub fn new(path: PathBuf, op: FileOp, origin: Origin) -> FileEvent {
        FileEvent {
            path,
            op,
            origin,
            message_id: None,
            content_hash: None,
            range: None,
        }
    }
}

/// What a session did to a file, all things considered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum FileStatus {
    /// Only read.
    Read,
    Modified,
    /// First touched by creating it, and not deleted since.
    Created,
    /// Deleted by the last modification.
    Deleted,
}

/// Everything the ledger knows about one file.
#[derive(Debug, Clone, PartialEq)]
pub struct FileRecord {
    pub path: PathBuf,
    pub first_op: FileOp,
    pub last_op: FileOp,
    pub last_origin: Origin,
    pub reads: u32,
    pub modifications: u32,
    pub origins: BTreeSet<Origin>,
    pub last_message_id: Option<String>,
    /// Content hash at the last read.
    pub read_hash: Option<String>,
    /// The newest content this session is known to have seen or written;
    /// a change on disk to this content is not news.
    pub known_hash: Option<String>,
    pub last_range: Option<Range>,
    /// Compactions applied when the file was last touched.
    pub generation: usize,
    pub created: bool,
    pub deleted: bool,
    /// Order of the last touch within the ledger (larger is newer).
    pub touch: u64,
}

impl FileRecord {
    pub fn status(&self) -> FileStatus {
        if self.deleted {
            FileStatus::Deleted
        } else if self.created {
            FileStatus::Created
        } else if self.modifications > 0 {
            FileStatus::Modified
        } else {
            FileStatus::Read
        }
    }
}

/// The ledger of one session.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FileLedger {
    files: HashMap<PathBuf, FileRecord>,
    touches: u64,
}

impl FileLedger {
    /// Applies one event; `generation` is the number of compactions the
    /// session has had so far. A file the session created and then deleted
    /// (a scratch file) changed nothing: it leaves the ledger.
    pub fn apply(&mut self, event: &FileEvent, generation: usize) {
        self.touches += 1;
        let touch = self.touches;
        let is_new = !self.files.contains_key(&event.path);
        let record = self
            .files
            .entry(event.path.clone())
            .or_insert_with(|| FileRecord {
                path: event.path.clone(),
                first_op: event.op,
                last_op: event.op,
                last_origin: event.origin,
                reads: 0,
                modifications: 0,
                origins: BTreeSet::new(),
                last_message_id: None,
                read_hash: None,
                known_hash: None,
                last_range: None,
                generation,
                created: false,
                deleted: false,
                touch,
            });
        match event.op {
            FileOp::Read => {
                record.reads += 1;
                record.read_hash = event.content_hash.clone();
                if event.content_hash.is_some() {
                    // Readable again, so it exists again.
                    record.deleted = false;
                }
            }
            FileOp::Modify => {
                record.modifications += 1;
                record.deleted = false;
            }
            FileOp::Create => {
                record.modifications += 1;
                // A file that existed before the session touched it is
                // modified, not created, even if it was deleted meanwhile.
                record.created |= is_new;
                record.deleted = false;
            }
            FileOp::Delete => {
                record.modifications += 1;
                record.deleted = true;
            }
        }
        record.known_hash = match event.op {
            FileOp::Delete => None,
            _ => event.content_hash.clone().or(record.known_hash.take()),
        };
        record.last_op = event.op;
        record.last_origin = event.origin;
        record.origins.insert(event.origin);
        record.last_message_id = event.message_id.clone();
        record.last_range = event.range;
        record.generation = generation;
        record.touch = touch;
        if record.created && record.deleted {
            self.files.remove(&event.path);
        }
    }

    pub fn get(&self, path: &Path) -> Option<&FileRecord> {
        self.files.get(path)
    }

    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Every record, most recently touched first.
    pub fn records(&self) -> Vec<&FileRecord> {
        let mut records: Vec<&FileRecord> = self.files.values().collect();
        records.sort_by_key(|r| std::cmp::Reverse(r.touch));
        records
    }

    /// The `<read-files>`/`<modified-files>` sections: read-only files and
    /// modified ones, newest first, each capped at `max_listed_files` with
    /// a count of the rest.
    pub fn sections(&self, workspace: &Workspace, max_listed_files: usize) -> FileSections {
        let mut sections = FileSections::default();
        for record in self.records() {
            let status = record.status();
            let (list, omitted) = match status {
                FileStatus::Read => (&mut sections.read, &mut sections.marks.omitted_read),
                _ => (&mut sections.modified, &mut sections.marks.omitted_modified),
            };
            if list.len() >= max_listed_files {
                *omitted += 1;
                continue;
            }
            let shown = workspace.display(&record.path);
            match status {
                FileStatus::Created => sections.marks.created.push(shown.clone()),
                FileStatus::Deleted => sections.marks.deleted.push(shown.clone()),
                FileStatus::Read | FileStatus::Modified => {}
            }
            list.push(shown);
        }
        sections
    }
}

/// Where paths are resolved from and shown relative to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Workspace {
    /// Workspace roots, absolute; the first one resolves relative paths.
    pub roots: Vec<PathBuf>,
    /// The user's home, for `~/` paths.
    pub home: Option<PathBuf>,
}

impl Workspace {
    pub fn new(roots: Vec<PathBuf>, home: Option<PathBuf>) -> Workspace {
        let roots = roots.iter().map(|r| clean(r)).collect();
        Workspace {
            roots,
            home: home.map(|h| clean(&h)),
        }
    }

    /// The absolute, lexically normalized form of a path as a tool or a
    /// client wrote it: `~/` expands to the home, relative paths resolve
    /// against the first root, `.` and `..` are resolved without touching
    /// the disk (symlinks are not followed, so a link and its target stay
    /// two files). `None` for an empty path or a relative one with no root.
    pub fn resolve(&self, raw: &str) -> Option<PathBuf> {
        let raw = raw.trim();
        if raw.is_empty() {
            return None;
        }
        let home_relative = match (raw, &self.home) {
            ("~", Some(home)) => Some(home.clone()),
            (_, Some(home)) => raw.strip_prefix("~/").map(|rest| home.join(rest)),
            _ => None,
        };
        let path = match home_relative {
            Some(path) => path,
            None if Path::new(raw).is_absolute() => PathBuf::from(raw),
            None => self.roots.first()?.join(raw),
        };
        Some(clean(&path))
    }

    /// How a path is shown: relative to the deepest root holding it, else
    /// `~/…` under the home, else absolute.
    pub fn display(&self, path: &Path) -> String {
        let relative = self
            .roots
            .iter()
            .filter_map(|root| path.strip_prefix(root).ok())
            .filter(|rest| !rest.as_os_str().is_empty())
            .min_by_key(|rest| rest.components().count());
        if let Some(rest) = relative {
            return rest.display().to_string();
        }
        if let Some(rest) = self
            .home
            .as_ref()
            .and_then(|home| path.strip_prefix(home).ok())
            .filter(|rest| !rest.as_os_str().is_empty())
        {
            return format!("~/{}", rest.display());
        }
        path.display().to_string()
    }
}

/// Resolves `.` and `..` lexically; `..` never climbs above the root.
pub fn clean(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Prefix(_) | Component::RootDir => out.push(component.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() && !path.is_absolute() {
                    out.push("..");
                }
            }
            Component::Normal(part) => out.push(part),
        }
    }
    out
}

/// `file:///a/b%20c` → `/a/b c`; `None` for anything but a `file://` URI.
pub fn path_from_uri(uri: &str) -> Option<PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    let mut bytes = Vec::with_capacity(rest.len());
    let raw = rest.as_bytes();
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == b'%' && i + 2 < raw.len() {
            let hex = |b: u8| (b as char).to_digit(16);
            if let (Some(hi), Some(lo)) = (hex(raw[i + 1]), hex(raw[i + 2])) {
                bytes.push((hi * 16 + lo) as u8);
                i += 3;
                continue;
            }
        }
        bytes.push(raw[i]);
        i += 1;
    }
    Some(PathBuf::from(String::from_utf8_lossy(&bytes).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_decode() {
        assert_eq!(
            path_from_uri("file:///a/b%20c"),
            Some(PathBuf::from("/a/b c"))
        );
        assert_eq!(path_from_uri("file:///x%"), Some(PathBuf::from("/x%")));
        assert_eq!(path_from_uri("http://x"), None);
    }

    fn ws() -> Workspace {
        Workspace::new(
            vec![PathBuf::from("/work/proj"), PathBuf::from("/work/proj/sub")],
            Some(PathBuf::from("/home/me")),
        )
    }

    fn event(path: &str, op: FileOp) -> FileEvent {
        FileEvent::new(PathBuf::from(path), op, Origin::Tool)
    }

    #[test]
    fn paths_resolve_lexically_and_display_relative() {
        let w = ws();
        assert_eq!(
            w.resolve("src/./a/../b.rs"),
            Some(PathBuf::from("/work/proj/src/b.rs"))
        );
        assert_eq!(
            w.resolve("/x/../../etc/passwd"),
            Some(PathBuf::from("/etc/passwd"))
        );
        assert_eq!(
            w.resolve("~/.config/x"),
            Some(PathBuf::from("/home/me/.config/x"))
        );
        assert_eq!(w.resolve("  "), None);
        assert_eq!(Workspace::default().resolve("rel.rs"), None);
        assert_eq!(w.display(Path::new("/work/proj/src/b.rs")), "src/b.rs");
        assert_eq!(
            w.display(Path::new("/work/proj/sub/c.rs")),
            "c.rs",
            "the deepest root wins"
        );
        assert_eq!(w.display(Path::new("/home/me/notes.md")), "~/notes.md");
        assert_eq!(w.display(Path::new("/etc/hosts")), "/etc/hosts");
        assert_eq!(w.display(Path::new("/work/proj")), "/work/proj");
    }

    #[test]
    fn statuses_follow_the_operations() {
        let mut ledger = FileLedger::default();
        for (path, op) in [
            ("/p/read.rs", FileOp::Read),
            ("/p/mod.rs", FileOp::Read),
            ("/p/mod.rs", FileOp::Modify),
            ("/p/new.rs", FileOp::Create),
            ("/p/new.rs", FileOp::Modify),
            ("/p/gone.rs", FileOp::Read),
            ("/p/gone.rs", FileOp::Delete),
            ("/p/back.rs", FileOp::Read),
            ("/p/back.rs", FileOp::Delete),
            ("/p/back.rs", FileOp::Create),
        ] {
            ledger.apply(&event(path, op), 0);
        }
        let status = |p: &str| ledger.get(Path::new(p)).unwrap().status();
        assert_eq!(status("/p/read.rs"), FileStatus::Read);
        assert_eq!(status("/p/mod.rs"), FileStatus::Modified);
        assert_eq!(status("/p/new.rs"), FileStatus::Created);
        assert_eq!(status("/p/gone.rs"), FileStatus::Deleted);
        assert_eq!(
            status("/p/back.rs"),
            FileStatus::Modified,
            "deleted and recreated is a modification of a file that existed"
        );
        let r = ledger.get(Path::new("/p/mod.rs")).unwrap();
        assert_eq!((r.first_op, r.last_op), (FileOp::Read, FileOp::Modify));
        assert_eq!((r.reads, r.modifications), (1, 1));
    }

    #[test]
    fn hashes_track_reads_and_known_content() {
        let mut ledger = FileLedger::default();
        let mut read = event("/p/a.rs", FileOp::Read);
        read.content_hash = Some("h1".into());
        ledger.apply(&read, 0);
        let mut modify = event("/p/a.rs", FileOp::Modify);
        modify.content_hash = Some("h2".into());
        modify.origin = Origin::Disk;
        ledger.apply(&modify, 1);
        let r = ledger.get(Path::new("/p/a.rs")).unwrap();
        assert_eq!(r.read_hash.as_deref(), Some("h1"));
        assert_eq!(r.known_hash.as_deref(), Some("h2"));
        assert_eq!(r.generation, 1);
        assert_eq!(
            r.origins.iter().copied().collect::<Vec<_>>(),
            [Origin::Tool, Origin::Disk]
        );
        ledger.apply(&event("/p/a.rs", FileOp::Delete), 1);
        assert_eq!(ledger.get(Path::new("/p/a.rs")).unwrap().known_hash, None);
    }

    #[test]
    fn sections_are_newest_first_capped_and_marked() {
        let mut ledger = FileLedger::default();
        for i in 0..5 {
            ledger.apply(&event(&format!("/work/proj/r{i}.rs"), FileOp::Read), 0);
        }
        ledger.apply(&event("/work/proj/m.rs", FileOp::Modify), 0);
        ledger.apply(&event("/work/proj/c.rs", FileOp::Create), 0);
        ledger.apply(&event("/work/proj/d.rs", FileOp::Delete), 0);
        ledger.apply(&event("/work/proj/r0.rs", FileOp::Read), 0);
        let s = ledger.sections(&ws(), 3);
        assert_eq!(s.read, ["r0.rs", "r4.rs", "r3.rs"]);
        assert_eq!(s.marks.omitted_read, 2);
        assert_eq!(s.modified, ["d.rs", "c.rs", "m.rs"]);
        assert_eq!(s.marks.created, ["c.rs"]);
        assert_eq!(s.marks.deleted, ["d.rs"]);
        assert_eq!(s.marks.omitted_modified, 0);
    }

    #[test]
    fn a_file_created_then_deleted_is_not_listed() {
        let mut ledger = FileLedger::default();
        ledger.apply(&event("/work/proj/scratch.rs", FileOp::Create), 0);
        ledger.apply(&event("/work/proj/scratch.rs", FileOp::Read), 0);
        ledger.apply(&event("/work/proj/scratch.rs", FileOp::Delete), 0);
        ledger.apply(&event("/work/proj/old.rs", FileOp::Delete), 0);
        assert!(ledger.get(Path::new("/work/proj/scratch.rs")).is_none());
        assert_eq!(ledger.len(), 1);
        let s = ledger.sections(&ws(), 10);
        assert_eq!(s.modified, ["old.rs"], "an existing file deleted is");
        assert!(s.read.is_empty());
        assert_eq!(s.marks.deleted, ["old.rs"]);
        ledger.apply(&event("/work/proj/scratch.rs", FileOp::Create), 0);
        let s = ledger.sections(&ws(), 10);
        assert_eq!(s.modified, ["scratch.rs", "old.rs"], "created again");
        assert_eq!(s.marks.created, ["scratch.rs"]);
    }
}
