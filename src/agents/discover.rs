//! Finding the agents' sessions: each agent knows where its own sessions
//! for a workspace live (its module); this file lists every agent's,
//! newest first, says which agent a transcript is, and names a session by
//! its first request. A session an agent keeps in a store of its own
//! (opencode's database) is named by a locator the agent gives, and its
//! metadata and title come from the agent (`AgentKind::stored_session`)
//! rather than from a file.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

pub use super::folders::{real_workspace, Cwds};
use super::{Agent, Homes, StoredSession};
use crate::conversation::Role;
use crate::transcript::{split_lines, Emitter, Event};

/// How much of a transcript's start is read for its title.
const TITLE_HEAD_BYTES: u64 = 256 * 1024;
/// Titles are cut to this many characters.
const TITLE_CHARS: usize = 100;

/// One session of an agent, as found on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentSession {
    pub agent: Agent,
    pub path: PathBuf,
    /// Last modified, in milliseconds since the Unix epoch.
    pub modified_ms: u64,
    pub size: u64,
}

/// Every agent's sessions for `workspace`, most recently modified first.
pub fn all_sessions(
    homes: &Homes,
    cwds: &Cwds,
    workspace: &Path,
    limit: usize,
) -> Vec<AgentSession> {
    let mut all: Vec<AgentSession> = Agent::all()
        .iter()
        .flat_map(|agent| sessions(homes, cwds, *agent, workspace, limit))
        .collect();
    newest_first(&mut all, limit);
    all
}

/// The sessions of `agent` for `workspace`, most recently modified first,
/// at most `limit`.
pub fn sessions(
    homes: &Homes,
    cwds: &Cwds,
    agent: Agent,
    workspace: &Path,
    limit: usize,
) -> Vec<AgentSession> {
    let mut found: Vec<AgentSession> = agent
        .sessions(homes, cwds, &real_workspace(workspace), limit)
        .into_iter()
        .filter_map(|path| session_at(agent, path))
        .collect();
    newest_first(&mut found, limit);
    found
}

fn newest_first(sessions: &mut Vec<AgentSession>, limit: usize) {
    sessions.sort_by(|a, b| b.modified_ms.cmp(&a.modified_ms).then(b.path.cmp(&a.path)));
    sessions.truncate(limit);
}

/// The folders where a new session of each agent for `workspace` appears
/// (for watching).
pub fn session_dirs(homes: &Homes, workspace: &Path) -> Vec<PathBuf> {
    let workspace = real_workspace(workspace);
    Agent::all()
        .iter()
        .map(|agent| agent.session_dir(homes, &workspace))
        .collect()
}

/// Where `agent`'s sessions for `workspace` are looked for, for a message
/// saying there is none.
pub fn searched_dir(homes: &Homes, agent: Agent, workspace: &Path) -> PathBuf {
    agent.searched_dir(homes, &real_workspace(workspace))
}

/// The agent whose transcript `path` is: by where it lives, else by its
/// content (the agent most of its first lines belong to).
pub fn agent_of(homes: &Homes, path: &Path) -> Option<Agent> {
    let real = real_workspace(path);
    if let Some(agent) = Agent::all().iter().find(|a| a.owns(homes, &real)) {
        return Some(*agent);
    }
    let head = read_head(path, TITLE_HEAD_BYTES)?;
    let lines = split_lines(&head);
    let mut votes: Vec<(Agent, usize)> = Agent::all().iter().map(|a| (*a, 0)).collect();
    for value in lines.iter().take(200).filter_map(|l| l.value.as_ref().ok()) {
        if let Some(vote) = votes.iter_mut().find(|(a, _)| a.classify(value)) {
            vote.1 += 1;
        }
    }
    votes
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .max_by_key(|(_, n)| *n)
        .map(|(agent, _)| agent)
}

/// The session `path` names, when an agent keeps it in a store of its own
/// (`AgentKind::stored_session`): the agent, and the session read (whole
/// with `whole`); `None` for a transcript file.
pub fn stored(path: &Path, whole: bool) -> Option<(Agent, Result<StoredSession, String>)> {
    Agent::all()
        .iter()
        .find_map(|agent| Some((*agent, agent.stored_session(path, whole)?)))
}

/// A title for a session: the name the user gave it (or the agent, for a
/// session it keeps in a store), else its first request.
pub fn title(agent: Agent, path: &Path) -> Option<String> {
    let title = match agent.stored_session(path, false) {
        Some(stored) => stored.ok()?.title?,
        None => first_prompt(agent, &read_head(path, TITLE_HEAD_BYTES)?)?,
    };
    let title = title.split_whitespace().collect::<Vec<_>>().join(" ");
    Some(match title.char_indices().nth(TITLE_CHARS) {
        Some((cut, _)) => format!("{}…", &title[..cut]),
        None => title,
    })
}

/// The name the user gave the session, else its first request, from a
/// transcript's first lines as the agent's reader sees them.
pub fn first_prompt(agent: Agent, bytes: &[u8]) -> Option<String> {
    let lines = split_lines(bytes);
    if let Some(name) = agent.session_name(&lines).filter(|n| !n.trim().is_empty()) {
        return Some(name);
    }
    let mut reader = agent.reader(None).ok()?;
    let mut out = Emitter::new(agent.format());
    for line in &lines {
        if let Some(value) = out.readable(line) {
            reader.line(line.number, value, &mut out);
        }
        for event in out.drain() {
            match event {
                // What the person asked, without what their client added
                // around it (`<ide_selection>`, a command's expansion).
                Event::Message { message, .. }
                    if message.role() == Role::User && agent.is_request(&message) =>
                {
                    if let Some(request) =
                        crate::conversation::request::request_text(message.text())
                    {
                        return Some(request);
                    }
                }
                Event::Restart => return None,
                _ => {}
            }
        }
    }
    None
}

/// Up to `max` bytes from the start of a regular file, cut after its last
/// complete line.
fn read_head(path: &Path, max: u64) -> Option<Vec<u8>> {
    let mut bytes = Vec::new();
    crate::regular_file::open_read(path)
        .ok()?
        .take(max)
        .read_to_end(&mut bytes)
        .ok()?;
    let end = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    bytes.truncate(end);
    Some(bytes)
}

fn session_at(agent: Agent, path: PathBuf) -> Option<AgentSession> {
    if let Some(stored) = agent.stored_session(&path, false) {
        let stored = stored.ok()?;
        return Some(AgentSession {
            agent,
            path,
            modified_ms: stored.modified_ms,
            size: stored.size,
        });
    }
    let meta = fs::metadata(&path).ok().filter(|m| m.is_file())?;
    let modified_ms = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_millis() as u64);
    Some(AgentSession {
        agent,
        path,
        modified_ms,
        size: meta.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A session's title is what the person asked, not the selection or
    /// the file their editor put around it.
    #[test]
    fn a_title_is_the_request_without_the_clients_wrappers() {
        let agent = Agent::from_name("claude-code").unwrap();
        let line = serde_json::json!({"type": "user", "uuid": "u1", "sessionId": "s",
            "message": {"role": "user", "content": [
                {"type": "text", "text": "<ide_selection>The user selected the lines 3 to 9 from src/a.rs</ide_selection>"},
                {"type": "text", "text": "why does this loop never end?"}]}});
        let bytes = format!("{line}\n");
        assert_eq!(
            first_prompt(agent, bytes.as_bytes()).as_deref(),
            Some("why does this loop never end?")
        );
    }
}
