//! The session `compactd mcp` serves, kept current: an agent's transcript
//! followed as it grows (`engine::follow`, read incrementally; compactd's
//! own log of it only read, never locked), or
//! compactd's own session read from its log (again when the log grew;
//! without its lock, so a session another process holds is read too).

use std::path::{Path, PathBuf};

use crate::agents::{discover, Agent, Cwds};
use crate::engine::follow::{self, FollowSetup, Mirror};
use crate::engine::{create, OpenSession, SessionEnv};
use crate::session::Session;
use crate::store::{Durability, SessionStore};

#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("no agent session of {dir} found (compactd knows {1} transcripts); start compactd mcp in the agent's directory, or give --session or --transcript", dir = .0.display())]
    NoSession(PathBuf, String),
    #[error("{0}")]
    Failed(String),
}

pub enum Source {
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
    /// it holds), or the newest agent session of `workspace`.
    pub fn follow(
        setup: FollowSetup,
        workspace: &Path,
        path: Option<&Path>,
    ) -> Result<Source, SourceError> {
        let homes = crate::agents::Homes::from_env();
        let (agent, path) = match path {
            Some(path) => {
                let agent = discover::agent_of(&homes, path).ok_or_else(|| {
                    SourceError::Failed(format!(
                        "{}: not a transcript of an agent compactd knows",
                        path.display()
                    ))
                })?;
                (agent, path.to_path_buf())
            }
            None => discover::all_sessions(&homes, &Cwds::default(), workspace, 1)
                .into_iter()
                .next()
                .map(|s| (s.agent, s.path))
                .ok_or_else(|| {
                    SourceError::NoSession(workspace.to_path_buf(), Agent::display_names())
                })?,
        };
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
            Source::Followed { agent, path, .. } => {
                format!("{} session {}", agent.display_name(), path.display())
            }
            Source::Own { id, .. } => format!("compactd session {id}"),
        }
    }

    /// The session with what it gained since the last call.
    pub fn refresh(&mut self) -> Result<&Session, String> {
        match self {
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
