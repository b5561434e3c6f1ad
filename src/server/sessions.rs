//! The open sessions: the store they live in, the ids reserved by imports
//! under way, and which stay open (`residency`). Every request that names
//! a session finds it here; an id being imported is refused until the
//! import is answered, and a session evicted to free descriptors comes
//! back from its log when a message names it. A session that follows an
//! agent's transcript live is held with its mirror (`engine::follow::Mirror`):
//! one owner for both, so whatever needs the two finds them in one lookup.

use std::collections::HashMap;

use lsp_server::RequestId;

use super::residency::{Reopen, Residency};
use super::rpc::{no_session, RpcError, RpcResult};
use crate::engine::follow::Mirror;
use crate::engine::{self, Access, OpenSession, SessionEnv};
use crate::store::{SessionSettings, SessionStore};

/// A session a client may compact, with the store and the mirror it is
/// followed through (`Sessions::compactable`).
pub(crate) type Compactable<'a> = (
    &'a SessionStore,
    &'a mut OpenSession,
    Option<&'a mut Mirror>,
);

pub(crate) struct Sessions {
    pub store: SessionStore,
    open: HashMap<String, Resident>,
    /// Ids of sessions being imported, with the import's request.
    importing: HashMap<String, RequestId>,
    residency: Residency,
    /// Sessions opened or closed since the watcher last looked.
    changed: bool,
}

/// An open session, and the mirror it is followed through when this
/// process follows its transcript live.
struct Resident {
    open: OpenSession,
    mirror: Option<Box<Mirror>>,
}

impl Resident {
    fn parts(&self) -> (&OpenSession, Option<&Mirror>) {
        (&self.open, self.mirror.as_deref())
    }

    fn parts_mut(&mut self) -> (&mut OpenSession, Option<&mut Mirror>) {
        (&mut self.open, self.mirror.as_deref_mut())
    }
}

impl Sessions {
    pub fn new(store: SessionStore) -> Sessions {
        Sessions {
            store,
            open: HashMap::new(),
            importing: HashMap::new(),
            residency: Residency::default(),
            changed: false,
        }
    }

    /// An open session a request may use: refused while it is being
    /// imported, or when it is not open.
    pub fn get(&self, id: &str) -> RpcResult<&OpenSession> {
        Ok(self.get_followed(id)?.0)
    }

    pub fn get_mut(&mut self, id: &str) -> RpcResult<&mut OpenSession> {
        Ok(self.get_mut_followed(id)?.0)
    }

    /// `get`, with the mirror it is followed through (if it is).
    pub fn get_followed(&self, id: &str) -> RpcResult<(&OpenSession, Option<&Mirror>)> {
        self.unreserved(id)?;
        self.open
            .get(id)
            .map(Resident::parts)
            .ok_or_else(|| no_session(id))
    }

    /// `get_mut`, with the mirror it is followed through (if it is).
    pub fn get_mut_followed(
        &mut self,
        id: &str,
    ) -> RpcResult<(&mut OpenSession, Option<&mut Mirror>)> {
        self.unreserved(id)?;
        self.open
            .get_mut(id)
            .map(Resident::parts_mut)
            .ok_or_else(|| no_session(id))
    }

    /// A session a client may compact, with the store (a followed one's
    /// own log may have to be taken): refused when it is open read-only,
    /// before a progress token or a plan exists for it. A followed one is
    /// compacted into compactd's own log of it.
    pub fn compactable(&mut self, id: &str) -> RpcResult<Compactable<'_>> {
        self.unreserved(id)?;
        let resident = self.open.get_mut(id).ok_or_else(|| no_session(id))?;
        resident.open.check_compactable()?;
        let (open, mirror) = resident.parts_mut();
        Ok((&self.store, open, mirror))
    }

    /// An open session, whatever is under way (for the state's owners).
    pub fn find(&self, id: &str) -> Option<&OpenSession> {
        self.open.get(id).map(|r| &r.open)
    }

    pub fn find_mut(&mut self, id: &str) -> Option<&mut OpenSession> {
        self.open.get_mut(id).map(|r| &mut r.open)
    }

    /// `find`, with the mirror it is followed through (if it is).
    pub fn find_followed(&self, id: &str) -> Option<(&OpenSession, Option<&Mirror>)> {
        self.open.get(id).map(Resident::parts)
    }

    /// `find_mut`, with the mirror it is followed through (if it is).
    pub fn find_mut_followed(
        &mut self,
        id: &str,
    ) -> Option<(&mut OpenSession, Option<&mut Mirror>)> {
        self.open.get_mut(id).map(Resident::parts_mut)
    }

    pub fn contains(&self, id: &str) -> bool {
        self.open.contains_key(id)
    }

    /// Every open session's id, in a stable order.
    pub fn ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.open.keys().cloned().collect();
        ids.sort();
        ids
    }

    pub fn all(&self) -> impl Iterator<Item = &OpenSession> {
        self.open.values().map(|r| &r.open)
    }

    pub fn all_mut(&mut self) -> impl Iterator<Item = &mut OpenSession> {
        self.open.values_mut().map(|r| &mut r.open)
    }

    /// Refuses an id whose session is being imported: it exists once the
    /// import is answered.
    pub fn unreserved(&self, id: &str) -> RpcResult<()> {
        match self.importing.get(id) {
            Some(request) => Err(RpcError::invalid_params(format!(
                "sessionId: `{id}` is being imported (request {request}); it opens when that request is answered"
            ))),
            None => Ok(()),
        }
    }

    /// Holds an id for the import `request` until it is answered.
    pub fn reserve(&mut self, id: &str, request: RequestId) {
        self.importing.insert(id.to_string(), request);
    }

    pub fn release(&mut self, id: &str) {
        self.importing.remove(id);
    }

    /// Keeps a session open (a new one, or one resumed from its log).
    /// Under pressure the least recently used idle session makes room:
    /// never one that is `busy` (compacting), being imported, or following
    /// an agent (whose mirror costs a re-read).
    pub fn insert(&mut self, open: OpenSession, busy: &dyn Fn(&str) -> bool) {
        self.hold(open, None, busy);
    }

    /// Keeps a session open that follows an agent's transcript live, with
    /// the mirror it is followed through. It is never evicted.
    pub fn insert_followed(&mut self, open: OpenSession, mirror: Mirror) {
        self.hold(open, Some(Box::new(mirror)), &|_| false);
    }

    fn hold(
        &mut self,
        open: OpenSession,
        mirror: Option<Box<Mirror>>,
        busy: &dyn Fn(&str) -> bool,
    ) {
        let id = open.session.id.clone();
        self.open.insert(id.clone(), Resident { open, mirror });
        self.changed = true;
        self.make_room(&id, busy);
    }

    /// Closes a session for good: false when it was neither open nor
    /// evicted.
    pub fn close(&mut self, id: &str) -> bool {
        let was_evicted = self.residency.forget(id);
        let was_open = self.open.remove(id).is_some();
        self.changed |= was_open;
        was_open || was_evicted
    }

    /// Reopens the session a message names if it was evicted, and marks it
    /// used.
    pub fn bring_back(
        &mut self,
        id: &str,
        env: &SessionEnv,
        busy: &dyn Fn(&str) -> bool,
    ) -> RpcResult<()> {
        if let Some(how) = self.residency.was_evicted(id) {
            let opened = match how {
                Reopen::Write => {
                    engine::create::open(&self.store, id, SessionSettings::default(), None, env)
                }
                Reopen::ReadOnly => engine::create::open_read_only(&self.store, id, env),
            };
            let opened = opened.map_err(|e| self.not_reopened(id, e.into()))?;
            self.residency.reopened(id);
            self.insert(opened.open, busy);
            tracing::info!("session {id}: reopened after it was closed to free descriptors");
        }
        if self.open.contains_key(id) {
            self.residency.touch(id);
        }
        Ok(())
    }

    fn not_reopened(&self, id: &str, e: RpcError) -> RpcError {
        RpcError {
            message: format!(
                "session `{}` was closed to keep file descriptors free ({} sessions open at most) and could not be reopened: {}",
                crate::store::shown_id(id),
                self.residency.cap,
                e.message
            ),
            ..e
        }
    }

    /// Evicts least recently used idle sessions while more than the cap
    /// are open; `keep` (the one in hand) never goes.
    fn make_room(&mut self, keep: &str, busy: &dyn Fn(&str) -> bool) {
        self.residency.touch(keep);
        while self.open.len() > self.residency.cap {
            let victim = self
                .open
                .iter()
                .filter(|(id, resident)| {
                    id.as_str() != keep
                        && resident.open.access() != Access::Follows
                        && !busy(id)
                        && !self.importing.contains_key(id.as_str())
                })
                .min_by_key(|(id, _)| self.residency.last_used(id))
                .map(|(id, resident)| (id.clone(), resident.open.access()));
            let Some((id, access)) = victim else {
                break;
            };
            self.open.remove(&id);
            let how = match access {
                Access::ReadOnly => Reopen::ReadOnly,
                _ => Reopen::Write,
            };
            self.residency.evicted(&id, how);
            tracing::info!(
                "session {id}: closed to keep file descriptors free ({} open at most); the next message naming it reopens it",
                self.residency.cap
            );
        }
    }

    /// Whether sessions were opened or closed since the last call.
    pub fn take_changed(&mut self) -> bool {
        std::mem::take(&mut self.changed)
    }

    /// Sessions changed without opening or closing (their ledgers grew).
    pub fn mark_changed(&mut self) {
        self.changed = true;
    }
}
