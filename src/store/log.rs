//! Writing a session log: one `write` per append, so a crash tears at most
//! the end, and an fsync when the configuration asks for one.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::lock::SessionLock;
use super::{LogEntry, StoreError};

/// When an append counts as done. Measured on a 2-core VM with an ext4
/// disk (`cargo bench --bench append`): `flush` about 10 µs per append,
/// `fsync` 3–5 ms.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Durability {
    /// Each append is handed to the operating system in one `write` before
    /// it is acknowledged: it survives compactd crashing or being killed,
    /// not a power loss or a kernel crash.
    #[default]
    Flush,
    /// Each append is also synced to the disk (`fdatasync`) before it is
    /// acknowledged: it survives a power loss too.
    Fsync,
}

/// The live durability setting, shared by the store and every log it opened,
/// so a configuration change applies to open sessions at once.
#[derive(Debug, Clone, Default)]
pub(super) struct SharedDurability(Arc<AtomicBool>);

impl SharedDurability {
    pub fn set(&self, durability: Durability) {
        self.0
            .store(durability == Durability::Fsync, Ordering::Relaxed);
    }

    fn fsync(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// A session log opened by this process.
#[derive(Debug)]
pub struct SessionLog {
    /// The session's id (the log's file stem).
    id: String,
    path: PathBuf,
    /// `None`: opened read-only; every append is refused.
    writer: Option<Writer>,
}

#[derive(Debug)]
struct Writer {
    file: File,
    durability: SharedDurability,
    /// Appends synced so far.
    syncs: u64,
    /// Held for as long as the log is open.
    _lock: SessionLock,
}

impl SessionLog {
    pub(super) fn writable(
        id: &str,
        path: PathBuf,
        file: File,
        lock: SessionLock,
        durability: SharedDurability,
    ) -> SessionLog {
        SessionLog {
            id: id.to_string(),
            path,
            writer: Some(Writer {
                file,
                durability,
                syncs: 0,
                _lock: lock,
            }),
        }
    }

    /// A log this process only reads: it holds no lock and writes nothing.
    pub(super) fn read_only(id: &str, path: PathBuf) -> SessionLog {
        SessionLog {
            id: id.to_string(),
            path,
            writer: None,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn is_read_only(&self) -> bool {
        self.writer.is_none()
    }

    /// Appends entries with one write, so a crash tears at most the end.
    /// `durable` syncs to disk whatever the configured durability (headers
    /// and compactions); otherwise `Durability` decides.
    pub fn append(&mut self, entries: &[LogEntry], durable: bool) -> Result<(), StoreError> {
        let mut buf = Vec::with_capacity(256 * entries.len());
        for entry in entries {
            serde_json::to_writer(&mut buf, entry).expect("log entries serialize");
            buf.push(b'\n');
        }
        self.write_raw(&buf)?;
        let writer = self.writer.as_mut().expect("write_raw checked");
        if durable || writer.durability.fsync() {
            writer
                .file
                .sync_data()
                .map_err(super::io_error(&self.path))?;
            writer.syncs += 1;
        }
        Ok(())
    }

    /// How many appends were synced to disk (for tests of durability).
    pub fn syncs(&self) -> u64 {
        self.writer.as_ref().map_or(0, |w| w.syncs)
    }

    pub(super) fn write_raw(&mut self, bytes: &[u8]) -> Result<(), StoreError> {
        let Some(writer) = self.writer.as_mut() else {
            return Err(StoreError::ReadOnly {
                id: self.id.clone(),
            });
        };
        writer
            .file
            .write_all(bytes)
            .map_err(super::io_error(&self.path))
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Durability, LogEntry, SessionStore};
    use crate::conversation::Message;

    #[test]
    fn durability_decides_which_appends_are_synced_and_applies_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path(), Durability::Flush);
        let mut log = store.create_log("s").unwrap();
        let entry = [LogEntry::message(Message::user("m", "hi"))];
        log.append(&entry, false).unwrap();
        assert_eq!(log.syncs(), 0, "flush: handed to the OS only");
        log.append(&entry, true).unwrap();
        assert_eq!(log.syncs(), 1, "headers and compactions always sync");
        store.set_durability(Durability::Fsync);
        log.append(&entry, false).unwrap();
        assert_eq!(log.syncs(), 2, "fsync: every append, in logs already open");
    }
}
