//! compactd beside the agent's own summary: for every Claude Code
//! compaction in the labelled transcripts (`compactions` in
//! `tests/data/quality/labels.json`), the transcript is cut where Claude
//! Code compacted, compactd compacts all of it (nothing kept verbatim), and
//! both summaries are scored with the same hand labels: the user's rules,
//! the latest request, open errors, pending plan steps, modified files
//! (recall against the transcript's own edits, and the precision of a
//! file list), the precision of a "User rules" section, tokens.

use serde_json::Value;

use crate::probes::{opening, words};
use crate::score::{mostly_present, rule_claims, same_rule, Recall};

/// One compaction's hand labels.
#[derive(Debug, Clone, Default)]
pub struct Labels {
    pub rules: Vec<String>,
    pub latest_request: Option<String>,
    pub open_errors: Vec<String>,
    pub pending_steps: Vec<String>,
}

impl Labels {
    pub fn of(label: &Value) -> Labels {
        let strings = |key: &str, field: &str| -> Vec<String> {
            label[key]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|x| x[field].as_str().or(x.as_str()).map(str::to_string))
                .collect()
        };
        Labels {
            rules: strings("rules", ""),
            latest_request: label["latestRequest"].as_str().map(str::to_string),
            open_errors: strings("openErrors", ""),
            pending_steps: strings("pendingSteps", "step"),
        }
    }
}

/// One summary's scores.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Scores {
    pub rules: Recall,
    pub latest_request: Option<bool>,
    pub open_errors: Recall,
    pub pending_steps: Recall,
    pub modified_files: Recall,
    /// Entries of its modified-files list that the transcript modified
    /// (`None`: it gives no list).
    pub file_precision: Option<Recall>,
    /// Lines it presents as the user's rules that are labelled rules
    /// (`None`: it presents none).
    pub rule_precision: Option<Recall>,
    pub tokens: u64,
    #[serde(skip)]
    pub misses: Vec<String>,
}

/// Scores `summary` against the labels and the files the transcript
/// modified up to the cut (`cwd`: where relative paths start).
pub fn score(summary: &str, labels: &Labels, modified: &[String], cwd: Option<&str>) -> Scores {
    let haystack = words(summary);
    let has = |needle: &str| {
        let needle = words(needle);
        !needle.is_empty() && haystack.contains(&needle)
    };
    let has_path = |path: &str| {
        has(path)
            || cwd
                .and_then(|cwd| path.strip_prefix(cwd))
                .is_some_and(|rest| has(rest.trim_start_matches('/')))
    };
    let mut misses = Vec::new();
    let mut note = |what: &str, item: &str, found: bool| {
        if !found {
            misses.push(format!(
                "{what}: {}",
                item.chars().take(100).collect::<String>()
            ));
        }
        found
    };
    let claims = rule_claims(summary);
    let listed = modified_list(summary);
    Scores {
        rules: Recall::of(labels.rules.iter().map(String::as_str), |r| {
            note("rule", r, has(r))
        }),
        latest_request: labels.latest_request.as_deref().map(|r| {
            let opening = opening(r, 60);
            note("latest request", r, haystack.contains(&opening))
        }),
        open_errors: Recall::of(labels.open_errors.iter().map(String::as_str), |e| {
            note("open error", e, haystack.contains(&opening(e, 40)))
        }),
        pending_steps: Recall::of(labels.pending_steps.iter().map(String::as_str), |step| {
            let kept = summary.lines().any(|l| mostly_present(step, &words(l)));
            note("pending step", step, kept)
        }),
        modified_files: Recall::of(modified.iter().map(String::as_str), |p| {
            note("modified file", p, has_path(p))
        }),
        file_precision: (!listed.is_empty()).then(|| {
            Recall::of(listed.iter().map(String::as_str), |entry| {
                let truth = modified.iter().any(|p| same_path(p, entry, cwd));
                note("listed as modified, not modified", entry, truth)
            })
        }),
        rule_precision: (!claims.is_empty()).then(|| {
            Recall::of(claims.iter().map(String::as_str), |claim| {
                let labelled = labels.rules.iter().any(|l| same_rule(claim, l));
                note("presented as a rule, not one", claim, labelled)
            })
        }),
        tokens: compactd::tokens::Encoding::O200k.count(summary),
        misses,
    }
}

/// The entries of a `<modified-files>` section.
fn modified_list(summary: &str) -> Vec<String> {
    let Some(start) = summary.find("<modified-files>") else {
        return Vec::new();
    };
    let rest = &summary[start + "<modified-files>".len()..];
    let end = rest.find("</modified-files>").unwrap_or(rest.len());
    rest[..end]
        .lines()
        .map(|l| l.trim().trim_start_matches("- ").to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

fn same_path(truth: &str, entry: &str, cwd: Option<&str>) -> bool {
    let relative = |p: &str| {
        cwd.and_then(|cwd| p.strip_prefix(cwd))
            .map(|rest| rest.trim_start_matches('/').to_string())
            .unwrap_or_else(|| p.to_string())
    };
    let entry = entry.split(" (").next().unwrap_or(entry);
    relative(truth) == relative(entry)
}

/// Claude Code's summary on the isCompactSummary line (1-based `line`).
pub fn agent_summary(bytes: &[u8], line: usize) -> Option<String> {
    let text = String::from_utf8_lossy(bytes);
    let entry: Value = serde_json::from_str(text.lines().nth(line.checked_sub(1)?)?).ok()?;
    if entry["isCompactSummary"] != true {
        return None;
    }
    let content = &entry["message"]["content"];
    let text = match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => return None,
    };
    Some(text)
}

/// The transcript before the compaction whose summary is on `line`: up to
/// its `compact_boundary` line (or the summary line itself).
pub fn before(bytes: &[u8], line: usize) -> Vec<u8> {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text.lines().collect();
    let summary = line.saturating_sub(1).min(lines.len());
    // The boundary is a line or two before the summary.
    let end = (summary.saturating_sub(3)..summary)
        .rev()
        .find(|&i| lines[i].contains("\"compact_boundary\""))
        .unwrap_or(summary);
    let mut out = lines[..end].join("\n").into_bytes();
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cut_is_before_the_boundary() {
        let transcript = b"{\"a\":1}\n{\"subtype\":\"compact_boundary\"}\n{\"isCompactSummary\":true,\"message\":{\"content\":\"S\"}}\n";
        assert_eq!(before(transcript, 3), b"{\"a\":1}\n");
        assert_eq!(agent_summary(transcript, 3).as_deref(), Some("S"));
        assert_eq!(agent_summary(transcript, 1), None);
    }

    #[test]
    fn a_listed_file_is_checked_against_the_edits() {
        let summary = "## User rules\n- \"Never push.\"\n- \"I see.\"\n<modified-files>\nsrc/a.rs\nsrc/b.rs (deleted)\n</modified-files>";
        let labels = Labels {
            rules: vec!["never push".into()],
            ..Labels::default()
        };
        let modified = vec!["/w/src/a.rs".to_string()];
        let scores = score(summary, &labels, &modified, Some("/w"));
        assert_eq!((scores.rules.found, scores.rules.total), (1, 1));
        assert_eq!(
            (scores.modified_files.found, scores.modified_files.total),
            (1, 1)
        );
        let files = scores.file_precision.unwrap();
        assert_eq!((files.found, files.total), (1, 2));
        let rules = scores.rule_precision.unwrap();
        assert_eq!((rules.found, rules.total), (1, 2));
    }
}
