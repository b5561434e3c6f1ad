//! The tables, the targets and the JSON history.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::score::Score;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Row {
    pub transcript: String,
    pub cut: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    #[serde(default)]
    pub compactions: usize,
    #[serde(default)]
    pub messages_summarized: usize,
    #[serde(default)]
    pub tokens_before: u64,
    #[serde(default)]
    pub tokens_after: u64,
    #[serde(default)]
    pub duration_ms: u64,
    #[serde(default)]
    pub score: Score,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub summarizer: String,
    pub rows: Vec<Row>,
}

impl Report {
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let json = serde_json::to_string_pretty(self).expect("reports serialize");
        std::fs::write(path, json + "\n")
    }

    pub fn read(path: &Path) -> Result<Report, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// The summary tokens of the same case: transcript and cut, where a
    /// chain is one case whatever window its label names (the window
    /// follows the imported transcript's size, which importers change).
    fn baseline_tokens(&self, row: &Row) -> Option<u64> {
        self.rows
            .iter()
            .find(|r| {
                r.transcript == row.transcript
                    && cut_kind(&r.cut) == cut_kind(&row.cut)
                    && r.skipped.is_none()
            })
            .map(|r| r.score.summary_tokens)
    }
}

/// `chain (window 20k)` → `chain`; other cuts as they are.
fn cut_kind(cut: &str) -> &str {
    cut.split(" (").next().unwrap_or(cut)
}

fn percent(ratio: f64) -> String {
    format!("{:.0}%", ratio * 100.0)
}

fn yes_no(value: Option<bool>) -> &'static str {
    match value {
        Some(true) => "yes",
        Some(false) => "**no**",
        None => "–",
    }
}

fn recall(r: crate::score::Recall) -> String {
    if r.total == 0 {
        "–".into()
    } else {
        format!("{}/{}", r.found, r.total)
    }
}

/// Prints the table as Markdown, with the change in summary tokens against
/// `baseline` when given.
pub fn print_table(report: &Report, baseline: Option<&Report>) {
    println!("\n### Summarizer: {}\n", report.summarizer);
    let delta = baseline.is_some();
    println!(
        "| transcript | cut | summarized | modified files | read files | first task | latest request | rule precision | rules kept | open errors | summary tokens |{} fragments | duplicates |",
        if delta { " vs before |" } else { "" }
    );
    println!(
        "|---|---|---|---|---|---|---|---|---|---|---|{}---|---|",
        if delta { "---|" } else { "" }
    );
    for row in &report.rows {
        if let Some(why) = &row.skipped {
            println!("| {} | {} | skipped: {why} |", row.transcript, row.cut);
            continue;
        }
        let s = &row.score;
        let summarized = if row.compactions > 1 {
            format!(
                "{} in {} compactions",
                row.messages_summarized, row.compactions
            )
        } else {
            row.messages_summarized.to_string()
        };
        let vs = match baseline.map(|b| b.baseline_tokens(row)) {
            Some(Some(old)) => format!(
                " {:+.0}% |",
                (s.summary_tokens as f64 / old as f64 - 1.0) * 100.0
            ),
            Some(None) => " – |".into(),
            None => String::new(),
        };
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |{vs} {} | {} |",
            row.transcript,
            row.cut,
            summarized,
            percent(s.modified_files.ratio()),
            percent(s.read_files.ratio()),
            yes_no(s.first_task),
            yes_no(s.latest_request),
            s.rule_precision()
                .map(|p| format!("{:.2} ({})", p, recall(s.rule_claims)))
                .unwrap_or("– (0 claimed)".into()),
            recall(s.rules),
            recall(s.open_errors),
            s.summary_tokens,
            s.fragments,
            s.duplicates,
        );
    }
}

/// The defect kinds of the built-in summary, row by row and in total:
/// rules in the rules section, rule precision, stale errors listed as
/// open, approved plans' steps kept, the user's shell commands kept, the
/// user's other words kept (answers, queued messages, rejections, the
/// ends of long messages; by kind in a table of their own), the results
/// of actions kept, repeated lines.
pub fn print_kinds(report: &Report) {
    println!(
        "\n#### What an agent that carries on needs: {}\n",
        report.summarizer
    );
    println!("| transcript | cut | rules in \"User rules\" | rule precision | stale errors listed as open | plan steps kept | user shell commands | user's words kept | results of actions | repeated lines |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let mut total = Kinds::default();
    for row in report.rows.iter().filter(|r| r.skipped.is_none()) {
        let s = &row.score;
        total.add(s);
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {}/{} |",
            row.transcript,
            row.cut,
            recall(s.rules_listed),
            recall(s.rule_claims),
            if s.stale_errors.total == 0 {
                "–".into()
            } else {
                recall(s.stale_errors)
            },
            recall(s.plans),
            recall(s.shell),
            recall(s.user_words),
            recall(s.results),
            s.duplicates,
            s.lines
        );
    }
    println!(
        "| **all** | | **{}** | **{}** | **{}** | **{}** | **{}** | **{}** | **{}** | **{}** |",
        share(total.rules),
        share(total.claims),
        recall(total.stale),
        share(total.plans),
        share(total.shell),
        share(total.user_words),
        share(total.results),
        share_of(total.duplicates, total.lines),
    );
    print_user_words(&total);
}

/// The kinds of the user's words labelled in `labels.json` (`userWords`).
const USER_WORDS: [&str; 5] = ["answer", "queued", "rejection", "long-ending", "slash-args"];

/// The user's words kept, by kind, over all rows: the labelled kinds,
/// and the `<bash-input>` commands (the shell column).
fn print_user_words(total: &Kinds) {
    if total.user_words.total == 0 && total.shell.total == 0 {
        return;
    }
    println!("\n| the user's words, by kind | kept |\n|---|---|");
    let others = total
        .by_kind
        .keys()
        .filter(|k| !USER_WORDS.contains(&k.as_str()));
    for kind in USER_WORDS.into_iter().chain(others.map(String::as_str)) {
        let kept = total.by_kind.get(kind).copied().unwrap_or_default();
        println!("| {kind} | {} |", share(kept));
    }
    println!("| bash-input (the shell column) | {} |", share(total.shell));
}

#[derive(Default)]
struct Kinds {
    rules: crate::score::Recall,
    claims: crate::score::Recall,
    stale: crate::score::Recall,
    plans: crate::score::Recall,
    shell: crate::score::Recall,
    user_words: crate::score::Recall,
    by_kind: std::collections::BTreeMap<String, crate::score::Recall>,
    results: crate::score::Recall,
    duplicates: usize,
    lines: usize,
}

impl Kinds {
    fn add(&mut self, s: &Score) {
        for (sum, part) in [
            (&mut self.rules, s.rules_listed),
            (&mut self.claims, s.rule_claims),
            (&mut self.stale, s.stale_errors),
            (&mut self.plans, s.plans),
            (&mut self.shell, s.shell),
            (&mut self.user_words, s.user_words),
            (&mut self.results, s.results),
        ] {
            *sum = add(*sum, part);
        }
        for (kind, part) in &s.user_words_by_kind {
            let sum = self.by_kind.entry(kind.clone()).or_default();
            *sum = add(*sum, *part);
        }
        self.duplicates += s.duplicates;
        self.lines += s.lines;
    }
}

fn share(r: crate::score::Recall) -> String {
    if r.total == 0 {
        "–".into()
    } else {
        format!("{} ({}/{})", percent(r.ratio()), r.found, r.total)
    }
}

fn share_of(part: usize, whole: usize) -> String {
    format!(
        "{:.1}% ({part}/{whole})",
        part as f64 * 100.0 / whole.max(1) as f64
    )
}

/// The targets, row by row: every modified file, the first task
/// and the latest request present, rule precision at least 0.9, and a
/// summary no larger than the baseline's. The misses, as sentences.
pub fn missed_targets(report: &Report, baseline: Option<&Report>) -> Vec<String> {
    let mut misses = Vec::new();
    for row in report.rows.iter().filter(|r| r.skipped.is_none()) {
        let s = &row.score;
        let case = format!("{} at {}", row.transcript, row.cut);
        if s.modified_files.ratio() < 1.0 {
            misses.push(format!(
                "{case}: modified-file recall {}",
                recall(s.modified_files)
            ));
        }
        if s.first_task == Some(false) {
            misses.push(format!("{case}: the first task is missing"));
        }
        if s.latest_request == Some(false) {
            misses.push(format!("{case}: the latest request is missing"));
        }
        if s.stale_errors.found > 0 {
            misses.push(format!(
                "{case}: {} stale errors listed as open",
                s.stale_errors.found
            ));
        }
        if s.rule_precision().is_some_and(|p| p < 0.9) {
            misses.push(format!("{case}: rule precision {}", recall(s.rule_claims)));
        }
        if let Some(old) = baseline.and_then(|b| b.baseline_tokens(row)) {
            if s.summary_tokens > old {
                misses.push(format!(
                    "{case}: {} summary tokens, the baseline had {old}",
                    s.summary_tokens
                ));
            }
        }
    }
    misses
}

/// One compaction of Claude Code's, its summary's scores and compactd's.
#[derive(Serialize)]
pub struct VersusRow {
    pub name: String,
    pub agent: crate::versus::Scores,
    pub ours: crate::versus::Scores,
}

/// The scores of many summaries added up.
#[derive(Default)]
struct Totals {
    rules: Recall,
    latest: Recall,
    errors: Recall,
    steps: Recall,
    files: Recall,
    file_precision: Option<Recall>,
    rule_precision: Option<Recall>,
    tokens: u64,
}

type Recall = crate::score::Recall;

fn add(a: Recall, b: Recall) -> Recall {
    Recall {
        found: a.found + b.found,
        total: a.total + b.total,
    }
}

impl Totals {
    fn of<'a>(scores: impl Iterator<Item = &'a crate::versus::Scores>) -> Totals {
        let mut t = Totals::default();
        let add_some = |sum: Option<Recall>, r: Option<Recall>| match (sum, r) {
            (sum, None) => sum,
            (sum, Some(r)) => Some(add(sum.unwrap_or_default(), r)),
        };
        for s in scores {
            t.rules = add(t.rules, s.rules);
            let latest = s.latest_request.map(|kept| Recall {
                found: usize::from(kept),
                total: 1,
            });
            t.latest = add(t.latest, latest.unwrap_or_default());
            t.errors = add(t.errors, s.open_errors);
            t.steps = add(t.steps, s.pending_steps);
            t.files = add(t.files, s.modified_files);
            t.file_precision = add_some(t.file_precision, s.file_precision);
            t.rule_precision = add_some(t.rule_precision, s.rule_precision);
            t.tokens += s.tokens;
        }
        t
    }

    /// The rows of the table: label, value as shown, ratio (None: no
    /// such list).
    fn rows(&self) -> Vec<(&'static str, String, Option<f64>)> {
        let shown = |r: Recall| Some(r.ratio());
        let maybe = |r: Option<Recall>| r.map(|r| (recall(r), Some(r.ratio())));
        let mut rows = vec![
            ("user rules kept", recall(self.rules), shown(self.rules)),
            ("latest request", recall(self.latest), shown(self.latest)),
            ("open errors", recall(self.errors), shown(self.errors)),
            ("pending plan steps", recall(self.steps), shown(self.steps)),
            (
                "modified files (recall)",
                recall(self.files),
                shown(self.files),
            ),
        ];
        let (files, ratio) = maybe(self.file_precision).unwrap_or(("no list".into(), None));
        rows.push(("modified files (precision of the list)", files, ratio));
        let (rules, ratio) = maybe(self.rule_precision).unwrap_or(("no section".into(), None));
        rows.push(("\"User rules\" precision", rules, ratio));
        rows
    }
}

/// The comparison: one line per compaction, the totals (README), the
/// targets (compactd at least equal on every row, every modified file,
/// rule precision ≥ 95%), and JSON.
pub fn print_versus(rows: &[VersusRow], json: &Path) {
    if rows.is_empty() {
        println!("\nNo labelled Claude Code compaction to compare with.");
        return;
    }
    println!(
        "\n## compactd beside Claude Code's own summaries ({} compactions)\n",
        rows.len()
    );
    println!("| compaction | rules CC / compactd | latest request | open errors | pending steps | modified files | tokens |");
    println!("|---|---|---|---|---|---|---|");
    for row in rows {
        let (a, o) = (&row.agent, &row.ours);
        println!(
            "| {} | {} / {} | {} / {} | {} / {} | {} / {} | {} / {} | {} / {} |",
            row.name,
            recall(a.rules),
            recall(o.rules),
            yes_no(a.latest_request),
            yes_no(o.latest_request),
            recall(a.open_errors),
            recall(o.open_errors),
            recall(a.pending_steps),
            recall(o.pending_steps),
            recall(a.modified_files),
            recall(o.modified_files),
            a.tokens,
            o.tokens
        );
    }
    let (agent, ours) = (
        Totals::of(rows.iter().map(|r| &r.agent)),
        Totals::of(rows.iter().map(|r| &r.ours)),
    );
    println!(
        "\n| on the same messages | Claude Code's summary | compactd (offline) |\n|---|---|---|"
    );
    let mut misses = Vec::new();
    for ((what, theirs, their_ratio), (_, mine, my_ratio)) in
        agent.rows().into_iter().zip(ours.rows())
    {
        println!("| {what} | {theirs} | {mine} |");
        if let (Some(t), Some(m)) = (their_ratio, my_ratio) {
            if m + 1e-9 < t {
                misses.push(format!("{what}: compactd {mine} < Claude Code {theirs}"));
            }
        }
    }
    println!("| tokens | {} | {} |", agent.tokens, ours.tokens);
    if ours.files.ratio() < 1.0 {
        misses.push(format!(
            "modified files: {} (target: all)",
            recall(ours.files)
        ));
    }
    if let Some(p) = ours.rule_precision.filter(|p| p.ratio() < 0.95) {
        misses.push(format!(
            "\"User rules\" precision {} (target: 95%)",
            recall(p)
        ));
    }
    if misses.is_empty() {
        println!("\nComparison targets met.");
    } else {
        println!("\nComparison targets missed ({}):", misses.len());
        for miss in &misses {
            println!("- {miss}");
        }
    }
    for row in rows {
        for miss in &row.ours.misses {
            println!("  {}: compactd missed {miss}", row.name);
        }
    }
    match std::fs::create_dir_all(json.parent().unwrap_or(Path::new(".")))
        .and_then(|_| std::fs::write(json, serde_json::to_vec_pretty(rows).unwrap_or_default()))
    {
        Ok(()) => println!("JSON: {}", json.display()),
        Err(e) => println!("could not write {}: {e}", json.display()),
    }
}
