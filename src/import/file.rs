//! Reading a transcript file without trusting the path: only a regular file
//! of at most `maxImportBytes` is read. A FIFO (or `/proc/self/fd/0`) would
//! block the reader forever and eat whatever is written to it, a device
//! such as `/dev/zero` never ends, and a directory is not a transcript.
//!
//! The type is checked before opening, since opening a FIFO blocks and
//! opening a device may act on it, and again on the opened handle, since
//! the path may have been swapped in between (the open itself is
//! non-blocking for that reason). The read stops one byte past the cap, so
//! a file that grows while it is read cannot exhaust memory.

use std::fs::{File, Metadata};
use std::io::Read;
use std::path::Path;

use crate::regular_file::{self, human_bytes};

/// The bytes of the regular file at `path`, or why it was not read.
pub fn read_regular(path: &Path, max_bytes: u64) -> Result<Vec<u8>, String> {
    let before = std::fs::metadata(path).map_err(|e| e.to_string())?;
    check(&before, max_bytes)?;
    let file = open(path)?;
    let opened = file.metadata().map_err(|e| e.to_string())?;
    check(&opened, max_bytes)?;
    read_bounded(file, opened.len(), max_bytes)
}

fn open(path: &Path) -> Result<File, String> {
    regular_file::open_read(path).map_err(|e| e.to_string())
}

/// At most `max_bytes` from `reader`; an error if there is more.
/// `expected` (the size when checked) only sizes the buffer.
fn read_bounded(reader: impl Read, expected: u64, max_bytes: u64) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::with_capacity(expected.min(max_bytes) as usize);
    reader
        .take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > max_bytes {
        return Err(format!(
            "the file grew past maxImportBytes ({}) while it was read",
            human_bytes(max_bytes)
        ));
    }
    Ok(bytes)
}

fn check(metadata: &Metadata, max_bytes: u64) -> Result<(), String> {
    if let Err(e) = regular_file::check_regular(metadata) {
        return Err(format!("{e}; only regular files are imported"));
    }
    if metadata.len() > max_bytes {
        return Err(format!(
            "the file is {}, more than maxImportBytes ({})",
            human_bytes(metadata.len()),
            human_bytes(max_bytes)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reader_longer_than_the_cap_is_refused_without_reading_it_all() {
        // An endless reader stands in for a file that grows while read.
        let endless = std::io::repeat(b'x');
        let err = read_bounded(endless, 10, 1000).unwrap_err();
        assert!(err.contains("grew past maxImportBytes"), "{err}");
        let exact = read_bounded(&b"0123456789"[..], 10, 10).unwrap();
        assert_eq!(exact.len(), 10);
    }

    #[test]
    fn directories_and_devices_are_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let err = read_regular(dir.path(), 1 << 30).unwrap_err();
        assert!(err.contains("a directory"), "{err}");
        #[cfg(unix)]
        {
            let err = read_regular(Path::new("/dev/null"), 1 << 30).unwrap_err();
            assert!(err.contains("a character device"), "{err}");
        }
        let file = dir.path().join("t.jsonl");
        std::fs::write(&file, "x".repeat(2048)).unwrap();
        let err = read_regular(&file, 1024).unwrap_err();
        assert!(
            err.contains("2.0 KiB") && err.contains("1024 bytes"),
            "{err}"
        );
        assert_eq!(read_regular(&file, 2048).unwrap().len(), 2048);
    }
}
