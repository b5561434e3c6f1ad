//! `compactd hook <agent>`: the command an agent's hooks run to take part
//! in its own compaction (see `engine::recap` for what is handed over, and
//! the agent's module for its hooks). It never holds the agent up: on any
//! error it prints nothing to stdout, says why on stderr, and exits 0.

use std::io::Read;
use std::path::Path;
use std::process::ExitCode;

use serde_json::Value;

use super::args::HookArgs;
use crate::agents::hook::{HookCall, HookEvent};
use crate::agents::{Agent, Homes};
use crate::config::Config;
use crate::engine::follow::{transcript_session, FollowSetup};
use crate::engine::recap::{Recap, HOOK_LIMIT};

/// A hook's JSON is a few hundred bytes; more is not it.
const MAX_INPUT: u64 = 1 << 20;

pub fn run(args: &HookArgs, no_user_config: bool) -> ExitCode {
    match answer(args, no_user_config) {
        Ok(Some(text)) => {
            let _ = super::out::line(text);
        }
        Ok(None) => {}
        Err(why) => eprintln!("compactd hook: {why}"),
    }
    ExitCode::SUCCESS
}

fn answer(args: &HookArgs, no_user_config: bool) -> Result<Option<String>, String> {
    let agent =
        Agent::from_name(&args.agent).ok_or_else(|| format!("no agent named {}", args.agent))?;
    let mut input = String::new();
    std::io::stdin()
        .take(MAX_INPUT)
        .read_to_string(&mut input)
        .map_err(|e| format!("stdin: {e}"))?;
    let input: Value = serde_json::from_str(&input).map_err(|e| format!("stdin: {e}"))?;
    let Some(call) = agent.hook_call(&input) else {
        return Ok(None);
    };
    let recap = recap(agent, &call, no_user_config)?;
    let text = match &call.event {
        HookEvent::BeforeCompact => recap.instructions(HOOK_LIMIT),
        HookEvent::AfterCompactContext => recap.context(HOOK_LIMIT),
        HookEvent::AfterCompact { summary } => {
            let dropped = recap.dropped(summary);
            if dropped.is_empty() {
                return Ok(None);
            }
            format!(
                "compactd: {}'s summary dropped {}; compactd's record of them went into the context",
                agent.display_name(),
                dropped.join(", ")
            )
        }
    };
    Ok(Some(agent.hook_answer(&call, &text)))
}

/// The recap of the call's transcript, read as a follow reads it.
fn recap(agent: Agent, call: &HookCall, no_user_config: bool) -> Result<Recap, String> {
    let workspace: &Path = &call.workspace;
    let user_dir = (!no_user_config).then(Config::user_config_dir).flatten();
    let root = (!workspace.as_os_str().is_empty()).then_some(workspace);
    let config = Config::resolve(None, root, user_dir.as_deref()).map_err(|e| e.to_string())?;
    let setup = FollowSetup::new(config, Homes::from_env(), workspace);
    let session = transcript_session(agent, &call.transcript, workspace, &setup.env())
        .map_err(|e| e.to_string())?;
    Ok(Recap::of(&session))
}
