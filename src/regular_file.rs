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

use std::fs::{File, FileType, Metadata, OpenOptions};
use std::io::{self, Read};
use std::path::Path;

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
    if kind.is_dir() {
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

#[cfg(test)]
mod tests {
    use super::*;

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
