//! Finding an agent's sessions for a workspace, where each agent puts them
//! (verified against Claude Code 2.1.330, Codex 0.169 and pi 0.73.1):
//!
//! - Claude Code: `<config>/projects/<cwd>/<session>.jsonl`, the cwd's
//!   real path with every UTF-16 unit outside `[A-Za-z0-9]` as `-`; a name
//!   over 200 characters keeps 200 and gets `-` and the base-36 absolute
//!   value of Java's `String.hashCode` of the path. Subagent transcripts in
//!   `<session>/subagents/` are not sessions of their own.
//! - Codex: `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl` whose first
//!   line (`session_meta`) names the workspace as `cwd`.
//! - pi: `<agentDir>/sessions/--<cwd without its leading '/', with '/',
//!   '\' and ':' as '-'>--/*.jsonl` (other characters kept), or every file
//!   of `$PI_CODING_AGENT_SESSION_DIR` whose header names the workspace.

use std::collections::HashMap;
use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::UNIX_EPOCH;

use serde_json::Value;

use super::{Agent, AgentHomes};
use crate::import;

/// Codex rollouts looked at, newest first, before giving up on finding
/// more of a workspace's sessions.
const CODEX_FILES_EXAMINED: usize = 400;
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

/// The workspace as the agents see their cwd: its real path (they run
/// `getcwd`), else as given.
pub fn real_workspace(workspace: &Path) -> PathBuf {
    fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf())
}

/// Claude Code's directory name for a cwd.
pub fn claude_code_dir_name(cwd: &str) -> String {
    let name: String = cwd
        .encode_utf16()
        .map(|unit| match char::from_u32(unit as u32) {
            Some(c) if c.is_ascii_alphanumeric() => c,
            _ => '-',
        })
        .collect();
    if name.len() <= 200 {
        return name;
    }
    let hash = cwd
        .encode_utf16()
        .fold(0i32, |h, unit| h.wrapping_mul(31).wrapping_add(unit as i32));
    format!("{}-{}", &name[..200], base36((hash as i64).unsigned_abs()))
}

fn base36(mut n: u64) -> String {
    const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).expect("ASCII digits")
}

/// pi's directory name for a cwd.
pub fn pi_dir_name(cwd: &str) -> String {
    let trimmed = cwd.strip_prefix(['/', '\\']).unwrap_or(cwd);
    format!("--{}--", trimmed.replace(['/', '\\', ':'], "-"))
}

/// The cwd each transcript's first line names, remembered once read: a
/// first line never changes, and auto-follow looks every second, across
/// every recent Codex rollout of every workspace.
#[derive(Debug, Default)]
pub struct Cwds(Mutex<HashMap<PathBuf, String>>);

impl Cwds {
    fn of(&self, path: &Path, pointer: &str) -> Option<String> {
        let mut known = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(cwd) = known.get(path) {
            return Some(cwd.clone());
        }
        // Not cached until it could be read: the line may not be written yet.
        let cwd = first_line_cwd(path, pointer)?;
        known.insert(path.to_path_buf(), cwd.clone());
        Some(cwd)
    }
}

/// The sessions of `agent` for `workspace`, most recently modified first,
/// at most `limit`.
pub fn sessions(
    homes: &AgentHomes,
    cwds: &Cwds,
    agent: Agent,
    workspace: &Path,
    limit: usize,
) -> Vec<AgentSession> {
    let workspace = real_workspace(workspace);
    let cwd = workspace.to_string_lossy();
    let mut found = match agent {
        Agent::ClaudeCode => {
            let dir = homes
                .claude_code
                .join("projects")
                .join(claude_code_dir_name(&cwd));
            jsonl_files(&dir, agent)
        }
        Agent::Codex => codex_sessions(&homes.codex.join("sessions"), cwds, &workspace, limit),
        Agent::Pi => match &homes.pi_sessions {
            Some(dir) => jsonl_files(dir, agent)
                .into_iter()
                .filter(|s| cwds.of(&s.path, "/cwd").as_deref() == Some(&*cwd))
                .collect(),
            None => jsonl_files(&homes.pi.join("sessions").join(pi_dir_name(&cwd)), agent),
        },
    };
    found.sort_by(|a, b| b.modified_ms.cmp(&a.modified_ms).then(b.path.cmp(&a.path)));
    found.truncate(limit);
    found
}

/// Every agent's sessions for `workspace`, most recently modified first.
pub fn all_sessions(
    homes: &AgentHomes,
    cwds: &Cwds,
    workspace: &Path,
    limit: usize,
) -> Vec<AgentSession> {
    let mut all: Vec<AgentSession> = Agent::ALL
        .into_iter()
        .flat_map(|agent| sessions(homes, cwds, agent, workspace, limit))
        .collect();
    all.sort_by(|a, b| b.modified_ms.cmp(&a.modified_ms).then(b.path.cmp(&a.path)));
    all.truncate(limit);
    all
}

/// The directories where a new session of each agent for `workspace`
/// appears (for watching); Codex's is today's and may not exist yet.
pub fn session_dirs(homes: &AgentHomes, workspace: &Path) -> Vec<PathBuf> {
    let cwd = real_workspace(workspace).to_string_lossy().into_owned();
    let mut dirs = vec![homes
        .claude_code
        .join("projects")
        .join(claude_code_dir_name(&cwd))];
    dirs.extend(
        codex_day_dirs(&homes.codex.join("sessions"))
            .into_iter()
            .take(1),
    );
    dirs.push(match &homes.pi_sessions {
        Some(dir) => dir.clone(),
        None => homes.pi.join("sessions").join(pi_dir_name(&cwd)),
    });
    dirs
}

/// The agent whose transcript `path` is: by where it lives, else by its
/// content.
pub fn agent_of(homes: &AgentHomes, path: &Path) -> Option<Agent> {
    let real = real_workspace(path);
    let under = |dir: &Path| real.starts_with(real_workspace(dir));
    if under(&homes.claude_code.join("projects")) {
        return Some(Agent::ClaudeCode);
    }
    if under(&homes.codex.join("sessions")) {
        return Some(Agent::Codex);
    }
    if under(&homes.pi.join("sessions")) || homes.pi_sessions.as_deref().is_some_and(under) {
        return Some(Agent::Pi);
    }
    let head = read_head(path, TITLE_HEAD_BYTES)?;
    Agent::from_format(import::detect_head(&head)?)
}

/// A title for a session: the name pi gave it, else its first prompt.
pub fn title(agent: Agent, path: &Path) -> Option<String> {
    let head = read_head(path, TITLE_HEAD_BYTES)?;
    let title = import::first_prompt(agent.format(), &head)?;
    let title = title.split_whitespace().collect::<Vec<_>>().join(" ");
    Some(match title.char_indices().nth(TITLE_CHARS) {
        Some((cut, _)) => format!("{}…", &title[..cut]),
        None => title,
    })
}

/// Up to `max` bytes from the start of a regular file, cut after its last
/// complete line.
fn read_head(path: &Path, max: u64) -> Option<Vec<u8>> {
    if !fs::metadata(path).ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    fs::File::open(path)
        .ok()?
        .take(max)
        .read_to_end(&mut bytes)
        .ok()?;
    let end = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    bytes.truncate(end);
    Some(bytes)
}

/// The `*.jsonl` files directly in `dir`.
fn jsonl_files(dir: &Path, agent: Agent) -> Vec<AgentSession> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .filter_map(|path| session_at(agent, path))
        .collect()
}

fn session_at(agent: Agent, path: PathBuf) -> Option<AgentSession> {
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

/// `sessions/YYYY/MM/DD` directories, newest first.
fn codex_day_dirs(root: &Path) -> Vec<PathBuf> {
    let children = |dir: &Path| -> Vec<PathBuf> {
        let mut names: Vec<PathBuf> = fs::read_dir(dir)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        names.sort_by(|a, b| b.cmp(a));
        names
    };
    children(root)
        .iter()
        .flat_map(|year| children(year))
        .flat_map(|month| children(&month))
        .collect()
}

/// Rollouts whose `session_meta` names `workspace`, newest first.
fn codex_sessions(root: &Path, cwds: &Cwds, workspace: &Path, limit: usize) -> Vec<AgentSession> {
    let cwd = workspace.to_string_lossy();
    let mut found = Vec::new();
    let mut examined = 0;
    for day in codex_day_dirs(root) {
        let mut files = jsonl_files(&day, Agent::Codex);
        files.sort_by(|a, b| b.path.cmp(&a.path));
        for session in files {
            examined += 1;
            if cwds.of(&session.path, "/payload/cwd").as_deref() == Some(&*cwd) {
                found.push(session);
            }
            if found.len() >= limit || examined >= CODEX_FILES_EXAMINED {
                return found;
            }
        }
    }
    found
}

/// The cwd a transcript's first line names (Codex `session_meta`, pi's
/// header), at `pointer`.
fn first_line_cwd(path: &Path, pointer: &str) -> Option<String> {
    let file = fs::File::open(path).ok()?;
    let mut line = Vec::new();
    BufReader::new(file.take(4 << 20))
        .read_until(b'\n', &mut line)
        .ok()?;
    let value: Value = serde_json::from_slice(&line).ok()?;
    value.pointer(pointer)?.as_str().map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cases measured against Claude Code 2.1.330 and pi 0.73.1.
    #[test]
    fn directory_names_match_the_agents() {
        let claude = [
            ("/tmp/cc1/ws", "-tmp-cc1-ws"),
            ("/tmp/cc2/my.proj_v1 x/ünï-ç", "-tmp-cc2-my-proj-v1-x--n---"),
            ("/tmp/cc2/emoji😀d", "-tmp-cc2-emoji--d"),
            ("/tmp/cc2/e\u{301}", "-tmp-cc2-e-"),
            ("/tmp/cc2/Caps-Dir~1", "-tmp-cc2-Caps-Dir-1"),
        ];
        for (cwd, name) in claude {
            assert_eq!(claude_code_dir_name(cwd), name, "{cwd}");
        }
        let long = format!("/tmp/cc2/{}/{}", "a".repeat(120), "b.c".repeat(40));
        let name = claude_code_dir_name(&long);
        assert_eq!(&name[200..], "-370vl7", "{name}");
        assert_eq!(
            pi_dir_name("/tmp/pi2/my.proj_v1 x:y/ünï"),
            "--tmp-pi2-my.proj_v1 x-y-ünï--"
        );
    }
}
