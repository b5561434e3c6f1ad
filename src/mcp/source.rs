//! The session `compactd mcp` serves, kept current: an agent's transcript
//! followed as it grows (`engine::follow`, read incrementally; compactd's
//! own log of it only read, never locked; a session an agent keeps in a
//! store of its own, a locator, the same way through its feed), or
//! compactd's own session read from its log (again when the log grew;
//! without its lock, so a session another process holds is read too).
//!
//! Started without a transcript or a session, it serves the session of the
//! agent that launched it, which it cannot name at start: agents start
//! their MCP servers before they write their transcript, and the
//! directory may hold older sessions (and another agent's, running). So it
//! notes the sessions there at start (`Pending`) and, at the first call,
//! takes the one that appeared since (else the one that grew since): the
//! launching agent has written the prompt that led to the call by then.
//! When none, or more than one, qualifies, each call says so and answers
//! from no session rather than from another one.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::agents::{discover, Agent, Cwds};
use crate::engine::follow::{self, FollowSetup, Mirror};
use crate::engine::{create, OpenSession, SessionEnv};
use crate::session::Session;
use crate::store::{Durability, SessionStore};

#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("{0}")]
    Failed(String),
}

pub enum Source {
    /// The session of the agent that launched it, not known yet: the
    /// sessions of `workspace` at start, with their sizes.
    Pending {
        setup: Box<FollowSetup>,
        workspace: PathBuf,
        before: HashMap<PathBuf, u64>,
    },
    Followed {
        agent: Agent,
        path: PathBuf,
        setup: Box<FollowSetup>,
        open: Box<OpenSession>,
        mirror: Box<Mirror>,
    },
    Own {
        store: SessionStore,
        id: String,
        env: SessionEnv,
        /// The log's length when it was read.
        read: u64,
        open: Box<OpenSession>,
    },
}

impl Source {
    /// The transcript at `path` (its agent told from where it lives or what
    /// it holds), or the session of `workspace` that the agent launching
    /// this server writes (`Pending` until a call finds it).
    pub fn follow(
        setup: FollowSetup,
        workspace: &Path,
        path: Option<&Path>,
    ) -> Result<Source, SourceError> {
        let Some(path) = path else {
            let before = sessions_of(workspace)
                .into_iter()
                .map(|s| (s.path, s.size))
                .collect();
            return Ok(Source::Pending {
                setup: Box::new(setup),
                workspace: workspace.to_path_buf(),
                before,
            });
        };
        if let Some((agent, _)) = discover::stored(path, false) {
            return Self::followed(setup, workspace, agent, path.to_path_buf());
        }
        let homes = crate::agents::Homes::from_env();
        if let Err(e) = std::fs::metadata(path) {
            return Err(SourceError::Failed(format!("{}: {e}", path.display())));
        }
        let agent = discover::agent_of(&homes, path).ok_or_else(|| {
            SourceError::Failed(format!(
                "{}: not a transcript of an agent compactd knows",
                path.display()
            ))
        })?;
        Self::followed(setup, workspace, agent, path.to_path_buf())
    }

    fn followed(
        setup: FollowSetup,
        workspace: &Path,
        agent: Agent,
        path: PathBuf,
    ) -> Result<Source, SourceError> {
        let store = SessionStore::new(setup.config.sessions_dir(), Durability::Flush);
        let (open, mirror) =
            follow::follow_read_only(&store, agent, &path, workspace, &setup.env())
                .map_err(|e| SourceError::Failed(e.to_string()))?;
        Ok(Source::Followed {
            agent,
            path,
            setup: Box::new(setup),
            open: Box::new(open),
            mirror: Box::new(mirror),
        })
    }

    /// compactd's own session `id`.
    pub fn own(store: SessionStore, id: &str, env: SessionEnv) -> Result<Source, SourceError> {
        let (open, read) = read_own(&store, id, &env)?;
        Ok(Source::Own {
            store,
            id: id.to_string(),
            env,
            read,
            open: Box::new(open),
        })
    }

    /// What it serves, for the log.
    pub fn describe(&self) -> String {
        match self {
            Source::Pending { workspace, .. } => format!(
                "session of the agent that launched it, in {} (found at the first call)",
                workspace.display()
            ),
            Source::Followed { agent, path, .. } => {
                format!("{} session {}", agent.display_name(), path.display())
            }
            Source::Own { id, .. } => format!("compactd session {id}"),
        }
    }

    /// The session with what it gained since the last call.
    pub fn refresh(&mut self) -> Result<&Session, String> {
        if let Source::Pending {
            setup,
            workspace,
            before,
        } = self
        {
            let (agent, path) = launching_session(workspace, before)?;
            *self = Self::followed((**setup).clone(), &workspace.clone(), agent, path)
                .map_err(|e| e.to_string())?;
        }
        match self {
            Source::Pending { .. } => unreachable!("resolved above"),
            Source::Followed {
                setup,
                open,
                mirror,
                ..
            } => {
                mirror
                    .poll(open, &setup.env())
                    .map_err(|e| format!("reading the transcript: {e}"))?;
                Ok(&open.session)
            }
            Source::Own {
                store,
                id,
                env,
                read,
                open,
            } => {
                let now = store
                    .path_for(id)
                    .ok()
                    .and_then(|p| std::fs::metadata(p).ok())
                    .map_or(0, |m| m.len());
                if now != *read {
                    let (fresh, length) = read_own(store, id, env).map_err(|e| e.to_string())?;
                    **open = fresh;
                    *read = length;
                }
                Ok(&open.session)
            }
        }
    }
}

/// The most sessions of a directory looked at.
const SESSIONS_LOOKED_AT: usize = 10_000;

fn sessions_of(workspace: &Path) -> Vec<discover::AgentSession> {
    let homes = crate::agents::Homes::from_env();
    discover::all_sessions(&homes, &Cwds::default(), workspace, SESSIONS_LOOKED_AT)
}

/// The session the launching agent writes: the one that appeared since
/// start, else the one that grew since; an error that says why when there
/// is none or more than one.
fn launching_session(
    workspace: &Path,
    before: &HashMap<PathBuf, u64>,
) -> Result<(Agent, PathBuf), String> {
    let now = sessions_of(workspace);
    let appeared: Vec<_> = now
        .iter()
        .filter(|s| !before.contains_key(&s.path))
        .collect();
    let grew: Vec<_> = now
        .iter()
        .filter(|s| before.get(&s.path).is_some_and(|size| s.size > *size))
        .collect();
    let candidates = if appeared.is_empty() { grew } else { appeared };
    match candidates.as_slice() {
        [one] => Ok((one.agent, one.path.clone())),
        [] => Err(format!(
            "no session of {} has been written since this server started, so compactd cannot tell which one is yours and answers from none ({} older sessions are there; to read one, start compactd mcp with --transcript PATH)",
            workspace.display(),
            now.len()
        )),
        many => Err(format!(
            "{} sessions of {} changed since this server started ({}), so compactd cannot tell which one is yours and answers from none; start compactd mcp with --transcript PATH",
            many.len(),
            workspace.display(),
            many.iter()
                .map(|s| s.path.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

fn read_own(
    store: &SessionStore,
    id: &str,
    env: &SessionEnv,
) -> Result<(OpenSession, u64), SourceError> {
    let length = store
        .path_for(id)
        .ok()
        .and_then(|p| std::fs::metadata(p).ok())
        .map_or(0, |m| m.len());
    let opened =
        create::open_read_only(store, id, env).map_err(|e| SourceError::Failed(e.to_string()))?;
    Ok((opened.open, length))
}
