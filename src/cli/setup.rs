//! `compactd setup <agent>`: registers compactd with the agent (Claude
//! Code's and Codex's hooks and Claude Code's status line, pi's extension,
//! opencode's plugin), or removes it (`agents::setup` merges; the agent's
//! module says what and where).

use std::path::{Path, PathBuf};

use super::args::SetupArgs;
use super::error::CliError;
use crate::agents::setup::SetupReport;
use crate::agents::{setup_for, Homes};

pub fn run(args: &SetupArgs) -> Result<(), CliError> {
    let exe = std::env::current_exe()
        .map_err(|e| CliError::Failure(format!("this program's path: {e}")))?;
    let cwd = std::env::current_dir().map_err(|e| CliError::Failure(e.to_string()))?;
    let project = args.project.then_some(cwd.as_path());
    let compactd = command_name(&exe, project.is_some());
    let steps =
        setup_for(&args.agent, &Homes::from_env(), project, &compactd).map_err(CliError::Usage)?;
    // Every file is read and worked out first: one that cannot be changed
    // (not JSON or TOML it can merge into, read-only, not a regular file)
    // stops setup before it writes anything. A file that fails while it is
    // written still stops the rest, and what was done before it is printed.
    if !args.dry_run {
        for step in &steps {
            match args.uninstall {
                false => step.install(true),
                true => step.uninstall(true),
            }
            .map_err(CliError::Failure)?;
        }
    }
    for step in &steps {
        let report = match args.uninstall {
            false => step.install(args.dry_run),
            true => step.uninstall(args.dry_run),
        }
        .map_err(CliError::Failure)?;
        print(&report, args, step.note())?;
    }
    if compactd != exe && !on_path(&exe) && !args.uninstall {
        super::out::line(format_args!(
            "note: the project's settings run `compactd` from PATH, and {} is not on it",
            exe.display()
        ))?;
    }
    Ok(())
}

/// What the agents' settings run: `compactd`, found on PATH, when that is
/// this binary (a moved or upgraded binary keeps working) and always in a
/// project's files (they are shared; a path of this machine means nothing
/// on another), else this binary's path.
fn command_name(exe: &Path, project: bool) -> PathBuf {
    if project || on_path(exe) {
        PathBuf::from(crate::agents::setup::COMPACTD)
    } else {
        exe.to_path_buf()
    }
}

/// Whether `compactd` on PATH is this binary.
fn on_path(exe: &Path) -> bool {
    let this = std::fs::canonicalize(exe).ok();
    crate::agents::setup::on_path(crate::agents::setup::COMPACTD)
        .and_then(|found| std::fs::canonicalize(found).ok())
        .is_some_and(|found| Some(found) == this)
}

fn print(report: &SetupReport, args: &SetupArgs, note: Option<&str>) -> Result<(), CliError> {
    let verb = if args.dry_run {
        "would change"
    } else {
        "changed"
    };
    // What was kept as it is ("statusLine: kept yours …") is said, but is
    // no change: a second run says "nothing to change".
    let is_change = |c: &&String| {
        ["add ", "remove ", "update "]
            .iter()
            .any(|v| c.starts_with(v))
    };
    let (changes, kept): (Vec<&String>, Vec<&String>) = report.changes.iter().partition(is_change);
    if changes.is_empty() {
        super::out::line(format_args!("{}: nothing to change", report.path.display()))?;
    } else {
        super::out::line(format_args!("{} {verb}:", report.path.display()))?;
        for change in &changes {
            super::out::line(format_args!("  {change}"))?;
        }
    }
    for line in &kept {
        super::out::line(format_args!("  {line}"))?;
    }
    if changes.is_empty() {
        return Ok(());
    }
    if let Some(note) = note.filter(|_| !args.uninstall) {
        super::out::line(format_args!("{note}"))?;
    }
    Ok(())
}
