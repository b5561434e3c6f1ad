//! One writer per session log. A process that opens a session for writing
//! holds an exclusive advisory lock (`File::try_lock`: `flock` on Unix,
//! `LockFileEx` on Windows) on the sidecar file `<id>.lock` beside the log,
//! and writes its pid there so another process can say who holds it. The
//! operating system drops the lock when the file is closed, at exit and on
//! a crash, so a lock never outlives its holder. The sidecar is never
//! deleted: removing a lock file while someone may be opening it would let
//! two processes lock two different files of the same name.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::regular_file;

/// Why a lock could not be taken.
#[derive(Debug)]
pub enum LockError {
    /// Another process (or another open of the same session in this one)
    /// holds it; its pid when the lock file records one.
    Held {
        pid: Option<u32>,
    },
    Io(io::Error),
}

/// A held lock; dropping it releases the lock.
#[derive(Debug)]
pub struct SessionLock {
    _file: File,
    path: PathBuf,
}

impl SessionLock {
    /// Takes the lock at `path` (created if missing) without waiting.
    pub fn acquire(path: &Path) -> Result<SessionLock, LockError> {
        let file = regular_file::open_with(
            path,
            OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false),
        )
        .map_err(LockError::Io)?;
        Self::lock(file, path)
    }

    /// Takes the lock at `path` only if that lock file exists: `Ok(None)`
    /// when it does not (no compactd ever opened that session there).
    pub fn acquire_existing(path: &Path) -> Result<Option<SessionLock>, LockError> {
        match regular_file::open_with(path, OpenOptions::new().read(true).write(true)) {
            Ok(file) => Self::lock(file, path).map(Some),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(LockError::Io(e)),
        }
    }

    fn lock(mut file: File, path: &Path) -> Result<SessionLock, LockError> {
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(LockError::Held {
                    pid: read_pid(&mut file),
                })
            }
            Err(TryLockError::Error(e)) if e.kind() == io::ErrorKind::Unsupported => {
                // A filesystem without locks: refusing would make every
                // session unusable there, so go on unprotected, loudly.
                tracing::warn!(
                    "{}: this filesystem has no file locks; another process could open the same session",
                    path.display()
                );
            }
            Err(TryLockError::Error(e)) => return Err(LockError::Io(e)),
        }
        write_pid(&mut file).map_err(LockError::Io)?;
        Ok(SessionLock {
            _file: file,
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Records this process as the holder: the pid is written over the start
/// before the rest is cut, so a reader sees either the old pid or the new
/// one as the first line, never a mix.
fn write_pid(file: &mut File) -> io::Result<()> {
    let line = format!("{}\n", std::process::id());
    file.seek(SeekFrom::Start(0))?;
    file.write_all(line.as_bytes())?;
    file.set_len(line.len() as u64)
}

/// The holder's pid, when the file records one (it may not yet, for a few
/// microseconds after the holder took the lock; Windows also refuses to
/// read a locked range).
fn read_pid(file: &mut File) -> Option<u32> {
    let mut text = String::new();
    file.seek(SeekFrom::Start(0)).ok()?;
    file.take(64).read_to_string(&mut text).ok()?;
    text.lines().next()?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_open_is_refused_and_names_the_holder_until_the_first_drops() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.lock");
        std::fs::write(&path, "999999999\nstale holder").unwrap();
        let first = SessionLock::acquire(&path).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            format!("{}\n", std::process::id())
        );
        match SessionLock::acquire(&path) {
            Err(LockError::Held { pid }) => assert_eq!(pid, Some(std::process::id())),
            other => panic!("second lock: {other:?}"),
        }
        assert!(matches!(
            SessionLock::acquire_existing(&path),
            Err(LockError::Held { .. })
        ));
        drop(first);
        let again = SessionLock::acquire(&path).unwrap();
        assert_eq!(again.path(), path);
    }

    #[test]
    fn acquire_existing_creates_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("none.lock");
        assert!(SessionLock::acquire_existing(&path).unwrap().is_none());
        assert!(!path.exists());
    }
}
