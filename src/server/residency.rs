//! Which sessions stay open. An open session holds its log and its lock
//! (two file descriptors) and its memory, so a server that only ever opened
//! sessions would run out of descriptors (the 507th open under the common
//! limit of 1,024). Three things keep that bounded:
//!
//! - `conversation/close` closes a session for the connection that asks
//!   (on the shared sidecar, once no other connection uses it), and a
//!   shared sidecar's connection that ends closes the sessions only it used.
//! - Under pressure, more than `cap` sessions open, the least recently used
//!   idle session is closed: never one with a running compaction, one being
//!   imported, or one that follows an agent (whose mirror costs a re-read).
//!   It is only *evicted*: the next message that names it reopens it from
//!   its log, the way it was open (to write, or read-only), so a client
//!   never sees the difference but for the breaker's memory, which starts
//!   afresh. While evicted, it gets no editor or disk file events.
//! - At start the process raises its soft descriptor limit to the hard one
//!   (`raise_descriptor_limit`), and `cap` is a third of what it got, less
//!   a reserve for everything else.

use std::collections::HashMap;

use crate::protocol::methods::{self, Method};

/// Descriptors kept for everything but sessions: stdio, the watcher, the
/// runtime, sockets, transcripts being read.
const RESERVED_DESCRIPTORS: u64 = 64;
/// Open sessions kept at the least, whatever the limit says.
const MIN_CAP: usize = 8;

/// How a session was open before it was evicted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reopen {
    Write,
    ReadOnly,
}

#[derive(Debug)]
pub(crate) struct Residency {
    /// Sessions kept open at most before the least recently used idle one
    /// is evicted.
    pub cap: usize,
    clock: u64,
    last_used: HashMap<String, u64>,
    evicted: HashMap<String, Reopen>,
}

impl Default for Residency {
    fn default() -> Residency {
        Residency::with_cap(cap_for(descriptor_limit()))
    }
}

impl Residency {
    pub fn with_cap(cap: usize) -> Residency {
        Residency {
            cap: cap.max(MIN_CAP),
            clock: 0,
            last_used: HashMap::new(),
            evicted: HashMap::new(),
        }
    }

    /// The session was used now.
    pub fn touch(&mut self, id: &str) {
        self.clock += 1;
        self.last_used.insert(id.to_string(), self.clock);
    }

    /// When the session was last used (a smaller number: longer ago).
    pub fn last_used(&self, id: &str) -> Option<u64> {
        self.last_used.get(id).copied()
    }

    /// The session was closed to free descriptors, open this way.
    pub fn evicted(&mut self, id: &str, how: Reopen) {
        self.evicted.insert(id.to_string(), how);
    }

    /// How an evicted session was open (`None`: it was not evicted).
    pub fn was_evicted(&self, id: &str) -> Option<Reopen> {
        self.evicted.get(id).copied()
    }

    /// The session is open again.
    pub fn reopened(&mut self, id: &str) {
        self.evicted.remove(id);
    }

    /// The session is closed for good; true when it was evicted.
    pub fn forget(&mut self, id: &str) -> bool {
        self.last_used.remove(id);
        self.evicted.remove(id).is_some()
    }
}

/// The open sessions a process with `limit` descriptors keeps.
fn cap_for(limit: u64) -> usize {
    (limit.saturating_sub(RESERVED_DESCRIPTORS) / 3) as usize
}

/// The soft limit on open descriptors (`RLIMIT_NOFILE`).
#[cfg(unix)]
fn descriptor_limit() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit only writes the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return 1024;
    }
    limit.rlim_cur
}

#[cfg(not(unix))]
fn descriptor_limit() -> u64 {
    // Windows' C runtime limit is 8,192 handles; the OS has no small one.
    8192
}

/// Raises the soft limit on open descriptors to the hard limit, as servers
/// that hold many files do; returns the soft limit in force afterwards.
#[cfg(unix)]
pub fn raise_descriptor_limit() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write the struct given.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return descriptor_limit();
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: limit.rlim_max,
                rlim_max: limit.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) != 0 {
                tracing::debug!("could not raise the descriptor limit");
            }
        }
    }
    descriptor_limit()
}

#[cfg(not(unix))]
pub fn raise_descriptor_limit() -> u64 {
    descriptor_limit()
}

/// The `sessionId` a message's params name, if any, when the method needs
/// that session open (closing or unsubscribing an evicted one does not).
pub(crate) fn named_session<'a>(method: &str, params: &'a serde_json::Value) -> Option<&'a str> {
    if method == methods::CloseSession::NAME || method == methods::Unsubscribe::NAME {
        return None;
    }
    params.get("sessionId")?.as_str()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_is_a_third_of_the_limit_after_a_reserve() {
        assert_eq!(cap_for(1024), 320);
        assert_eq!(cap_for(10), 0);
        assert_eq!(Residency::with_cap(cap_for(10)).cap, MIN_CAP);
        assert_eq!(cap_for(1 << 20), 349_504);
    }
}
