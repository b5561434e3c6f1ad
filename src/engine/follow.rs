//! A followed agent transcript as a session: the mirror. Its conversation
//! is derived from the transcript, line by line as the agent writes it,
//! through the same readers a batch import uses (`transcript::emit`): messages
//! (a response written over several lines is amended in place), the
//! agent's own compactions as compaction records (so the meter drops when
//! the agent compacts), the file ledger from the tool calls that succeeded,
//! and the provider's usage for the meter. The transcript is only read;
//! the mirror can be rebuilt from it at any time, so it is never stored.
//!
//! The session's own log (`<dataDir>/<id>.jsonl`, its header naming the
//! transcript) holds only what compactd itself adds: the compactions a
//! client asks for (`conversation/compact`), which are recorded there and
//! never applied to the mirror (only the agent changes what its model
//! sees).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::{append, now_ms, EngineError, EngineResult, OpenSession, SessionEnv};
use crate::agents::{
    Agent, AgentSession, AutoCompactPoint, Basis, FeedStep, Homes, LimitsInput, StoredFeed,
};
use crate::compaction::CompactionRecord;
use crate::config::Config;
use crate::files::{disk, FileTools};
use crate::session::Session;
use crate::store::SessionSettings;
use crate::store::{self, FollowedTranscript, LogEntry, MirroredSession, SessionHeader};
use crate::store::{SessionLock, SessionLog, SessionStore, StoreError, LOG_VERSION};
use crate::tokens::{self, Meter};
use crate::transcript::tail::{Step, Tail};
use crate::transcript::{self, Emitter, Event, ForeignCompaction, Format, Reader, Skips};

/// What following needs from where it runs.
pub struct FollowEnv<'a> {
    pub config: &'a Config,
    pub tools: &'a FileTools,
    pub homes: &'a Homes,
    /// How summaries are introduced, the listing cap (its workspace is
    /// replaced by the agent's).
    pub session_env: &'a SessionEnv,
}

/// What a follow outside the server (a command) needs, owned: the
/// configuration, its tool mapping, the agents' folders, the session
/// environment of `workspace`.
#[derive(Clone)]
pub struct FollowSetup {
    pub config: Config,
    tools: FileTools,
    homes: Homes,
    session_env: SessionEnv,
}

impl FollowSetup {
    pub fn new(config: Config, homes: Homes, workspace: &Path) -> FollowSetup {
        let tools = FileTools::new(&config.file_tools);
        let session_env = SessionEnv::new(&config, disk::workspace(vec![workspace.to_path_buf()]));
        FollowSetup {
            config,
            tools,
            homes,
            session_env,
        }
    }

    /// An owned copy of `env`, for a thread of its own.
    pub fn owned(env: &FollowEnv) -> FollowSetup {
        FollowSetup {
            config: env.config.clone(),
            tools: env.tools.clone(),
            homes: env.homes.clone(),
            session_env: env.session_env.clone(),
        }
    }

    pub fn env(&self) -> FollowEnv<'_> {
        FollowEnv {
            config: &self.config,
            tools: &self.tools,
            homes: &self.homes,
            session_env: &self.session_env,
        }
    }
}

/// The session id of a followed transcript: the same for the same file,
/// so following it again finds compactd's own log of it.
pub fn session_id(agent: Agent, path: &Path) -> String {
    // A session an agent keeps in a store is named by the agent's id of it
    // (a locator's file stem is the store's).
    let name = match agent.mirrored_as(path) {
        Some((_, id)) => id,
        None => path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
    };
    let stem: String = name
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '.' | '_' | '-' => c,
            _ => '-',
        })
        .take(80)
        .collect();
    // Two folders may hold files of the same name.
    let hash = path
        .to_string_lossy()
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
        });
    format!(
        "follow-{}-{}-{:08x}",
        agent.name(),
        stem.replace("..", "-"),
        hash as u32
    )
}

/// The session a follow of `path` is kept under, and whether it is a
/// session a plugin of the agent mirrors it into: the plugin's session
/// when compactd's store holds it and its log records that it mirrors
/// this agent session (`AgentKind::mirrored_as`; one conversation, one
/// session), else `session_id`'s. The plugin's compactd writes that log;
/// a follow only reads it, never locks it.
pub fn followed_id(store: &SessionStore, agent: Agent, path: &Path) -> (String, bool) {
    if let Some((id, session_id)) = agent.mirrored_as(path) {
        let wanted = MirroredSession {
            agent: agent.name().to_string(),
            session_id,
        };
        if store.mirrors(&id).ok().flatten() == Some(wanted) {
            return (id, true);
        }
    }
    (session_id(agent, path), false)
}

/// What one look at the transcript changed.
#[derive(Debug, Default)]
pub struct Polled {
    /// The mirror changed (the meter may have moved).
    pub changed: bool,
    /// Compactions the agent made, seen as it wrote them.
    pub compactions: Vec<CompactionRecord>,
    /// The transcript was read again from the start, and why.
    pub reread: Option<String>,
}

/// A transcript being followed and the reading state of its mirror.
pub struct Mirror {
    pub agent: Agent,
    pub path: PathBuf,
    /// The agent's working directory: relative tool paths resolve against
    /// it, and pi's project settings live there.
    pub workspace: PathBuf,
    pub auto_compact: AutoCompactPoint,
    /// compactd's own compactions of the transcript, oldest first.
    pub own: Vec<CompactionRecord>,
    /// The session is one a plugin of the agent mirrors it into
    /// (`followed_id`): its log is the plugin's, never written here.
    pub mirrored: bool,
    source: Source,
    reading: Reading,
    /// What the agent's point was last computed from.
    limits_from: Option<(Option<String>, Option<u64>, Option<u64>)>,
}

/// Where the agent's entries come from: a transcript file's new lines, or
/// a session an agent keeps in a store of its own (opencode's database),
/// what changed in it.
enum Source {
    File(Tail),
    Store(Box<dyn StoredFeed>),
}

impl Source {
    fn new(agent: Agent, path: &Path) -> EngineResult<Source> {
        match agent.stored_feed(path) {
            None => Ok(Source::File(Tail::new(path))),
            Some(Ok(feed)) => Ok(Source::Store(feed)),
            Some(Err(why)) => Err(EngineError::Invalid(format!(
                "path: {}: {why}",
                path.display()
            ))),
        }
    }
}

/// The reader's side, apart from the file's, so a step can feed one while
/// reading the other.
struct Reading {
    reader: Box<dyn Reader + Send>,
    out: Emitter,
    /// What the reader's events did so far, apart from the reader, so
    /// that a step can feed it on one thread and apply on another.
    state: Applying,
}

struct Applying {
    format: Format,
    /// Compactions of the agent placed so far.
    placed: usize,
    /// The latest compaction was placed: what the agent attached right
    /// after it (`Event::Attached`, given only then) is its own.
    attaching: bool,
    stated_window: Option<u64>,
    max_output: Option<u64>,
    restart: bool,
    /// The files each tool call changed, for placing the agent's
    /// compactions.
    changed: transcript::ChangedFiles,
}

impl Reading {
    fn new(agent: Agent, path: &Path) -> EngineResult<Reading> {
        let format = agent.format();
        let reader = agent.reader(Some(path)).map_err(|e| read_error(path, e))?;
        Ok(Reading {
            reader,
            out: Emitter::new(format),
            state: Applying {
                format,
                placed: 0,
                attaching: false,
                stated_window: None,
                max_output: None,
                restart: false,
                changed: Default::default(),
            },
        })
    }

    /// What `source` has not given yet: through the reader, their events
    /// applied to the session.
    fn step(
        &mut self,
        source: &mut Source,
        session: &mut Session,
        env: &FollowEnv,
        live: bool,
    ) -> std::io::Result<(Step, Polled)> {
        let mut polled = Polled::default();
        let Reading { reader, out, state } = self;
        if state.restart {
            return Ok((Step::Read, polled)); // the rest is read again anyway
        }
        let feed = match source {
            Source::File(tail) => {
                let step = tail.feed(reader.as_mut(), out, |event, skipped| {
                    state.apply(event, skipped, session, env, live, &mut polled)
                })?;
                return Ok((step, polled));
            }
            Source::Store(feed) => feed,
        };
        let lines = match feed.step().map_err(std::io::Error::other)? {
            FeedStep::Changed(why) => return Ok((Step::Changed(why), polled)),
            FeedStep::Read(lines) => lines,
        };
        for line in lines {
            if state.restart {
                break;
            }
            if let Some(value) = out.readable(&line) {
                reader.line(line.number, value, out);
            }
            for event in out.drain() {
                state.apply(event, &mut out.skipped, session, env, live, &mut polled);
            }
        }
        Ok((Step::Read, polled))
    }
}

impl Applying {
    /// The agent's compaction, placed in the session (or skipped, saying
    /// why).
    fn place(
        &mut self,
        session: &mut Session,
        foreign: &ForeignCompaction,
        polled: &mut Polled,
        skipped: &mut Skips,
        live: bool,
    ) {
        let number = self.placed + 1;
        match transcript::place(session, foreign, self.format, number, &mut self.changed) {
            Ok(record) => {
                self.placed += 1;
                self.attaching = true;
                polled.changed = true;
                if live {
                    polled.compactions.push(record);
                }
            }
            Err((kind, why)) => {
                self.attaching = false;
                skipped.add(foreign.line, kind, why)
            }
        }
    }

    fn apply(
        &mut self,
        event: Event,
        skipped: &mut Skips,
        session: &mut Session,
        env: &FollowEnv,
        live: bool,
        polled: &mut Polled,
    ) {
        match event {
            Event::Message { mut message, .. } => {
                self.attaching = false;
                // The agent's file keeps an image's bytes; the mirror its size.
                super::blobs::drop_data(&mut message);
                let mut events = session
                    .file_ledger
                    .tool_events(std::slice::from_ref(&message), env.tools);
                if live {
                    append::hash_from_disk(events.iter_mut().map(|(_, e)| e));
                }
                session.push(vec![message]);
                for (_, event) in &events {
                    session.apply_file_event(event);
                }
                polled.changed = true;
            }
            Event::Amend(mut message) => {
                super::blobs::drop_data(&mut message);
                polled.changed |= session.replace_message(message)
            }
            Event::Settings(settings) | Event::Facts(settings) => {
                if settings.context_window.is_some() {
                    self.stated_window = settings.context_window;
                }
                store::apply_settings(
                    session,
                    SessionSettings {
                        auto_compact: None,
                        ..settings
                    },
                );
                polled.changed = true;
            }
            Event::Compaction(foreign) => self.place(session, &foreign, polled, skipped, live),
            Event::Attached(text) if self.attaching => {
                session.attach_unseen(session.encoding().count(&text));
                polled.changed = true;
            }
            Event::Attached(_) => {}
            Event::AttachedMidway(attachment) => {
                session.attach_after_latest(attachment.tokens(session.encoding()));
                polled.changed = true;
            }
            Event::Cleared(ids) => {
                let format = self.format;
                let record = transcript::place_clearing(session, ids, format, self.placed + 1);
                self.placed += 1;
                self.attaching = false;
                polled.changed = true;
                if live {
                    polled.compactions.push(record);
                }
            }
            Event::MaxOutputTokens(tokens) => self.max_output = Some(tokens),
            Event::Restart => self.restart = true,
        }
    }
}

fn read_error(path: &Path, e: std::io::Error) -> EngineError {
    EngineError::Invalid(format!("path: {}: {e}", path.display()))
}

/// Follows `path`, an `agent` transcript run in `workspace`: compactd's
/// own log of it is read (or started), then the whole transcript.
pub fn follow(
    store: &SessionStore,
    agent: Agent,
    path: &Path,
    workspace: &Path,
    env: &FollowEnv,
) -> EngineResult<(OpenSession, Mirror)> {
    follow_with(store, agent, path, workspace, env, true)
}

/// `follow` that only reads: compactd's own log of the transcript is read
/// without its lock (and not started), so a reader such as `compactd mcp`
/// never keeps an editor's compactd from recording a compaction of it.
pub fn follow_read_only(
    store: &SessionStore,
    agent: Agent,
    path: &Path,
    workspace: &Path,
    env: &FollowEnv,
) -> EngineResult<(OpenSession, Mirror)> {
    follow_with(store, agent, path, workspace, env, false)
}

fn follow_with(
    store: &SessionStore,
    agent: Agent,
    path: &Path,
    workspace: &Path,
    env: &FollowEnv,
    write: bool,
) -> EngineResult<(OpenSession, Mirror)> {
    // A session an agent keeps in a store is no file: the store must hold
    // it, before compactd's own log of it is started.
    match agent.stored_session(path, false) {
        Some(Err(why)) => {
            return Err(EngineError::Invalid(format!(
                "path: {}: {why}",
                path.display()
            )))
        }
        Some(Ok(_)) => {}
        None => {
            let meta = std::fs::metadata(path).map_err(|e| read_error(path, e))?;
            if !meta.is_file() {
                return Err(EngineError::Invalid(format!(
                    "path: {}: not a regular file",
                    path.display()
                )));
            }
        }
    }
    let (id, mirrored) = followed_id(store, agent, path);
    let followed = FollowedTranscript {
        agent: agent.name().to_string(),
        path: path.to_path_buf(),
    };
    let lock = match (write && !mirrored).then(|| store.lock(&id)) {
        Some(Ok(lock)) => Some(lock),
        None | Some(Err(StoreError::Locked { .. })) => None,
        Some(Err(e)) => return Err(e.into()),
    };
    let (own, log) = own_log(store, &id, &followed, lock)?;
    let (session, mirror) = mirror_of(agent, path, workspace, (&id, own, mirrored), env)?;
    let open = OpenSession {
        follows: Some(followed),
        ..OpenSession::new(session, log)
    };
    Ok((open, mirror))
}

/// A mirror of the transcript read from its start, and its session (`id`,
/// compactd's own compactions of it, whether a plugin mirrors it).
fn mirror_of(
    agent: Agent,
    path: &Path,
    workspace: &Path,
    (id, own, mirrored): (&str, Vec<CompactionRecord>, bool),
    env: &FollowEnv,
) -> EngineResult<(Session, Mirror)> {
    let mut mirror = Mirror {
        agent,
        path: path.to_path_buf(),
        workspace: workspace.to_path_buf(),
        // Known once the transcript is read.
        auto_compact: AutoCompactPoint {
            at: None,
            basis: Basis::Estimate,
            rule: String::new(),
        },
        own,
        mirrored,
        source: Source::new(agent, path)?,
        reading: Reading::new(agent, path)?,
        limits_from: None,
    };
    let mut session = mirror.fresh_session(id, env);
    mirror.read_from_start(&mut session, env)?;
    Ok((session, mirror))
}

/// The meter a follow of the transcript shows now, without following it
/// (no log, no lock, nothing written): `compactd statusline` shows it right
/// after the agent compacted, when the agent's own figure leaves out its
/// system prompt and tools, so the status line and the follow meter give
/// one number from one calibration.
pub fn transcript_meter(
    agent: Agent,
    path: &Path,
    workspace: &Path,
    env: &FollowEnv,
) -> EngineResult<Meter> {
    let id = session_id(agent, path);
    let (session, mirror) = mirror_of(agent, path, workspace, (&id, Vec::new(), false), env)?;
    Ok(meter(env.config, &session, &mirror))
}

/// The session a transcript holds, read whole as a follow reads it (no
/// log, no lock, nothing written): what an agent's hook asks about.
pub fn transcript_session(
    agent: Agent,
    path: &Path,
    workspace: &Path,
    env: &FollowEnv,
) -> EngineResult<Session> {
    let id = session_id(agent, path);
    mirror_of(agent, path, workspace, (&id, Vec::new(), false), env).map(|(session, _)| session)
}

/// compactd's log of a followed transcript: its own compactions, and the
/// log, created with its header when new. The log is written under its
/// lock like any other; when another compactd process (a second editor
/// window on the workspace) follows the same transcript and holds it, this
/// one follows too but reads the log only, until `take_log`.
fn own_log(
    store: &SessionStore,
    id: &str,
    followed: &FollowedTranscript,
    lock: Option<SessionLock>,
) -> EngineResult<(Vec<CompactionRecord>, SessionLog)> {
    let loaded = match store.load(id) {
        Ok(loaded) => loaded,
        // Only reading: a data directory that cannot be read (or is not
        // there, or not a directory) means no compactions of its own.
        Err(e) if lock.is_none() => {
            tracing::warn!(
                "compactd's log of {id} cannot be read ({e}); serving the transcript alone"
            );
            None
        }
        Err(e) => return Err(e.into()),
    };
    let own = loaded
        .as_ref()
        .map_or_else(Vec::new, |l| own_compactions(&l.entries));
    let Some(lock) = lock else {
        return Ok((own, store.read_only_log(id)?));
    };
    let Some(loaded) = loaded.filter(|l| !l.entries.is_empty()) else {
        let mut log = store.open_log(id, lock, false)?;
        let header = LogEntry::Header(SessionHeader {
            version: LOG_VERSION,
            session_id: id.to_string(),
            created_at: now_ms(),
            settings: SessionSettings::default(),
            follows: Some(followed.clone()),
            mirrors: None,
        });
        log.append(&[header], true)?;
        return Ok((own, log));
    };
    Ok((own, store.open_log(id, lock, loaded.torn_tail)?))
}

fn own_compactions(entries: &[LogEntry]) -> Vec<CompactionRecord> {
    entries
        .iter()
        .filter_map(|entry| match entry {
            LogEntry::Compaction(record) => Some((**record).clone()),
            _ => None,
        })
        .collect()
}

/// Makes compactd's own log of a followed session writable before a
/// compaction is recorded in it: takes its lock if another process held
/// it when following started (refused with `Locked` while it still does),
/// and reads the compactions that process recorded meanwhile.
pub fn take_log(
    store: &SessionStore,
    open: &mut OpenSession,
    mirror: &mut Mirror,
) -> EngineResult<()> {
    if !open.log.is_read_only() {
        return Ok(());
    }
    if mirror.mirrored {
        return Err(EngineError::Invalid(format!(
            "sessionId: {} is {}'s session as compactd's {} plugin mirrors it, whose log only that plugin's compactd writes: compact it there",
            open.session.id,
            mirror.agent.display_name(),
            mirror.agent.display_name()
        )));
    }
    let followed = open
        .follows
        .clone()
        .ok_or_else(|| EngineError::Failed("not a followed session".into()))?;
    let lock = store.lock(&open.session.id)?;
    let (own, log) = own_log(store, &open.session.id, &followed, Some(lock))?;
    open.log = log;
    mirror.own = own;
    Ok(())
}

impl Mirror {
    fn fresh_session(&self, id: &str, env: &FollowEnv) -> Session {
        let mut session = Session::new(
            id.to_string(),
            None,
            None,
            None,
            env.session_env.summary_prefix.clone(),
        );
        SessionEnv {
            workspace: disk::workspace(vec![self.workspace.clone()]),
            ..env.session_env.clone()
        }
        .configure(&mut session);
        session
    }

    /// Reads the transcript from its start into `session`, which must be
    /// fresh.
    fn read_from_start(&mut self, session: &mut Session, env: &FollowEnv) -> EngineResult<()> {
        self.source = Source::new(self.agent, &self.path)?;
        self.reading = Reading::new(self.agent, &self.path)?;
        self.limits_from = None;
        self.reading
            .step(&mut self.source, session, env, false)
            .map_err(|e| read_error(&self.path, e))?;
        self.reading.reader.caught_up();
        self.refresh_limits(session, env);
        Ok(())
    }

    /// Reads what the agent wrote since the last look; a transcript that
    /// changed underneath (truncated, replaced, rewritten, or moved to
    /// another branch) is read again from the start into a fresh session.
    pub fn poll(&mut self, open: &mut OpenSession, env: &FollowEnv) -> EngineResult<Polled> {
        let (step, polled) = self
            .reading
            .step(&mut self.source, &mut open.session, env, true)
            .map_err(|e| read_error(&self.path, e))?;
        let reread = match step {
            Step::Changed(why) => Some(why.to_string()),
            Step::Read if self.reading.state.restart => Some("moved to another branch".to_string()),
            Step::Read => None,
        };
        if let Some(why) = reread {
            let mut session = self.fresh_session(&open.session.id, env);
            self.read_from_start(&mut session, env)?;
            open.session = session;
            return Ok(Polled {
                changed: true,
                compactions: Vec::new(),
                reread: Some(why),
            });
        }
        if polled.changed {
            self.refresh_limits(&mut open.session, env);
        }
        Ok(polled)
    }

    /// The window and the agent's auto-compaction point, from what the
    /// transcript states, the agent's configuration, and compactd's table;
    /// recomputed when the model, the stated window or the output cap
    /// changes.
    fn refresh_limits(&mut self, session: &mut Session, env: &FollowEnv) {
        let from = (
            session.model.clone(),
            self.reading.state.stated_window,
            self.reading.state.max_output,
        );
        if self.limits_from.as_ref() == Some(&from) {
            return;
        }
        let (model, stated, max_output) = from.clone();
        self.limits_from = Some(from);
        let (window, point) = self.agent.limits(&LimitsInput {
            homes: env.homes,
            workspace: &self.workspace,
            model: model.as_deref(),
            stated_window: stated,
            max_output,
            table_window: model.as_deref().and_then(tokens::context_window_for),
            default_window: env.config.default_context_window,
        });
        session.context_window = Some(window);
        self.auto_compact = point;
    }

    /// Lines of the transcript the mirror did not use, and why.
    pub fn skipped_reasons(&self) -> Vec<String> {
        self.reading.out.skipped.reasons()
    }
}

/// Which session auto-follow follows, of the workspace's sessions (newest
/// first, as `agents::discover` lists them): at the first look the
/// newest; after that the newest one not seen before, a session that
/// started since (`None`: nothing new, stay). A session an agent keeps in
/// a store of its own (opencode's) is picked like a transcript: the folder
/// where its new sessions appear is watched for auto-follow anyway.
pub fn auto_pick<'a>(
    found: &'a [AgentSession],
    seen: &HashSet<PathBuf>,
    first_look: bool,
) -> Option<&'a AgentSession> {
    found
        .iter()
        .find(|session| first_look || !seen.contains(&session.path))
}

/// A followed session's meter: the agent's usage in the agent's window,
/// and the point where the agent compacts (the window when it will not).
pub fn meter(config: &Config, session: &Session, mirror: &Mirror) -> Meter {
    let mut meter = super::meter::meter(config, session);
    meter.auto_compact_at = match mirror.auto_compact.basis {
        Basis::Off => meter.context_window,
        _ => mirror.auto_compact.at.unwrap_or(meter.context_window),
    };
    meter
}

/// A followed session as a compaction's target: the record goes to
/// compactd's own log of it (synced), and the mirror stays as the agent
/// has it.
pub struct OwnLog<'a> {
    open: &'a mut OpenSession,
    mirror: &'a mut Mirror,
}

impl<'a> OwnLog<'a> {
    pub fn new(open: &'a mut OpenSession, mirror: &'a mut Mirror) -> OwnLog<'a> {
        OwnLog { open, mirror }
    }
}

impl super::compaction::Target for OwnLog<'_> {
    fn session(&self) -> &Session {
        &self.open.session
    }
    fn apply(&mut self, record: CompactionRecord) -> EngineResult<()> {
        record_own(self.open, self.mirror, record)
    }
}

/// Records a compaction compactd made of a followed transcript in its own
/// log (synced); the mirror stays as the agent has it.
pub fn record_own(
    open: &mut OpenSession,
    mirror: &mut Mirror,
    record: CompactionRecord,
) -> EngineResult<()> {
    open.log
        .append(&[LogEntry::Compaction(Box::new(record.clone()))], true)
        .map_err(|e| EngineError::Failed(format!("could not record the compaction: {e}")))?;
    mirror.own.push(record);
    Ok(())
}

/// Why a compaction of a followed transcript did not change it.
pub fn recorded_reason(mirror: &Mirror) -> String {
    format!(
        "recorded in compactd's log only: this session follows {}'s transcript, whose context only {} changes",
        mirror.agent.display_name(),
        mirror.agent.display_name()
    )
}
