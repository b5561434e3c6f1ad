//! Scores a compacted context against the probes, and the summary itself
//! for noise.

use serde::{Deserialize, Serialize};

use crate::probes::{opening, words, Probes};

/// Found of total; a probe with nothing to find scores as complete.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Recall {
    pub found: usize,
    pub total: usize,
}

impl Recall {
    pub fn ratio(self) -> f64 {
        if self.total == 0 {
            1.0
        } else {
            self.found as f64 / self.total as f64
        }
    }

    pub fn of<'a>(
        items: impl Iterator<Item = &'a str>,
        mut present: impl FnMut(&str) -> bool,
    ) -> Recall {
        let mut recall = Recall::default();
        for item in items {
            recall.total += 1;
            recall.found += usize::from(present(item));
        }
        recall
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Score {
    pub modified_files: Recall,
    pub read_files: Recall,
    /// `None` when the transcript has no request yet.
    pub first_task: Option<bool>,
    pub latest_request: Option<bool>,
    /// Lines the summary presents as the user's rules, and how many of
    /// them are labelled rules.
    pub rule_claims: Recall,
    pub rules: Recall,
    /// Labelled rules among the lines the summary presents as rules.
    #[serde(default)]
    pub rules_listed: Recall,
    /// Labelled stale failures (fixed later, or abandoned) the summary
    /// lists as still open: `found` of them is bad.
    #[serde(default)]
    pub stale_errors: Recall,
    /// Steps of approved plans found in the context.
    #[serde(default)]
    pub plans: Recall,
    /// The user's own shell commands found in the context.
    #[serde(default)]
    pub shell: Recall,
    /// Entry lines of the summary (what `duplicates` is out of).
    #[serde(default)]
    pub lines: usize,
    pub open_errors: Recall,
    pub summary_tokens: u64,
    /// Entry lines that are pieces of sentences or of lists.
    pub fragments: usize,
    /// Lines repeated verbatim within the summary.
    pub duplicates: usize,
    /// What was looked for and not found, and the claimed rules that are
    /// not labelled ones.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub misses: Vec<String>,
}

impl Score {
    /// Rule precision; `None` when the summary claims no rule.
    pub fn rule_precision(&self) -> Option<f64> {
        (self.rule_claims.total > 0).then(|| self.rule_claims.ratio())
    }
}

/// What a real transcript of `tests/data/quality/` was labelled with
/// beyond its rules.
#[derive(Debug, Clone, Default)]
pub struct Extra {
    pub plans: Vec<Vec<String>>,
    pub stale_errors: Vec<String>,
    pub shell: Vec<String>,
}

/// `summary` is what the summarizer produced (with the retention check's
/// additions and the file sections), `context` everything the model sees
/// after the compaction, as text.
pub fn score(
    probes: &Probes,
    labels: &[String],
    extra: &Extra,
    summary: &str,
    context: &str,
    tokens: u64,
) -> Score {
    let haystack = words(context);
    let has = |needle: &str| {
        let needle = words(needle);
        !needle.is_empty() && haystack.contains(&needle)
    };
    let has_path = |path: &str| {
        has(path)
            || probes
                .cwd
                .as_deref()
                .and_then(|cwd| path.strip_prefix(cwd))
                .is_some_and(|rest| has(rest.trim_start_matches('/')))
    };
    let has_opening = |text: &str| haystack.contains(&opening(text, 100));
    let claims = rule_claims(summary);
    let mut misses = Vec::new();
    let mut note = |what: &str, item: &str, found: bool| {
        if !found {
            misses.push(format!(
                "{what}: {}",
                item.chars().take(120).collect::<String>()
            ));
        }
        found
    };
    let score = Score {
        modified_files: Recall::of(probes.modified.iter().map(String::as_str), |p| {
            note("modified file", p, has_path(p))
        }),
        read_files: Recall::of(probes.read.iter().map(String::as_str), |p| {
            note("read file", p, has_path(p))
        }),
        first_task: probes
            .first_task
            .as_deref()
            .map(|t| note("first task", t, has_opening(t))),
        latest_request: probes
            .latest_request
            .as_deref()
            .map(|t| note("latest request", t, has_opening(t))),
        rule_claims: Recall::of(claims.iter().map(String::as_str), |claim| {
            let labelled = labels.iter().any(|label| same_rule(claim, label));
            note("claimed rule, not labelled", claim, labelled)
        }),
        rules: Recall::of(probes.rules.iter().map(String::as_str), |r| {
            note("rule", r, has(r))
        }),
        // Rules stated in the kept messages need no place in the summary.
        rules_listed: Recall::of(
            probes.rules.iter().map(String::as_str).filter(|r| {
                let tail = words(&context.replacen(summary, "", 1));
                !tail.contains(&words(r))
            }),
            |r| {
                let listed = claims.iter().any(|c| same_rule(c, r));
                note("rule not in the rules section", r, listed)
            },
        ),
        stale_errors: Recall::of(extra.stale_errors.iter().map(String::as_str), |e| {
            let open = words(&section(summary, "Errors still open"));
            let listed = !words(e).is_empty() && open.contains(&opening(e, 40));
            !note("stale error listed as open", e, !listed)
        }),
        plans: Recall::of(extra.plans.iter().flatten().map(String::as_str), |step| {
            let kept = context
                .lines()
                .any(|line| mostly_present(step, &words(line)));
            note("plan step", step, kept)
        }),
        shell: Recall::of(extra.shell.iter().map(String::as_str), |c| {
            note("user shell command", c, has(c))
        }),
        lines: summary
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with('<'))
            .count(),
        open_errors: Recall::of(probes.open_errors.iter().map(|e| e.line.as_str()), |l| {
            let error = probes.open_errors.iter().find(|e| e.line == l);
            let found =
                error.is_some_and(|e| e.signals.iter().any(|s| haystack.contains(&opening(s, 50))));
            note("open error", l, found)
        }),
        summary_tokens: tokens,
        fragments: body_entries(summary)
            .iter()
            .filter(|(label, entry)| !label && is_fragment(entry))
            .count(),
        duplicates: duplicates(summary),
        misses: Vec::new(),
    };
    for (_, entry) in body_entries(summary)
        .iter()
        .filter(|(label, e)| !label && is_fragment(e))
    {
        misses.push(format!("(noise) fragment: {entry}"));
    }
    Score { misses, ..score }
}

/// The entries of a summary's `## title` section, as one text.
fn section(summary: &str, title: &str) -> String {
    let heading = format!("## {title}");
    let mut lines = summary.lines().skip_while(|l| l.trim() != heading);
    lines.next();
    lines
        .take_while(|l| !l.starts_with("## ") && !l.starts_with('<'))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Most (60%) of the words of four letters or more in `text` are in
/// `haystack` (words as `words` gives them), one line of the context: a
/// plan step said in other words of the same things.
pub fn mostly_present(text: &str, haystack: &str) -> bool {
    let present: std::collections::HashSet<&str> = haystack.split(' ').collect();
    let wanted: Vec<String> = words(text)
        .split(' ')
        .filter(|w| w.chars().count() >= 4)
        .map(str::to_string)
        .collect();
    let found = wanted
        .iter()
        .filter(|w| present.contains(w.as_str()))
        .count();
    !wanted.is_empty() && found * 5 >= wanted.len() * 3
}

/// A claimed rule is a labelled one when either contains the other.
pub fn same_rule(claim: &str, label: &str) -> bool {
    let (claim, label) = (words(claim), words(label));
    claim.contains(&label) || (claim.split(' ').count() >= 3 && label.contains(&claim))
}

/// The lines a summary presents as the user's rules: `[user rule]` lines
/// and the entries of a section whose title names rules or constraints.
pub fn rule_claims(summary: &str) -> Vec<String> {
    let mut claims = Vec::new();
    let mut in_rules = false;
    for line in summary.lines() {
        if let Some(title) = line.strip_prefix('#') {
            let title = title.to_lowercase();
            in_rules = title.contains("rule") || title.contains("constraint");
        } else if let Some(rule) = line.strip_prefix("[user rule] ") {
            claims.push(rule.to_string());
        } else if let Some(entry) = line.strip_prefix("- ").filter(|_| in_rules) {
            claims.push(entry.to_string());
        } else if line.starts_with('<') {
            in_rules = false;
        }
    }
    claims
}

/// Entries of the summary outside the file sections, continuation lines
/// (indented by two spaces) joined to theirs: `(true, text)` for a
/// labelled `[…]` line (verbatim by design), `(false, text)` for a `- `
/// entry.
fn body_entries(summary: &str) -> Vec<(bool, String)> {
    let mut entries: Vec<(bool, String)> = Vec::new();
    let mut in_files = false;
    let mut open = false;
    for line in summary.lines().map(str::trim_end) {
        match line {
            "<read-files>" | "<modified-files>" => in_files = true,
            "</read-files>" | "</modified-files>" => in_files = false,
            _ if in_files => {}
            _ => {
                if let (true, Some(more)) = (open, line.strip_prefix("  ")) {
                    let last = entries.last_mut().expect("an open entry");
                    last.1.push(' ');
                    last.1.push_str(more.trim());
                    continue;
                }
                open = false;
                if let Some(entry) = line.strip_prefix("- ") {
                    entries.push((false, entry.to_string()));
                    open = true;
                } else if line.starts_with('[') {
                    entries.push((true, line.to_string()));
                }
            }
        }
    }
    entries
}

/// A piece of a sentence or of a list rather than a statement: a code span
/// cut in half, a list item torn from its list, a lead-in without what it
/// introduces, or a line starting mid-sentence.
pub fn is_fragment(entry: &str) -> bool {
    let entry = entry.trim();
    let Some(first) = entry.chars().next() else {
        return false;
    };
    if entry.matches('`').count() % 2 == 1 {
        return true;
    }
    if entry.starts_with("- ") || entry.starts_with("* ") || entry.ends_with(':') {
        return true;
    }
    if matches!(first, ')' | ',' | ';' | '.' | ']' | '}' | '|') {
        return true;
    }
    let first_word = entry.split_whitespace().next().unwrap_or("");
    let code_like = first_word.contains(['/', '.', '_', '`', '(', '=', '-', '@', '$', '#']);
    first.is_ascii_lowercase() && !code_like
}

/// Repeated lines beyond their first occurrence (headings, tags and blank
/// lines aside; the message id a line cites, ` [m12]`, is no part of what
/// it says).
fn duplicates(summary: &str) -> usize {
    let mut seen = std::collections::HashMap::new();
    for line in summary.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') || line.starts_with('<') {
            continue;
        }
        let said = line
            .strip_suffix(']')
            .and_then(|rest| rest.rsplit_once(" ["))
            .filter(|(_, id)| !id.contains(char::is_whitespace))
            .map_or(line, |(said, _)| said);
        *seen.entry(said).or_insert(0usize) += 1;
    }
    seen.values().map(|n| n - 1).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragments_are_told_from_statements() {
        for fragment in [
            "ts` file has an old custom implementation with `chalk` instead",
            "- Uses `Text` and `Spacer` components instead",
            "Let me fix the test by passing a background function instead of RGB:",
            "repeat(width)` instead of `\"\"`",
            "instead of patching it",
        ] {
            assert!(is_fragment(fragment), "{fragment}");
        }
        for statement in [
            "\"ok, make muted a little brighter\"",
            "Fixed all TUI test files to use proper themes instead of chalk directly.",
            "`npm run build` ×15, last ok",
            "packages/tui/src/components/text.ts: edited 3 times",
        ] {
            assert!(!is_fragment(statement), "{statement}");
        }
    }
}
