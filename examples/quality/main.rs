//! The summary quality benchmark. For every shared transcript it compacts
//! the conversation cut at a third, two thirds and the end (keeping a
//! quarter of it, at most the default 20,000 tokens, verbatim), and in a
//! chain of automatic compactions under a small window; then it scores the
//! compacted context against probes derived from the raw transcript by
//! code of its own: modified-file and read-file recall, the first task and
//! the latest request, rule precision and recall against the hand-labelled
//! rules in `tests/data/quality/rules.json`, open errors, the summary's
//! size and its noise (fragment and duplicated lines). One table per
//! summarizer (the offline one, and the local model of
//! `scripts/local-llm.sh` when it answers), and JSON for history.
//!
//!   cargo run --release --example quality -- [--baseline FILE] [--out DIR] [--llm auto|off|URL]

mod probes;
mod raw;
mod report;
mod run;
mod score;
mod versus;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::Parser;
use serde_json::json;

use compactd::config::Config;
use raw::Layout;
use report::{Report, Row};

/// The shared transcripts, by path under the transcripts folder.
const CORPUS: &[(&str, &str, Layout)] = &[
    ("pi large-session", "pi-session-jsonl/large-session.jsonl", Layout::Pi),
    ("pi before-compaction", "pi-session-jsonl/before-compaction.jsonl", Layout::Pi),
    ("cc JSSoundRecorder", "claude-code-jsonl/-Users-dain-workspace-JSSoundRecorder/7acd37a8-2745-4b58-a8a9-46164b22ad9e.jsonl", Layout::ClaudeCode),
    ("cc claude-code-log", "claude-code-jsonl/-Users-dain-workspace-claude-code-log-sample/37f83ec9-f2ea-42a9-925e-0d5c105cb6e8.jsonl", Layout::ClaudeCode),
    ("cc coderabbit", "claude-code-jsonl/-Users-dain-workspace-coderabbit-review-helper/cb2e607c-c758-415a-8b45-c49e4631906a.jsonl", Layout::ClaudeCode),
    ("cc deep-manifest", "claude-code-jsonl/-src-deep-manifest/a7da6a22-facc-4fcd-8bab-f83c87862004.jsonl", Layout::ClaudeCode),
    ("swe-agent marshmallow", "swe-agent-traj/marshmallow-code__marshmallow-1867.traj", Layout::OpenAiDocument),
];

/// Shared transcripts in formats compactd does not import.
const NOT_IMPORTED: &[(&str, &str)] = &[
    (
        "openhands-trajectory/basic_gui_mode.json",
        "OpenHands event streams",
    ),
    (
        "aider-chat-history-md/AlexShchuka-mozgoslav/.aider.chat.history.md",
        "Aider chat history",
    ),
];

#[derive(Parser)]
#[command(about = "Scores compactd's summaries on the shared transcripts")]
struct Args {
    /// The shared transcripts folder.
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/transcripts"))]
    transcripts: PathBuf,
    /// Where the JSON reports go (one file per summarizer).
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/target/quality"))]
    out: PathBuf,
    /// A previous offline report: adds its summary sizes to the table and
    /// checks that no summary grew.
    #[arg(long)]
    baseline: Option<PathBuf>,
    /// The local model: `auto` (COMPACTD_TEST_LLM_URL, else
    /// `scripts/local-llm.sh` when its server answers), `off`, or a base URL.
    #[arg(long, default_value = "auto")]
    llm: String,
    /// The local model only summarizes cases with at most this many tokens
    /// to summarize (it answers in 15–30 s per 2,000-token chunk).
    #[arg(long, default_value_t = 12_000)]
    llm_max_input: u64,
    /// Prints each case's summary to stderr.
    #[arg(long)]
    show: bool,
}

struct Case {
    name: String,
    cut: String,
    bytes: Vec<u8>,
    probes: probes::Probes,
    labels: Vec<String>,
    extra: score::Extra,
    chain: bool,
    /// Recent tokens kept (else a quarter of the conversation).
    keep: Option<u64>,
}

/// The real transcripts of `tests/data/quality/` are compacted at their
/// end keeping this many recent tokens, as a reader of the whole session
/// would meet it.
const FOUND_KEEP: u64 = 2_000;

fn main() {
    let args = Args::parse();
    if !args.transcripts.is_dir() {
        println!(
            "SKIP: no shared transcripts at {}",
            args.transcripts.display()
        );
        return;
    }
    let labels = load_labels();
    let mut cases = cases(&args.transcripts, &labels);
    cases.extend(found_cases());
    for (path, format) in NOT_IMPORTED {
        println!("not scored: {path} ({format}: not a format compactd imports)");
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let baseline = args
        .baseline
        .as_deref()
        .map(|p| Report::read(p).unwrap_or_else(|e| panic!("--baseline {e}")));
    let offline = runtime.block_on(score_all(&cases, "offline", json!({}), None, args.show));
    finish(&offline, baseline.as_ref(), &args.out);
    runtime.block_on(versus_all(&args.out, args.show));
    match llm_url(&args.llm) {
        Ok(url) => {
            let options = json!({"summarizer": {
                "provider": "openai", "baseUrl": url, "model": "smollm2",
                "contextWindow": 4096, "maxTokens": 384, "temperature": 0, "seed": 42,
                "timeoutMs": 120000
            }});
            let name = "openai:smollm2 (local llama-server)";
            let llm = runtime.block_on(score_all(
                &cases,
                name,
                options,
                Some(args.llm_max_input),
                args.show,
            ));
            finish(&llm, None, &args.out);
        }
        Err(why) => println!("\nLLM table skipped: {why}"),
    }
}

fn finish(report: &Report, baseline: Option<&Report>, out: &Path) {
    report::print_table(report, baseline);
    report::print_kinds(report);
    let misses = report::missed_targets(report, baseline);
    if misses.is_empty() {
        println!("\nTargets met on every case.");
    } else {
        println!("\nTargets missed ({}):", misses.len());
        for miss in misses {
            println!("- {miss}");
        }
    }
    let file = out.join(format!(
        "{}.json",
        report
            .summarizer
            .split([' ', ':'])
            .next()
            .unwrap_or("report")
    ));
    match report.write(&file) {
        Ok(()) => println!("JSON: {}", file.display()),
        Err(e) => println!("could not write {}: {e}", file.display()),
    }
}

fn load_labels() -> BTreeMap<String, Vec<String>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/quality/rules.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let labels: BTreeMap<String, serde_json::Value> =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    labels
        .into_iter()
        .filter(|(key, _)| !key.starts_with('_'))
        .map(|(key, rules)| (key, serde_json::from_value(rules).expect("a list of rules")))
        .collect()
}

/// Every transcript at every cut, with its probes.
fn cases(dir: &Path, labels: &BTreeMap<String, Vec<String>>) -> Vec<Case> {
    let mut cases = Vec::new();
    for (name, path, layout) in CORPUS {
        let Ok(bytes) = std::fs::read(dir.join(path)) else {
            println!("not scored: {path} (missing)");
            continue;
        };
        let labels = labels.get(*path).cloned().unwrap_or_default();
        let units = raw::unit_count(*layout, &bytes);
        for (cut, units) in [
            ("1/3", units / 3),
            ("2/3", units * 2 / 3),
            ("end", units),
            ("chain", units),
        ] {
            let bytes = raw::prefix(*layout, &bytes, units);
            let probes = probes::derive(&raw::read(*layout, &bytes), &labels);
            cases.push(Case {
                name: name.to_string(),
                cut: cut.to_string(),
                chain: cut == "chain",
                bytes,
                probes,
                labels: labels.clone(),
                extra: score::Extra::default(),
                keep: None,
            });
        }
    }
    cases
}

/// The real transcripts in `tests/data/quality/transcripts/` (gzip, read
/// with the system's `gzip`), each with its labels.
fn found_cases() -> Vec<Case> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/quality");
    let text = std::fs::read_to_string(dir.join("labels.json")).expect("labels.json");
    let labels: BTreeMap<String, serde_json::Value> =
        serde_json::from_str(&text).expect("labels.json");
    let strings = |v: &serde_json::Value, key: &str, field: &str| -> Vec<String> {
        v[key]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|x| x[field].as_str().or(x.as_str()).map(str::to_string))
            .collect()
    };
    let mut cases = Vec::new();
    for (file, label) in labels.iter().filter(|(k, _)| !k.starts_with('_')) {
        let Some(bytes) = gunzip(&dir.join("transcripts").join(file)) else {
            continue;
        };
        let rules = strings(label, "rules", "");
        let probes = probes::derive(&raw::read(Layout::ClaudeCode, &bytes), &rules);
        let plans = label["plans"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| strings(p, "steps", ""))
            .collect();
        cases.push(Case {
            name: file.trim_end_matches(".jsonl.gz").to_string(),
            cut: format!("end (keep {}k)", FOUND_KEEP / 1000),
            bytes,
            probes,
            labels: rules,
            extra: score::Extra {
                plans,
                stale_errors: strings(label, "staleErrors", "error"),
                shell: strings(label, "shell", "command"),
                user_words: score::UserWords::list(label),
                results: strings(label, "results", "words"),
            },
            chain: false,
            keep: Some(FOUND_KEEP),
        });
    }
    cases
}

async fn score_all(
    cases: &[Case],
    summarizer: &str,
    options: serde_json::Value,
    max_input: Option<u64>,
    show: bool,
) -> Report {
    let mut rows = Vec::new();
    for case in cases {
        let started = std::time::Instant::now();
        let mut row = Row {
            transcript: case.name.clone(),
            cut: case.cut.clone(),
            skipped: None,
            compactions: 0,
            messages_summarized: 0,
            tokens_before: 0,
            tokens_after: 0,
            duration_ms: 0,
            score: Default::default(),
        };
        match compact(case, &options, max_input).await {
            Ok((outcome, label)) => {
                if show {
                    eprintln!(
                        "===== {} at {} ({summarizer})\n{}\n",
                        case.name, case.cut, outcome.summary
                    );
                }
                let tokens = compactd::tokens::Encoding::O200k.count(&outcome.summary);
                row.cut = label;
                row.score = score::score(
                    &case.probes,
                    &case.labels,
                    &case.extra,
                    &outcome.summary,
                    &outcome.context,
                    tokens,
                );
                if show {
                    for miss in &row.score.misses {
                        eprintln!("  missing {miss}");
                    }
                }
                row.compactions = outcome.compactions;
                row.messages_summarized = outcome.messages_summarized;
                row.tokens_before = outcome.tokens_before;
                row.tokens_after = outcome.tokens_after;
                row.duration_ms = outcome.duration_ms;
            }
            Err(why) => row.skipped = Some(why),
        }
        eprintln!(
            "{} at {}: {} ms",
            case.name,
            case.cut,
            started.elapsed().as_millis()
        );
        rows.push(row);
    }
    Report {
        summarizer: summarizer.to_string(),
        rows,
    }
}

/// Compacts one case; the outcome and the cut's label.
async fn compact(
    case: &Case,
    options: &serde_json::Value,
    max_input: Option<u64>,
) -> Result<(run::Outcome, String), run::Skip> {
    let base = Config::resolve(Some(options), None, None).map_err(|e| e.to_string())?;
    let imported = run::import(&case.bytes, &base)?;
    if case.chain {
        // A window a quarter of the conversation, compacting at 75% of it
        // and keeping a fifth of it: several compactions in a row, each
        // updating the previous summary.
        let encoding = compactd::tokens::Encoding::for_model(imported.settings.model.as_deref());
        let total: u64 = imported
            .messages()
            .map(|m| compactd::tokens::count_message(encoding, m))
            .sum();
        let window = (total / 4).clamp(8_000, 40_000);
        if max_input.is_some() {
            return Err(
                "chains are left to the offline summarizer (tens of summarizer calls)".into(),
            );
        }
        let outcome = run::chain(&imported, &base, window, window * 3 / 4, window / 5).await?;
        let label = format!("chain (window {}k)", window / 1000);
        return Ok((outcome, label));
    }
    let keep = case
        .keep
        .unwrap_or_else(|| (run::tokens(&imported, &base) / 4).min(20_000));
    let outcome = run::once(&imported, &base, keep, max_input).await?;
    Ok((outcome, case.cut.clone()))
}

/// The local model's base URL, or why there is none.
fn llm_url(choice: &str) -> Result<String, String> {
    match choice {
        "off" => return Err("--llm off".into()),
        "auto" => {}
        url => return Ok(url.to_string()),
    }
    if let Ok(url) = std::env::var("COMPACTD_TEST_LLM_URL") {
        return Ok(url);
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/local-llm.sh");
    let status = std::process::Command::new(&script)
        .arg("status")
        .stderr(std::process::Stdio::null())
        .status()
        .map_err(|e| format!("{}: {e}", script.display()))?;
    if !status.success() {
        return Err("no local model answers (`scripts/local-llm.sh status` failed; start one with `scripts/local-llm.sh up` or set COMPACTD_TEST_LLM_URL)".into());
    }
    let out = std::process::Command::new(&script)
        .arg("url")
        .output()
        .map_err(|e| e.to_string())?;
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// compactd beside Claude Code's own summaries (`versus`): every labelled
/// compaction, a table and its targets.
async fn versus_all(out: &Path, show: bool) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/quality");
    let text = std::fs::read_to_string(dir.join("labels.json")).expect("labels.json");
    let labels: BTreeMap<String, serde_json::Value> =
        serde_json::from_str(&text).expect("labels.json");
    let mut rows = Vec::new();
    for (file, label) in labels.iter().filter(|(k, _)| !k.starts_with('_')) {
        let Some(compactions) = label["compactions"].as_array() else {
            continue;
        };
        let Some(bytes) = gunzip(&dir.join("transcripts").join(file)) else {
            continue;
        };
        for compaction in compactions {
            let line = compaction["line"].as_u64().unwrap_or(0) as usize;
            let name = format!("{} @{line}", file.trim_end_matches(".jsonl.gz"));
            match versus_one(&bytes, line, &versus::Labels::of(compaction), show).await {
                Ok((agent, ours)) => rows.push(report::VersusRow { name, agent, ours }),
                Err(why) => println!("not compared: {name} ({why})"),
            }
        }
    }
    report::print_versus(&rows, &out.join("versus.json"));
}

/// Claude Code's summary and compactd's of the transcript cut where Claude
/// Code compacted (its summary on `line`), compactd keeping nothing.
async fn versus_one(
    bytes: &[u8],
    line: usize,
    labels: &versus::Labels,
    show: bool,
) -> Result<(versus::Scores, versus::Scores), String> {
    let theirs = versus::agent_summary(bytes, line).ok_or("no isCompactSummary on that line")?;
    let before = versus::before(bytes, line);
    let raw = raw::read(Layout::ClaudeCode, &before);
    let modified = probes::derive(&raw, &[]).modified;
    let base = Config::resolve(Some(&json!({})), None, None).map_err(|e| e.to_string())?;
    let imported = run::import(&before, &base)?;
    let ours = run::once(&imported, &base, 0, None).await?.summary;
    if show {
        eprintln!("===== Claude Code at line {line}\n{theirs}\n===== compactd\n{ours}\n");
    }
    let cwd = raw.cwd.as_deref();
    Ok((
        versus::score(&theirs, labels, &modified, cwd),
        versus::score(&ours, labels, &modified, cwd),
    ))
}

fn gunzip(path: &Path) -> Option<Vec<u8>> {
    match std::process::Command::new("gzip")
        .arg("-dc")
        .arg(path)
        .output()
    {
        Ok(out) if out.status.success() => Some(out.stdout),
        _ => {
            println!("not scored: {} (gzip could not read it)", path.display());
            None
        }
    }
}
