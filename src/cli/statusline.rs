//! `compactd statusline`: the status-line command of the agent that runs
//! one (`AgentKind::status_line`; the agent's module says what it reads and
//! prints). It never fails the status line: on any error it prints a short
//! fallback and exits 0.

use std::io::Read;
use std::path::Path;
use std::process::ExitCode;

use super::args::StatuslineArgs;
use crate::agents::{Agent, Homes, StatusLineEnv};
use crate::config::Config;
use crate::engine::{self, follow::FollowEnv, SessionEnv};
use crate::files::{disk, FileTools};

/// An agent's JSON is about a kilobyte; more is not it.
const MAX_INPUT: u64 = 1 << 20;

pub fn run(args: &StatuslineArgs, no_user_config: bool) -> ExitCode {
    let mut input = String::new();
    let read = std::io::stdin().take(MAX_INPUT).read_to_string(&mut input);
    let config = |workspace: &Path| {
        let user_dir = (!no_user_config).then(Config::user_config_dir).flatten();
        let root = (!workspace.as_os_str().is_empty()).then_some(workspace);
        Config::resolve(None, root, user_dir.as_deref()).map_err(|e| e.to_string())
    };
    let line = args.thresholds().and_then(|(warn, error)| {
        let env = StatusLineEnv {
            warn,
            error,
            config: &config,
            follow_meter: &follow_meter,
        };
        read.map_err(|e| format!("stdin: {e}")).and_then(|_| {
            Agent::all()
                .iter()
                .find_map(|agent| agent.status_line(&input, &env))
                .unwrap_or_else(|| Err("no agent has a status line".into()))
        })
    });
    match line {
        // A status line that cannot be written (the agent stopped reading)
        // is no failure either: nothing is printed, exit 0.
        Ok(line) => {
            let _ = super::out::line(line);
        }
        Err(why) => {
            eprintln!("compactd statusline: {why}");
            let _ = super::out::line(format_args!("⛁ compactd: {}", short(&why)));
        }
    }
    ExitCode::SUCCESS
}

/// The follow meter of a transcript (`engine::follow::transcript_meter`),
/// in tokens.
fn follow_meter(
    agent: Agent,
    config: &Config,
    transcript: &Path,
    workspace: &Path,
) -> Result<u64, String> {
    let homes = Homes::from_env();
    let tools = FileTools::new(&config.file_tools);
    let session_env = SessionEnv::new(config, disk::workspace(vec![workspace.to_path_buf()]));
    let env = FollowEnv {
        config,
        tools: &tools,
        homes: &homes,
        session_env: &session_env,
    };
    engine::follow::transcript_meter(agent, transcript, workspace, &env)
        .map(|meter| meter.context_tokens)
        .map_err(|e| e.to_string())
}

fn short(why: &str) -> String {
    let first = why.lines().next().unwrap_or("");
    match first.char_indices().nth(60) {
        Some((cut, _)) => format!("{}…", &first[..cut]),
        None => first.to_string(),
    }
}
