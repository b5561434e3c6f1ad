//! Following the coding agents people already run (Claude Code, Codex, pi)
//! through the transcripts they write as they go. This is an edge: finding
//! an agent's sessions for a workspace (`discover`), reading only what a
//! growing file added (`tail`), and reading where the agent compacts by
//! itself from its own configuration (`limits`). Turning the lines into a
//! live session is `engine::follow`; the server's part is `server::follow`.
//! Nothing here writes to an agent's files.

pub mod discover;
pub mod limits;
pub mod status;
pub mod tail;

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::import::Format;

/// A coding agent whose transcripts compactd can follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Agent {
    /// Claude Code (`@anthropic-ai/claude-code`).
    ClaudeCode,
    /// OpenAI Codex CLI.
    Codex,
    /// pi (`@mariozechner/pi-coding-agent`).
    Pi,
}

impl Agent {
    pub const ALL: [Agent; 3] = [Agent::ClaudeCode, Agent::Codex, Agent::Pi];

    /// The name on the wire.
    pub fn name(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "claude-code",
            Agent::Codex => "codex",
            Agent::Pi => "pi",
        }
    }

    /// The name people know it by.
    pub fn display_name(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "Claude Code",
            Agent::Codex => "Codex",
            Agent::Pi => "pi",
        }
    }

    pub fn format(self) -> Format {
        match self {
            Agent::ClaudeCode => Format::ClaudeCode,
            Agent::Codex => Format::Codex,
            Agent::Pi => Format::Pi,
        }
    }

    /// The agent named `name` on the wire.
    pub fn from_name(name: &str) -> Option<Agent> {
        Agent::ALL.into_iter().find(|a| a.name() == name)
    }

    pub fn from_format(format: Format) -> Option<Agent> {
        Agent::ALL.into_iter().find(|a| a.format() == format)
    }
}

impl std::fmt::Display for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Where the agents keep their files, resolved from the environment the
/// way each agent resolves it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentHomes {
    /// The user's home (`~`).
    pub home: PathBuf,
    /// `$CLAUDE_CONFIG_DIR`, else `~/.claude`: `projects/` and
    /// `settings.json` are there.
    pub claude_code: PathBuf,
    /// Whether `CLAUDE_CONFIG_DIR` was set: Claude Code's global
    /// `.claude.json` is then inside it, else in the home.
    pub claude_config_dir_set: bool,
    /// `$CODEX_HOME`, else `~/.codex`: `sessions/` and `config.toml`.
    pub codex: PathBuf,
    /// `$PI_CODING_AGENT_DIR`, else `~/.pi/agent`: `sessions/`,
    /// `settings.json`, `models.json`.
    pub pi: PathBuf,
    /// `$PI_CODING_AGENT_SESSION_DIR`: one directory for every workspace's
    /// sessions instead of `sessions/--<cwd>--/`.
    pub pi_sessions: Option<PathBuf>,
}

impl AgentHomes {
    pub fn from_env() -> AgentHomes {
        let var = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let defaults = AgentHomes::under(&dirs::home_dir().unwrap_or_else(std::env::temp_dir));
        let claude_dir = var("CLAUDE_CONFIG_DIR");
        AgentHomes {
            claude_config_dir_set: claude_dir.is_some(),
            claude_code: claude_dir.unwrap_or(defaults.claude_code),
            codex: var("CODEX_HOME").unwrap_or(defaults.codex),
            pi: var("PI_CODING_AGENT_DIR").unwrap_or(defaults.pi),
            pi_sessions: var("PI_CODING_AGENT_SESSION_DIR"),
            home: defaults.home,
        }
    }

    /// Every agent's default folders under `home`, no variable read.
    pub fn under(home: &Path) -> AgentHomes {
        AgentHomes {
            home: home.to_path_buf(),
            claude_code: home.join(".claude"),
            claude_config_dir_set: false,
            codex: home.join(".codex"),
            pi: home.join(".pi").join("agent"),
            pi_sessions: None,
        }
    }

    /// Claude Code's global state file (`autoCompactEnabled` lives there).
    pub fn claude_state_file(&self) -> PathBuf {
        if self.claude_config_dir_set {
            self.claude_code.join(".claude.json")
        } else {
            self.home.join(".claude.json")
        }
    }
}
