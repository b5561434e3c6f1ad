//! What an action produced that the next turn may need, from the tool's
//! output: a commit, a created issue or pull request, a comment, a pushed
//! branch, a merge. The closing text of a turn often says something else
//! ("Done, let me know"), and only the last action is the current state.

use super::wording::clip;

/// What one call produced that is worth keeping.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Produced {
    /// What names it (a hash, an address, a branch, an identifier): a
    /// text that already holds it needs no more.
    pub key: String,
    /// It in a few words: `commit 1a2b3c4 "Fix the parser"`, `created
    /// https://github.com/o/r/pull/12`, `pushed main`.
    pub line: String,
}

/// What a call produced, from its shell command (`command`, when it is
/// one) or its tool's name, and its output.
pub(super) fn produced(command: Option<&str>, tool: &str, output: &str) -> Option<Produced> {
    let (key, line) = match command {
        Some(command) => by_command(command, output)?,
        // An issue tracker's tool ("create_issue", "createComment").
        None if tool.to_lowercase().contains("create") => {
            let made = url(output).or_else(|| ticket(output))?;
            (made.clone(), format!("{tool} created {made}"))
        }
        None => return None,
    };
    Some(Produced { key, line })
}

/// How much of a commit's subject is kept.
const SUBJECT_CHARS: usize = 60;

fn by_command(command: &str, output: &str) -> Option<(String, String)> {
    if command.contains("git commit") {
        let (hash, subject) = commit(output)?;
        let line = format!("commit {hash} \"{}\"", clip(&subject, SUBJECT_CHARS));
        return Some((hash, line));
    }
    if command.contains("git push") {
        // Named by the commit pushed: a branch's name ("main") is a word
        // the turn's text may hold for another reason.
        let (branch, new, head) = pushed(output)?;
        let line = match &head {
            Some(head) => format!("pushed {head} to {branch}{new}"),
            None => format!("pushed {branch}{new}"),
        };
        return Some((head.unwrap_or(branch), line));
    }
    let creates = [
        "gh pr create",
        "gh issue create",
        "glab mr create",
        "gh release create",
    ];
    if creates.iter().any(|c| command.contains(c)) {
        return url(output).map(|u| (u.clone(), format!("created {u}")));
    }
    if command.contains("gh pr comment") || command.contains("gh issue comment") {
        return url(output).map(|u| (u.clone(), format!("commented {u}")));
    }
    if command.contains("gh pr merge") {
        let line = output
            .lines()
            .map(str::trim)
            .find(|l| l.contains("Merged"))?;
        let line = clip(line.trim_start_matches(['✓', ' ']), 100);
        return Some((line.clone(), line));
    }
    None
}

/// The short hash and subject in what `git commit` printed (`[main
/// 1a2b3c4] Fix it`, `[main (root-commit) 1a2b3c4] Init`).
pub(super) fn commit(output: &str) -> Option<(String, String)> {
    output.lines().find_map(|line| {
        let (inside, subject) = line.trim().strip_prefix('[')?.split_once(']')?;
        let hash = inside.split_whitespace().last()?;
        ((7..=40).contains(&hash.len()) && hash.chars().all(|c| c.is_ascii_hexdigit()))
            .then(|| (hash.to_string(), subject.trim().to_string()))
    })
}

/// The branch a `git push` updated (`   a1..b2  main -> main`, `* [new
/// branch]  fix -> fix`), whether it is new, and the commit it now names
/// (`b2`) when the output says.
fn pushed(output: &str) -> Option<(String, &'static str, Option<String>)> {
    output.lines().find_map(|line| {
        let (left, right) = line.split_once(" -> ")?;
        let new = if left.contains("[new branch]") {
            " (new branch)"
        } else {
            ""
        };
        let branch = right.split_whitespace().next()?;
        let head = left
            .split_whitespace()
            .find_map(|w| w.split_once("..").map(|(_, to)| to.trim_start_matches('.')))
            .filter(|h| h.len() >= 7 && h.chars().all(|c| c.is_ascii_hexdigit()))
            .map(str::to_string);
        (!left.contains("[rejected]") && !left.contains("! "))
            .then(|| (branch.to_string(), new, head))
    })
}

/// The first web address in `output` (trailing punctuation left out).
fn url(output: &str) -> Option<String> {
    let start = output.find("https://").or_else(|| output.find("http://"))?;
    let rest = &output[start..];
    let end = rest
        .find(|c: char| c.is_whitespace() || "\"'<>)]}".contains(c))
        .unwrap_or(rest.len());
    Some(rest[..end].trim_end_matches(['.', ',']).to_string())
}

/// An issue tracker's identifier (`ABC-228`) in `output`.
fn ticket(output: &str) -> Option<String> {
    output
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .find(|w| {
            w.split_once('-').is_some_and(|(team, number)| {
                (2..=10).contains(&team.len())
                    && team.chars().all(|c| c.is_ascii_uppercase())
                    && !number.is_empty()
                    && number.chars().all(|c| c.is_ascii_digit())
            })
        })
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_actions_produced() {
        let check = |command: Option<&str>, tool: &str, output: &str, want: Option<&str>| {
            let line = produced(command, tool, output).map(|p| p.line);
            assert_eq!(line.as_deref(), want, "{output}");
        };
        check(
            Some("git add -A && git commit -m 'Fix it'"),
            "Bash",
            "[main 1a2b3c4] Fix the parser\n 1 file changed",
            Some("commit 1a2b3c4 \"Fix the parser\""),
        );
        check(Some("git commit"), "Bash", "nothing to commit", None);
        check(
            Some("git push -u origin fix"),
            "Bash",
            "To github.com:o/r.git\n * [new branch]      fix -> fix",
            Some("pushed fix (new branch)"),
        );
        check(
            Some("git push"),
            "Bash",
            " ! [rejected]        main -> main (fetch first)",
            None,
        );
        let push = "To github.com:o/r.git\n   9f8e7d6..bfca32b  main -> main";
        check(
            Some("git push"),
            "Bash",
            push,
            Some("pushed bfca32b to main"),
        );
        // Named by its commit: "main" in the turn's text is not the push.
        let made = produced(Some("git push"), "Bash", push).unwrap();
        assert_eq!(made.key, "bfca32b");
        check(
            Some("gh pr create --fill"),
            "Bash",
            "Creating pull request\nhttps://github.com/o/r/pull/12\n",
            Some("created https://github.com/o/r/pull/12"),
        );
        check(
            None,
            "mcp__linear__create_issue",
            "{\"identifier\": \"ABC-228\", \"title\": \"Flaky test\"}",
            Some("mcp__linear__create_issue created ABC-228"),
        );
        check(None, "Read", "https://example.com in a file", None);
        check(Some("cargo test"), "Bash", "test result: ok", None);
    }
}
