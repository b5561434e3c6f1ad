//! The command line as clap sees it. `main.rs` parses it; `cli::run` acts.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::agents::Agent;
use crate::import::{self, Format};

/// The agents' names, from the registry, as a command's check and its
/// help's possible values.
fn agents() -> clap::builder::PossibleValuesParser {
    let names: Vec<&'static str> = Agent::all().iter().map(|a| a.name()).collect();
    clap::builder::PossibleValuesParser::new(names)
}

/// The hook's agent, said in its help only.
fn agents_help() -> String {
    let names: Vec<&str> = Agent::all().iter().map(|a| a.name()).collect();
    format!("The agent whose hook runs this: {}", names.join(", "))
}

/// compactd keeps LLM coding conversations inside their context window.
///
/// Without a command it serves JSON-RPC (LSP framing) on stdin/stdout, for
/// editors and agents; `serve --listen` shares one compactd over WebSocket
/// and `connect` attaches a stdio client to it. `compact`, `stats` and
/// `replay` work on transcripts on disk: compactd session logs, pi and
/// Claude Code sessions, Codex rollouts and OpenAI-style message arrays
/// (including SWE-agent .traj files). `statusline` is Claude Code's status
/// line.
///
/// Exit codes: 0 success (also when whoever reads the output stops
/// reading), 1 failure (unreadable file, unknown format, summarizer error),
/// 2 usage error (bad flag or value).
#[derive(Parser, Debug)]
#[command(name = "compactd", version)]
pub struct Cli {
    /// Also write logs to this file (logs always go to stderr, never stdout).
    #[arg(long, global = true, env = "COMPACTD_LOG_FILE", value_name = "FILE")]
    pub log_file: Option<PathBuf>,
    /// Ignore the user-level compactd.toml.
    #[arg(long, global = true)]
    pub no_user_config: bool,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Serve JSON-RPC over stdio (the default), or with `--listen` over
    /// WebSocket for several clients (the shared sidecar).
    Serve(ServeArgs),
    /// Attach stdio to a running shared sidecar: LSP-framed JSON-RPC on
    /// stdin/stdout, relayed over WebSocket. Any stdio client (Neovim, an
    /// agent's LSP library) spawns this instead of `compactd`.
    ///
    /// Exits 1 when no shared sidecar runs (no discovery file, or a stale
    /// one) or the connection is refused.
    Connect(ConnectArgs),
    /// Compact a transcript offline and print the summary.
    ///
    /// Prints the summary, then `Conversation compacted: N messages →
    /// summary; tokens A → B (saved S, x%)`. The figures are the server's:
    /// before, the meter (the provider's last reported context plus
    /// compactd's count of later messages, else compactd's count with the
    /// calibrated overhead); after, the compacted history as the provider
    /// will count it (compactd's count plus the system prompt and tool
    /// definitions the transcript never shows, calibrated from its usage).
    Compact(CompactArgs),
    /// Report what a transcript holds and how well compactd meters it.
    ///
    /// Per file: messages by role, tool calls and results (orphans counted),
    /// files read and modified, lines skipped and why, the error of
    /// compactd's token meter against the context the provider reported at
    /// each assistant turn, and where auto-compaction would first fire.
    Stats(StatsArgs),
    /// Feed a transcript message by message through compactd, as a client
    /// would, and report each auto-compaction that fires.
    ///
    /// Compactions recorded in the transcript itself are ignored: compactd
    /// decides. Provider usage reported after one of compactd's compactions
    /// is lowered by the tokens that compaction removed, since the original
    /// session did not compact there.
    Replay(ReplayArgs),
    /// Print a status line for Claude Code: its context meter, where it
    /// auto-compacts, and the files its session changed.
    ///
    /// Claude Code runs it with the session's JSON on stdin
    /// (`"statusLine": {"type": "command", "command": "compactd statusline"}`
    /// in ~/.claude/settings.json). It prints one line such as
    /// `⛁ 90.4k/200k 45% · auto-compact ~177k · 12 files changed` (`~`: the
    /// point is estimated), coloured
    /// from --warn and --error (not when NO_COLOR is set), and always exits
    /// 0: on any error it prints a short fallback. What it read of the
    /// transcript is cached under the data directory, so a render reads only
    /// what the transcript gained.
    Statusline(StatuslineArgs),
    /// Take part in an agent's own compaction: the command its hooks run
    /// (`compactd setup` registers it).
    ///
    /// Reads the hook's JSON on stdin and answers from the session's
    /// transcript: before the agent compacts, what its summary must keep
    /// (the task, the latest request, the user's rules, the files); after,
    /// compactd's record of the session for the model's next request; and
    /// once the agent's summary is written, what it dropped. Always exits
    /// 0 and prints nothing when anything goes wrong, so the agent is
    /// never held up.
    Hook(HookArgs),
    /// Register compactd in an agent's settings: its compaction hooks and
    /// (Claude Code) its status line.
    ///
    /// Merges into the settings file as it is (other hooks and settings
    /// kept as written); running it again changes nothing; --uninstall
    /// removes exactly what it added and restores the file byte for byte
    /// when nothing else changed. A file it cannot parse is left alone with
    /// an error (exit 1).
    Setup(SetupArgs),
    /// List the agents' sessions of the current directory, newest first:
    /// agent, last change, size, path, title.
    Sessions(SessionsArgs),
    /// Follow an agent's session and print its meter line each time it
    /// changes, as the agent works (Ctrl-C stops): the context as the next
    /// request counts it, the window, where the agent compacts by itself,
    /// the files changed; and each compaction the agent makes, with what
    /// its summary dropped.
    ///
    /// Follows the newest session of the current directory, of the agent
    /// named, or the transcript given.
    Follow(FollowArgs),
    /// Serve this session's whole history as MCP tools over stdio
    /// (search_history, read_messages, list_files, last_summary), for an
    /// agent to get back what its compactions dropped.
    ///
    /// Serves the newest agent session of the current directory (of any
    /// agent `sessions` lists) — the agent that launched it — unless
    /// --transcript or --session names one.
    Mcp(McpArgs),
}

/// `compactd mcp`.
#[derive(Args, Debug, Clone, Default)]
pub struct McpArgs {
    /// An agent transcript to serve, followed as it grows.
    #[arg(long, value_name = "PATH", conflicts_with = "session")]
    pub transcript: Option<std::path::PathBuf>,
    /// compactd's own session of this id (in its data directory).
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
}

/// `compactd sessions`.
#[derive(Args, Debug, Clone)]
pub struct SessionsArgs {
    /// Only this agent's sessions.
    #[arg(value_name = "AGENT", value_parser = agents())]
    pub agent: Option<String>,
}

/// `compactd follow`.
#[derive(Args, Debug, Clone)]
pub struct FollowArgs {
    /// An agent (its newest session here) or a transcript's path.
    #[arg(value_name = "AGENT|PATH")]
    pub target: Option<String>,
    /// Print the meter line once and exit.
    #[arg(long)]
    pub once: bool,
}

/// `compactd hook`.
#[derive(Args, Debug, Clone)]
pub struct HookArgs {
    /// The agent whose hook runs this (not checked here: a hook exits 0
    /// whatever it is given, saying why on stderr).
    #[arg(value_name = "AGENT", help = agents_help())]
    pub agent: String,
}

/// `compactd setup`.
#[derive(Args, Debug, Clone)]
pub struct SetupArgs {
    /// The agent to set up.
    #[arg(value_name = "AGENT", value_parser = agents())]
    pub agent: String,
    /// Write the project's settings (in the current directory) instead of
    /// the user's.
    #[arg(long)]
    pub project: bool,
    /// Print the changes; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Remove what setup added.
    #[arg(long)]
    pub uninstall: bool,
}

/// `compactd serve`.
#[derive(Args, Debug, Default, Clone)]
pub struct ServeArgs {
    /// Listen for WebSocket clients on this address (`127.0.0.1:0` picks a
    /// free port). Prints the address and writes it with a token to the
    /// discovery file. Without it, serve stdio.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<std::net::SocketAddr>,
    /// Allow a --listen address that is not loopback (anyone who reaches it
    /// can try the token).
    #[arg(long, requires = "listen")]
    pub allow_remote: bool,
    /// A browser origin allowed to connect (repeatable); connections with
    /// any other `Origin` header are refused.
    #[arg(long, value_name = "ORIGIN", requires = "listen")]
    pub allow_origin: Vec<String>,
    /// Connections served at once; more are refused (HTTP 503).
    #[arg(long, value_name = "N", default_value_t = 32, requires = "listen")]
    pub max_connections: usize,
    /// Where to write the discovery file (default:
    /// $XDG_RUNTIME_DIR/compactd/server.json, else the data directory).
    #[arg(long, env = "COMPACTD_DISCOVERY_FILE", value_name = "FILE")]
    pub discovery_file: Option<PathBuf>,
}

/// `compactd connect`.
#[derive(Args, Debug, Clone)]
pub struct ConnectArgs {
    /// The server's URL (`ws://127.0.0.1:PORT/`); default: the discovery
    /// file's. The token is always the discovery file's, or
    /// COMPACTD_TOKEN's.
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// The discovery file to read (default as for `serve --listen`).
    #[arg(long, env = "COMPACTD_DISCOVERY_FILE", value_name = "FILE")]
    pub discovery_file: Option<PathBuf>,
    /// Only check: print the URL of a live shared sidecar and exit 0, or
    /// say why there is none and exit 1 (for editors choosing between
    /// attaching and starting their own compactd).
    #[arg(long, conflicts_with = "url")]
    pub check: bool,
}

/// Which importer reads the file: `auto` (detect from the content) or a
/// format `import` reads, listed from it (so an agent's format is named
/// where the agent is).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FormatArg(Option<Format>);

impl FormatArg {
    /// `None`: detect from the content.
    pub fn format(self) -> Option<Format> {
        self.0
    }
}

#[derive(Clone)]
struct FormatParser;

impl clap::builder::TypedValueParser for FormatParser {
    type Value = FormatArg;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<FormatArg, clap::Error> {
        let names = self.possible_values().into_iter().flatten();
        let name = clap::builder::PossibleValuesParser::new(names).parse_ref(cmd, arg, value)?;
        Ok(FormatArg(import::parse_name(&name)))
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        use clap::builder::PossibleValue;
        let auto = PossibleValue::new("auto").help("Detect from the content");
        let formats = import::formats()
            .into_iter()
            .map(|f| PossibleValue::new(f.name()).help(import::description(f)));
        Some(Box::new(std::iter::once(auto).chain(formats)))
    }
}

/// Flags every transcript command shares.
#[derive(Args, Debug, Clone)]
pub struct CommonArgs {
    /// The transcript's format.
    #[arg(long, value_parser = FormatParser, default_value = "auto")]
    pub format: FormatArg,
    /// Print the result as JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// No progress bar and no notes on stderr (errors still go there).
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Args, Debug, Clone)]
pub struct CompactArgs {
    /// The transcript to compact.
    pub file: PathBuf,
    #[command(flatten)]
    pub common: CommonArgs,
    /// How to compact: checkpoint (summarize older history, keep the newest
    /// tokens verbatim), incremental (replace the oldest run outside the
    /// retention window), prune (placeholders for old tool outputs, no
    /// summarizer) or handoff (a first message for a new session; the
    /// --instructions are its goal). Default: the configured strategy.
    #[arg(long, value_name = "STRATEGY")]
    pub strategy: Option<String>,
    /// Who writes the summary: offline (built in, deterministic, no key), or
    /// openai / anthropic where this build has them (key from the environment).
    #[arg(long, value_name = "PROVIDER")]
    pub summarizer: Option<String>,
    /// The summarizer's model (LLM summarizers only).
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// Steer what the summary focuses on.
    #[arg(long, value_name = "TEXT")]
    pub instructions: Option<String>,
    /// Newest tokens to keep verbatim (default: the configured
    /// keepRecentTokens, 20000).
    #[arg(long, value_name = "N")]
    pub keep_recent_tokens: Option<u64>,
    /// Keep at least the N newest messages verbatim, whatever
    /// --keep-recent-tokens keeps (default: the configured
    /// keepRecentMessages, 0).
    #[arg(long, value_name = "N")]
    pub keep_recent_messages: Option<usize>,
    /// Also write the compacted session, as a compactd session log, to FILE
    /// (never the input file).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

#[derive(Args, Debug, Clone)]
pub struct StatsArgs {
    /// Transcripts to report on.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub common: CommonArgs,
    /// Context window for the auto-compaction point (default: the model's).
    #[arg(long, value_name = "TOKENS")]
    pub window: Option<u64>,
    /// Also list every reported turn: the meter, the provider's prompt, the
    /// error and what came since the turn before (with --json, `turns`).
    #[arg(long)]
    pub turns: bool,
}

#[derive(Args, Debug, Clone)]
pub struct ReplayArgs {
    /// The transcript to replay.
    pub file: PathBuf,
    #[command(flatten)]
    pub common: CommonArgs,
    /// The model's context window in tokens, e.g. 128000.
    #[arg(long, value_name = "TOKENS")]
    pub window: u64,
    /// Newest tokens each compaction keeps verbatim (default: the configured
    /// keepRecentTokens, 20000).
    #[arg(long, value_name = "N")]
    pub keep_recent_tokens: Option<u64>,
    /// At least the N newest messages each compaction keeps verbatim
    /// (default: the configured keepRecentMessages, 0).
    #[arg(long, value_name = "N")]
    pub keep_recent_messages: Option<usize>,
}

#[derive(Args, Debug, Clone)]
pub struct StatuslineArgs {
    /// Yellow from this percentage of the context window (0–100, at most
    /// --error). Read by the command itself, so a bad value still prints a
    /// line and exits 0.
    #[arg(long, value_name = "PERCENT", default_value = "75")]
    pub warn: String,
    /// Red from this percentage of the context window (0–100).
    #[arg(long, value_name = "PERCENT", default_value = "90")]
    pub error: String,
}

impl StatuslineArgs {
    /// The two thresholds, or why they are not usable.
    pub fn thresholds(&self) -> Result<(f64, f64), String> {
        let percent = |flag: &str, value: &str| {
            value
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|p| (0.0..=100.0).contains(p))
                .ok_or_else(|| format!("--{flag} {value:?} is not a percentage from 0 to 100"))
        };
        let (warn, error) = (percent("warn", &self.warn)?, percent("error", &self.error)?);
        if warn > error {
            return Err(format!("--warn {warn} is above --error {error}"));
        }
        Ok((warn, error))
    }
}
