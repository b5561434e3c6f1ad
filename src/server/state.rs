//! Everything the server keeps, by owner: the configuration, the open
//! sessions (`sessions`), the running compactions (`compactions`), the
//! followed transcripts (`following`) and file tracking (`file_tracking`).
//! Each owner has its own state and a narrow API; what touches several
//! (closing a session, settling a compaction, a watcher report) is here.
//! Nothing here writes to a client: what should be sent goes into
//! `Effects`, which the dispatcher delivers.

use std::path::PathBuf;

use super::compactions::{self, Compactions};
use super::effects::Effects;
use super::file_tracking::FileTracking;
use super::following::{self, Asker, FollowContext, Following};
use super::jobs::{CompactionDone, FollowLoaded, JobSender};
use super::options::{ConfigDirs, ServeOptions};
use super::recall::Recall;
use super::residency;
use super::rpc::{no_session, RpcError, RpcResult};
use super::sessions::Sessions;
use crate::agents::{discover, Agent};
use crate::compaction::CompactionRecord;
use crate::config::Config;
use crate::engine::compaction::{Outcome, Written};
use crate::engine::follow::Mirror;
use crate::engine::{self, Access, OpenSession, SessionEnv};
use crate::files::watch::DiskChange;
use crate::protocol::{methods, CompactResult, DidCompactNotification, MeterInfo};
use crate::store::SessionStore;

pub(crate) struct State {
    pub config: Config,
    pub config_dirs: ConfigDirs,
    pub options: ServeOptions,
    pub sessions: Sessions,
    pub compactions: Compactions,
    pub following: Following,
    pub files: FileTracking,
    /// The recall indexes (`conversation/search`).
    pub recall: Recall,
    /// Where background work reports back.
    results: JobSender,
}

impl State {
    /// No session and the default configuration.
    pub fn new(options: ServeOptions, results: JobSender) -> State {
        let config = Config::default();
        State {
            sessions: Sessions::new(SessionStore::new(config.sessions_dir(), config.durability)),
            compactions: Compactions::new(results.clone()),
            following: Following::new(results.clone()),
            files: FileTracking::default(),
            recall: Recall::default(),
            config,
            config_dirs: ConfigDirs::default(),
            options,
            results,
        }
    }

    /// Takes a configuration: the store, the file watcher over `roots`.
    pub fn configure(&mut self, config: Config, roots: Vec<PathBuf>, dirs: ConfigDirs) {
        self.sessions.store = SessionStore::new(config.sessions_dir(), config.durability);
        tracing::info!("sessions in {}", self.sessions.store.dir().display());
        self.files = FileTracking::start(&config, roots, &self.results);
        self.config = config;
        self.config_dirs = dirs;
    }

    /// What sessions opened here take from the configuration and the
    /// workspace.
    pub fn session_env(&self) -> SessionEnv {
        SessionEnv::new(&self.config, self.files.workspace.clone())
    }

    /// A session's meter, as the clients are shown it.
    pub fn meter(&self, open: &OpenSession, mirror: Option<&Mirror>) -> MeterInfo {
        following::meter(&self.config, open, mirror)
    }

    /// Works out a session's meter once, says to send it, and returns it.
    pub fn send_meter(&self, session_id: &str, effects: &mut Effects) -> RpcResult<MeterInfo> {
        let (open, mirror) = self.sessions.get_followed(session_id)?;
        let meter = self.meter(open, mirror);
        effects.meter(session_id, meter.clone());
        Ok(meter)
    }

    /// Keeps a session open (a new one, or one resumed from its log); the
    /// connection that opened it subscribes to it. Under pressure the
    /// least recently used idle session makes room (`residency`).
    pub fn insert_session(&mut self, open: OpenSession, effects: &mut Effects) {
        effects.subscribe(&open.session.id);
        let compactions = &self.compactions;
        self.sessions.insert(open, &|id| compactions.is_running(id));
    }

    /// Reopens the session a message's params name if it was evicted
    /// (`residency`), and marks it used.
    pub fn bring_back_named(&mut self, method: &str, params: &serde_json::Value) -> RpcResult<()> {
        let Some(id) = residency::named_session(method, params) else {
            return Ok(());
        };
        let env = self.session_env();
        let compactions = &self.compactions;
        self.sessions
            .bring_back(id, &env, &|id| compactions.is_running(id))
    }

    /// Closes a session: its running compaction is cancelled (its waiters
    /// answered -32800), a followed one is unfollowed, and its log and lock
    /// are released. False when it was not open (nor evicted).
    pub fn close_session(&mut self, id: &str, effects: &mut Effects) -> bool {
        if self.following.is_followed(id) {
            return self.unfollow(id);
        }
        self.compactions.cancel(id, effects);
        self.sessions.close(id)
    }

    /// Stops following a transcript (a compaction of it stops too); false
    /// when it was not followed.
    pub fn unfollow(&mut self, id: &str) -> bool {
        self.compactions.abort(id);
        self.following.unfollow(&mut self.sessions, id)
    }

    /// The directory the agents run in: the one asked for, else the
    /// workspace root, else the server's working directory; as a real path.
    pub fn agent_workspace(&self, asked: Option<&str>) -> PathBuf {
        let dir = asked
            .map(PathBuf::from)
            .or_else(|| self.files.workspace.roots.first().cloned())
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_default();
        discover::real_workspace(&dir)
    }

    /// Follows a transcript for `asker`, answered once it is read (at
    /// once when it is followed already).
    pub fn follow(
        &mut self,
        agent: Agent,
        path: &std::path::Path,
        workspace: &std::path::Path,
        asker: Asker,
        effects: &mut Effects,
    ) {
        self.following_does(|following, sessions, context| {
            let target = (agent, path, workspace);
            following.follow(sessions, context, target, asker, effects)
        });
    }

    /// A transcript read to be followed: its askers answered.
    pub fn follow_loaded(&mut self, loaded: FollowLoaded, effects: &mut Effects) {
        self.following_does(|following, sessions, context| {
            following.loaded(sessions, context, loaded, effects)
        });
    }

    /// `follow` changed (or the client finished initializing): start or
    /// stop auto-follow.
    pub fn apply_follow_mode(&mut self, effects: &mut Effects) {
        let workspace = self.agent_workspace(None);
        self.following_does(|following, sessions, context| {
            following.apply_mode(sessions, context, workspace, effects)
        });
    }

    /// The poll's tick: what the agents wrote, and auto-follow.
    pub fn follow_poll(&mut self, effects: &mut Effects) {
        self.following_does(|following, sessions, context| {
            following.look(sessions, context, effects)
        });
    }

    /// Runs `work` on the followed transcripts with what following takes
    /// from the rest of the state; the compactions of the sessions it
    /// stopped following (auto-follow moving on) stop too.
    fn following_does(
        &mut self,
        work: impl FnOnce(&mut Following, &mut Sessions, &FollowContext) -> Vec<String>,
    ) {
        let session_env = self.session_env();
        let context = FollowContext {
            config: &self.config,
            tools: &self.files.tools,
            session_env: &session_env,
        };
        let left = work(&mut self.following, &mut self.sessions, &context);
        for id in left {
            self.compactions.abort(&id);
        }
    }

    /// The watcher's report: the followed transcripts it concerns, then
    /// the ledgers.
    pub fn files_changed(&mut self, changes: Vec<DiskChange>, effects: &mut Effects) {
        if self.following.concerns(&self.sessions, &changes) {
            self.follow_poll(effects);
        }
        self.files
            .on_disk_changes(&mut self.sessions, changes, effects);
    }

    /// Applies changed configuration to the file side: the tool mapping,
    /// every open session's listing cap, the watcher.
    pub fn apply_file_config(&mut self) {
        self.files.reconfigure(&self.config, &self.results);
        let env = self.session_env();
        // A followed session keeps its agent's workspace.
        for open in self
            .sessions
            .all_mut()
            .filter(|open| open.access() != Access::Follows)
        {
            env.configure(&mut open.session);
        }
        self.sessions.mark_changed();
    }

    /// Points the watcher where it should look, when sessions or followed
    /// transcripts changed since it last did.
    pub fn sync_watches(&mut self) {
        let sessions = self.sessions.take_changed();
        let following = self.following.take_changed();
        if sessions || following {
            let first = self.following.watch_dirs(&self.sessions);
            self.files.sync_watches(&self.sessions, first);
        }
    }

    /// Applies a finished compaction and answers everyone waiting on it:
    /// its progress ends, `didCompact` and the meter go out when it
    /// compacted, the breaker hears of an automatic one, then the answers.
    pub fn finish_compaction(&mut self, done: CompactionDone, effects: &mut Effects) {
        let Some(running) = self.compactions.take_finished(&done) else {
            return; // cancelled: already answered
        };
        let CompactionDone {
            session_id,
            trigger,
            outcome,
            auto,
            ..
        } = done;
        let result = self.apply(&session_id, outcome, effects);
        running.end_progress(&result, effects);
        let compacted = result.as_ref().ok().filter(|r| r.compacted);
        if let Some(result) = compacted {
            effects.notify::<methods::DidCompact>(
                &session_id,
                DidCompactNotification {
                    session_id: session_id.clone(),
                    trigger,
                    result: result.clone(),
                },
            );
        }
        // Found once, for the new meter and an automatic job's breaker.
        let open = if compacted.is_some() || auto {
            self.sessions.find_mut_followed(&session_id)
        } else {
            None
        };
        if let Some((open, mirror)) = open {
            if compacted.is_some() {
                let meter = following::meter(&self.config, open, mirror.as_deref());
                effects.meter(&session_id, meter);
            }
            if auto {
                let outcome = match &result {
                    Ok(r) => Ok((r.tokens_before, r.tokens_after)),
                    Err(e) => Err(e.message.clone()),
                };
                compactions::note_auto_outcome(open, &self.config, outcome, effects);
            }
        }
        running.answer(&result, effects);
    }

    /// What the engine settles the finished job into, carried out: applied
    /// (to a followed session: recorded in compactd's own log), left out,
    /// or handed off to a new session.
    fn apply(
        &mut self,
        session_id: &str,
        outcome: Result<Written, String>,
        effects: &mut Effects,
    ) -> Result<CompactResult, RpcError> {
        let written = outcome.map_err(|why| {
            RpcError::internal(format!("compaction failed, history unchanged: {why}"))
        })?;
        let (open, mirror) = self
            .sessions
            .find_mut_followed(session_id)
            .ok_or_else(|| no_session(session_id))?;
        let (settled, recorded) = following::settle(open, mirror, written)?;
        match settled.outcome {
            Outcome::Applied(record) => Ok(match recorded {
                // Only the agent changes what its model sees.
                Some(reason) => CompactResult {
                    compacted: false,
                    reason: Some(reason),
                    ..CompactResult::from_record(&record)
                },
                None => CompactResult::from_record(&record),
            }),
            Outcome::NotSmaller { record, reason } => {
                Ok(CompactResult::not_applied(&record, reason))
            }
            Outcome::Handoff(record) => self.handoff(session_id, &record, effects),
        }
    }

    /// Starts the new session a handoff writes; the source stays as it
    /// was, and its subscribers get the new one's notifications too.
    fn handoff(
        &mut self,
        source_id: &str,
        record: &CompactionRecord,
        effects: &mut Effects,
    ) -> Result<CompactResult, RpcError> {
        let source = &self.sessions.get(source_id)?.session;
        let opened =
            engine::create::handoff(&self.sessions.store, source, record, &self.session_env())?;
        let new_id = opened.session.id.clone();
        let tokens = engine::compaction::handoff_tokens(source, &opened.session);
        let result = CompactResult::handed_off(record, tokens, &new_id);
        effects.carry_subscribers(source_id, &new_id);
        effects.meter(&new_id, self.meter(&opened, None));
        self.insert_session(opened, effects);
        Ok(result)
    }
}
