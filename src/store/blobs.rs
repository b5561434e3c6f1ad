//! Large parts of messages (an image's or a document's base64 `data`),
//! stored once by their content beside the session logs:
//! `<dataDir>/blobs/sha256/<2 hex>/<64 hex>`. The same screenshot sent ten
//! times, in one session or several, is one file. A blob is written to a
//! temporary file, synced, renamed into place and its folder synced before
//! the log line that names it is written, so no acknowledged message names
//! a missing blob; blobs are never changed or deleted (a branch, a handoff
//! or another session may name the same one). A name read from a log is
//! checked to be 64 lowercase hex digits before it becomes a path.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::regular_file;

/// `data` this long or longer is stored apart (8 KiB of base64, a 6 KB
/// image): smaller stays in the log line.
pub const MIN_BYTES: usize = 8 * 1024;

#[derive(Debug, Clone)]
pub struct Blobs {
    dir: PathBuf,
}

impl Blobs {
    /// The blob store of the session logs in `data_dir`.
    pub fn in_data_dir(data_dir: &Path) -> Blobs {
        Blobs {
            dir: data_dir.join("blobs").join("sha256"),
        }
    }

    /// The name of `data`: its SHA-256 in lowercase hex.
    pub fn name_of(data: &str) -> String {
        let digest = Sha256::digest(data.as_bytes());
        digest.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn path(&self, name: &str) -> io::Result<PathBuf> {
        let valid =
            name.len() == 64 && name.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        if !valid {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("`{name}` is not a blob name (64 lowercase hex digits)"),
            ));
        }
        Ok(self.dir.join(&name[..2]).join(name))
    }

    /// Stores `data` (once: a blob already there is not written again) and
    /// returns its name, durable when this returns.
    pub fn put(&self, data: &str) -> io::Result<String> {
        let name = Self::name_of(data);
        let path = self.path(&name)?;
        if fs::metadata(&path).is_ok_and(|m| m.is_file() && m.len() == data.len() as u64) {
            return Ok(name);
        }
        let how = crate::regular_file::Replacement::DURABLE;
        crate::regular_file::replace(&path, data.as_bytes(), &how).map(|()| name)
    }

    /// A stored blob's data.
    pub fn get(&self, name: &str) -> io::Result<String> {
        let path = self.path(name)?;
        let file = regular_file::open_read(&path)?;
        let mut text = String::new();
        io::Read::read_to_string(&mut io::BufReader::new(file), &mut text)?;
        Ok(text)
    }

    /// Whether a blob of that name is stored.
    pub fn has(&self, name: &str) -> bool {
        self.path(name).is_ok_and(|p| p.is_file())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_once_by_content_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = Blobs::in_data_dir(dir.path());
        let data = "iVBOR".repeat(4000);
        let name = blobs.put(&data).unwrap();
        assert_eq!(blobs.put(&data).unwrap(), name);
        assert_eq!(blobs.get(&name).unwrap(), data);
        let stored: Vec<_> = walk(&dir.path().join("blobs"));
        assert_eq!(stored.len(), 1, "{stored:?}");
        assert!(blobs.get("../../etc/passwd").is_err());
        assert!(!blobs.has(&"0".repeat(64)));
    }

    fn walk(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                out.extend(walk(&path));
            } else {
                out.push(path);
            }
        }
        out
    }
}
