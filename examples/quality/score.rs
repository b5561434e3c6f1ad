//! Scores a compacted context against the probes, and the summary itself
//! for noise.

use std::collections::{BTreeMap, HashSet};

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

    /// One more item, found or not.
    pub fn count(&mut self, found: bool) {
        self.total += 1;
        self.found += usize::from(found);
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
    /// The user's labelled words (answers, queued messages, rejections,
    /// requests at the end of long messages) carried by the context, in
    /// all and by kind.
    #[serde(default)]
    pub user_words: Recall,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub user_words_by_kind: BTreeMap<String, Recall>,
    /// Labelled outcomes of actions (hashes, ids, test outcomes) carried.
    #[serde(default)]
    pub results: Recall,
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
    pub user_words: Vec<UserWords>,
    pub results: Vec<String>,
}

/// Words of the user's that the summary must carry (`userWords` in
/// `labels.json`).
#[derive(Debug, Clone, Default)]
pub struct UserWords {
    /// `answer`, `queued`, `rejection`, `long-ending`, `slash-args`.
    pub kind: String,
    /// What they typed, in a few words (a rejection's reply; empty when
    /// they typed none).
    pub words: String,
    /// A rejection's call, in a few words of its command or file.
    pub call: Option<String>,
}

impl UserWords {
    /// The `userWords` of one transcript's labels.
    pub fn list(label: &serde_json::Value) -> Vec<UserWords> {
        let text = |x: &serde_json::Value, key: &str| x[key].as_str().map(str::to_string);
        label["userWords"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|x| UserWords {
                kind: text(x, "kind").unwrap_or_default(),
                words: text(x, "words").unwrap_or_default(),
                call: text(x, "call"),
            })
            .collect()
    }

    /// As a miss prints it.
    fn shown(&self) -> String {
        match (&self.call, self.words.is_empty()) {
            (Some(call), true) => call.clone(),
            (Some(call), false) => format!("{call} → \"{}\"", self.words),
            (None, _) => self.words.clone(),
        }
    }
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
            misses.push(miss(what, item));
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
        open_errors: Recall::of(probes.open_errors.iter().map(|e| e.line.as_str()), |l| {
            let error = probes.open_errors.iter().find(|e| e.line == l);
            let found =
                error.is_some_and(|e| e.signals.iter().any(|s| haystack.contains(&opening(s, 50))));
            note("open error", l, found)
        }),
        summary_tokens: tokens,
        ..Score::default()
    };
    let mut score = Score { misses, ..score };
    score_labelled(&mut score, extra, summary, context);
    score_noise(&mut score, summary);
    score
}

/// The hand labels of a real transcript beyond its rules: stale failures
/// listed as open, approved plans' steps, the user's shell commands and
/// other words, the results of actions.
fn score_labelled(score: &mut Score, extra: &Extra, summary: &str, context: &str) {
    let haystack = words(context);
    let misses = &mut score.misses;
    let mut note = |what: &str, item: &str, found: bool| {
        if !found {
            misses.push(miss(what, item));
        }
        found
    };
    let stale_errors = Recall::of(extra.stale_errors.iter().map(String::as_str), |e| {
        let open = words(&section(summary, "Errors still open"));
        let listed = !words(e).is_empty() && open.contains(&opening(e, 40));
        !note("stale error listed as open", e, !listed)
    });
    let plans = Recall::of(extra.plans.iter().flatten().map(String::as_str), |step| {
        let kept = context
            .lines()
            .any(|line| mostly_present(step, &words(line)));
        note("plan step", step, kept)
    });
    let shell = Recall::of(extra.shell.iter().map(String::as_str), |c| {
        let found = !words(c).is_empty() && haystack.contains(&words(c));
        note("user shell command", c, found)
    });
    let carried = Carried::of(extra, context, summary);
    score.misses.extend(carried.misses);
    score.stale_errors = stale_errors;
    score.plans = plans;
    score.shell = shell;
    score.user_words = carried.user_words;
    score.user_words_by_kind = carried.by_kind;
    score.results = carried.results;
}

/// The summary's noise: its entry lines, the fragments among them (each
/// a miss) and the lines it repeats.
fn score_noise(score: &mut Score, summary: &str) {
    score.lines = summary
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with('<'))
        .count();
    let fragments: Vec<String> = body_entries(summary)
        .into_iter()
        .filter(|(label, entry)| !label && is_fragment(entry))
        .map(|(_, entry)| entry)
        .collect();
    score.fragments = fragments.len();
    score.duplicates = duplicates(summary);
    for entry in fragments {
        score.misses.push(format!("(noise) fragment: {entry}"));
    }
}

/// How a miss prints: what was looked for, and the item, clipped.
fn miss(what: &str, item: &str) -> String {
    format!("{what}: {}", item.chars().take(120).collect::<String>())
}

/// What the context carries of the user's labelled words and of the
/// labelled results of actions, with what it misses.
#[derive(Default)]
struct Carried {
    user_words: Recall,
    by_kind: BTreeMap<String, Recall>,
    results: Recall,
    misses: Vec<String>,
}

impl Carried {
    fn of(extra: &Extra, context: &str, summary: &str) -> Carried {
        let lines = ContextLines::of(context, summary);
        let mut carried = Carried::default();
        for item in &extra.user_words {
            let why_not = lines.user_words(item);
            carried.user_words.count(why_not.is_none());
            let kind = carried.by_kind.entry(item.kind.clone()).or_default();
            kind.count(why_not.is_none());
            if let Some(why) = why_not {
                let what = format!("user's words ({}{why})", item.kind);
                carried.misses.push(miss(&what, &item.shown()));
            }
        }
        for result in &extra.results {
            let found = lines.result(result);
            carried.results.count(found);
            if !found {
                carried.misses.push(miss("result of an action", result));
            }
        }
        carried
    }
}

/// The compacted context as units to find labelled words in: the
/// summary's items (a line, with the lines that continue it joined) and
/// the kept messages' lines, each also as stems. Words are looked for in
/// one unit, as a person would quote or clip them; around a kept line
/// too, since a kept call's command and its output are lines apart.
struct ContextLines {
    raw: Vec<String>,
    stems: Vec<String>,
    /// Units before this one are the summary's.
    kept_from: usize,
}

impl ContextLines {
    fn of(context: &str, summary: &str) -> ContextLines {
        let mut raw = items(summary);
        let kept_from = raw.len();
        let kept = context.replacen(summary, "", 1);
        raw.extend(kept.lines().map(str::to_string));
        let stems = raw.iter().map(|line| stems(line)).collect();
        ContextLines {
            raw,
            stems,
            kept_from,
        }
    }

    /// `None` when the context carries the item, else why not: a
    /// rejection must be said refused with its call's words, and its
    /// reply (if any) carried like any words of the user's.
    fn user_words(&self, item: &UserWords) -> Option<&'static str> {
        let said = item
            .call
            .as_deref()
            .is_none_or(|call| self.said_rejected(call));
        let words = stems(&item.words);
        let carried = words.is_empty() || self.stems.iter().any(|l| carries(&words, l, true));
        match (said, carried, &item.call) {
            (true, true, _) => None,
            (false, true, _) => Some(", not said rejected"),
            (false, false, _) => Some(", not said rejected, reply missing"),
            (true, false, Some(_)) => Some(", reply missing"),
            (true, false, None) => Some(""),
        }
    }

    /// A unit says a call was refused, and the call's words are on it
    /// (in the summary) or on a kept line shortly before or after it (a
    /// kept call's arguments precede its result): a path or a name (one
    /// word) as written, else all its words of four letters or more.
    fn said_rejected(&self, call: &str) -> bool {
        let name = !call.trim().contains(char::is_whitespace);
        let call = stems(call);
        let named = |line: &String| {
            let present: HashSet<&str> = line.split(' ').collect();
            if name {
                format!(" {line} ").contains(&format!(" {call} "))
            } else {
                call.split(' ')
                    .filter(|w| w.chars().count() >= 4 || has_digit(w))
                    .all(|w| present.contains(w))
            }
        };
        self.raw
            .iter()
            .enumerate()
            .any(|(i, line)| refuses(line) && self.stems[self.around(i, 6, 3)].iter().any(named))
    }

    /// A labelled result: its ids (the words with a digit) on one unit,
    /// its other words mostly on it (or on the kept lines around it); a
    /// name (one word: a branch, a URL) as written; one naming a passing
    /// outcome ("ok", "passed") needs a passing word there too.
    fn result(&self, result: &str) -> bool {
        let wanted = stems(result);
        let name = !result.trim().contains(char::is_whitespace);
        let needs_pass = wanted.split(' ').any(passing);
        let rest: Vec<&str> = wanted.split(' ').filter(|w| !passing(w)).collect();
        let ids: Vec<&str> = rest.iter().copied().filter(|w| has_digit(w)).collect();
        let rest = rest.join(" ");
        (0..self.stems.len()).any(|i| {
            let unit: HashSet<&str> = self.stems[i].split(' ').collect();
            let near = self.stems[self.around(i, 4, 2)].join(" ");
            let found = if name {
                format!(" {near} ").contains(&format!(" {rest} "))
            } else {
                carries(&rest, &near, false)
            };
            ids.iter().all(|id| unit.contains(id))
                && (!needs_pass || near.split(' ').any(passing))
                && found
        })
    }

    /// Unit `i`, and for a kept line the kept lines from `before` lines
    /// before it to `after` after it.
    fn around(&self, i: usize, before: usize, after: usize) -> std::ops::Range<usize> {
        if i < self.kept_from {
            return i..i + 1;
        }
        i.saturating_sub(before).max(self.kept_from)..(i + after + 1).min(self.stems.len())
    }
}

/// The summary's lines, each line that continues an item (one that
/// starts no list entry, heading, tag or paragraph) joined to it.
fn items(summary: &str) -> Vec<String> {
    let mut items: Vec<String> = Vec::new();
    for line in summary.lines() {
        let text = line.trim_start();
        let numbered = text
            .split_once(". ")
            .is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
        let starts = text.is_empty() || numbered || text.starts_with(['-', '*', '#', '<', '[']);
        match items.last_mut() {
            Some(item) if !starts => {
                item.push(' ');
                item.push_str(text);
            }
            _ => items.push(line.to_string()),
        }
    }
    items
}

/// A line that says a call was refused by the person: it names the user
/// or quotes them (a push the remote rejected, git's `[rejected]`, is no
/// refusal).
fn refuses(line: &str) -> bool {
    let line = line.to_lowercase();
    let refusal = [
        "reject",
        "refus",
        "declin",
        "doesn't want",
        "did not want",
        "didn't want",
    ];
    !line.contains("[rejected]")
        && (line.contains("user") || line.contains('"'))
        && refusal.iter().any(|marker| line.contains(marker))
}

/// A stem that says a run passed.
fn passing(stem: &str) -> bool {
    matches!(stem, "ok" | "pass" | "green" | "succee" | "succes")
}

/// `label` (stems) is carried by `line` (stems): every word with a digit
/// (a hash, an id, a number) is on it, and most of the label's words of
/// four letters or more (`mostly_present`). A label with fewer than three
/// such words is found as written, in order, when `quote` (it is what the
/// user typed), else needs them all; one with none, as written.
fn carries(label: &str, line: &str, quote: bool) -> bool {
    let present: HashSet<&str> = line.split(' ').collect();
    let tokens: Vec<&str> = label.split(' ').filter(|w| !w.is_empty()).collect();
    let ids = tokens.iter().filter(|w| has_digit(w));
    if tokens.is_empty() || !ids.clone().all(|w| present.contains(w)) {
        return false;
    }
    let long: HashSet<&&str> = tokens
        .iter()
        .filter(|w| !has_digit(w) && w.chars().count() >= 4)
        .collect();
    if long.len() >= 3 || (!quote && !long.is_empty()) {
        mostly_present(label, line)
    } else {
        format!(" {line} ").contains(&format!(" {label} "))
    }
}

fn has_digit(word: &str) -> bool {
    word.chars().any(|c| c.is_ascii_digit())
}

/// `text` as `words` gives it, each word as its `stem`.
fn stems(text: &str) -> String {
    words(text)
        .split(' ')
        .map(stem)
        .collect::<Vec<_>>()
        .join(" ")
}

/// A word without one ending (`-ing`, `-ed`, `-es`, `-s`) and a final
/// `-e`, cut to six letters, so that "pushed" finds "push" and "included"
/// "include"; a word with a digit (a hash, a number) stays whole.
fn stem(word: &str) -> String {
    if has_digit(word) {
        return word.to_string();
    }
    let long_enough = |rest: &&str| rest.chars().count() >= 4;
    let mut stem = ["ing", "ed", "es", "s"]
        .iter()
        .find_map(|ending| word.strip_suffix(ending).filter(long_enough))
        .unwrap_or(word);
    stem = stem.strip_suffix('e').filter(long_enough).unwrap_or(stem);
    stem.chars().take(6).collect()
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
