//! The discovery file: where a shared sidecar listens and its token, for
//! editors and agents on the same machine to attach to it.
//!
//! `$XDG_RUNTIME_DIR/compactd/server.json` (a per-user tmpfs the OS empties
//! at logout), else `<data dir>/compactd/server.json`; `--discovery-file`
//! or `COMPACTD_DISCOVERY_FILE` name another. Written through a temporary
//! file and a rename, mode 0600 in a 0700 directory, so nobody else on the
//! machine reads the token and a reader never sees half a file. Removed on
//! a clean exit, if it is still this process's.
//!
//! A file left by a process that died (`kill -9`, a crash, a power loss) is
//! stale: its pid is gone, or its address refuses connections. A server
//! starting replaces a stale file and refuses to start over a live one;
//! clients that find a stale file fall back to starting their own compactd
//! on stdio.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// What the discovery file holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Discovery {
    /// `ws://host:port/`, what clients connect to.
    pub url: String,
    /// `host:port`.
    pub address: String,
    /// Sent as `Authorization: Bearer <token>` (or `connection/authenticate`).
    pub token: String,
    /// The server's process id, to tell a stale file from a live one.
    pub pid: u32,
    pub version: String,
}

/// Where the discovery file is when nothing names another.
pub fn default_path() -> Option<PathBuf> {
    let dir = dirs::runtime_dir().or_else(dirs::data_dir)?;
    Some(dir.join("compactd").join("server.json"))
}

/// The path given, else `COMPACTD_DISCOVERY_FILE`, else the default.
pub fn resolve_path(given: Option<&Path>) -> Option<PathBuf> {
    given
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os("COMPACTD_DISCOVERY_FILE").map(PathBuf::from))
        .or_else(default_path)
}

/// Reads a discovery file; `Ok(None)` when there is none.
pub fn read(path: &Path) -> std::io::Result<Option<Discovery>> {
    match crate::regular_file::read_capped(path, 1 << 20) {
        Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{}: {e}", path.display()),
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Writes the file (0600, through a rename).
pub fn write(path: &Path, discovery: &Discovery) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        create_private_dir(dir)?;
    }
    let bytes = serde_json::to_vec_pretty(discovery).expect("discovery serializes");
    crate::regular_file::replace(path, &bytes, &crate::regular_file::Replacement::PRIVATE)
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// Removes the file if it still names this token (another server may have
/// replaced it since).
pub fn remove_if_ours(path: &Path, token: &str) {
    if let Ok(Some(found)) = read(path) {
        if found.token == token {
            if let Err(e) = std::fs::remove_file(path) {
                tracing::warn!("cannot remove {}: {e}", path.display());
            }
        }
    }
}

/// True while the process `pid` exists (on other platforms: assumed).
pub fn process_alive(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return false;
        };
        // Signal 0 checks existence; EPERM means it exists under another user.
        let rc = unsafe { libc::kill(pid, 0) };
        rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

/// A live server's discovery: the file exists, its process is alive and
/// its address accepts a TCP connection. `None` when there is no file or
/// it is stale.
pub async fn live(path: &Path) -> std::io::Result<Option<Discovery>> {
    let Some(found) = read(path)? else {
        return Ok(None);
    };
    if !process_alive(found.pid) {
        return Ok(None);
    }
    let connect = tokio::net::TcpStream::connect(&found.address);
    match tokio::time::timeout(std::time::Duration::from_secs(2), connect).await {
        Ok(Ok(_)) => Ok(Some(found)),
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(token: &str, pid: u32) -> Discovery {
        Discovery {
            url: "ws://127.0.0.1:1/".into(),
            address: "127.0.0.1:1".into(),
            token: token.into(),
            pid,
            version: "0".into(),
        }
    }

    #[test]
    fn written_private_read_back_and_removed_only_by_its_owner() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run/compactd/server.json");
        write(&path, &sample("a", 1)).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
            let dir_mode = std::fs::metadata(path.parent().unwrap())
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(dir_mode & 0o777, 0o700);
        }
        assert_eq!(read(&path).unwrap(), Some(sample("a", 1)));
        remove_if_ours(&path, "b");
        assert!(path.exists());
        remove_if_ours(&path, "a");
        assert!(!path.exists());
        assert_eq!(read(&path).unwrap(), None);
    }

    #[tokio::test]
    async fn a_file_whose_process_is_gone_is_stale() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("server.json");
        // Pid numbers this high are never handed out (pid_max ≤ 2^22).
        write(&path, &sample("a", 999_999_999)).unwrap();
        assert!(!process_alive(999_999_999));
        assert_eq!(live(&path).await.unwrap(), None);
        // Alive but nothing listening: stale too.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap().to_string();
        drop(listener);
        let mut own = sample("a", std::process::id());
        own.address = address;
        write(&path, &own).unwrap();
        assert_eq!(live(&path).await.unwrap(), None);
    }
}
