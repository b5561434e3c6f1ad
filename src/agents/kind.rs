//! What compactd knows about one agent (`AgentKind`, which each agent's
//! module implements), the handle the registry gives out (`Agent`), and
//! where the agents keep their files (`Homes`).

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::folders::Cwds;
use super::hook::HookCall;
use super::limits::AutoCompactPoint;
use super::setup::Setup;
use crate::config::Config;
use crate::conversation::Message;
use crate::transcript::{Format, Imported, Line, Reader};

/// What compactd does for an agent besides following its sessions
/// (`sessions`, `conversation/follow`, `compactd mcp`): said in
/// `initialize`'s `agents`, so an editor offers what the agent has.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct Supports {
    /// `compactd setup <name>` writes something to its settings (hooks, an
    /// extension, a status line, the MCP server).
    pub setup: bool,
    /// That setup hooks compactd into the agent's own compactions
    /// (`compactd hook <name>`): what an editor offers to set up the first
    /// time it follows one of its sessions.
    pub hooks: bool,
    /// `compactd statusline` draws its status line.
    pub status_line: bool,
}

/// What compactd knows about one agent.
pub trait AgentKind: Send + Sync + 'static {
    /// The name on the wire and of its transcript format (`claude-code`).
    fn name(&self) -> &'static str;
    /// The name people know it by (`Claude Code`).
    fn display_name(&self) -> &'static str;
    /// Its transcript format, for people (`Claude Code JSONL`).
    fn format_description(&self) -> &'static str;
    /// The environment variables that move its folders, or where it
    /// compacts by itself.
    fn env_vars(&self) -> &'static [&'static str];
    /// Its transcripts of sessions in `workspace` (the workspace's real
    /// path); the caller keeps the `limit` newest.
    fn sessions(&self, homes: &Homes, cwds: &Cwds, workspace: &Path, limit: usize) -> Vec<PathBuf>;
    /// Where a new session for `workspace` appears (watched).
    fn session_dir(&self, homes: &Homes, workspace: &Path) -> PathBuf;
    /// Where its sessions for `workspace` are looked for, for a message
    /// saying there is none.
    fn searched_dir(&self, homes: &Homes, workspace: &Path) -> PathBuf {
        self.session_dir(homes, workspace)
    }
    /// Whether `path` lies where it keeps its transcripts.
    fn owns(&self, homes: &Homes, path: &Path) -> bool;
    /// Whether a JSON line is one of its transcripts' (format detection).
    fn classify(&self, line: &Value) -> bool;
    /// A reader of its transcripts, line by line; `path`: the file a
    /// follow reads (pi's reader needs its branch).
    fn reader(&self, path: Option<&Path>) -> io::Result<Box<dyn Reader + Send>>;
    /// Whether a user message its reader emits is a request the user
    /// typed (a session's title is the first one).
    fn is_request(&self, _message: &Message) -> bool {
        true
    }
    /// The name the user gave a session, when its transcript has one.
    fn session_name(&self, _lines: &[Line]) -> Option<String> {
        None
    }
    /// A whole transcript, read as a batch import.
    fn import(&self, lines: &[Line]) -> Imported;
    /// The reader of a whole transcript file read as a batch import, line
    /// by line as it is parsed, as `import` reads it; `None` when the
    /// reader needs the whole file first (pi's: the tree's active branch),
    /// and `import` reads every line parsed beforehand.
    fn batch_reader(&self) -> Option<Box<dyn Reader + Send>> {
        self.reader(None).ok()
    }
    /// Transcripts that travel with this one (subagents), imported on
    /// their own.
    fn companions(&self, _path: &Path) -> Vec<PathBuf> {
        Vec::new()
    }
    /// The session `path` names when the agent keeps its sessions in a
    /// store of its own rather than one transcript file each (`path` is
    /// then a locator its `sessions` gave): its metadata, and with `whole`
    /// its conversation, read by the agent; `None` (the default) for a
    /// transcript file, which compactd stats and reads itself.
    fn stored_session(&self, _path: &Path, _whole: bool) -> Option<Result<StoredSession, String>> {
        None
    }
    /// A session it keeps in a store of its own (a locator), read as it
    /// grows, for a live follow (`engine::follow`); `None` (the default)
    /// for a transcript file, which compactd tails itself.
    fn stored_feed(&self, _path: &Path) -> Option<Result<Box<dyn StoredFeed>, String>> {
        None
    }
    /// For a session its plugin mirrors into compactd (opencode's), the id
    /// of compactd's session the plugin uses and the agent's own id of the
    /// session, which that session's log records (`MirroredSession`):
    /// a follow of the session is then that session, not a second one
    /// (and a follow without one is named after the agent's id).
    fn mirrored_as(&self, _path: &Path) -> Option<(String, String)> {
        None
    }
    /// Its context window and where it compacts by itself.
    fn limits(&self, input: &LimitsInput) -> (u64, AutoCompactPoint);
    /// What compactd does for it besides following its sessions.
    fn supports(&self) -> Supports {
        Supports::default()
    }
    /// The line its status-line command (`compactd statusline`) prints for
    /// the JSON it sends on stdin; `None` when it runs none.
    fn status_line(&self, _input: &str, _env: &StatusLineEnv) -> Option<Result<String, String>> {
        None
    }

    /// A call of its hooks (`compactd hook <agent>`), from the JSON it
    /// sends on stdin; `None` for an event compactd does not take part in.
    fn hook_call(&self, _input: &Value) -> Option<HookCall> {
        None
    }

    /// Whether the context compactd handed after an earlier compaction,
    /// when the transcript was `handed_at` bytes long, still waits to reach
    /// the model (the agent queues it until its next turn, and would send
    /// a second copy along with it).
    fn context_still_pending(&self, _transcript: &Path, _handed_at: u64) -> bool {
        false
    }

    /// compactd's `text` for a hook call, as the agent takes it (plain
    /// stdout, or its JSON).
    fn hook_answer(&self, _call: &HookCall, text: &str) -> String {
        text.to_string()
    }

    /// What `compactd setup <agent>` writes to its settings (`compactd`:
    /// this binary), in the user's settings or, with `project`, the
    /// workspace's; why not, when it takes none or cannot.
    fn setup(
        &self,
        _homes: &Homes,
        _project: Option<&Path>,
        _compactd: &Path,
    ) -> Result<Vec<Setup>, String> {
        Err(format!("{} takes no setup", self.display_name()))
    }
}

/// A session an agent keeps in a store of its own
/// (`AgentKind::stored_session`).
pub struct StoredSession {
    /// Last modified, in milliseconds since the Unix epoch.
    pub modified_ms: u64,
    /// What it takes in the store, in bytes.
    pub size: u64,
    /// The title the agent gave it.
    pub title: Option<String>,
    /// Its whole conversation, when asked for.
    pub conversation: Option<Imported>,
}

/// A session an agent keeps in a store of its own, read as it grows
/// (`AgentKind::stored_feed`): what a followed transcript's tail is for a
/// file.
pub trait StoredFeed: Send {
    /// What the agent wrote since the last step (at the first, the whole
    /// session), as entries for its reader: each entry added or changed
    /// since, given again whole when it changed (the reader amends what it
    /// gave), and a row the store could not read as a line that says why.
    /// `Changed` when what was read is no longer there (removed, or the
    /// store replaced): read it again from the start, with a new feed. An
    /// error changes nothing: the next step tries again.
    fn step(&mut self) -> Result<FeedStep, String>;
}

/// What one `StoredFeed::step` found.
pub enum FeedStep {
    Read(Vec<Line>),
    Changed(&'static str),
}

/// What a status line is drawn with, from the command's front end.
pub struct StatusLineEnv<'a> {
    /// Yellow from this percentage of the window.
    pub warn: f64,
    /// Red from this percentage of the window.
    pub error: f64,
    /// compactd's configuration for a workspace.
    pub config: &'a dyn Fn(&Path) -> Result<Config, String>,
    /// The follow meter of a transcript (`engine::follow::transcript_meter`):
    /// the context in tokens.
    pub follow_meter: &'a FollowMeter,
}

/// The follow meter of `agent`'s transcript (the third argument) run in a
/// workspace (the fourth), in tokens.
pub type FollowMeter = dyn Fn(Agent, &Config, &Path, &Path) -> Result<u64, String>;

/// What an agent's limits are worked out from.
#[derive(Debug, Clone)]
pub struct LimitsInput<'a> {
    pub homes: &'a Homes,
    pub workspace: &'a Path,
    /// The session's model.
    pub model: Option<&'a str>,
    /// The window its transcript states.
    pub stated_window: Option<u64>,
    /// The most output a request asks for, as its transcript states.
    pub max_output: Option<u64>,
    /// The window compactd's table gives the model.
    pub table_window: Option<u64>,
    /// The configured default window.
    pub default_window: u64,
}

/// An agent, as the registry holds it: compared, hashed and sent by name.
#[derive(Clone, Copy)]
pub struct Agent(pub(super) &'static dyn AgentKind);

impl Agent {
    pub fn format(self) -> Format {
        Format::named(self.0.name())
    }
}

impl std::ops::Deref for Agent {
    type Target = dyn AgentKind;
    fn deref(&self) -> &Self::Target {
        self.0
    }
}

impl PartialEq for Agent {
    fn eq(&self, other: &Agent) -> bool {
        self.name() == other.name()
    }
}

impl Eq for Agent {}

impl std::hash::Hash for Agent {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name().hash(state)
    }
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::fmt::Display for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl serde::Serialize for Agent {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

/// Where the agents keep their files: the user's home, and the
/// environment variables the agents read (each agent says which), as they
/// were when read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Homes {
    home: PathBuf,
    pub(super) vars: BTreeMap<&'static str, PathBuf>,
}

impl Homes {
    /// Every agent's default folders under `home`, no variable read.
    pub fn under(home: &Path) -> Homes {
        Homes {
            home: home.to_path_buf(),
            vars: BTreeMap::new(),
        }
    }

    /// The user's home (`~`).
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// A variable an agent reads, when it is set.
    pub fn var(&self, name: &str) -> Option<&Path> {
        self.vars.get(name).map(PathBuf::as_path)
    }

    /// Sets a variable (as if the environment had it).
    pub fn with_var(mut self, name: &'static str, value: impl Into<PathBuf>) -> Homes {
        self.vars.insert(name, value.into());
        self
    }
}

/// The JSON of a settings file, when it is some (a regular file of at most
/// `SETTINGS_MAX_BYTES`: a FIFO there must not hang a hook or the status
/// line, nor `/dev/zero` fill memory).
pub(crate) fn read_json(path: &Path) -> Option<Value> {
    let bytes = crate::regular_file::read_capped(path, crate::regular_file::SETTINGS_MAX_BYTES);
    serde_json::from_slice(&bytes.ok()?).ok()
}
