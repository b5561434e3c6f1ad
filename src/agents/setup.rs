//! `compactd setup <agent>`: what an agent's settings file must hold for
//! compactd to take part in its compactions (its hooks, its status line,
//! an extension it loads), merged into the file as it is; or a file
//! compactd owns outright (opencode's plugin, `OwnedFile`). Everything else in the file is kept as
//! written, key order and formatting included (values compactd does not
//! touch are copied byte for byte); running it twice changes nothing;
//! `uninstall` removes exactly what it added, and gives back the file
//! byte for byte when nothing else changed since (a copy of the file as it
//! was is kept beside it until then). A file that is not a JSON object is
//! left alone with an error.
//!
//! The files are the user's: only a regular one is read (a FIFO, a device
//! or a folder is refused, never opened blocking); one it would change but
//! may not write (read-only, 0444) is refused before anything is written;
//! a symlink (dotfiles) stays one, the file it points to replaced in its
//! own folder; a file keeps its mode and owner (run as root over a user's
//! 0600 file, it stays the user's and 0600).

use std::fmt;
use std::path::{Path, PathBuf};

use crate::regular_file::Replacement;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

/// What an agent's settings file must hold.
#[derive(Debug, Clone)]
pub struct SetupPlan {
    /// The settings file.
    pub path: PathBuf,
    /// The hook command (`/path/to/compactd hook claude-code`).
    pub command: String,
    /// The events it is registered for, each with its matcher.
    pub hooks: Vec<(&'static str, Option<&'static str>)>,
    /// The status line command, set only where the file has none.
    pub status_line: Option<String>,
    /// Seconds the agent gives a hook.
    pub timeout: u64,
    /// Strings that must be in a top-level array (pi's `extensions`).
    pub entries: Vec<(&'static str, String)>,
    /// Named objects that must be under a top-level object (an MCP server:
    /// `mcpServers.compactd`). One already there is kept as it is;
    /// uninstall removes it only while its command is a compactd's.
    pub servers: Vec<(&'static str, &'static str, Value)>,
    /// What the user should know once it is written.
    pub note: Option<String>,
    /// The file holds the agent's private state: created 0600, as the
    /// agent itself creates it (Claude Code's `.claude.json`: user id,
    /// account, projects). An existing file keeps its mode either way.
    pub private: bool,
}

/// What `compactd setup` changes for one agent.
#[derive(Debug, Clone)]
pub enum Setup {
    /// Entries merged into a settings file (hooks, a status line, a list entry).
    Settings(SetupPlan),
    /// A file compactd owns outright (opencode's plugin).
    File(OwnedFile),
    /// A table appended to a TOML file (Codex's `[mcp_servers.compactd]`).
    Table(TomlTable),
}

impl Setup {
    pub fn install(&self, dry_run: bool) -> Result<SetupReport, String> {
        match self {
            Setup::Settings(plan) => install(plan, dry_run),
            Setup::File(file) => file.install(dry_run),
            Setup::Table(table) => table.install(dry_run),
        }
    }

    pub fn uninstall(&self, dry_run: bool) -> Result<SetupReport, String> {
        match self {
            Setup::Settings(plan) => uninstall(plan, dry_run),
            Setup::File(file) => file.uninstall(dry_run),
            Setup::Table(table) => table.uninstall(dry_run),
        }
    }

    /// What the user should know once it is written.
    pub fn note(&self) -> Option<&str> {
        match self {
            Setup::Settings(plan) => plan.note.as_deref(),
            Setup::File(file) => file.note.as_deref(),
            Setup::Table(_) => None,
        }
    }
}

/// A TOML table compactd appends to a file (`[mcp_servers.compactd]` in
/// Codex's `config.toml`), with a comment line above it saying so. A
/// table of that name already there is kept as it is; uninstall removes
/// the table only when the comment marks it compactd's, and gives the file
/// back byte for byte when the table is still where it was appended (the
/// end).
#[derive(Debug, Clone)]
pub struct TomlTable {
    pub path: PathBuf,
    /// The agent it is set up for (`codex`): the comment names the
    /// command that removes it.
    pub agent: &'static str,
    /// `[mcp_servers.compactd]`
    pub header: String,
    /// Its lines, without the header.
    pub body: String,
}

/// The line above a table an older compactd appended (its command exits
/// 2: it names no agent); still recognised as compactd's.
const OLD_TABLE_MARK: &str = "# added by `compactd setup`; `compactd setup --uninstall` removes it";

impl TomlTable {
    /// The line above a table compactd appends, naming the command that
    /// removes it.
    fn mark(&self) -> String {
        format!(
            "# added by `compactd setup {agent}`; `compactd setup {agent} --uninstall` removes it",
            agent = self.agent
        )
    }

    fn has_header(&self, text: &str) -> bool {
        text.lines().any(|l| l.trim() == self.header)
    }

    /// Appends the table to `original` (`None`: no file) so that
    /// `uninstall` can tell what was there: after a blank line when the
    /// file ends its last line (or is absent), right after the newline that
    /// ends it when it does not, first thing in an empty file.
    fn appended(&self, original: Option<&str>) -> String {
        let table = format!("{}\n{}\n{}", self.mark(), self.header, self.body);
        match original {
            None => format!("\n{table}"),
            Some("") => table,
            // A blank line after a last line ended, or the newline that
            // ends it: `uninstall` tells them apart by the blank line.
            Some(text) => format!("{text}\n{table}"),
        }
    }

    pub fn install(&self, dry_run: bool) -> Result<SetupReport, String> {
        let existing = read(&self.path)?;
        let original = existing.clone().unwrap_or_default();
        if self.has_header(&original) {
            return Ok(self.report(Vec::new(), original));
        }
        toml::from_str::<toml::Table>(&original).map_err(|e| {
            format!(
                "{} is not TOML compactd can add to ({e}); it was left as it is",
                self.path.display()
            )
        })?;
        let text = self.appended(existing.as_deref());
        check_writable(&self.path)?;
        if !dry_run {
            write(&self.path, &text)?;
        }
        Ok(self.report(vec![format!("add {}", self.header)], text))
    }

    /// Takes the table compactd appended back out, and with it what
    /// `appended` added around it while it is the file's end: the file is
    /// then as it was, byte for byte (a last line without a newline, an
    /// empty file, no file). A table with more after it goes alone.
    pub fn uninstall(&self, dry_run: bool) -> Result<SetupReport, String> {
        let Some(original) = read(&self.path)? else {
            return Ok(self.report(Vec::new(), String::new()));
        };
        let lines: Vec<&str> = original.split_inclusive('\n').collect();
        let Some(at) = lines.iter().position(|l| l.trim() == self.header) else {
            return Ok(self.report(Vec::new(), original));
        };
        let marked =
            at > 0 && [self.mark().as_str(), OLD_TABLE_MARK].contains(&lines[at - 1].trim());
        if !marked {
            return Ok(self.report(Vec::new(), original));
        }
        let end = (at + 1..lines.len())
            .find(|&i| lines[i].trim_start().starts_with('['))
            .unwrap_or(lines.len());
        let before = &lines[..at - 1];
        let text = match (end == lines.len(), before) {
            (false, _) => Some(before.concat() + &lines[end..].concat()),
            // The blank line alone: there was no file.
            (true, ["\n"]) => None,
            (true, [rest @ .., "\n"]) => Some(rest.concat()),
            // No blank line: the newline that ended the last line is ours.
            (true, _) => {
                let text = before.concat();
                Some(text.strip_suffix('\n').unwrap_or(&text).to_string())
            }
        };
        check_writable(&self.path)?;
        if !dry_run {
            match &text {
                Some(text) => write(&self.path, text)?,
                None => remove(&self.path)?,
            }
        }
        Ok(SetupReport {
            path: self.path.clone(),
            changes: vec![format!("remove {}", self.header)],
            text,
        })
    }

    fn report(&self, changes: Vec<String>, text: String) -> SetupReport {
        SetupReport {
            path: self.path.clone(),
            changes,
            text: Some(text),
        }
    }
}

/// A file compactd owns outright (opencode's plugin): written whole,
/// replaced when it carries `mark` (an older compactd's), removed by
/// uninstall only then; a file of the same name without the mark is
/// someone else's and left alone with an error.
#[derive(Debug, Clone)]
pub struct OwnedFile {
    pub path: PathBuf,
    pub text: String,
    pub mark: &'static str,
    pub note: Option<String>,
}

impl OwnedFile {
    fn check_ours(&self, text: &str) -> Result<(), String> {
        match text.contains(self.mark) {
            true => Ok(()),
            false => Err(format!(
                "{} exists and is not compactd's; it was left as it is",
                self.path.display()
            )),
        }
    }

    /// Writes the file unless it already says the same; writes unless `dry_run`.
    pub fn install(&self, dry_run: bool) -> Result<SetupReport, String> {
        let existing = read(&self.path)?;
        // An older compactd's file, or one the user edited: which, it
        // cannot tell, so the file as it was is kept beside it and said.
        let kept = self.previous_path();
        let change = match &existing {
            Some(text) if *text == self.text => None,
            Some(text) => {
                self.check_ours(text)?;
                Some(format!(
                    "update {} (the file as it was, with any edits of yours, is kept as {})",
                    self.path.display(),
                    kept.display()
                ))
            }
            None => Some(format!("add {}", self.path.display())),
        };
        if change.is_some() {
            check_writable(&self.path)?;
        }
        if change.is_some() && !dry_run {
            if let Some(previous) = existing.as_deref().filter(|t| *t != self.text) {
                write(&kept, previous)?;
            }
            write(&self.path, &self.text)?;
        }
        Ok(SetupReport {
            path: self.path.clone(),
            changes: change.into_iter().collect(),
            text: Some(self.text.clone()),
        })
    }

    /// Where the file as it was before an update is kept (a name the agent
    /// loads nothing from: `compactd.ts.compactd-old`).
    fn previous_path(&self) -> PathBuf {
        let mut name = self.path.file_name().unwrap_or_default().to_os_string();
        name.push(".compactd-old");
        self.path.with_file_name(name)
    }

    /// Removes the file when it is compactd's; writes unless `dry_run`.
    pub fn uninstall(&self, dry_run: bool) -> Result<SetupReport, String> {
        let Some(existing) = read(&self.path)? else {
            return Ok(SetupReport {
                path: self.path.clone(),
                changes: Vec::new(),
                text: None,
            });
        };
        self.check_ours(&existing)?;
        check_writable(&self.path)?;
        if !dry_run {
            std::fs::remove_file(&self.path)
                .map_err(|e| format!("{}: {e}", self.path.display()))?;
        }
        Ok(SetupReport {
            path: self.path.clone(),
            changes: vec![format!("remove {}", self.path.display())],
            text: None,
        })
    }
}

/// What `install` or `uninstall` did (or, on a dry run, would do).
#[derive(Debug, Clone, PartialEq)]
pub struct SetupReport {
    pub path: PathBuf,
    /// One line per change; empty when there was nothing to do.
    pub changes: Vec<String>,
    /// The file's new text (`None`: the file is removed).
    pub text: Option<String>,
}

impl SetupPlan {
    /// A plan that only adds `entry` as `key.compactd` (an MCP server).
    pub fn servers(path: PathBuf, key: &'static str, entry: Value) -> SetupPlan {
        SetupPlan {
            path,
            command: String::new(),
            hooks: Vec::new(),
            status_line: None,
            timeout: 0,
            entries: Vec::new(),
            servers: vec![(key, "compactd", entry)],
            note: None,
            private: false,
        }
    }

    /// The same plan for a file of the agent's private state (`private`).
    pub fn private(self) -> SetupPlan {
        SetupPlan {
            private: true,
            ..self
        }
    }
}

/// A path as a shell word (quoted when it holds anything but
/// `[A-Za-z0-9/._+-]`).
pub fn shell_word(path: &Path) -> String {
    let path = path.to_string_lossy();
    if path
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+".contains(c))
    {
        path.to_string()
    } else {
        format!("'{}'", path.replace('\'', "'\\''"))
    }
}

/// The program name setup writes when PATH finds this binary.
pub const COMPACTD: &str = "compactd";

/// The program `name` runs from PATH, when there is one.
pub fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// Whether a hook command is the one this setup writes: the same program
/// and arguments, however quoted. The program is the same when it is the
/// same file: `compactd` on PATH and the path an earlier setup wrote for
/// it. Another install's compactd (`/opt/other/compactd hook
/// claude-code`) is not ours to count or remove.
fn is_ours(plan: &SetupPlan, command: &str) -> bool {
    runs_the_same(command, &plan.command)
}

/// The same arguments, and programs that are one file.
fn same_program(a: &str, b: &str) -> bool {
    let (a, b) = (shell_words(a), shell_words(b));
    let (Some((program_a, args_a)), Some((program_b, args_b))) = (a.split_first(), b.split_first())
    else {
        return false;
    };
    let real = |program: &str| {
        let path = match Path::new(program).components().count() {
            1 => on_path(program)?,
            _ => PathBuf::from(program),
        };
        std::fs::canonicalize(path).ok()
    };
    args_a == args_b && real(program_a).is_some_and(|p| Some(p) == real(program_b))
}

fn is_our_status_line(plan: &SetupPlan, value: &Value) -> bool {
    let command = value["command"].as_str().unwrap_or("");
    plan.status_line
        .as_deref()
        .is_some_and(|ours| runs_the_same(command, ours))
}

/// Two command lines that run the same words.
fn same_command(a: &str, b: &str) -> bool {
    shell_words(a) == shell_words(b)
}

/// Two command lines that run the same program file with the same words.
fn runs_the_same(a: &str, b: &str) -> bool {
    same_command(a, b) || same_program(a, b)
}

/// The words of a command line, read as a shell reads them (a path in
/// quotes, as `setup` writes one with a space, is one word).
fn shell_words(command: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in command.chars() {
        match (quote, c) {
            _ if escaped => {
                escaped = false;
                word.get_or_insert_with(String::new).push(c);
            }
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.get_or_insert_with(String::new).push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                word.get_or_insert_with(String::new);
            }
            (None, '\\') => escaped = true,
            (None, c) if c.is_whitespace() => words.extend(word.take()),
            (None, c) => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    words
}

/// The copy of the file as it was before compactd first changed it.
fn backup_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".before-compactd");
    path.with_file_name(name)
}

/// Adds the plan's hooks that `doc` lacks.
fn add_hooks(
    plan: &SetupPlan,
    doc: &mut Document,
    changes: &mut Vec<String>,
) -> Result<(), String> {
    let mut hooks = doc.take_object("hooks", &plan.path)?;
    for (event, matcher) in &plan.hooks {
        let mut groups = hooks.take_array(event, &plan.path)?;
        let present = groups
            .iter()
            .any(|g| group_commands(g).iter().any(|c| is_ours(plan, c)));
        if !present {
            groups.push(hook_group(plan, *matcher));
            changes.push(format!(
                "add hooks.{event}{}: {}",
                matcher
                    .map(|m| format!(" (matcher \"{m}\")"))
                    .unwrap_or_default(),
                plan.command
            ));
        }
        hooks.put(event, Item::Array(groups));
    }
    doc.put("hooks", Item::Object(hooks));
    Ok(())
}

/// Adds what `plan` needs to its file; writes unless `dry_run`. A file
/// that would change but may not be written (read-only) is refused before
/// anything is written, a dry run included.
pub fn install(plan: &SetupPlan, dry_run: bool) -> Result<SetupReport, String> {
    let original = read(&plan.path)?;
    let (changes, merged) = merge(plan, original.as_deref())?;
    let text = merged.clone().or(original.clone()).unwrap_or_default();
    if merged.is_some() {
        check_writable(&plan.path)?;
    }
    if merged.is_some() && !dry_run {
        let backup = backup_path(&plan.path);
        if !backup.exists() {
            // No file before: an empty copy says so. The copy is as
            // private as the file (Claude Code's `.claude.json` is 0600).
            let before = original.as_deref().unwrap_or("");
            write_like(&backup, before, &plan.path, plan.private)?;
        }
        write_like(&plan.path, &text, &plan.path, plan.private)?;
    }
    Ok(SetupReport {
        path: plan.path.clone(),
        changes,
        text: Some(text),
    })
}

/// What `plan` changes in a file holding `original` (`None`: no file):
/// the changes, and the new text when it adds anything. It writes
/// nothing: `uninstall` asks it whether the file is still what setup made
/// of its copy.
fn merge(
    plan: &SetupPlan,
    original: Option<&str>,
) -> Result<(Vec<String>, Option<String>), String> {
    let mut doc = Document::parse(original.unwrap_or("{}"), &plan.path)?;
    let mut changes = Vec::new();
    if !plan.hooks.is_empty() {
        add_hooks(plan, &mut doc, &mut changes)?;
    }
    for (key, entry) in &plan.entries {
        let mut items = doc.take_array(key, &plan.path)?;
        if !items.iter().any(|i| i.value().as_str() == Some(entry)) {
            items.push(Item::New(json!(entry)));
            changes.push(format!("add {key}: {entry}"));
        }
        doc.put(key, Item::Array(items));
    }
    add_servers(plan, &mut doc, &mut changes)?;
    if let Some(command) = &plan.status_line {
        match doc.get("statusLine") {
            None => {
                let line = [
                    ("type", Item::New(json!("command"))),
                    ("command", Item::New(json!(command))),
                ];
                doc.put("statusLine", Item::Object(Document::of(line)));
                changes.push(format!("add statusLine: {command}"));
            }
            Some(existing) if !is_our_status_line(plan, &existing) => changes.push(format!(
                "statusLine: kept yours ({}); compactd's is `{command}`",
                existing["command"].as_str().unwrap_or("?")
            )),
            Some(_) => {}
        }
    }
    let added = changes.iter().any(|c| c.starts_with("add "));
    Ok((changes, added.then(|| doc.render())))
}

/// Adds the plan's named objects `doc` lacks (one of that name already
/// there is kept, and said).
fn add_servers(
    plan: &SetupPlan,
    doc: &mut Document,
    changes: &mut Vec<String>,
) -> Result<(), String> {
    for (key, name, entry) in &plan.servers {
        let mut servers = doc.take_object(key, &plan.path)?;
        match servers.get(name) {
            None => {
                servers.put(name, Item::New(entry.clone()));
                changes.push(format!("add {key}.{name}: {}", server_command(entry)));
            }
            Some(there) if !runs_the_same(&server_command(&there), &server_command(entry)) => {
                changes.push(format!(
                    "{key}.{name}: kept yours ({}); compactd's is `{}`",
                    server_command(&there),
                    server_command(entry)
                ))
            }
            Some(_) => {}
        }
        doc.put(key, Item::Object(servers));
    }
    Ok(())
}

/// Removes what `install` added; writes unless `dry_run`.
pub fn uninstall(plan: &SetupPlan, dry_run: bool) -> Result<SetupReport, String> {
    let Some(original) = read(&plan.path)? else {
        return Ok(SetupReport {
            path: plan.path.clone(),
            changes: Vec::new(),
            text: None,
        });
    };
    let mut doc = Document::parse(&original, &plan.path)?;
    let mut changes = Vec::new();
    if !plan.hooks.is_empty() && doc.get("hooks").is_some() {
        remove_hooks(plan, &mut doc, &mut changes)?;
    }
    remove_entries(plan, &mut doc, &mut changes)?;
    remove_servers(plan, &mut doc, &mut changes)?;
    if plan.status_line.is_some()
        && doc
            .get("statusLine")
            .is_some_and(|s| is_our_status_line(plan, &s))
    {
        doc.remove("statusLine");
        changes.push("remove statusLine".into());
    }
    if changes.is_empty() {
        return Ok(SetupReport {
            path: plan.path.clone(),
            changes,
            text: Some(original),
        });
    }
    check_writable(&plan.path)?;
    let backup = backup_path(&plan.path);
    let text = restored(plan, &original, &doc, read(&backup).ok().flatten());
    if !dry_run {
        match &text {
            Some(text) => write(&plan.path, text)?,
            None => remove(&plan.path)?,
        }
        let _ = std::fs::remove_file(&backup);
    }
    Ok(SetupReport {
        path: plan.path.clone(),
        changes,
        text,
    })
}

/// The file's text once compactd's entries are out of it (`None`: no
/// file): the copy kept before compactd first changed it, byte for byte,
/// when nothing else changed since (the file is exactly what setup made of
/// the copy, or holds the same values once compactd's are out: whatever
/// the JSON holds, a lone surrogate or nesting past any parser's depth
/// limit, it is given back as it was), else `doc` as it is now.
fn restored(
    plan: &SetupPlan,
    original: &str,
    doc: &Document,
    before: Option<String>,
) -> Option<String> {
    let rendered = doc.render();
    let Some(before) = before else {
        return Some(rendered);
    };
    if before.is_empty() && doc.entries.is_empty() {
        return None;
    }
    let as_setup_made_it = || {
        let existed = (!before.is_empty()).then_some(before.as_str());
        matches!(merge(plan, existed), Ok((_, Some(made))) if made == original)
    };
    match as_setup_made_it() || same_json(&before, &rendered) {
        true => Some(before),
        false => Some(rendered),
    }
}

/// Removes the plan's hooks from `doc` (an event, and `hooks`, left empty go too).
fn remove_hooks(
    plan: &SetupPlan,
    doc: &mut Document,
    changes: &mut Vec<String>,
) -> Result<(), String> {
    let mut hooks = doc.take_object("hooks", &plan.path)?;
    for (event, _) in &plan.hooks {
        if hooks.get(event).is_none() {
            continue;
        }
        let groups = hooks.take_array(event, &plan.path)?;
        let before = groups.len();
        let kept: Vec<Item> = groups
            .into_iter()
            .filter(|g| !group_commands(g).iter().any(|c| is_ours(plan, c)))
            .collect();
        if kept.len() < before {
            changes.push(format!("remove hooks.{event}: {}", plan.command));
        }
        match kept.is_empty() {
            true => hooks.remove(event),
            false => hooks.put(event, Item::Array(kept)),
        }
    }
    match hooks.entries.is_empty() {
        true => doc.remove("hooks"),
        false => doc.put("hooks", Item::Object(hooks)),
    }
    Ok(())
}

/// Removes the plan's named objects from `doc` while they run what this
/// setup wrote (an object left empty by it goes too).
fn remove_servers(
    plan: &SetupPlan,
    doc: &mut Document,
    changes: &mut Vec<String>,
) -> Result<(), String> {
    for (key, name, entry) in &plan.servers {
        if doc.get(key).is_none() {
            continue;
        }
        let mut servers = doc.take_object(key, &plan.path)?;
        let ours = servers
            .get(name)
            .is_some_and(|there| runs_the_same(&server_command(&there), &server_command(entry)));
        if ours {
            servers.remove(name);
            changes.push(format!("remove {key}.{name}"));
        }
        match servers.entries.is_empty() && ours {
            true => doc.remove(key),
            false => doc.put(key, Item::Object(servers)),
        }
    }
    Ok(())
}

/// An MCP server entry's command line (`command` then `args`), as words.
fn server_command(entry: &Value) -> String {
    let mut words = vec![entry["command"].as_str().unwrap_or("").to_string()];
    words.extend(
        entry["args"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|a| a.as_str().map(str::to_string)),
    );
    words
        .iter()
        .map(|w| shell_word(Path::new(w)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Removes the plan's list entries from `doc` (a list left empty by it goes too).
fn remove_entries(
    plan: &SetupPlan,
    doc: &mut Document,
    changes: &mut Vec<String>,
) -> Result<(), String> {
    for (key, entry) in &plan.entries {
        if doc.get(key).is_none() {
            continue;
        }
        let items = doc.take_array(key, &plan.path)?;
        let before = items.len();
        let kept: Vec<Item> = items
            .into_iter()
            .filter(|i| i.value().as_str() != Some(entry))
            .collect();
        if kept.len() < before {
            changes.push(format!("remove {key}: {entry}"));
        }
        match kept.is_empty() && kept.len() < before {
            true => doc.remove(key),
            false => doc.put(key, Item::Array(kept)),
        }
    }
    Ok(())
}

/// `{"matcher": …, "hooks": [{"type": "command", "command": …, "timeout": …}]}`,
/// in that order.
fn hook_group(plan: &SetupPlan, matcher: Option<&str>) -> Item {
    let hook = Document::of([
        ("type", Item::New(json!("command"))),
        ("command", Item::New(json!(plan.command))),
        ("timeout", Item::New(json!(plan.timeout))),
    ]);
    let mut group = Document::default();
    if let Some(matcher) = matcher {
        group.put("matcher", Item::New(json!(matcher)));
    }
    group.put("hooks", Item::Array(vec![Item::Object(hook)]));
    Item::Object(group)
}

fn same_json(a: &str, b: &str) -> bool {
    match (
        serde_json::from_str::<Value>(a),
        serde_json::from_str::<Value>(b),
    ) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// The file's text (`None`: no file). Only a regular file is read, under
/// 64 MiB and without blocking: a FIFO, a device (`/dev/zero`), a folder
/// or a link to one is refused with an error naming what it is.
fn read(path: &Path) -> Result<Option<String>, String> {
    match crate::regular_file::read_to_string_capped(path, crate::regular_file::SETTINGS_MAX_BYTES)
    {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// Refuses a file setup would change but may not: one without write
/// permission (0444: setup does not rewrite it behind its mode, even run
/// as root, who could), or one this user may not write. Nothing has been
/// written when it says so.
fn check_writable(path: &Path) -> Result<(), String> {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let target = link_target(path);
    let named = match target == path {
        true => path.display().to_string(),
        false => format!("{} (a link to {})", path.display(), target.display()),
    };
    let refuse = |why: String| {
        Err(format!(
            "{named} is {why}; it was left as it is and nothing was changed: make it writable \
             (chmod u+w) and run setup again"
        ))
    };
    if meta.permissions().readonly() {
        return refuse(format!("read-only{}", mode_words(&meta)));
    }
    if !may_write(&target) {
        return refuse(format!("not writable by this user{}", mode_words(&meta)));
    }
    Ok(())
}

#[cfg(unix)]
fn mode_words(meta: &std::fs::Metadata) -> String {
    use std::os::unix::fs::PermissionsExt;
    format!(" (mode {:04o})", meta.permissions().mode() & 0o7777)
}

#[cfg(not(unix))]
fn mode_words(_: &std::fs::Metadata) -> String {
    String::new()
}

/// Whether this process may write `path` (its effective user).
#[cfg(unix)]
fn may_write(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c_path) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: a NUL-terminated path; faccessat only reads it.
    unsafe {
        libc::faccessat(
            libc::AT_FDCWD,
            c_path.as_ptr(),
            libc::W_OK,
            libc::AT_EACCESS,
        ) == 0
    }
}

#[cfg(not(unix))]
fn may_write(_: &Path) -> bool {
    true
}

/// Writes through a temporary file in the same folder, so a crash leaves
/// the old file or the new one; the file keeps its permissions and owner.
fn write(path: &Path, text: &str) -> Result<(), String> {
    write_like(path, text, path, false)
}

/// `write`, with the mode and owner `like` has when it exists (run as
/// root over a user's file, the file stays the user's, 0600 stays 0600);
/// a new file is 0600 when `private`, else the process's default (0666
/// less the umask). A settings file that is a symlink (dotfiles kept in a
/// repository) stays one: the file it points to is replaced, in its own
/// folder, created there when the link dangles.
fn write_like(path: &Path, text: &str, like: &Path, private: bool) -> Result<(), String> {
    let path = &link_target(path);
    let like = &link_target(like);
    let how = Replacement {
        // Private from the first byte: no moment where others may read it.
        mode: if private { 0o600 } else { 0o666 },
        like: Some(like),
        ..Replacement::DURABLE
    };
    crate::regular_file::replace(path, text.as_bytes(), &how)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Removes the file (the one a symlink points to: the link stays, as it
/// was before setup made the file).
fn remove(path: &Path) -> Result<(), String> {
    let path = link_target(path);
    std::fs::remove_file(&path).map_err(|e| format!("{}: {e}", path.display()))
}

/// Where a symlinked file really is: its links followed, each relative to
/// the folder it is in, to a file that need not exist yet (a dangling
/// link); itself when it is no symlink. A loop ends after 40 links, at the
/// path reached then.
fn link_target(path: &Path) -> PathBuf {
    let mut at = path.to_path_buf();
    for _ in 0..40 {
        let is_link = std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink());
        let Some(next) = is_link.then(|| std::fs::read_link(&at).ok()).flatten() else {
            return at;
        };
        at = match at.parent() {
            Some(folder) => folder.join(next),
            None => next,
        };
    }
    at
}

/// The commands of one matcher group (`{"matcher": …, "hooks": [{"command": …}]}`).
fn group_commands(group: &Item) -> Vec<String> {
    let value = group.value();
    value["hooks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|h| h["command"].as_str().map(str::to_string))
        .collect()
}

/// A JSON value as the file has it (copied back byte for byte), or one
/// compactd made or changed.
#[derive(Debug)]
enum Item {
    Raw(Box<RawValue>),
    New(Value),
    Object(Document),
    Array(Vec<Item>),
}

impl Item {
    fn value(&self) -> Value {
        match self {
            Item::Raw(raw) => serde_json::from_str(raw.get()).unwrap_or(Value::Null),
            Item::New(value) => value.clone(),
            Item::Object(doc) => Value::Object(
                doc.entries
                    .iter()
                    .map(|(k, v)| (k.clone(), v.value()))
                    .collect(),
            ),
            Item::Array(items) => Value::Array(items.iter().map(Item::value).collect()),
        }
    }

    fn render(&self, depth: usize, out: &mut String) {
        match self {
            Item::Raw(raw) => out.push_str(raw.get()),
            Item::New(value) => {
                let text = serde_json::to_string_pretty(value).unwrap_or_default();
                out.push_str(&text.replace('\n', &format!("\n{}", indent(depth))));
            }
            Item::Object(doc) => doc.render_at(depth, out),
            Item::Array(items) if items.is_empty() => out.push_str("[]"),
            Item::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    out.push_str(if i == 0 { "\n" } else { ",\n" });
                    out.push_str(&indent(depth + 1));
                    item.render(depth + 1, out);
                }
                out.push('\n');
                out.push_str(&indent(depth));
                out.push(']');
            }
        }
    }
}

fn indent(depth: usize) -> String {
    "  ".repeat(depth)
}

/// A JSON object, its keys in the file's order.
#[derive(Debug, Default)]
struct Document {
    entries: Vec<(String, Item)>,
}

/// An object's entries, read in order with their values raw.
struct Ordered(Vec<(String, Box<RawValue>)>);

impl<'de> Deserialize<'de> for Ordered {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Ordered, D::Error> {
        struct Entries;
        impl<'de> Visitor<'de> for Entries {
            type Value = Ordered;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Ordered, A::Error> {
                let mut entries = Vec::new();
                while let Some((key, value)) = map.next_entry::<String, Box<RawValue>>()? {
                    entries.push((key, value));
                }
                Ok(Ordered(entries))
            }
        }
        deserializer.deserialize_map(Entries)
    }
}

impl Document {
    fn of<const N: usize>(entries: [(&str, Item); N]) -> Document {
        Document {
            entries: entries
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
        }
    }

    fn parse(text: &str, path: &Path) -> Result<Document, String> {
        let Ordered(entries) = serde_json::from_str(text).map_err(|e| {
            format!(
                "{} is not a JSON object compactd can merge into ({e}); it was left as it is",
                path.display()
            )
        })?;
        Ok(Document::raw(entries))
    }

    /// An object's entries as the file has them.
    fn raw(entries: Vec<(String, Box<RawValue>)>) -> Document {
        Document {
            entries: entries
                .into_iter()
                .map(|(k, v)| (k, Item::Raw(v)))
                .collect(),
        }
    }

    fn get(&self, key: &str) -> Option<Value> {
        self.entries
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.value())
    }

    fn remove(&mut self, key: &str) {
        self.entries.retain(|(k, _)| k != key);
    }

    /// Sets `key`, where it was or at the end.
    fn put(&mut self, key: &str, item: Item) {
        match self.entries.iter_mut().find(|(k, _)| k == key) {
            Some((_, slot)) => *slot = item,
            None => self.entries.push((key.to_string(), item)),
        }
    }

    /// The object under `key` (empty when absent), to change and put back.
    fn take_object(&mut self, key: &str, path: &Path) -> Result<Document, String> {
        match self.entries.iter_mut().find(|(k, _)| k == key) {
            None => Ok(Document::default()),
            Some((_, Item::Raw(raw))) => {
                let Ordered(entries) = serde_json::from_str(raw.get()).map_err(|_| {
                    format!(
                        "{}: `{key}` is not an object; it was left as it is",
                        path.display()
                    )
                })?;
                Ok(Document::raw(entries))
            }
            Some((_, item)) => match std::mem::replace(item, Item::New(Value::Null)) {
                Item::Object(doc) => Ok(doc),
                _ => Err(format!("{}: `{key}` is not an object", path.display())),
            },
        }
    }

    /// The array under `key` (empty when absent), its items raw.
    fn take_array(&mut self, key: &str, path: &Path) -> Result<Vec<Item>, String> {
        let Some((_, item)) = self.entries.iter_mut().find(|(k, _)| k == key) else {
            return Ok(Vec::new());
        };
        match std::mem::replace(item, Item::New(Value::Null)) {
            Item::Raw(raw) => {
                let items: Vec<Box<RawValue>> = serde_json::from_str(raw.get()).map_err(|_| {
                    format!(
                        "{}: `{key}` is not an array; it was left as it is",
                        path.display()
                    )
                })?;
                Ok(items.into_iter().map(Item::Raw).collect())
            }
            Item::Array(items) => Ok(items),
            _ => Err(format!("{}: `{key}` is not an array", path.display())),
        }
    }

    fn render(&self) -> String {
        let mut out = String::new();
        self.render_at(0, &mut out);
        out.push('\n');
        out
    }

    fn render_at(&self, depth: usize, out: &mut String) {
        if self.entries.is_empty() {
            out.push_str("{}");
            return;
        }
        out.push('{');
        for (i, (key, item)) in self.entries.iter().enumerate() {
            out.push_str(if i == 0 { "\n" } else { ",\n" });
            out.push_str(&indent(depth + 1));
            out.push_str(&serde_json::to_string(key).unwrap_or_default());
            out.push_str(": ");
            item.render(depth + 1, out);
        }
        out.push('\n');
        out.push_str(&indent(depth));
        out.push('}');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(dir: &Path) -> SetupPlan {
        SetupPlan {
            path: dir.join(".claude/settings.json"),
            command: "/opt/bin/compactd hook claude-code".into(),
            hooks: vec![("PreCompact", None), ("SessionStart", Some("compact"))],
            status_line: Some("/opt/bin/compactd statusline".into()),
            timeout: 30,
            entries: Vec::new(),
            servers: vec![(
                "mcpServers",
                "compactd",
                json!({"command": "/opt/bin/compactd", "args": ["mcp"]}),
            )],
            note: None,
            private: false,
        }
    }

    /// One `check()` for setup: installs into `before` (absent: no file),
    /// twice, then uninstalls, and gives what was written.
    fn check(before: Option<&str>) -> (String, SetupReport) {
        let dir = tempfile::tempdir().unwrap();
        let plan = plan(dir.path());
        if let Some(before) = before {
            write(&plan.path, before).unwrap();
        }
        let first = install(&plan, false).unwrap();
        let installed = std::fs::read_to_string(&plan.path).unwrap();
        let second = install(&plan, false).unwrap();
        assert!(
            !second.changes.iter().any(|c| c.starts_with("add ")),
            "{second:?}"
        );
        assert_eq!(std::fs::read_to_string(&plan.path).unwrap(), installed);
        uninstall(&plan, false).unwrap();
        match before {
            Some(before) => assert_eq!(std::fs::read_to_string(&plan.path).unwrap(), before),
            None => assert!(!plan.path.exists()),
        }
        assert!(!backup_path(&plan.path).exists());
        (installed, first)
    }

    #[test]
    fn merges_keeps_the_rest_and_undoes_exactly() {
        let before = "{\n    \"model\": \"opus\",\n    \"hooks\": {\n        \"PreCompact\": [\n            {\"hooks\": [{\"type\": \"command\", \"command\": \"echo mine\"}]}\n        ],\n        \"Stop\": []\n    },\n    \"statusLine\": {\"type\": \"command\", \"command\": \"my-line\"}\n}\n";
        let (installed, report) = check(Some(before));
        let value: Value = serde_json::from_str(&installed).unwrap();
        assert_eq!(value["model"], "opus");
        assert_eq!(
            value["hooks"]["PreCompact"][0]["hooks"][0]["command"],
            "echo mine"
        );
        assert_eq!(
            value["hooks"]["PreCompact"][1]["hooks"][0]["command"],
            "/opt/bin/compactd hook claude-code"
        );
        assert_eq!(value["hooks"]["SessionStart"][0]["matcher"], "compact");
        assert_eq!(value["statusLine"]["command"], "my-line");
        assert!(
            report.changes.iter().any(|c| c.contains("kept yours")),
            "{report:?}"
        );
        // The user's own text is kept as written, in its order.
        assert!(
            installed.starts_with("{\n  \"model\": \"opus\",\n  \"hooks\""),
            "{installed}"
        );
        assert!(installed
            .contains("{\"hooks\": [{\"type\": \"command\", \"command\": \"echo mine\"}]}"));
    }

    /// What serde_json cannot hold as a value (a lone surrogate, nesting
    /// past 128 levels) is copied as written, and given back byte for byte.
    #[test]
    fn what_no_parser_holds_is_given_back_byte_for_byte() {
        check(Some("{\"s\": \"\\ud800\"}"));
        let deep = format!("{{\"d\": {}{}}}", "[".repeat(300), "]".repeat(300));
        check(Some(&deep));
    }

    #[test]
    fn a_missing_file_is_created_and_removed_again() {
        let (installed, _) = check(None);
        let value: Value = serde_json::from_str(&installed).unwrap();
        assert_eq!(
            value["statusLine"]["command"],
            "/opt/bin/compactd statusline"
        );
    }

    #[test]
    fn a_file_it_cannot_parse_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let plan = plan(dir.path());
        write(&plan.path, "{ \"model\": opus, }").unwrap();
        let error = install(&plan, false).unwrap_err();
        assert!(
            error.contains("is not a JSON object compactd can merge into"),
            "{error}"
        );
        assert_eq!(
            std::fs::read_to_string(&plan.path).unwrap(),
            "{ \"model\": opus, }"
        );
        write(&plan.path, "{\"hooks\": 3}").unwrap();
        assert!(install(&plan, false)
            .unwrap_err()
            .contains("`hooks` is not an object"));
    }

    #[test]
    fn its_own_commands_are_known_by_program_and_arguments() {
        let quoted = "'/home/me/my tools/compactd' hook claude-code";
        assert_eq!(
            shell_words(quoted),
            ["/home/me/my tools/compactd", "hook", "claude-code"]
        );
        let escaped = "'/opt/it'\\''s/compactd' statusline";
        assert_eq!(shell_words(escaped), ["/opt/it's/compactd", "statusline"]);
        let dir = tempfile::tempdir().unwrap();
        let mut plan = plan(dir.path());
        plan.command = quoted.into();
        assert!(is_ours(&plan, quoted));
        assert!(is_ours(
            &plan,
            "/home/me/my\\ tools/compactd  hook claude-code"
        ));
        assert!(
            !is_ours(&plan, "/usr/local/bin/compactd hook claude-code"),
            "another install's"
        );
        assert!(!is_ours(&plan, "'/home/me/my tools/compactd' hook codex"));
    }

    #[cfg(unix)]
    #[test]
    fn a_private_settings_file_and_its_copy_stay_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let plan = plan(dir.path());
        write(&plan.path, "{}\n").unwrap();
        std::fs::set_permissions(&plan.path, std::fs::Permissions::from_mode(0o600)).unwrap();
        install(&plan, false).unwrap();
        for file in [plan.path.clone(), backup_path(&plan.path)] {
            let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{}", file.display());
        }
    }

    #[test]
    fn a_dry_run_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let plan = plan(dir.path());
        let report = install(&plan, true).unwrap();
        assert_eq!(report.changes.len(), 4, "{report:?}");
        assert!(!plan.path.exists());
    }
}

#[cfg(test)]
mod list_entry_tests {
    use super::*;

    fn plan(dir: &Path) -> SetupPlan {
        SetupPlan {
            path: dir.join("settings.json"),
            command: String::new(),
            hooks: Vec::new(),
            status_line: None,
            timeout: 0,
            entries: vec![("extensions", "/opt/compactd/integrations/pi".into())],
            servers: Vec::new(),
            note: None,
            private: false,
        }
    }

    #[test]
    fn a_list_entry_is_added_once_beside_the_others_and_removed_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let plan = plan(dir.path());
        let before = "{\n  \"hooks\": {},\n  \"extensions\": [\"/home/me/other\"],\n  \"theme\": \"dark\"\n}\n";
        write(&plan.path, before).unwrap();
        let first = install(&plan, false).unwrap();
        assert_eq!(
            first.changes,
            ["add extensions: /opt/compactd/integrations/pi"]
        );
        let value: Value =
            serde_json::from_str(&std::fs::read_to_string(&plan.path).unwrap()).unwrap();
        assert_eq!(
            value["extensions"],
            json!(["/home/me/other", "/opt/compactd/integrations/pi"])
        );
        assert_eq!(value["hooks"], json!({}), "no hooks planned: none touched");
        assert!(install(&plan, false).unwrap().changes.is_empty());
        let removed = uninstall(&plan, false).unwrap();
        assert_eq!(
            removed.changes,
            ["remove extensions: /opt/compactd/integrations/pi"]
        );
        assert_eq!(std::fs::read_to_string(&plan.path).unwrap(), before);
    }
}

#[cfg(test)]
mod toml_table_tests {
    use super::*;

    fn table(dir: &Path) -> TomlTable {
        TomlTable {
            path: dir.join("config.toml"),
            agent: "codex",
            header: "[mcp_servers.compactd]".into(),
            body: "command = \"/opt/bin/compactd\"\nargs = [\"mcp\"]\n".into(),
        }
    }

    #[test]
    fn a_table_is_appended_once_and_removed_byte_for_byte() {
        let dir = tempfile::tempdir().unwrap();
        let table = table(dir.path());
        let before = "model = \"o4\"\n\n[mcp_servers.other]\ncommand = \"x\"\n";
        write(&table.path, before).unwrap();
        assert_eq!(
            table.install(false).unwrap().changes,
            ["add [mcp_servers.compactd]"]
        );
        let installed = std::fs::read_to_string(&table.path).unwrap();
        let value: toml::Table = toml::from_str(&installed).unwrap();
        assert_eq!(
            value["mcp_servers"]["compactd"]["args"][0].as_str(),
            Some("mcp")
        );
        assert_eq!(value["mcp_servers"]["other"]["command"].as_str(), Some("x"));
        assert!(
            table.install(false).unwrap().changes.is_empty(),
            "twice is once"
        );
        table.uninstall(false).unwrap();
        assert_eq!(std::fs::read_to_string(&table.path).unwrap(), before);
    }

    /// The comment names a command that works, and a table an older
    /// compactd marked with its comment is still removed.
    #[test]
    fn the_mark_names_the_command_that_removes_it() {
        let dir = tempfile::tempdir().unwrap();
        let table = table(dir.path());
        let installed = table.install(false).unwrap().text.unwrap();
        assert!(
            installed.contains("`compactd setup codex --uninstall` removes it"),
            "{installed}"
        );
        let old = format!("x = 1\n\n{OLD_TABLE_MARK}\n[mcp_servers.compactd]\nargs = [\"mcp\"]\n");
        write(&table.path, &old).unwrap();
        assert_eq!(table.uninstall(false).unwrap().text.unwrap(), "x = 1\n");
    }

    #[test]
    fn a_file_without_a_final_newline_empty_or_absent_comes_back_as_it_was() {
        for before in [Some("model = \"o4\""), Some(""), Some("a = 1\n\n"), None] {
            let dir = tempfile::tempdir().unwrap();
            let table = table(dir.path());
            if let Some(before) = before {
                write(&table.path, before).unwrap();
            }
            table.install(false).unwrap();
            table.uninstall(false).unwrap();
            let after = std::fs::read_to_string(&table.path).ok();
            assert_eq!(after.as_deref(), before);
        }
    }

    #[test]
    fn a_table_compactd_did_not_write_is_kept_and_bad_toml_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let table = table(dir.path());
        let theirs = "[mcp_servers.compactd]\ncommand = \"mine\"\n";
        write(&table.path, theirs).unwrap();
        assert!(table.install(false).unwrap().changes.is_empty());
        assert!(table.uninstall(false).unwrap().changes.is_empty());
        assert_eq!(std::fs::read_to_string(&table.path).unwrap(), theirs);
        write(&table.path, "not = [toml").unwrap();
        let error = table.install(false).unwrap_err();
        assert!(error.contains("left as it is"), "{error}");
        assert_eq!(std::fs::read_to_string(&table.path).unwrap(), "not = [toml");
    }
}
