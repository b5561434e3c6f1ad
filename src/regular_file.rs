//! Opening files without trusting the path: only a regular file is opened.
//! A FIFO (or `/proc/self/fd/0`) blocks whoever reads it and eats whatever
//! is written to it, a device such as `/dev/zero` never ends, and a
//! directory is no file at all. Session logs, their lock files, imported
//! transcripts and followed ones are all opened through here.
//!
//! The type is checked before opening, since opening a FIFO blocks and
//! opening a device may act on it, and again on the opened handle, since
//! the path may have been swapped in between (the open itself is
//! non-blocking for that reason). A path that does not exist yet is
//! created only where the caller's options say so, and checked on the
//! handle like any other.
//!
//! Whole files (configuration, an agent's settings, compactd's own caches)
//! are read through `read_capped`, which adds a size cap: a symlink to
//! `/dev/zero` is refused by its type, and a regular file that is, or
//! grows, larger than the cap is refused without reading past it.
//!
//! A whole file is replaced through `replace`, the one writer of whole
//! files: written beside the file under a temporary name, synced, renamed
//! over it and its folder synced, so a crash or a full disk leaves the old
//! file or the new one, never half of one, and the rename survives a power
//! loss. Caches that cost nothing to lose skip the syncs.

use std::fs::{File, FileType, Metadata, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The most read of a settings or state file an agent or the user writes
/// (Claude Code's `.claude.json` keeps every project's history and runs to
/// megabytes; nothing real comes near this).
pub const SETTINGS_MAX_BYTES: u64 = 64 << 20;

/// Opens a regular file for reading.
pub fn open_read(path: &Path) -> io::Result<File> {
    open_with(path, OpenOptions::new().read(true))
}

/// Opens the file at `path` with `options`, refusing anything but a
/// regular file, before and after opening. `NotFound` stays `NotFound`
/// (when `options` do not create), so callers can tell "absent" apart.
pub fn open_with(path: &Path, options: &mut OpenOptions) -> io::Result<File> {
    match std::fs::metadata(path) {
        Ok(meta) => check_regular(&meta)?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let file = non_blocking(options).open(path)?;
    check_regular(&file.metadata()?)?;
    Ok(file)
}

/// The bytes of the regular file at `path`, at most `max_bytes` of them.
/// A file larger than that, or one that grows past it while read, is a
/// `FileTooLarge` error that gives both sizes; anything but a regular file
/// is `InvalidInput` (`open_with`); `NotFound` stays `NotFound`.
pub fn read_capped(path: &Path, max_bytes: u64) -> io::Result<Vec<u8>> {
    read_capped_as(path, max_bytes, "the cap")
}

/// `read_capped`, its errors naming the cap as `cap_name` (a setting).
pub fn read_capped_as(path: &Path, max_bytes: u64, cap_name: &str) -> io::Result<Vec<u8>> {
    let file = open_read(path)?;
    let len = file.metadata()?.len();
    let too_large = |message: String| io::Error::new(io::ErrorKind::FileTooLarge, message);
    let cap = human_bytes(max_bytes);
    if len > max_bytes {
        return Err(too_large(format!(
            "the file is {}, more than {cap_name} ({cap})",
            human_bytes(len)
        )));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max_bytes {
        return Err(too_large(format!(
            "the file grew past {cap_name} ({cap}) while it was read"
        )));
    }
    Ok(bytes)
}

/// `read_capped` as UTF-8 text (`InvalidData` when it is not).
pub fn read_to_string_capped(path: &Path, max_bytes: u64) -> io::Result<String> {
    String::from_utf8(read_capped(path, max_bytes)?)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "the file is not UTF-8 text"))
}

/// `Ok` for a regular file; else an `InvalidInput` error naming its kind.
pub fn check_regular(metadata: &Metadata) -> io::Result<()> {
    let kind = metadata.file_type();
    if kind.is_file() {
        return Ok(());
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("not a regular file ({})", kind_name(kind)),
    ))
}

#[cfg(unix)]
fn non_blocking(options: &mut OpenOptions) -> &mut OpenOptions {
    use std::os::unix::fs::OpenOptionsExt;
    options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
}

#[cfg(not(unix))]
fn non_blocking(options: &mut OpenOptions) -> &mut OpenOptions {
    options
}

/// What a file that is not a regular one is, in words.
pub fn kind_name(kind: FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a FIFO or pipe";
        }
        if kind.is_char_device() {
            return "a character device";
        }
        if kind.is_block_device() {
            return "a block device";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    if kind.is_symlink() {
        // Only where the caller looked without following links.
        "a symlink"
    } else if kind.is_dir() {
        "a directory"
    } else {
        "a special file"
    }
}

/// `1536` → `1536 bytes`; `3221225472` → `3.0 GiB (3221225472 bytes)`.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [(&str, u64); 3] = [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    match UNITS.iter().find(|(_, size)| n >= *size) {
        Some((unit, size)) => format!("{:.1} {unit} ({n} bytes)", n as f64 / *size as f64),
        None => format!("{n} bytes"),
    }
}

/// How `replace` writes a file.
#[derive(Debug, Clone, Copy)]
pub struct Replacement<'a> {
    /// The permissions of a new file (less the umask): 0o600 for one only
    /// its owner may read from the first byte.
    pub mode: u32,
    /// Sync the file and its folder: off only for a cache.
    pub durable: bool,
    /// Keep the permissions and the owner this file has, when it exists
    /// (the file being replaced, usually).
    pub like: Option<&'a Path>,
}

impl Replacement<'_> {
    /// A file others may read, durable.
    pub const DURABLE: Replacement<'static> = Replacement {
        mode: 0o666,
        durable: true,
        like: None,
    };
    /// A file only its owner may read, durable.
    pub const PRIVATE: Replacement<'static> = Replacement {
        mode: 0o600,
        ..Replacement::DURABLE
    };
    /// A cache: losing it only costs a longer read.
    pub const CACHE: Replacement<'static> = Replacement {
        durable: false,
        ..Replacement::DURABLE
    };
}

/// Replaces `path` with `bytes` (creating its folder), as `how` says; on
/// an error the temporary file is removed and `path` is as it was.
pub fn replace(path: &Path, bytes: &[u8], how: &Replacement) -> io::Result<()> {
    let folder = match path.parent() {
        Some(f) if !f.as_os_str().is_empty() => f.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&folder)?;
    let temporary = temporary_beside(path, &folder)?;
    let written = write_new(&temporary, bytes, how).and_then(|()| {
        std::fs::rename(&temporary, path)?;
        if how.durable {
            sync_folder(&folder)?;
        }
        Ok(())
    });
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

/// `.<name>.<pid>.<n>.tmp` in `folder`: unique within the process too.
fn temporary_beside(path: &Path, folder: &Path) -> io::Result<PathBuf> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: not a file name", path.display()),
        )
    })?;
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    Ok(folder.join(format!(
        ".{}.{}.{n}.tmp",
        name.to_string_lossy(),
        std::process::id()
    )))
}

fn write_new(temporary: &Path, bytes: &[u8], how: &Replacement) -> io::Result<()> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(how.mode);
    }
    let mut file = options.open(temporary)?;
    file.write_all(bytes)?;
    if let Some(meta) = how.like.and_then(|like| std::fs::metadata(like).ok()) {
        file.set_permissions(meta.permissions())?;
        keep_owner(temporary, &meta);
    }
    if how.durable {
        file.sync_all()?;
    }
    Ok(())
}

/// The owner of `like` for `file`, where the process may give it (root
/// rewriting a user's file leaves it the user's).
#[cfg(unix)]
fn keep_owner(file: &Path, like: &Metadata) {
    use std::os::unix::fs::MetadataExt;
    let _ = std::os::unix::fs::chown(file, Some(like.uid()), Some(like.gid()));
}

#[cfg(not(unix))]
fn keep_owner(_file: &Path, _like: &Metadata) {}

/// Makes a rename in `folder` durable.
#[cfg(unix)]
pub fn sync_folder(folder: &Path) -> io::Result<()> {
    File::open(folder)?.sync_all()
}

#[cfg(not(unix))]
pub fn sync_folder(_: &Path) -> io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replaced_file_is_whole_keeps_its_mode_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("deep/settings.json");
        replace(&file, b"{\"a\":1}", &Replacement::PRIVATE).unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"{\"a\":1}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&file), 0o600);
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
            let like = Replacement {
                like: Some(&file),
                ..Replacement::DURABLE
            };
            replace(&file, b"{}", &like).unwrap();
            assert_eq!(mode(&file), 0o640);
        }
        // A folder that cannot take the file: the error, and nothing left.
        let blocked = dir.path().join("deep/settings.json/inner");
        assert!(replace(&blocked, b"x", &Replacement::CACHE).is_err());
        let left: Vec<_> = std::fs::read_dir(dir.path().join("deep"))
            .unwrap()
            .collect();
        assert_eq!(left.len(), 1, "{left:?}");
        assert_eq!(std::fs::read(&file).unwrap(), b"{}");
    }

    #[test]
    fn sizes_read_like_people_write_them() {
        assert_eq!(human_bytes(1000), "1000 bytes");
        assert_eq!(human_bytes(1 << 30), "1.0 GiB (1073741824 bytes)");
        assert_eq!(human_bytes(1536), "1.5 KiB (1536 bytes)");
    }

    #[test]
    fn whole_reads_stop_at_the_cap_and_refuse_devices() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("settings.json");
        std::fs::write(&file, "x".repeat(2048)).unwrap();
        let err = read_capped(&file, 1024).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::FileTooLarge);
        assert!(err.to_string().contains("2.0 KiB"), "{err}");
        assert_eq!(read_capped(&file, 2048).unwrap().len(), 2048);
        let missing = dir.path().join("missing");
        assert_eq!(
            read_capped(&missing, 10).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        #[cfg(unix)]
        {
            let link = dir.path().join("compactd.toml");
            std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
            let err = read_to_string_capped(&link, 1 << 20).unwrap_err();
            assert!(err.to_string().contains("a character device"), "{err}");
        }
    }

    #[test]
    fn only_regular_files_open_and_absent_ones_stay_absent() {
        let dir = tempfile::tempdir().unwrap();
        let err = open_read(dir.path()).unwrap_err();
        assert!(err.to_string().contains("a directory"), "{err}");
        let missing = dir.path().join("missing");
        assert_eq!(
            open_read(&missing).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        let created = open_with(&missing, OpenOptions::new().append(true).create(true));
        assert!(created.is_ok() && missing.is_file());
        #[cfg(unix)]
        {
            let err = open_read(Path::new("/dev/zero")).unwrap_err();
            assert!(err.to_string().contains("a character device"), "{err}");
            let fifo = dir.path().join("fifo");
            let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
            let err = open_with(&fifo, OpenOptions::new().read(true).write(true)).unwrap_err();
            assert!(err.to_string().contains("a FIFO"), "{err}");
            let link = dir.path().join("zero.jsonl");
            std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
            let err = open_with(&link, OpenOptions::new().append(true).create(true)).unwrap_err();
            assert!(err.to_string().contains("a character device"), "{err}");
        }
    }
}
