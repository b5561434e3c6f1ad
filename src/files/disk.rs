//! The ledger's edge to the machine: content hashes of files on disk
//! (SHA-256, written `sha256:<hex>`) and the process's own workspace.

use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::Workspace;

/// A workspace of `roots`, or of the working directory when there are none
/// (editors start language servers there), with the user's home.
pub fn workspace(roots: Vec<PathBuf>) -> Workspace {
    let roots = if roots.is_empty() {
        std::env::current_dir().into_iter().collect()
    } else {
        roots
    };
    Workspace::new(roots, dirs::home_dir())
}

/// Files larger than this are not hashed: hashing runs where the change
/// is recorded, and gigabytes would stall every session for seconds.
pub const HASH_MAX_BYTES: u64 = 256 << 20;

/// The hash of a regular file's content; `None` when it is missing,
/// unreadable, larger than `HASH_MAX_BYTES` or not a regular file.
/// Symlinks are followed (what matters is the content a reader would
/// get), but a FIFO or a device is refused by its type before anything
/// opens it, and the open itself never blocks (`regular_file`): a FIFO
/// at a tracked path would otherwise freeze the server until something
/// wrote to it.
pub fn content_hash(path: &Path) -> Option<String> {
    let file = crate::regular_file::open_read(path).ok()?;
    if file.metadata().ok()?.len() > HASH_MAX_BYTES {
        return None;
    }
    let mut file = file.take(HASH_MAX_BYTES + 1);
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut read = 0u64;
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                hasher.update(&buf[..n]);
                read += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return None,
        }
    }
    (read <= HASH_MAX_BYTES).then(|| format_hash(&hasher.finalize()))
}

/// The hash of a text as it would be on disk (an editor buffer).
pub fn text_hash(text: &str) -> String {
    format_hash(&Sha256::digest(text.as_bytes()))
}

fn format_hash(digest: &[u8]) -> String {
    let mut out = String::with_capacity(7 + digest.len() * 2);
    out.push_str("sha256:");
    for byte in digest {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_and_text_hashes_agree() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        std::fs::write(&path, "hello\n").unwrap();
        assert_eq!(content_hash(&path), Some(text_hash("hello\n")));
        assert_eq!(
            text_hash(""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(content_hash(dir.path()), None, "a directory has no content");
        assert_eq!(content_hash(&dir.path().join("missing")), None);
        #[cfg(unix)]
        {
            // Opened blocking, a FIFO would hang this test forever.
            let fifo = dir.path().join("fifo");
            let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
            assert_eq!(content_hash(&fifo), None);
            let link = dir.path().join("zero");
            std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
            assert_eq!(content_hash(&link), None, "a device has no content");
        }
    }
}
