//! `compactd sessions` and `compactd follow`: the agents' sessions of a
//! workspace, and one of them followed live, for a terminal — the same
//! discovery and follow meter the editors show (`agents::discover`,
//! `engine::follow`).

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::args::{FollowArgs, SessionsArgs};
use super::error::CliError;

use crate::agents::{discover, Agent, Basis, Cwds, Homes};
use crate::config::Config;
use crate::engine::follow::{self, FollowSetup};
use crate::store::{Durability, SessionStore};
use crate::tokens::human;

/// Sessions listed at most.
const LISTED: usize = 20;
/// How often `follow` looks at the transcript.
const POLL: Duration = Duration::from_millis(250);

fn workspace() -> Result<PathBuf, CliError> {
    std::env::current_dir().map_err(|e| CliError::Failure(format!("the current directory: {e}")))
}

fn config(workspace: &Path, no_user_config: bool) -> Result<Config, CliError> {
    let user_dir = (!no_user_config).then(Config::user_config_dir).flatten();
    Config::resolve(None, Some(workspace), user_dir.as_deref())
        .map_err(|e| CliError::Usage(e.to_string()))
}

/// "3 min ago", "2 h ago", "5 d ago".
fn age(modified_ms: u64) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let minutes = now.saturating_sub(modified_ms) / 60_000;
    match minutes {
        0 => "just now".into(),
        1..=59 => format!("{minutes} min ago"),
        60..=2879 => format!("{} h ago", minutes / 60),
        _ => format!("{} d ago", minutes / 1440),
    }
}

/// "950 B", "494 KB", "12.3 MB".
fn size(bytes: u64) -> String {
    match bytes {
        0..=999 => format!("{bytes} B"),
        1_000..=999_999 => format!("{} KB", bytes / 1_000),
        _ => format!("{:.1} MB", bytes as f64 / 1e6),
    }
}

/// Prints the workspace's agent sessions, newest first.
pub fn sessions(args: &SessionsArgs) -> Result<(), CliError> {
    let workspace = workspace()?;
    let homes = Homes::from_env();
    let found = match &args.agent {
        Some(name) => {
            discover::sessions(&homes, &Cwds::default(), agent(name)?, &workspace, LISTED)
        }
        None => discover::all_sessions(&homes, &Cwds::default(), &workspace, LISTED),
    };
    if found.is_empty() {
        let names: Vec<&str> = Agent::all().iter().map(|a| a.display_name()).collect();
        super::out::line(format_args!(
            "no {} session of {} found",
            names.join(", "),
            workspace.display()
        ))?;
        return Ok(());
    }
    for session in found {
        let title = discover::title(session.agent, &session.path).unwrap_or_default();
        super::out::line(format_args!(
            "{:<12} {:>12} {:>8}  {}  {}",
            session.agent.name(),
            age(session.modified_ms),
            size(session.size),
            session.path.display(),
            title
        ))?;
    }
    Ok(())
}

fn agent(name: &str) -> Result<Agent, CliError> {
    Agent::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = Agent::all().iter().map(|a| a.name()).collect();
        CliError::Usage(format!(
            "no agent named {name}; known: {}",
            names.join(", ")
        ))
    })
}

/// The transcript `follow` takes: a path, else the newest session of the
/// named agent (or of any agent) of the current directory.
fn target(
    args: &FollowArgs,
    homes: &Homes,
    workspace: &Path,
) -> Result<(Agent, PathBuf), CliError> {
    if let Some(what) = &args.target {
        let path = Path::new(what);
        // A session an agent keeps in a store (a locator `sessions` lists).
        if let Some((agent, _)) = discover::stored(path, false) {
            return Ok((agent, path.to_path_buf()));
        }
        if path.is_file() {
            let agent = discover::agent_of(homes, path).ok_or_else(|| {
                CliError::Failure(format!(
                    "{what}: not a transcript of an agent compactd knows"
                ))
            })?;
            return Ok((agent, path.to_path_buf()));
        }
        // Not an agent's name but a path (it has a separator or an
        // extension): say what is wrong with the path.
        let looks_like_path = what.contains(std::path::MAIN_SEPARATOR) || what.contains('.');
        if looks_like_path && Agent::from_name(what).is_none() {
            let why = match std::fs::metadata(path) {
                Err(e) => e.to_string(),
                Ok(_) => "not a regular file".to_string(),
            };
            return Err(CliError::Failure(format!("{what}: {why}")));
        }
        let agent = agent(what)?;
        let newest = discover::sessions(homes, &Cwds::default(), agent, workspace, 1);
        return newest
            .into_iter()
            .next()
            .map(|s| (s.agent, s.path))
            .ok_or_else(|| {
                CliError::Failure(format!(
                    "no {} session of {}",
                    agent.display_name(),
                    workspace.display()
                ))
            });
    }
    discover::all_sessions(homes, &Cwds::default(), workspace, 1)
        .into_iter()
        .next()
        .map(|s| (s.agent, s.path))
        .ok_or_else(|| CliError::Failure(format!("no agent session of {}", workspace.display())))
}

/// Follows a session and prints its meter line each time it changes, until
/// interrupted (or, with `--once`, once).
pub fn follow(args: &FollowArgs, no_user_config: bool) -> Result<(), CliError> {
    let workspace = workspace()?;
    let homes = Homes::from_env();
    let (agent, path) = target(args, &homes, &workspace)?;
    let setup = FollowSetup::new(config(&workspace, no_user_config)?, homes, &workspace);
    let (env, config) = (setup.env(), &setup.config);
    let store = SessionStore::new(config.sessions_dir(), Durability::Flush);
    let (mut open, mut mirror) = follow::follow(&store, agent, &path, &workspace, &env)
        .map_err(|e| CliError::Failure(e.to_string()))?;
    super::out::line(format_args!(
        "following {} {}",
        agent.display_name(),
        path.display()
    ))?;
    let mut last = String::new();
    loop {
        let meter = follow::meter(config, &open.session, &mirror);
        let files = open.session.file_ledger.sections().modified.len();
        // `~` for an estimated point, as the status line and the editors
        // write it.
        let point = match mirror.auto_compact.basis {
            Basis::Off => "never (auto-compaction is off)".to_string(),
            Basis::Estimate => format!("~{}", human(meter.auto_compact_at)),
            Basis::Exact => human(meter.auto_compact_at),
        };
        let line = format!(
            "⛁ {}/{} {:.0}% · {} compacts at {point} · {files} files changed",
            human(meter.context_tokens),
            human(meter.context_window),
            meter.percent(),
            agent.display_name(),
        );
        if line != last {
            super::out::line(&line)?;
            last = line;
        }
        if args.once {
            return Ok(());
        }
        std::thread::sleep(POLL);
        let polled = mirror
            .poll(&mut open, &env)
            .map_err(|e| CliError::Failure(e.to_string()))?;
        for compaction in polled.compactions {
            super::out::line(format_args!(
                "{} compacted: {} → {} tokens{}",
                agent.display_name(),
                compaction.tokens_before,
                compaction.tokens_after,
                match compaction.dropped.is_empty() {
                    true => String::new(),
                    false => format!("; its summary dropped {}", compaction.dropped.join(", ")),
                }
            ))?;
        }
    }
}
