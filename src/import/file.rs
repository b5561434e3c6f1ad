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

use std::io::ErrorKind;
use std::path::Path;

use crate::regular_file;

/// The bytes of the regular file at `path`, or why it was not read.
pub fn read_regular(path: &Path, max_bytes: u64) -> Result<Vec<u8>, String> {
    regular_file::read_capped_as(path, max_bytes, "maxImportBytes").map_err(|e| match e.kind() {
        ErrorKind::InvalidInput => format!("{e}; only regular files are imported"),
        _ => e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
