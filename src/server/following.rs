//! The followed agent transcripts (each one's mirror, `engine::follow`,
//! is held with its open session by `Sessions`),
//! `follow: "auto"` (which session to follow is the engine's choice,
//! `engine::follow::auto_pick`), and when to look at the transcripts
//! again: when the file watcher reports a change in their folders, and
//! every second for what it cannot see (no native watching,
//! `fileWatcher: "off"`, a Codex day folder that did not exist yet). A
//! followed session is read-only: it gets no editor or disk file events,
//! and compactd never compacts it on its own.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::effects::Effects;
use super::jobs::{FollowLoaded, JobResult, JobSender, Pending};
use super::rpc::{no_session, RpcError, RpcResult};
use super::sessions::Sessions;
use crate::agents::{discover, Agent, Homes};
use crate::compaction::CompactionRecord;
use crate::config::Config;
use crate::engine::compaction::{Settled, Written};
use crate::engine::follow::{self, FollowEnv, FollowSetup, Mirror, Polled};
use crate::engine::{self, OpenSession, SessionEnv};
use crate::files::watch::DiskChange;
use crate::files::FileTools;
use crate::protocol::{
    methods, AgentSessionInfo, CompactResult, DidCompactNotification, DidFollowNotification,
    FollowMode, FollowResult, ListAgentSessionsResult, MeterInfo,
};

use crate::store::SessionStore;

/// How often followed transcripts are looked at without a watcher report.
const POLL_INTERVAL: Duration = Duration::from_secs(1);
/// Sessions auto-follow considers, most recent first.
const AUTO_CANDIDATES: usize = 50;

/// What following takes from the rest of the state.
pub(crate) struct FollowContext<'a> {
    pub config: &'a Config,
    pub tools: &'a FileTools,
    pub session_env: &'a SessionEnv,
}

pub(crate) struct Following {
    homes: Homes,
    cwds: discover::Cwds,
    /// The sessions followed live; each one's mirror is its open
    /// session's, which `Sessions` holds with it: one owner for both.
    followed: HashMap<String, Followed>,
    /// Transcripts being read to be followed, off the state owner, and who
    /// waits for them.
    loading: HashMap<String, Loading>,
    auto: Option<AutoFollow>,
    polling: bool,
    results: JobSender,
    /// Transcripts followed or left since the watcher last looked.
    changed: bool,
}

struct Followed {
    /// A client asked for it (`conversation/follow`): auto-follow leaves it
    /// open when it moves on.
    explicit: bool,
    /// The meter last sent, so an unchanged one is not sent again.
    last_meter: Option<MeterInfo>,
}

/// Who asked to follow a transcript, answered once it is read.
pub(crate) enum Asker {
    /// A client's `conversation/follow`.
    Client(Pending<methods::Follow>),
    /// Auto-follow's pick.
    Auto,
}

/// A transcript being read to be followed.
struct Loading {
    /// A client asked for it.
    explicit: bool,
    askers: Vec<Asker>,
}

/// `follow: "auto"`: the workspace, the transcripts already seen (a new
/// one is a session that started), and the session following the newest.
struct AutoFollow {
    workspace: PathBuf,
    seen: HashSet<PathBuf>,
    current: Option<String>,
}

impl Following {
    pub fn new(results: JobSender) -> Following {
        Following {
            homes: Homes::from_env(),
            cwds: discover::Cwds::default(),
            followed: HashMap::new(),
            loading: HashMap::new(),
            auto: None,
            polling: false,
            results,
            changed: false,
        }
    }

    fn env<'a>(&'a self, context: &'a FollowContext) -> FollowEnv<'a> {
        FollowEnv {
            config: context.config,
            tools: context.tools,
            homes: &self.homes,
            session_env: context.session_env,
        }
    }

    /// The transcript a `conversation/follow` names: `path`, or `agent`'s
    /// newest session of the workspace.
    pub fn target(
        &self,
        path: Option<&str>,
        agent: Option<Agent>,
        workspace: &Path,
    ) -> RpcResult<(Agent, PathBuf)> {
        let homes = &self.homes;
        match (path, agent) {
            (Some(path), _) => {
                let path = std::path::absolute(path).unwrap_or_else(|_| PathBuf::from(path));
                // A session an agent keeps in a store (a locator, no file).
                if let Some((stored, _)) = discover::stored(&path, false) {
                    return Ok((agent.unwrap_or(stored), path));
                }
                // A FIFO or a device is named for what it is, not taken
                // for a transcript of no agent (nothing opens it here).
                std::fs::metadata(&path)
                    .and_then(|meta| crate::regular_file::check_regular(&meta))
                    .map_err(|e| {
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
            (None, Some(agent)) => discover::sessions(homes, &self.cwds, agent, workspace, 1)
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
                }),
            (None, None) => Err(RpcError::invalid_params(
                "give `path` (a transcript) or `agent` (its newest session of the workspace)",
            )),
        }
    }

    /// Follows a transcript for `asker`: answered at once when it is
    /// followed already, else once it is read, off the state owner.
    /// Returns the sessions auto-follow stopped following.
    pub fn follow(
        &mut self,
        sessions: &mut Sessions,
        context: &FollowContext,
        (agent, path, workspace): (Agent, &Path, &Path),
        asker: Asker,
        effects: &mut Effects,
    ) -> Vec<String> {
        let id = follow::followed_id(&sessions.store, agent, path).0;
        let explicit = matches!(asker, Asker::Client(_));
        if explicit {
            // The connection that asked watches it (on the shared sidecar).
            effects.subscribe(&id);
        }
        if let Some(followed) = self.followed.get_mut(&id) {
            followed.explicit |= explicit;
            // The answer is as of now, not as of the last poll.
            match self.poll_one(sessions, context, &id) {
                Ok(polled) => self.report_polled(sessions, context.config, &id, polled, effects),
                Err(e) => tracing::debug!("{id}: {}", e.message),
            }
            let result = self.result(sessions, context.config, &id);
            return self.answer(sessions, asker, result, effects);
        }
        if let Some(loading) = self.loading.get_mut(&id) {
            loading.explicit |= explicit;
            loading.askers.push(asker);
            return Vec::new();
        }
        let askers = vec![asker];
        self.loading
            .insert(id.clone(), Loading { explicit, askers });
        let store = sessions.store.clone();
        let setup = FollowSetup::owned(&self.env(context));
        let (path, workspace) = (path.to_path_buf(), workspace.to_path_buf());
        let results = self.results.clone();
        tokio::task::spawn_blocking(move || {
            let read = || follow::follow(&store, agent, &path, &workspace, &setup.env());
            let outcome = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(read)) {
                Ok(read) => read.map_err(RpcError::from),
                Err(_) => Err(RpcError::internal(format!(
                    "reading {} failed (see the log)",
                    path.display()
                ))),
            };
            let _ = results.send(JobResult::Followed(Box::new(FollowLoaded { id, outcome })));
        });
        Vec::new()
    }

    /// A transcript read to be followed: the session in place, its askers
    /// answered. Returns the sessions auto-follow stopped following.
    pub fn loaded(
        &mut self,
        sessions: &mut Sessions,
        context: &FollowContext,
        loaded: FollowLoaded,
        effects: &mut Effects,
    ) -> Vec<String> {
        let FollowLoaded { id, outcome } = loaded;
        let Some(loading) = self.loading.remove(&id) else {
            return Vec::new();
        };
        let result = outcome.and_then(|(open, mirror)| {
            tracing::info!(
                "following {} ({}) as {id}; lines not used: {:?}",
                mirror.path.display(),
                mirror.agent,
                mirror.skipped_reasons()
            );
            sessions.insert_followed(open, mirror);
            let explicit = loading.explicit;
            let last_meter = None;
            let followed = Followed {
                explicit,
                last_meter,
            };
            self.followed.insert(id.clone(), followed);
            self.changed = true;
            self.start_polling();
            self.send_meter(sessions, context.config, &id, effects);
            self.result(sessions, context.config, &id)
        });
        let mut left = Vec::new();
        for asker in loading.askers {
            left.extend(self.answer(sessions, asker, result.clone(), effects));
        }
        left
    }

    /// Answers who asked to follow: a client with the result, auto-follow
    /// by making it the session it follows.
    fn answer(
        &mut self,
        sessions: &mut Sessions,
        asker: Asker,
        result: RpcResult<FollowResult>,
        effects: &mut Effects,
    ) -> Vec<String> {
        match (asker, result) {
            (Asker::Client(pending), result) => {
                pending.respond(effects, result);
                Vec::new()
            }
            (Asker::Auto, Ok(follow)) => self.auto_followed(sessions, follow, effects),
            (Asker::Auto, Err(e)) => {
                tracing::warn!("auto-follow: {}", e.message);
                Vec::new()
            }
        }
    }

    /// The answer to a follow: the meter is the one last sent (sending it
    /// worked it out).
    fn result(&self, sessions: &Sessions, config: &Config, id: &str) -> RpcResult<FollowResult> {
        let followed = self.followed.get(id).ok_or_else(|| no_session(id))?;
        let (open, mirror) = sessions.get_followed(id)?;
        let mirror = mirror.ok_or_else(|| no_session(id))?;
        let meter = match &followed.last_meter {
            Some(meter) => meter.clone(),
            None => meter(config, open, Some(mirror)),
        };
        Ok(FollowResult {
            session_id: id.to_string(),
            agent: mirror.agent,
            agent_name: mirror.agent.display_name().to_string(),
            path: mirror.path.display().to_string(),
            workspace: mirror.workspace.display().to_string(),
            auto_compact: mirror.auto_compact.clone(),
            meter,
        })
    }

    /// Stops following and closes the session; `false` when `id` was not
    /// followed. A compaction of it running must be stopped by the caller.
    pub fn unfollow(&mut self, sessions: &mut Sessions, id: &str) -> bool {
        if self.followed.remove(id).is_none() {
            return false;
        }
        sessions.close(id);
        if let Some(auto) = &mut self.auto {
            if auto.current.as_deref() == Some(id) {
                auto.current = None;
            }
        }
        self.changed = true;
        true
    }

    pub fn is_followed(&self, id: &str) -> bool {
        self.followed.contains_key(id)
    }

    /// The agents' recent sessions of a workspace.
    pub fn list(
        &self,
        store: &SessionStore,
        workspace: &Path,
        limit: usize,
    ) -> ListAgentSessionsResult {
        let sessions = discover::all_sessions(&self.homes, &self.cwds, workspace, limit)
            .into_iter()
            .map(|s| AgentSessionInfo {
                title: discover::title(s.agent, &s.path),
                session_id: Some(follow::followed_id(store, s.agent, &s.path).0)
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

    /// Works out a followed session's meter once, and sends it unless it
    /// is the one sent last.
    fn send_meter(
        &mut self,
        sessions: &Sessions,
        config: &Config,
        id: &str,
        effects: &mut Effects,
    ) {
        let (Some((open, mirror)), Some(followed)) =
            (sessions.find_followed(id), self.followed.get_mut(id))
        else {
            return;
        };
        let meter = meter(config, open, mirror);
        if followed.last_meter.as_ref() != Some(&meter) {
            followed.last_meter = Some(meter.clone());
            effects.meter(id, meter);
        }
    }

    /// Looks at every followed transcript for what its agent wrote, and
    /// says what to tell the clients: the meter, and the agent's
    /// compactions.
    pub fn poll_all(
        &mut self,
        sessions: &mut Sessions,
        context: &FollowContext,
        effects: &mut Effects,
    ) {
        let mut ids: Vec<String> = self.followed.keys().cloned().collect();
        ids.sort();
        for id in ids {
            match self.poll_one(sessions, context, &id) {
                Ok(polled) => self.report_polled(sessions, context.config, &id, polled, effects),
                Err(e) => tracing::debug!("{id}: {}", e.message),
            }
        }
    }

    fn poll_one(
        &mut self,
        sessions: &mut Sessions,
        context: &FollowContext,
        id: &str,
    ) -> RpcResult<Polled> {
        let env = FollowEnv {
            config: context.config,
            tools: context.tools,
            homes: &self.homes,
            session_env: context.session_env,
        };
        match sessions.find_mut_followed(id) {
            Some((open, Some(mirror))) => Ok(mirror.poll(open, &env)?),
            _ => Err(no_session(id)),
        }
    }

    fn report_polled(
        &mut self,
        sessions: &Sessions,
        config: &Config,
        id: &str,
        polled: Polled,
        effects: &mut Effects,
    ) {
        if let Some(why) = &polled.reread {
            tracing::info!("{id}: the transcript was {why}; read it again");
        }
        for record in &polled.compactions {
            effects.notify::<methods::DidCompact>(
                id,
                DidCompactNotification {
                    session_id: id.to_string(),
                    trigger: record.trigger,
                    result: CompactResult::from_record(record),
                },
            );
        }
        if polled.changed {
            self.send_meter(sessions, config, id, effects);
        }
    }

    /// `follow` changed (or the client finished initializing): start or
    /// stop auto-follow in `workspace`. Returns the sessions it stopped
    /// following (their compactions must stop).
    pub fn apply_mode(
        &mut self,
        sessions: &mut Sessions,
        context: &FollowContext,
        workspace: PathBuf,
        effects: &mut Effects,
    ) -> Vec<String> {
        match (context.config.follow, self.auto.is_some()) {
            (FollowMode::Auto, false) => {
                self.auto = Some(AutoFollow {
                    workspace,
                    seen: HashSet::new(),
                    current: None,
                });
                self.changed = true;
                self.start_polling();
                self.auto_follow(sessions, context, effects)
            }
            (FollowMode::Off, true) => {
                let current = self.auto.take().and_then(|a| a.current);
                self.changed = true;
                match current.filter(|id| !self.followed[id].explicit) {
                    Some(id) if self.unfollow(sessions, &id) => vec![id],
                    _ => Vec::new(),
                }
            }
            _ => Vec::new(),
        }
    }

    /// Auto-follow: follows the session the engine picks (the newest at
    /// first, then each new one), and leaves the one it followed before
    /// unless a client asked for it. Returns the sessions it stopped
    /// following.
    fn auto_follow(
        &mut self,
        sessions: &mut Sessions,
        context: &FollowContext,
        effects: &mut Effects,
    ) -> Vec<String> {
        let Some(auto) = &mut self.auto else {
            return Vec::new();
        };
        let workspace = auto.workspace.clone();
        let found = discover::all_sessions(&self.homes, &self.cwds, &workspace, AUTO_CANDIDATES);
        let first_look = auto.seen.is_empty() && auto.current.is_none();
        let pick = follow::auto_pick(&found, &auto.seen, first_look).cloned();
        auto.seen.extend(found.into_iter().map(|s| s.path));
        let Some(pick) = pick else {
            return Vec::new();
        };
        let target = (pick.agent, pick.path.as_path(), workspace.as_path());
        self.follow(sessions, context, target, Asker::Auto, effects)
    }

    /// Auto-follow's pick is followed: it becomes the session auto-follow
    /// follows, and the one before is left unless a client asked for it
    /// (or the pick is, when auto-follow was turned off meanwhile).
    /// Returns the sessions it stopped following.
    fn auto_followed(
        &mut self,
        sessions: &mut Sessions,
        follow: FollowResult,
        effects: &mut Effects,
    ) -> Vec<String> {
        let id = follow.session_id.clone();
        let Some(auto) = self.auto.as_mut() else {
            let asked_for = self.followed.get(&id).is_none_or(|f| f.explicit);
            return match !asked_for && self.unfollow(sessions, &id) {
                true => vec![id],
                false => Vec::new(),
            };
        };
        let previous = auto.current.replace(id.clone()).filter(|p| *p != id);
        let mut left = Vec::new();
        if let Some(previous) = &previous {
            let asked_for = self.followed.get(previous).is_none_or(|f| f.explicit);
            if !asked_for && self.unfollow(sessions, previous) {
                left.push(previous.clone());
            }
        }
        // No connection asked for it: every one hears of it (and may
        // subscribe to the session).
        effects.broadcast::<methods::DidFollow>(DidFollowNotification {
            follow,
            previous_session_id: previous,
        });
        left
    }

    fn start_polling(&mut self) {
        if std::mem::replace(&mut self.polling, true) {
            return;
        }
        let results = self.results.clone();
        tokio::spawn(async move {
            let mut interval = tokio::time::interval(POLL_INTERVAL);
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            loop {
                interval.tick().await;
                // The state owner is gone: so is the need to poll.
                if results.send(JobResult::FollowPoll).is_err() {
                    break;
                }
            }
        });
    }

    /// The poll's tick, or a watcher report about the agents' folders:
    /// every followed transcript, then auto-follow. Returns the sessions
    /// auto-follow stopped following.
    pub fn look(
        &mut self,
        sessions: &mut Sessions,
        context: &FollowContext,
        effects: &mut Effects,
    ) -> Vec<String> {
        self.poll_all(sessions, context, effects);
        self.auto_follow(sessions, context, effects)
    }

    /// Whether the watcher's changes concern followed transcripts or the
    /// folders where new sessions appear.
    pub fn concerns(&self, sessions: &Sessions, changes: &[DiskChange]) -> bool {
        let dirs: HashSet<PathBuf> = self.watch_dirs(sessions).into_iter().collect();
        let concerns = |path: &Path| path.parent().is_some_and(|p| dirs.contains(p));
        !dirs.is_empty()
            && changes.iter().any(|change| match change {
                DiskChange::Changed(p) | DiskChange::Removed(p) => concerns(p),
                DiskChange::Renamed { from, to } => concerns(from) || concerns(to),
                DiskChange::Rescan => true,
            })
    }

    /// The folders to watch for following: each followed transcript's, and
    /// where the workspace's new sessions appear under auto-follow.
    pub fn watch_dirs(&self, sessions: &Sessions) -> Vec<PathBuf> {
        let followed = self
            .followed
            .keys()
            .filter_map(|id| sessions.find_followed(id)?.1)
            .filter_map(|mirror| mirror.path.parent().map(Path::to_path_buf));
        let auto = self
            .auto
            .iter()
            .flat_map(|a| discover::session_dirs(&self.homes, &a.workspace));
        let mut dirs: Vec<PathBuf> = followed.chain(auto).collect();
        dirs.sort();
        dirs.dedup();
        dirs
    }

    /// Whether transcripts were followed or left since the last call.
    pub fn take_changed(&mut self) -> bool {
        std::mem::take(&mut self.changed)
    }
}

/// A session's meter: a followed one's (`mirror`, held with it by
/// `Sessions`) is the agent's (its usage, its window, where it compacts by
/// itself), any other the engine's.
pub(crate) fn meter(config: &Config, open: &OpenSession, mirror: Option<&Mirror>) -> MeterInfo {
    match mirror {
        Some(mirror) => MeterInfo {
            agent_auto_compact: Some(mirror.auto_compact.clone()),
            ..follow::meter(config, &open.session, mirror).into()
        },
        None => engine::meter::meter(config, &open.session).into(),
    }
}

/// Readies a session for a client's compaction: a followed one's own log
/// is taken (its lock) when another process held it, since the compaction
/// is recorded there. Other sessions need nothing.
pub(crate) fn ready_to_compact(
    store: &SessionStore,
    open: &mut OpenSession,
    mirror: Option<&mut Mirror>,
) -> RpcResult<()> {
    match mirror {
        Some(mirror) => Ok(follow::take_log(store, open, mirror)?),
        None => Ok(()),
    }
}

/// compactd's own compactions of a followed session.
pub(crate) fn own_compactions(mirror: Option<&Mirror>) -> &[CompactionRecord] {
    mirror.map_or(&[], |m| m.own.as_slice())
}

/// Settles a finished compaction of a session: into the session and its
/// log, or for a followed session into compactd's own log of it (the
/// mirror stays the agent's), then also why that changed nothing the
/// agent sees (`None`: not followed).
pub(crate) fn settle(
    open: &mut OpenSession,
    mirror: Option<&mut Mirror>,
    written: Written,
) -> RpcResult<(Settled, Option<String>)> {
    Ok(match mirror {
        Some(mirror) => {
            let mut own = follow::OwnLog::new(open, mirror);
            let settled = engine::compaction::settle(written, &mut own)?;
            (settled, Some(follow::recorded_reason(mirror)))
        }
        None => (engine::compaction::settle(written, open)?, None),
    })
}
