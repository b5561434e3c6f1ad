//! `compactd setup <agent>`: registers compactd's hooks (and Claude Code's
//! status line) in the agent's settings, or removes them
//! (`agents::setup` merges; the agent's module says what and where).

use super::args::SetupArgs;
use super::error::CliError;
use crate::agents::setup::{install, uninstall};
use crate::agents::{Agent, Homes};

pub fn run(args: &SetupArgs) -> Result<(), CliError> {
    let agent = Agent::from_name(&args.agent).ok_or_else(|| {
        let names: Vec<&str> = Agent::all().iter().map(|a| a.name()).collect();
        CliError::Usage(format!(
            "no agent named {}; known: {}",
            args.agent,
            names.join(", ")
        ))
    })?;
    let compactd = std::env::current_exe()
        .map_err(|e| CliError::Failure(format!("this program's path: {e}")))?;
    let compactd = compactd.to_string_lossy();
    let cwd = std::env::current_dir().map_err(|e| CliError::Failure(e.to_string()))?;
    let project = args.project.then_some(cwd.as_path());
    let plan = agent
        .setup(&Homes::from_env(), project, &quoted(&compactd))
        .ok_or_else(|| CliError::Usage(format!("{} takes no setup", agent.display_name())))?;
    let report = match args.uninstall {
        false => install(&plan, args.dry_run),
        true => uninstall(&plan, args.dry_run),
    }
    .map_err(CliError::Failure)?;
    let verb = if args.dry_run {
        "would change"
    } else {
        "changed"
    };
    if report.changes.is_empty() {
        super::out::line(format_args!("{}: nothing to change", report.path.display()))?;
    } else {
        super::out::line(format_args!("{} {verb}:", report.path.display()))?;
        for change in &report.changes {
            super::out::line(format_args!("  {change}"))?;
        }
        if let Some(note) = plan.note.as_ref().filter(|_| !args.uninstall) {
            super::out::line(format_args!("{note}"))?;
        }
    }
    Ok(())
}

/// A path as a shell word.
fn quoted(path: &str) -> String {
    if path
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+".contains(c))
    {
        path.to_string()
    } else {
        format!("'{}'", path.replace('\'', "'\\''"))
    }
}
