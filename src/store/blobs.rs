//! Large parts of messages (an image's or a document's base64 `data`),
//! stored once by their content beside the session logs:
//! `<dataDir>/blobs/sha256/<2 hex>/<64 hex>`. The same screenshot sent ten
//! times, in one session or several, is one file. A blob is written to a
//! temporary file, synced, renamed into place and its folder synced before
//! the log line that names it is written, so no acknowledged message names
//! a missing blob; blobs are never changed or deleted (a branch, a handoff
//! or another session may name the same one). A name read from a log is
//! checked to be 64 lowercase hex digits before it becomes a path.
//!
//! A blob is trusted by its content, not its length: it is read only as a
//! regular file that is no symlink, under a cap, and served (or reused for
//! the same data appended again) only when its SHA-256 is its name, so a
//! file damaged or swapped on disk is an error naming it, never served as
//! the image, and a re-append writes the good data over it.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::regular_file;

/// `data` this long or longer is stored apart (8 KiB of base64, a 6 KB
/// image): smaller stays in the log line.
pub const MIN_BYTES: usize = 8 * 1024;

/// The most read of a blob: no frame a client may send holds more.
const MAX_BYTES: u64 = 1 << 30;

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
        Self::name_of_bytes(data.as_bytes())
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
        let same_length =
            fs::symlink_metadata(&path).is_ok_and(|m| m.is_file() && m.len() == data.len() as u64);
        if same_length && self.get(&name).is_ok() {
            return Ok(name);
        }
        let how = crate::regular_file::Replacement::DURABLE;
        crate::regular_file::replace(&path, data.as_bytes(), &how).map(|()| name)
    }

    /// A stored blob's data, when it is what its name says.
    pub fn get(&self, name: &str) -> io::Result<String> {
        let path = self.path(name)?;
        let kind = fs::symlink_metadata(&path)?.file_type();
        let invalid = |what: String| io::Error::new(io::ErrorKind::InvalidData, what);
        if !kind.is_file() {
            return Err(invalid(format!(
                "blob {name} is {}, not a regular file",
                regular_file::kind_name(kind)
            )));
        }
        let bytes = regular_file::read_capped(&path, MAX_BYTES)?;
        if Self::name_of_bytes(&bytes) != name {
            return Err(invalid(format!(
                "blob {name} does not hold what its name says (damaged or replaced on disk)"
            )));
        }
        String::from_utf8(bytes).map_err(|e| invalid(format!("blob {name}: {e}")))
    }

    fn name_of_bytes(bytes: &[u8]) -> String {
        let digest = Sha256::digest(bytes);
        digest.iter().map(|b| format!("{b:02x}")).collect()
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

    /// Same-length garbage is an error naming the blob, not the image, and
    /// appending the image again writes it back; a symlink is refused.
    #[test]
    fn a_blob_is_trusted_by_its_content_not_its_length() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = Blobs::in_data_dir(dir.path());
        let data = "iVBOR".repeat(4000);
        let name = blobs.put(&data).unwrap();
        let path = blobs.path(&name).unwrap();
        fs::write(&path, "x".repeat(data.len())).unwrap();
        let err = blobs.get(&name).unwrap_err();
        assert!(
            err.to_string().contains("does not hold what its name says"),
            "{err}"
        );
        assert!(err.to_string().contains(&name), "{err}");
        assert_eq!(blobs.put(&data).unwrap(), name);
        assert_eq!(blobs.get(&name).unwrap(), data);
        #[cfg(unix)]
        {
            let elsewhere = dir.path().join("elsewhere");
            fs::write(&elsewhere, &data).unwrap();
            fs::remove_file(&path).unwrap();
            std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
            let err = blobs.get(&name).unwrap_err();
            assert!(err.to_string().contains("not a regular file"), "{err}");
            // Appending the data again replaces the link with the blob.
            blobs.put(&data).unwrap();
            assert!(fs::symlink_metadata(&path).unwrap().is_file());
        }
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
