//! Plans and task lists, as the digest keeps them: the plan a person
//! approved (a plan tool's text, or a numbered plan the assistant wrote and
//! the person accepted) as its steps, and the newest task list a todo tool
//! keeps, each item with its state. Pure.

use serde_json::Value;

use super::wording::clip;
use crate::conversation::request::collapse;

/// Steps and items kept, and their length.
const STEPS: usize = 12;
const STEP_CHARS: usize = 140;

/// How a task list item stands, as the summary marks it.
pub(super) const DONE: &str = "[x] ";
pub(super) const DOING: &str = "[>] ";
pub(super) const TODO: &str = "[ ] ";

/// The plan a plan tool presents for approval (`ExitPlanMode`'s `plan`),
/// `fallback` when its argument is empty (the plan was the text before it).
pub(super) fn presented_plan(name: &str, arguments: &Value, fallback: &str) -> Option<String> {
    if !name.eq_ignore_ascii_case("ExitPlanMode") {
        return None;
    }
    let plan = arguments
        .get("plan")
        .and_then(Value::as_str)
        .filter(|p| !p.trim().is_empty())
        .unwrap_or(fallback);
    (!plan.trim().is_empty()).then(|| plan.to_string())
}

/// Whether the agent plans (and edits nothing until a plan is approved)
/// after this call: `Some(true)` on entering plan mode or a plan the
/// person turned down ("User chose to stay in plan mode"), `Some(false)`
/// on an approved plan, `None` for any other call or no result yet.
pub(super) fn plan_mode_after(name: &str, approved: Option<bool>) -> Option<bool> {
    if name.eq_ignore_ascii_case("EnterPlanMode") {
        return approved.map(|_| true);
    }
    if name.eq_ignore_ascii_case("ExitPlanMode") {
        return approved.map(|approved| !approved);
    }
    None
}

/// The plan a file write holds when the file is a plan: Claude Code's plan
/// mode writes its plan to a Markdown file in its `plans` folder and calls
/// `ExitPlanMode` without it; a plan written elsewhere when that folder is
/// not writable is named like one (`…plan….md`).
pub(super) fn plan_file<'a>(name: &str, arguments: &'a Value) -> Option<&'a str> {
    if !name.eq_ignore_ascii_case("Write") {
        return None;
    }
    let path = arguments.get("file_path").and_then(Value::as_str)?;
    let mut parts = path.rsplit('/');
    let file = parts.next().unwrap_or(path).to_lowercase();
    let folder = parts.next().unwrap_or("");
    let plan = file.ends_with(".md") && (folder == "plans" || file.contains("plan"));
    plan.then(|| arguments.get("content").and_then(Value::as_str))
        .flatten()
        .filter(|c| !c.trim().is_empty())
}

/// The task list a todo tool sets (`TodoWrite`'s `todos` with `content`
/// and `status`; `update_plan`'s `plan` with `step` and `status`), as
/// marked lines.
pub(super) fn task_list(name: &str, arguments: &Value) -> Option<Vec<String>> {
    let (items, text) = match name {
        "TodoWrite" | "todo_write" | "todowrite" => (arguments.get("todos")?, "content"),
        "update_plan" => (arguments.get("plan")?, "step"),
        _ => return None,
    };
    let lines = items
        .as_array()?
        .iter()
        .filter_map(|item| {
            let text = item.get(text).and_then(Value::as_str)?;
            let mark = status_mark(item.get("status").and_then(Value::as_str).unwrap_or(""));
            Some(format!("{mark}{}", clip(text, STEP_CHARS)))
        })
        .collect();
    Some(lines)
}

/// What Claude Code 2.1's task tools do to the task list, item by item
/// (each line `<mark>#<id> <subject>`): `TaskCreate` adds its `subject`
/// under the number its result gives ("Task #3 created successfully: …"),
/// else the next one; `TaskUpdate` sets `taskId`'s status (`deleted`
/// removes it) or subject, and an update to an item this part never saw
/// is kept as the line `<mark>#<id>` for `merge_tasks` to apply. `false`
/// for any other tool.
pub(super) fn task_change(
    name: &str,
    arguments: &Value,
    result: &str,
    todos: &mut Vec<String>,
) -> bool {
    let text = |key: &str| arguments.get(key).and_then(Value::as_str).map(str::trim);
    match name {
        "TaskCreate" => {
            let Some(subject) = text("subject").filter(|s| !s.is_empty()) else {
                return true;
            };
            let id = created_number(result).unwrap_or_else(|| {
                let highest = todos
                    .iter()
                    .filter_map(|t| task_id(t))
                    .filter_map(|id| id.parse::<u64>().ok())
                    .max();
                (highest.unwrap_or(0) + 1).to_string()
            });
            todos.retain(|t| task_id(t) != Some(id.as_str()));
            todos.push(format!(
                "{TODO}#{id} {}",
                clip(&collapse(subject), STEP_CHARS)
            ));
            true
        }
        "TaskUpdate" => {
            let Some(id) = text("taskId").map(|id| id.trim_start_matches('#').to_string()) else {
                return true;
            };
            let mark = match text("status") {
                Some("deleted") => {
                    todos.retain(|t| task_id(t) != Some(id.as_str()));
                    return true;
                }
                Some(status) => Some(status_mark(status)),
                None => None,
            };
            let subject = text("subject")
                .filter(|s| !s.is_empty())
                .map(|s| clip(&collapse(s), STEP_CHARS));
            match todos.iter_mut().find(|t| task_id(t) == Some(id.as_str())) {
                Some(line) => {
                    let old = task_subject(line).to_string();
                    let mark = mark.unwrap_or(&line[..TODO.len()]).to_string();
                    *line = format!("{mark}#{id} {}", subject.unwrap_or(old))
                        .trim_end()
                        .to_string();
                }
                None => todos.push(
                    format!(
                        "{}#{id} {}",
                        mark.unwrap_or(TODO),
                        subject.unwrap_or_default()
                    )
                    .trim_end()
                    .to_string(),
                ),
            }
            true
        }
        _ => false,
    }
}

/// A newer part's task list laid over an older one's: a todo tool's list
/// replaces it whole; task tool items (`#<id>`) replace or update the
/// older items of the same number, and new numbers are added.
pub(super) fn merge_tasks(older: &mut Vec<String>, newer: Vec<String>) {
    if newer.is_empty() {
        return;
    }
    if !newer.iter().all(|t| task_id(t).is_some()) || !older.iter().all(|t| task_id(t).is_some()) {
        *older = newer;
        return;
    }
    for line in newer {
        let id = task_id(&line).unwrap_or_default().to_string();
        match older.iter_mut().find(|t| task_id(t) == Some(id.as_str())) {
            Some(old) if task_subject(&line).is_empty() => {
                *old = format!("{}{}", &line[..TODO.len()], &old[TODO.len()..]);
            }
            Some(old) => *old = line,
            None => older.push(line),
        }
    }
}

/// A finished task list, as one line (`None` while anything is left):
/// every item done says the work is finished, not what is current.
pub(super) fn finished(todos: &[String]) -> Option<String> {
    if todos.is_empty() || !todos.iter().all(|t| t.starts_with(DONE)) {
        return None;
    }
    let subjects: Vec<&str> = todos
        .iter()
        .map(|t| task_subject(t))
        .map(|s| s.strip_prefix(FINISHED).unwrap_or(s))
        .filter(|s| !s.is_empty())
        .collect();
    Some(format!(
        "{DONE}{FINISHED}{}",
        clip(&subjects.join("; "), 300)
    ))
}

/// An approved plan as one line that says it was carried out: its title
/// and steps, and the commit made since when there is one.
pub(super) fn carried_out(plan: &[String], commit: Option<&str>) -> String {
    if let [only] = plan {
        if only.starts_with(CARRIED_OUT) {
            return only.clone();
        }
    }
    let committed = commit.map(|c| format!(" (commit {c})")).unwrap_or_default();
    let steps: Vec<&str> = plan
        .iter()
        .map(|step| numbered_item(step).unwrap_or(step))
        .collect();
    format!(
        "{CARRIED_OUT}{committed}: {}",
        clip(&steps.join("; "), 2 * STEPS * STEP_CHARS / 3)
    )
}

/// How a carried-out plan begins.
pub(super) const CARRIED_OUT: &str = "Plan carried out";

/// How a finished list begins.
const FINISHED: &str = "Finished, every task done: ";

fn status_mark(status: &str) -> &'static str {
    match status {
        "completed" => DONE,
        "in_progress" => DOING,
        _ => TODO,
    }
}

/// The number of a task tool's item (`[>] #3 Fix it` → `3`).
fn task_id(line: &str) -> Option<&str> {
    let rest = line.get(TODO.len()..)?.strip_prefix('#')?;
    let end = rest.find(' ').unwrap_or(rest.len());
    let id = &rest[..end];
    (!id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric())).then_some(id)
}

/// An item's text after its mark (and its number, for a task tool's).
fn task_subject(line: &str) -> &str {
    let rest = line.get(TODO.len()..).unwrap_or("");
    match task_id(line) {
        Some(id) => rest[1 + id.len()..].trim_start(),
        None => rest,
    }
}

/// The number in "Task #3 created successfully: …".
fn created_number(result: &str) -> Option<String> {
    let rest = &result[result.find("Task #")? + "Task #".len()..];
    let id: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric())
        .collect();
    (!id.is_empty()).then_some(id)
}

/// Headings under which a plan lists what is to be done.
const STEP_HEADINGS: [&str; 6] = ["implement", "step", "task", "phase", "change", "plan"];

/// Headings whose items are no steps: how the plan is checked and what
/// could go wrong ("Verification", "Test plan", "Edge cases").
const NOT_STEP_HEADINGS: [&str; 6] = [
    "verif",
    "testing",
    "test plan",
    "test scenario",
    "edge case",
    "risk",
];

/// A plan's steps: its numbered items (a step's own sub-items left out,
/// unless the item only introduces them, ending with a colon; those under
/// a heading such as "Implementation steps" when it has one, so an
/// explanation's numbered list is not taken for steps; none under a
/// heading such as "Verification"), else its numbered headings ("### 1.
/// `a.go`") with what each says to do, else its bulleted items, else its
/// headings; the title first when it has one. More steps than a summary
/// lists, grouped under headings of their own ("Phase 1: Core backend"),
/// are listed by group, each group's steps on its line, so no phase is
/// cut off.
pub(super) fn steps(plan: &str) -> Vec<String> {
    let mut scan = StepScan::default();
    let mut in_code = false;
    for line in plan.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if !in_code && !trimmed.is_empty() {
            scan.line(trimmed, !line.starts_with([' ', '\t']));
        }
    }
    let StepScan {
        title,
        numbered,
        bulleted,
        headings,
        mut groups,
        mut sections,
        ..
    } = scan;
    let mut out: Vec<String> = title.into_iter().map(|t| clean(&t)).collect();
    groups.retain(|(_, items)| !items.is_empty());
    let under_steps: Vec<String> = groups.iter().flat_map(|(_, i)| i.clone()).collect();
    if under_steps.len() > STEPS && groups.len() > 1 && groups.len() <= STEPS {
        out.extend(groups.iter().map(|(h, items)| group_line(h, items)));
        return out;
    }
    sections.retain(|(_, items)| !items.is_empty());
    if under_steps.is_empty() && numbered.is_empty() && !sections.is_empty() {
        out.extend(sections.iter().take(STEPS).map(|(h, i)| group_line(h, i)));
        return out;
    }
    let chosen = [under_steps, numbered, bulleted, headings]
        .into_iter()
        .find(|list| !list.is_empty())
        .unwrap_or_default();
    out.extend(
        chosen
            .iter()
            .take(STEPS)
            .enumerate()
            .map(|(i, step)| format!("{}. {}", i + 1, clean(step))),
    );
    if chosen.len() > STEPS {
        out.push(format!("… {} more steps", chosen.len() - STEPS));
    }
    out
}

/// What `steps` gathers from a plan's lines outside code blocks.
#[derive(Default)]
struct StepScan {
    title: Option<String>,
    numbered: Vec<String>,
    bulleted: Vec<String>,
    headings: Vec<String>,
    /// Numbered items under a heading that names steps, by that heading.
    groups: Vec<(String, Vec<String>)>,
    /// Numbered headings, each with what its lines say to do.
    sections: Vec<(String, Vec<String>)>,
    in_steps: bool,
    /// Under a heading such as "Verification".
    not_steps: bool,
    /// Under a numbered heading.
    in_section: bool,
    /// Under a numbered item that introduces its sub-items.
    introducing: bool,
}

impl StepScan {
    fn line(&mut self, line: &str, top: bool) {
        if let Some(heading) = line.strip_prefix('#') {
            let heading = heading.trim_start_matches('#').trim();
            self.heading(heading, line.starts_with("# "));
        } else if let Some(item) = numbered_item(line).filter(|_| top) {
            // "1. **Inline X into Y**:" introduces its sub-items: they are
            // the steps, and it is none (nor is "2. The resulting flow:"
            // before a code block).
            self.introducing = introduces(item);
            if !self.introducing {
                self.step(item);
            }
        } else if let Some(item) = line.strip_prefix("- ").or(line.strip_prefix("* ")) {
            if top {
                self.introducing = false;
                if !self.not_steps {
                    self.bulleted.push(item.to_string());
                }
            } else if self.introducing {
                self.step(item);
            }
        } else if top {
            self.introducing = false;
            if let Some((_, said)) = self.sections.last_mut().filter(|_| self.in_section) {
                said.push(line.trim_end_matches(':').to_string());
            }
        }
    }

    fn heading(&mut self, heading: &str, top_level: bool) {
        self.introducing = false;
        if self.title.is_none() && top_level {
            self.title = Some(heading.to_string());
            return;
        }
        let lower = heading.to_lowercase();
        let numbered = numbered_item(heading);
        if numbered.is_none() {
            // "Phase 6: Polish & testing" is a phase still.
            self.not_steps = NOT_STEP_HEADINGS.iter().any(|h| lower.contains(h))
                && !["phase", "step"].iter().any(|h| lower.contains(h));
        }
        self.in_steps = !self.not_steps && STEP_HEADINGS.iter().any(|h| lower.contains(h));
        self.in_section = numbered.is_some() && !self.not_steps;
        self.headings.push(heading.to_string());
        if self.in_steps {
            self.groups.push((heading.to_string(), Vec::new()));
        }
        if let Some(item) = numbered.filter(|_| self.in_section) {
            self.sections.push((item.to_string(), Vec::new()));
        }
    }

    fn step(&mut self, item: &str) {
        if self.not_steps {
            return;
        }
        self.numbered.push(item.to_string());
        if let Some((_, items)) = self.groups.last_mut().filter(|_| self.in_steps) {
            items.push(item.to_string());
        }
    }
}

/// One group of a plan's steps on one line: its heading, then its steps.
fn group_line(heading: &str, items: &[String]) -> String {
    let items: Vec<String> = items
        .iter()
        .map(|i| collapse(&i.replace("**", "")))
        .collect();
    let line = format!(
        "{}: {}",
        collapse(&heading.replace("**", "")),
        items.join("; ")
    );
    clip(&line, 2 * STEP_CHARS)
}

fn clean(text: &str) -> String {
    clip(&collapse(&text.replace("**", "")), STEP_CHARS)
}

/// A numbered item that only introduces what follows it: it ends with a
/// colon ("**Inline X into Y**:", "Resulting flow:").
fn introduces(item: &str) -> bool {
    item.trim_end().trim_end_matches("**").ends_with(':')
}

/// `1. step` or `2) step`: the step.
fn numbered_item(line: &str) -> Option<&str> {
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    if !(1..=2).contains(&digits) {
        return None;
    }
    let rest = &line[digits..];
    rest.strip_prefix(". ")
        .or_else(|| rest.strip_prefix(") "))
        .map(str::trim)
}

/// Assistant text that proposes a plan: it says so and lists at least
/// three numbered steps.
pub(super) fn proposes_plan(text: &str) -> bool {
    let lower = text.to_lowercase();
    let numbered = text
        .lines()
        .filter(|l| !l.starts_with([' ', '\t']) && numbered_item(l.trim()).is_some())
        .count();
    lower.contains("plan") && numbered >= 3
}

/// A reply that accepts what was proposed ("yes", "ok go ahead",
/// "sounds good, do it", "approved").
pub(super) fn accepts(reply: &str) -> bool {
    const YES: [&str; 14] = [
        "yes",
        "yep",
        "yeah",
        "ok",
        "okay",
        "sure",
        "go ahead",
        "proceed",
        "sounds good",
        "lgtm",
        "approved",
        "do it",
        "let's do it",
        "go for it",
    ];
    let lower = reply.trim().to_lowercase();
    let words = lower.split_whitespace().count();
    words <= 12 && YES.iter().any(|y| lower.starts_with(y) || lower == *y)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_plan_is_its_title_and_top_level_steps() {
        let plan = "# Plan: Session Share Plugin\n\n## Context\nWhy.\n\n1. **Create** the plugin manifest\n   - sub item\n2. Write `publish.sh`\n3. Document it in README.md\n\n```\n1. not a step\n```";
        assert_eq!(
            steps(plan),
            [
                "Plan: Session Share Plugin",
                "1. Create the plugin manifest",
                "2. Write `publish.sh`",
                "3. Document it in README.md",
            ]
        );
        // An explanation's numbered list is not the steps.
        assert_eq!(
            steps("# Plan\n## How it works\n1. A hook runs\n2. It writes\n## Implementation steps\n1. Create the scaffold\n2. Write the script"),
            ["Plan", "1. Create the scaffold", "2. Write the script"]
        );
        // How the plan is checked is no step.
        assert_eq!(
            steps("# P\n## Changes\n1. Add the type\n2. Use it\n## Verification\n1. `make test` passes\n2. Lint is clean"),
            ["P", "1. Add the type", "2. Use it"]
        );
        assert_eq!(
            steps("# P\n## Phase 1: Build\n1. Add the type\n## Phase 2: Polish & testing\n1. Handle errors"),
            ["P", "1. Add the type", "2. Handle errors"]
        );
        // Numbered headings (a file each), with what each says to do.
        assert_eq!(
            steps("# P\n## Files to modify\n### 1. `a.go` (line 3)\nAdd the `Span` type:\n```go\ntype Span struct{}\n```\nAdd a field to `Meta`:\n### 2. `b.go`\nIn `write()`, store the span.\n## Verification\n```\nmake test\n```"),
            [
                "P",
                "`a.go` (line 3): Add the `Span` type; Add a field to `Meta`",
                "`b.go`: In `write()`, store the span."
            ]
        );
        // Without numbered items: bullets, else headings.
        assert_eq!(
            steps("## Step one\ntext\n## Step two"),
            ["1. Step one", "2. Step two"]
        );
    }

    #[test]
    fn task_lists_mark_what_is_done() {
        let todos = json!({"todos": [
            {"content": "Add the parser", "status": "completed", "activeForm": "Adding"},
            {"content": "Run the tests", "status": "in_progress"},
            {"content": "Update the docs", "status": "pending"}]});
        assert_eq!(
            task_list("TodoWrite", &todos).unwrap(),
            [
                "[x] Add the parser",
                "[>] Run the tests",
                "[ ] Update the docs"
            ]
        );
        let codex = json!({"plan": [{"step": "Read the code", "status": "completed"}]});
        assert_eq!(
            task_list("update_plan", &codex).unwrap(),
            ["[x] Read the code"]
        );
        assert!(task_list("Read", &todos).is_none());
    }

    #[test]
    fn a_proposed_plan_and_its_acceptance() {
        assert!(proposes_plan(
            "Here's my plan:\n1. Parse\n2. Check\n3. Write"
        ));
        assert!(!proposes_plan("Steps:\n1. Parse\n2. Check\n3. Write"));
        assert!(accepts("yes, go ahead"));
        assert!(accepts("ok"));
        assert!(!accepts("no, first read the docs"));
        assert!(!accepts(
            "okay but before that I want you to read every file in the repository and tell me what each does"
        ));
    }
}
