//! The server's side of following agents: the followed transcripts and
//! their mirrors (`engine::follow`), `follow: "auto"` (the newest session
//! of the workspace, then each one that starts), and when to look at the
//! transcripts again: when the file watcher reports a change in their
//! folders, and every second for what it cannot see (no native watching,
//! `fileWatcher: "off"`, a Codex day folder that did not exist yet).
//! A followed session is read-only: `session_mut` refuses it, it gets no
//! editor or disk file events, and compactd never compacts it on its own.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{JobResult, RpcError, RpcResult, Server};
use crate::agents::discover;
use crate::agents::{Agent, Homes};
use crate::compaction::CompactionRecord;
use crate::engine::follow::{self, FollowEnv, Mirror, Polled};
use crate::files::watch::DiskChange;
use crate::protocol::{
    methods, AgentSessionInfo, CompactResult, DidCompactNotification, DidFollowNotification,
    FollowMode, FollowResult, ListAgentSessionsResult, MeterInfo,
};

/// How often followed transcripts are looked at without a watcher report.
const POLL_INTERVAL: Duration = Duration::from_secs(1);
/// Sessions auto-follow considers, most recent first.
const AUTO_CANDIDATES: usize = 50;

pub(crate) struct Following {
    pub homes: Homes,
    cwds: discover::Cwds,
    pub mirrors: HashMap<String, Followed>,
    auto: Option<AutoFollow>,
    polling: bool,
}

impl Default for Following {
    fn default() -> Following {
        Following {
            homes: Homes::from_env(),
            cwds: discover::Cwds::default(),
            mirrors: HashMap::new(),
            auto: None,
            polling: false,
        }
    }
}

pub(crate) struct Followed {
    pub mirror: Mirror,
    /// A client asked for it (`conversation/follow`): auto-follow leaves it
    /// open when it moves on.
    pub explicit: bool,
    /// The meter last sent, so an unchanged one is not sent again.
    last_meter: Option<MeterInfo>,
}

/// `follow: "auto"`: the workspace, the transcripts already seen (a new
/// one is a session that started), and the session following the newest.
struct AutoFollow {
    workspace: PathBuf,
    seen: HashSet<PathBuf>,
    current: Option<String>,
}

impl Server {
    /// The directory the agents run in: the one asked for, else the
    /// workspace root, else the server's working directory; as a real path.
    pub fn agent_workspace(&self, asked: Option<&str>) -> PathBuf {
        let dir = asked
            .map(PathBuf::from)
            .or_else(|| self.file_tracking.workspace.roots.first().cloned())
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_default();
        discover::real_workspace(&dir)
    }

    /// The transcript a `conversation/follow` names: `path`, or `agent`'s
    /// newest session of the workspace.
    pub fn follow_target(
        &self,
        path: Option<&str>,
        agent: Option<Agent>,
        workspace: &Path,
    ) -> RpcResult<(Agent, PathBuf)> {
        let homes = &self.following.homes;
        match (path, agent) {
            (Some(path), _) => {
                let path = std::path::absolute(path).unwrap_or_else(|_| PathBuf::from(path));
                std::fs::metadata(&path).map_err(|e| {
                    RpcError::invalid_params(format!("path: {}: {e}", path.display()))
                })?;
                let agent = agent
                    .or_else(|| discover::agent_of(homes, &path))
                    .ok_or_else(|| {
                        RpcError::invalid_params(format!(
                            "path: {}: not a {} transcript",
                            path.display(),
                            Agent::display_names()
                        ))
                    })?;
                Ok((agent, path))
            }
            (None, Some(agent)) => {
                discover::sessions(homes, &self.following.cwds, agent, workspace, 1)
                    .into_iter()
                    .next()
                    .map(|s| (agent, s.path))
                    .ok_or_else(|| {
                        RpcError::invalid_params(format!(
                            "agent: no {} session for {} (looked in {})",
                            agent.display_name(),
                            workspace.display(),
                            discover::searched_dir(homes, agent, workspace).display()
                        ))
                    })
            }
            (None, None) => Err(RpcError::invalid_params(
                "give `path` (a transcript) or `agent` (its newest session of the workspace)",
            )),
        }
    }

    /// Follows a transcript, or returns the session already following it
    /// (then `explicit` marks it as asked for).
    pub fn follow_transcript(
        &mut self,
        agent: Agent,
        path: &Path,
        workspace: &Path,
        explicit: bool,
    ) -> RpcResult<FollowResult> {
        let id = follow::session_id(agent, path);
        if explicit {
            // The connection that asked watches it (on the shared sidecar).
            self.clients.subscribe_current(&id);
        }
        if let Some(followed) = self.following.mirrors.get_mut(&id) {
            followed.explicit |= explicit;
            // The answer is as of now, not as of the last poll.
            match self.poll_one(&id) {
                Ok(polled) => self.report_polled(&id, polled),
                Err(e) => tracing::debug!("{id}: {}", e.message),
            }
            return Ok(self.follow_result(&id));
        }
        let session_env = self.session_env();
        let env = FollowEnv {
            config: &self.config,
            tools: &self.file_tracking.tools,
            homes: &self.following.homes,
            session_env: &session_env,
        };
        let (open, mirror) = follow::follow(&self.store, agent, path, workspace, &env)?;
        tracing::info!(
            "following {} ({agent}) as {id}; lines not used: {:?}",
            path.display(),
            mirror.skipped_reasons()
        );
        self.sessions.insert(id.clone(), open);
        self.following.mirrors.insert(
            id.clone(),
            Followed {
                mirror,
                explicit,
                last_meter: None,
            },
        );
        self.start_polling();
        self.sync_watches();
        self.send_follow_meter(&id);
        Ok(self.follow_result(&id))
    }

    fn follow_result(&self, id: &str) -> FollowResult {
        let mirror = &self.following.mirrors[id].mirror;
        FollowResult {
            session_id: id.to_string(),
            agent: mirror.agent,
            agent_name: mirror.agent.display_name().to_string(),
            path: mirror.path.display().to_string(),
            workspace: mirror.workspace.display().to_string(),
            auto_compact: mirror.auto_compact.clone(),
            meter: self.meter_info(&self.sessions[id].session),
        }
    }

    /// Stops following; `false` when `id` was not followed.
    pub fn unfollow(&mut self, id: &str) -> bool {
        if self.following.mirrors.remove(id).is_none() {
            return false;
        }
        self.sessions.remove(id);
        if let Some(job) = self.running.remove(id) {
            job.abort.abort();
        }
        if let Some(auto) = &mut self.following.auto {
            if auto.current.as_deref() == Some(id) {
                auto.current = None;
            }
        }
        self.sync_watches();
        true
    }

    pub fn is_followed(&self, id: &str) -> bool {
        self.following.mirrors.contains_key(id)
    }

    /// Readies a session for a client's compaction: refused when it is
    /// open read-only; a followed session's own log is taken (its lock)
    /// when another process held it, since the compaction is recorded
    /// there.
    pub fn ready_to_compact(&mut self, id: &str) -> RpcResult<()> {
        self.compactable_session(id)?;
        let (Some(followed), Some(open)) = (
            self.following.mirrors.get_mut(id),
            self.sessions.get_mut(id),
        ) else {
            return Ok(());
        };
        Ok(follow::take_log(&self.store, open, &mut followed.mirror)?)
    }

    /// The agents' recent sessions of a workspace.
    pub fn list_agent_sessions(&self, workspace: &Path, limit: usize) -> ListAgentSessionsResult {
        let sessions = discover::all_sessions(
            &self.following.homes,
            &self.following.cwds,
            workspace,
            limit,
        )
        .into_iter()
        .map(|s| AgentSessionInfo {
            title: discover::title(s.agent, &s.path),
            session_id: Some(follow::session_id(s.agent, &s.path))
                .filter(|id| self.is_followed(id)),
            agent: s.agent,
            agent_name: s.agent.display_name().to_string(),
            path: s.path.display().to_string(),
            modified: s.modified_ms,
            size: s.size,
        })
        .collect();
        ListAgentSessionsResult {
            workspace: workspace.display().to_string(),
            sessions,
        }
    }

    /// compactd's own compactions of a followed session.
    pub fn own_compactions(&self, id: &str) -> &[CompactionRecord] {
        self.following
            .mirrors
            .get(id)
            .map_or(&[], |f| f.mirror.own.as_slice())
    }

    /// Settles a finished compaction of a session: into the session and
    /// its log, or for a followed session into compactd's own log of it
    /// (the mirror stays the agent's).
    pub fn settle(
        &mut self,
        id: &str,
        written: crate::engine::compaction::Written,
    ) -> RpcResult<crate::engine::compaction::Settled> {
        let open = self
            .sessions
            .get_mut(id)
            .ok_or_else(|| super::no_session(id))?;
        let settled = match self.following.mirrors.get_mut(id) {
            Some(followed) => {
                let mut own = follow::OwnLog::new(open, &mut followed.mirror);
                crate::engine::compaction::settle(written, &mut own)?
            }
            None => crate::engine::compaction::settle(written, open)?,
        };
        Ok(settled)
    }

    /// Why a compaction of a followed session changed nothing the agent
    /// sees (`None`: not followed).
    pub fn recorded_reason(&self, id: &str) -> Option<String> {
        let followed = self.following.mirrors.get(id)?;
        Some(follow::recorded_reason(&followed.mirror))
    }

    /// A followed session's meter (`None`: not followed).
    pub fn follow_meter(&self, session: &crate::session::Session) -> Option<MeterInfo> {
        let followed = self.following.mirrors.get(&session.id)?;
        let meter = follow::meter(&self.config, session, &followed.mirror);
        Some(MeterInfo {
            agent_auto_compact: Some(followed.mirror.auto_compact.clone()),
            ..meter.into()
        })
    }

    /// Sends a followed session's meter unless it is the one sent last.
    fn send_follow_meter(&mut self, id: &str) {
        let Some(session) = self.sessions.get(id).map(|o| &o.session) else {
            return;
        };
        let meter = self.meter_info(session);
        let Some(followed) = self.following.mirrors.get_mut(id) else {
            return;
        };
        if followed.last_meter.as_ref() != Some(&meter) {
            followed.last_meter = Some(meter);
            self.send_meter(&self.sessions[id].session);
        }
    }

    /// Looks at every followed transcript for what its agent wrote, and
    /// tells the client: the meter, and the agent's compactions.
    pub fn poll_follows(&mut self) {
        let mut ids: Vec<String> = self.following.mirrors.keys().cloned().collect();
        ids.sort();
        for id in ids {
            match self.poll_one(&id) {
                Ok(polled) => self.report_polled(&id, polled),
                Err(e) => tracing::debug!("{id}: {}", e.message),
            }
        }
    }

    fn poll_one(&mut self, id: &str) -> RpcResult<Polled> {
        let session_env = self.session_env();
        let env = FollowEnv {
            config: &self.config,
            tools: &self.file_tracking.tools,
            homes: &self.following.homes,
            session_env: &session_env,
        };
        let (Some(followed), Some(open)) = (
            self.following.mirrors.get_mut(id),
            self.sessions.get_mut(id),
        ) else {
            return Err(super::no_session(id));
        };
        Ok(followed.mirror.poll(open, &env)?)
    }

    fn report_polled(&mut self, id: &str, polled: Polled) {
        if let Some(why) = &polled.reread {
            tracing::info!("{id}: the transcript was {why}; read it again");
        }
        for record in &polled.compactions {
            self.notify_session(
                id,
                methods::DID_COMPACT,
                DidCompactNotification {
                    session_id: id.to_string(),
                    trigger: record.trigger,
                    result: CompactResult::from_record(record),
                },
            );
        }
        if polled.changed {
            self.send_follow_meter(id);
        }
    }

    /// `follow` changed (or the client finished initializing): start or
    /// stop auto-follow.
    pub fn apply_follow_mode(&mut self) {
        match (self.config.follow, self.following.auto.is_some()) {
            (FollowMode::Auto, false) => {
                self.following.auto = Some(AutoFollow {
                    workspace: self.agent_workspace(None),
                    seen: HashSet::new(),
                    current: None,
                });
                self.start_polling();
                self.auto_follow();
                self.sync_watches();
            }
            (FollowMode::Off, true) => {
                let current = self.following.auto.take().and_then(|a| a.current);
                if let Some(id) = current.filter(|id| !self.following.mirrors[id].explicit) {
                    self.unfollow(&id);
                }
            }
            _ => {}
        }
    }

    /// Auto-follow: the newest session at first, then each new one.
    fn auto_follow(&mut self) {
        let Some(auto) = &self.following.auto else {
            return;
        };
        let workspace = auto.workspace.clone();
        let found = discover::all_sessions(
            &self.following.homes,
            &self.following.cwds,
            &workspace,
            AUTO_CANDIDATES,
        );
        let first_look = auto.seen.is_empty() && auto.current.is_none();
        let pick = found
            .iter()
            .find(|s| first_look || !auto.seen.contains(&s.path))
            .cloned();
        let auto = self.following.auto.as_mut().expect("checked above");
        auto.seen.extend(found.into_iter().map(|s| s.path));
        let Some(pick) = pick else {
            return;
        };
        let follow = match self.follow_transcript(pick.agent, &pick.path, &workspace, false) {
            Ok(follow) => follow,
            Err(e) => {
                tracing::warn!("auto-follow of {}: {}", pick.path.display(), e.message);
                return;
            }
        };
        let auto = self.following.auto.as_mut().expect("still on");
        let previous = auto
            .current
            .replace(follow.session_id.clone())
            .filter(|p| *p != follow.session_id);
        if let Some(previous) = &previous {
            if self
                .following
                .mirrors
                .get(previous)
                .is_some_and(|f| !f.explicit)
            {
                self.unfollow(previous);
            }
        }
        // No connection asked for it: every one hears of it (and may
        // subscribe to the session).
        self.clients.broadcast(
            methods::DID_FOLLOW,
            DidFollowNotification {
                follow,
                previous_session_id: previous,
            },
        );
    }

    fn start_polling(&mut self) {
        if std::mem::replace(&mut self.following.polling, true) {
            return;
        }
        let job_results = self.job_results_tx.clone();
        tokio::spawn(async move {
            let mut interval = tokio::time::interval(POLL_INTERVAL);
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            loop {
                interval.tick().await;
                // The state owner is gone: so is the need to poll.
                if job_results.send(JobResult::FollowPoll).is_err() {
                    break;
                }
            }
        });
    }

    /// The poll's tick, or a watcher report about the agents' folders.
    pub fn on_follow_poll(&mut self) {
        self.poll_follows();
        self.auto_follow();
    }

    /// Whether the watcher's changes concern followed transcripts or the
    /// folders where new sessions appear; if so, looks at them.
    pub fn follow_disk_changes(&mut self, changes: &[DiskChange]) {
        let dirs: HashSet<PathBuf> = self.follow_watch_dirs().into_iter().collect();
        let concerns = |path: &Path| path.parent().is_some_and(|p| dirs.contains(p));
        let relevant = changes.iter().any(|change| match change {
            DiskChange::Changed(p) | DiskChange::Removed(p) => concerns(p),
            DiskChange::Renamed { from, to } => concerns(from) || concerns(to),
            DiskChange::Rescan => true,
        });
        if relevant && !dirs.is_empty() {
            self.on_follow_poll();
        }
    }

    /// The folders to watch for following: each followed transcript's, and
    /// where the workspace's new sessions appear under auto-follow.
    pub fn follow_watch_dirs(&self) -> Vec<PathBuf> {
        let followed = self
            .following
            .mirrors
            .values()
            .filter_map(|f| f.mirror.path.parent().map(Path::to_path_buf));
        let auto = self
            .following
            .auto
            .iter()
            .flat_map(|a| discover::session_dirs(&self.following.homes, &a.workspace));
        let mut dirs: Vec<PathBuf> = followed.chain(auto).collect();
        dirs.sort();
        dirs.dedup();
        dirs
    }
}
