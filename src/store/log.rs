//! Writing a session log: one `write` per append, so a crash tears at most
//! the end, and an fsync when the configuration asks for one.
//!
//! A write that fails (a full disk, an I/O error, a failed sync) may leave
//! part of its bytes behind. The log is cut back to its last complete line
//! before the error is returned, and, if even that fails, before anything
//! else is written: so nothing is ever appended onto a partial line, and an
//! entry whose append was refused never reappears after a restart.

use std::fs::File;
use std::io::{self, Write};
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
    /// The length of the log up to its last complete line: what every
    /// acknowledged write ends at, and where a failed one is cut back to.
    whole_len: u64,
    /// A failed write could not be cut back yet: the next write cuts first.
    needs_cut: bool,
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
    ) -> Result<SessionLog, StoreError> {
        let whole_len = file
            .metadata()
            .map_err(super::error::io_error(&path))?
            .len();
        Ok(SessionLog {
            id: id.to_string(),
            path,
            writer: Some(Writer {
                file,
                durability,
                syncs: 0,
                whole_len,
                needs_cut: false,
                _lock: lock,
            }),
        })
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

    /// The blob store beside this log (its messages' large data).
    pub fn blobs(&self) -> super::Blobs {
        super::Blobs::in_data_dir(self.path.parent().unwrap_or(Path::new(".")))
    }

    pub fn is_read_only(&self) -> bool {
        self.writer.is_none()
    }

    /// Appends entries with one write, so a crash tears at most the end.
    /// `durable` syncs to disk whatever the configured durability (headers
    /// and compactions); otherwise `Durability` decides. On an error
    /// nothing of these entries stays in the log.
    pub fn append(&mut self, entries: &[LogEntry], durable: bool) -> Result<(), StoreError> {
        self.write_with(durable, |out| {
            for entry in entries {
                serde_json::to_writer(&mut *out, entry).map_err(io::Error::from)?;
                out.write_all(b"\n")?;
            }
            Ok(())
        })
    }

    /// How many appends were synced to disk (for tests of durability).
    pub fn syncs(&self) -> u64 {
        self.writer.as_ref().map_or(0, |w| w.syncs)
    }

    /// Writes `bytes` (whole lines, or the newline ending a torn tail) and
    /// syncs them when `durable` or the durability asks: all of it, or on
    /// an error none of it.
    pub(super) fn write_raw(&mut self, bytes: &[u8], durable: bool) -> Result<(), StoreError> {
        self.write_with(durable, |out| out.write_all(bytes))
    }

    /// Writes what `write` produces through a buffer, so a small append is
    /// one `write` and a large one is never held whole a second time (a
    /// crash tears at most the end either way), then syncs when `durable`
    /// or the durability asks. On an error the log is cut back to where it
    /// was: all of it, or none of it.
    fn write_with(
        &mut self,
        durable: bool,
        write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    ) -> Result<(), StoreError> {
        let Some(writer) = self.writer.as_mut() else {
            return Err(StoreError::ReadOnly {
                id: self.id.clone(),
            });
        };
        let io_error = super::error::io_error(&self.path);
        if writer.needs_cut {
            writer.cut_back().map_err(|e| {
                super::error::io_error(&self.path)(io::Error::new(
                    e.kind(),
                    format!("an earlier write failed and the log could not be cut back to its last complete line ({e}); nothing is written until it can"),
                ))
            })?;
        }
        let mut out = io::BufWriter::with_capacity(WRITE_BUFFER, Counted::new(&writer.file));
        let flushed = write(&mut out).and_then(|()| out.flush());
        // Taken apart, never dropped: a `BufWriter` flushes what it holds
        // on drop, which after a failure would land after the cut.
        let (counted, _unwritten) = out.into_parts();
        let bytes = counted.bytes;
        let written = flushed.and_then(|()| {
            if durable || writer.durability.fsync() {
                writer.file.sync_data()?;
                writer.syncs += 1;
            }
            Ok(bytes)
        });
        match written {
            Ok(bytes) => {
                writer.whole_len += bytes;
                Ok(())
            }
            Err(e) => {
                // Best effort now; if it fails, the next write tries first.
                writer.needs_cut = true;
                if let Err(cut) = writer.cut_back() {
                    tracing::error!(
                        "{}: a failed write could not be cut back yet: {cut}",
                        self.path.display()
                    );
                }
                Err(io_error(e))
            }
        }
    }
}

/// Appends up to this size are one `write`.
const WRITE_BUFFER: usize = 1 << 20;

/// A writer that counts what it passed on.
struct Counted<W> {
    inner: W,
    bytes: u64,
}

impl<W> Counted<W> {
    fn new(inner: W) -> Counted<W> {
        Counted { inner, bytes: 0 }
    }
}

impl<W: Write> Write for Counted<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl Writer {
    /// Cuts the log back to its last complete line (the file is opened to
    /// append, so the next write lands right after it).
    fn cut_back(&mut self) -> io::Result<()> {
        self.file.set_len(self.whole_len)?;
        if self.durability.fsync() {
            self.file.sync_data()?;
        }
        self.needs_cut = false;
        Ok(())
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
