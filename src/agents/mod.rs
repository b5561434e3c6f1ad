//! The coding agents people already run (Claude Code, Codex, pi, Gemini
//! CLI, opencode), one module each, holding everything compactd knows about
//! that agent: the folders it keeps its files in and the environment
//! variables that move them, how its sessions for a workspace are found,
//! its transcript format and reader, where it compacts by itself (with the
//! rule and its source), and the name people know it by. One registry
//! (`Agent::all`) lists them; everything else (discovery, following,
//! limits, the meter, import's format detection, the editors' lists, hooks,
//! setup) iterates it, so adding an agent is one module and one line here.
//! This is an edge: it reads the agents' files and writes only their
//! settings, and only when `compactd setup` is asked to (`setup.rs`; a
//! status line caches what it read in compactd's own data directory).

pub(crate) mod claude_code;
pub(crate) mod codex;
pub(crate) mod discover;
#[cfg(test)]
mod fake;
mod folders;
pub(crate) mod gemini;
pub(crate) mod hook;
mod kind;
pub(crate) mod limits;
pub(crate) mod opencode;
pub(crate) mod pi;
pub(crate) mod setup;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde_json::Value;

pub use discover::AgentSession;
pub use folders::Cwds;
pub(crate) use kind::read_json;
pub use kind::{
    Agent, AgentKind, FeedStep, FollowMeter, Homes, LimitsInput, StatusLineEnv, StoredFeed,
    StoredSession, Supports,
};
pub use limits::{AutoCompactPoint, Basis};

use crate::transcript::Format;

/// Every agent compactd knows, in the order they are listed.
static ALL: &[Agent] = &[
    Agent(&claude_code::ClaudeCode),
    Agent(&codex::Codex),
    Agent(&pi::Pi),
    Agent(&gemini::Gemini),
    Agent(&opencode::OpenCode),
    #[cfg(test)]
    Agent(&fake::Fake),
];

impl Agent {
    /// Every agent, in the registry's order.
    pub fn all() -> &'static [Agent] {
        ALL
    }

    /// The agent named `name` on the wire.
    pub fn from_name(name: &str) -> Option<Agent> {
        ALL.iter().copied().find(|a| a.name() == name)
    }

    /// The agent whose transcript format this is.
    pub fn from_format(format: Format) -> Option<Agent> {
        Agent::from_name(format.name())
    }

    /// Every agent's display name, `A, B or C` (for messages).
    pub fn display_names() -> String {
        let names: Vec<&str> = ALL.iter().map(|a| a.display_name()).collect();
        match names.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
            Some((last, _)) => last.to_string(),
            None => String::new(),
        }
    }
}

impl<'de> serde::Deserialize<'de> for Agent {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Agent, D::Error> {
        let name = String::deserialize(deserializer)?;
        Agent::from_name(&name).ok_or_else(|| {
            let known: Vec<&str> = ALL.iter().map(|a| a.name()).collect();
            serde::de::Error::custom(format!(
                "unknown agent `{name}`, expected one of {}",
                known.join(", ")
            ))
        })
    }
}

impl schemars::JsonSchema for Agent {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Agent".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let names: Vec<Value> = ALL.iter().map(|a| Value::from(a.name())).collect();
        let described: Vec<String> = ALL
            .iter()
            .map(|a| format!("`{}`: {}", a.name(), a.display_name()))
            .collect();
        schemars::json_schema!({
            "description": format!("A coding agent whose transcripts compactd follows: {}.", described.join("; ")),
            "type": "string",
            "enum": names,
        })
    }
}

impl Homes {
    /// The home and every agent's variables, from this process's
    /// environment (an empty variable counts as unset, as the agents do).
    pub fn from_env() -> Homes {
        let mut homes = Homes::under(&dirs::home_dir().unwrap_or_else(std::env::temp_dir));
        for name in ALL.iter().flat_map(|a| a.env_vars()) {
            if let Some(value) = std::env::var_os(name).filter(|v: &OsString| !v.is_empty()) {
                homes.vars.insert(name, PathBuf::from(value));
            }
        }
        homes
    }
}

/// What `compactd setup <name>` changes: the agent's settings
/// (`AgentKind::setup`).
pub fn setup_for(
    name: &str,
    homes: &Homes,
    project: Option<&Path>,
    compactd: &Path,
) -> Result<Vec<setup::Setup>, String> {
    let agent = Agent::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = Agent::all().iter().map(|a| a.name()).collect();
        format!("no agent named {name}; known: {}", names.join(", "))
    })?;
    agent.setup(homes, project, compactd)
}
