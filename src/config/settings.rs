//! The configuration's fields and their defaults, in one place: what every
//! layer (`resolve`) is read into.

use std::collections::BTreeMap;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::summarizer::SummarizerConfig;
use crate::files::{watch::WatchMode, FileToolRule};

pub const CONFIG_FILE_NAME: &str = "compactd.toml";
/// The default `maxImportBytes`: 1 GiB.
pub const DEFAULT_MAX_IMPORT_BYTES: u64 = 1 << 30;
/// The smallest `maxFrameBytes` accepted.
pub const MIN_MAX_FRAME_BYTES: u64 = 4096;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct Config {
    /// Where session logs live. Default: `$XDG_DATA_HOME/compactd/sessions`.
    pub data_dir: Option<PathBuf>,
    /// The conversation's model, used to pick a tokenizer and a context window.
    pub model: Option<String>,
    /// The conversation model's context window in tokens. Default: from the
    /// built-in table of common models, else `defaultContextWindow`.
    pub context_window: Option<u64>,
    /// The window assumed for models the built-in table does not know.
    pub default_context_window: u64,
    /// Newest tokens kept verbatim when compacting.
    pub keep_recent_tokens: u64,
    /// At least this many of the newest messages stay verbatim in every
    /// compaction, whatever `keepRecentTokens` keeps (the larger tail wins;
    /// 0: only `keepRecentTokens` decides). Every strategy respects it:
    /// `checkpoint` cuts no later, `incremental` and `prune` leave those
    /// messages alone.
    pub keep_recent_messages: usize,
    /// Compact automatically when a trigger fires.
    pub auto_compact: bool,
    /// Auto-compact at this percentage of the context window (0 disables).
    pub auto_compact_percent: f64,
    /// Auto-compact at this absolute token count (0 disables).
    pub auto_compact_token_limit: u64,
    /// Auto-compact when fewer than this many tokens remain in the window
    /// (0 disables).
    pub reserve_tokens: u64,
    /// Auto-compact when the messages since the last compaction reach this
    /// count (0 disables).
    pub message_threshold: u64,
    /// Auto-compact when the user turns since the last compaction reach
    /// this count (0 disables).
    pub turn_threshold: u64,
    /// The default compaction strategy.
    pub strategy: crate::compaction::Strategy,
    /// `incremental`: the newest messages never replaced.
    pub retention_window: usize,
    /// `prune`: the newest tool output (in tokens) that is never pruned.
    pub prune_protect_tokens: u64,
    /// `prune`: act only when at least this many tokens can be freed.
    pub prune_minimum_tokens: u64,
    /// Replaces the default prompt LLM summarizers get for a first summary.
    pub compact_prompt: Option<String>,
    /// Replaces the default prompt LLM summarizers get to update a previous
    /// summary.
    pub update_prompt: Option<String>,
    /// How tool outputs are clipped in the summarizer input (head and tail
    /// kept), in characters.
    pub max_tool_output_chars: usize,
    /// The message that introduces the summary in the compacted history.
    pub summary_prefix: Option<String>,
    /// The summarizer that writes compaction summaries.
    pub summarizer: SummarizerConfig,
    /// Files listed in each of `<read-files>` and `<modified-files>`; the
    /// rest are counted ("… and N more").
    pub max_listed_files: usize,
    /// Tool calls that read or change files, by tool name: added to the
    /// shipped mapping (pi, Claude Code, OpenAI-style, `apply_patch`), or
    /// replacing an entry of it; `null` removes one.
    pub file_tools: BTreeMap<String, Option<FileToolRule>>,
    /// How files in the ledger are watched for changes by others.
    pub file_watcher: WatchMode,
    /// Directories watched at most (one per directory holding ledger
    /// files, plus the workspace roots); beyond it, the least recently
    /// touched files go unwatched.
    pub max_watched_paths: usize,
    /// The largest file `conversation/import` and the CLI commands read, in
    /// bytes (default 1 GiB). Larger files, and anything but a regular file
    /// (a FIFO, a device, a directory), are refused.
    pub max_import_bytes: u64,
    /// The largest frame (message body) accepted from the client, in bytes.
    /// A bigger one is refused (-32600, with its id when the body starts
    /// with one) and skipped unread. At least 4096.
    #[schemars(range(min = 4096))]
    pub max_frame_bytes: u64,
    /// When an append to a session log counts as done: `flush` (handed to
    /// the operating system: survives compactd crashing or being killed,
    /// not a power loss; about 10 µs per append) or `fsync` (also synced to
    /// the disk: survives a power loss; 3–5 ms per append, measured with
    /// `cargo bench --bench append` on a 2-core VM). Session headers and
    /// compactions are always synced.
    pub durability: crate::store::Durability,
    /// `auto`: follow the newest Claude Code, Codex, pi or Gemini CLI session of the
    /// workspace, and each one that starts later (`conversation/didFollow`).
    /// `off`: follow only what `conversation/follow` asks for.
    pub follow: FollowMode,
    /// Workspaces whose own `compactd.toml` may set `summarizer.provider`,
    /// `summarizer.baseUrl`, `summarizer.apiKeyEnv` and `dataDir` (a path,
    /// `~/` for the home). Read from the user's `compactd.toml` and the
    /// client only: a workspace cannot trust itself.
    pub trusted_workspaces: Vec<PathBuf>,
}

/// Whether the server follows the workspace's agent sessions by itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum FollowMode {
    /// Follow the newest session, and switch when a new one starts.
    Auto,
    /// Only `conversation/follow`.
    #[default]
    Off,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            data_dir: None,
            model: None,
            context_window: None,
            default_context_window: 128_000,
            keep_recent_tokens: 20_000,
            keep_recent_messages: 0,
            auto_compact: true,
            auto_compact_percent: 90.0,
            auto_compact_token_limit: 0,
            reserve_tokens: 16_384,
            message_threshold: 0,
            turn_threshold: 0,
            strategy: crate::compaction::Strategy::Checkpoint,
            retention_window: 6,
            prune_protect_tokens: 40_000,
            prune_minimum_tokens: 20_000,
            compact_prompt: None,
            update_prompt: None,
            max_tool_output_chars: 2_000,
            summary_prefix: None,
            summarizer: SummarizerConfig::default(),
            max_listed_files: crate::files::DEFAULT_MAX_LISTED_FILES,
            file_tools: BTreeMap::new(),
            file_watcher: WatchMode::Auto,
            max_watched_paths: 256,
            max_import_bytes: DEFAULT_MAX_IMPORT_BYTES,
            max_frame_bytes: crate::transport::DEFAULT_MAX_FRAME_BYTES,
            durability: crate::store::Durability::Flush,
            follow: FollowMode::Off,
            trusted_workspaces: Vec::new(),
        }
    }
}

impl Config {
    /// This configuration with a request's `keepRecentMessages` over it.
    pub fn with_kept_messages(&self, messages: Option<usize>) -> std::borrow::Cow<'_, Config> {
        match messages {
            Some(keep_recent_messages) if keep_recent_messages != self.keep_recent_messages => {
                std::borrow::Cow::Owned(Config {
                    keep_recent_messages,
                    ..self.clone()
                })
            }
            _ => std::borrow::Cow::Borrowed(self),
        }
    }

    /// The default session directory.
    pub fn sessions_dir(&self) -> PathBuf {
        if let Some(dir) = &self.data_dir {
            return dir.clone();
        }
        dirs::data_dir()
            .unwrap_or_else(std::env::temp_dir)
            .join("compactd")
            .join("sessions")
    }

    /// What a command keeps about a transcript between runs
    /// (`statusline`, `hooks`): `<sessions dir>/<kind>/<FNV-1a of the
    /// path>.json`.
    pub fn transcript_cache(&self, kind: &str, transcript: &std::path::Path) -> PathBuf {
        let hash = transcript
            .to_string_lossy()
            .bytes()
            .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
            });
        self.sessions_dir()
            .join(kind)
            .join(format!("{hash:016x}.json"))
    }

    /// The user-level config directory (`$XDG_CONFIG_HOME/compactd`).
    pub fn user_config_dir() -> Option<PathBuf> {
        dirs::config_dir().map(|d| d.join("compactd"))
    }
}
