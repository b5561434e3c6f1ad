//! The documentation holds: the README fits a screen's worth of reading
//! (under 150 lines, no paragraph over 600 characters, the two set-up
//! commands first), every relative link in it and in `docs/` reaches a file
//! and heading that exist, every section moved out of the README is
//! reachable from it, and the meter-accuracy table is what
//! `scripts/meter-accuracy.py` prints now.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Paragraphs outside code blocks (blank-line separated, as Markdown).
fn paragraphs(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut in_code = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        if line.trim().is_empty() {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
        } else {
            if !current.is_empty() {
                current.push('\n');
            }
            current.push_str(line);
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// GitHub's anchor for a heading.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(text: &str) -> Vec<String> {
    let mut in_code = false;
    text.lines()
        .filter(|line| {
            if line.starts_with("```") {
                in_code = !in_code;
            }
            !in_code
        })
        .filter_map(|line| line.strip_prefix('#'))
        .map(|h| slug(h.trim_start_matches('#')))
        .collect()
}

/// `[text](target)` links whose target is relative (no scheme).
fn relative_links(text: &str) -> Vec<String> {
    let mut links = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        let Some(end) = rest.find(')') else { break };
        let target = &rest[..end];
        if !target.contains("://") && !target.starts_with("mailto:") && !target.contains(' ') {
            links.push(target.to_string());
        }
        rest = &rest[end..];
    }
    links
}

#[test]
fn the_readme_fits_a_screen_and_starts_with_the_two_commands() {
    let readme = read(&root().join("README.md"));
    let lines = readme.lines().count();
    assert!(lines < 150, "README.md has {lines} lines");
    for paragraph in paragraphs(&readme) {
        let chars = paragraph.chars().count();
        assert!(
            chars <= 600,
            "a paragraph of {chars} characters:\n{paragraph}"
        );
    }
    let first_block = readme
        .split("```sh\n")
        .nth(1)
        .unwrap()
        .split("```")
        .next()
        .unwrap();
    let commands: Vec<&str> = first_block
        .lines()
        .filter(|l| !l.trim().is_empty())
        .collect();
    assert_eq!(commands.len(), 2, "{commands:?}");
    assert!(
        commands[0].starts_with("cargo run --release -- compact examples/"),
        "{commands:?}"
    );
    assert!(commands[1].starts_with("scripts/test.sh"), "{commands:?}");
}

#[test]
fn every_relative_link_reaches_a_file_and_heading_that_exist() {
    let mut docs: Vec<PathBuf> = vec![root().join("README.md")];
    for entry in std::fs::read_dir(root().join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            docs.push(path);
        }
    }
    for doc in &docs {
        let text = read(doc);
        for link in relative_links(&text) {
            let (file, anchor) = link.split_once('#').unwrap_or((&link, ""));
            let target = if file.is_empty() {
                doc.clone()
            } else {
                doc.parent().unwrap().join(file)
            };
            assert!(
                target.exists(),
                "{}: link to {link}: no such file",
                doc.display()
            );
            if !anchor.is_empty() && target.extension().is_some_and(|e| e == "md") {
                assert!(
                    anchors(&read(&target)).contains(&anchor.to_string()),
                    "{}: link to {link}: no such heading",
                    doc.display()
                );
            }
        }
    }
}

#[test]
fn the_sections_moved_out_of_the_readme_are_reachable_from_it() {
    let readme = read(&root().join("README.md"));
    let moved = [
        ("docs/commands.md", "Protocol quick reference"),
        ("docs/agents.md", "Following an agent"),
        ("docs/agents.md", "Claude Code's status line"),
        (
            "docs/agents.md",
            "One compactd for the agent and the editor",
        ),
        ("docs/configuration.md", "Configuration"),
        ("docs/how-it-works.md", "How it compacts"),
        ("docs/how-it-works.md", "The built-in summary"),
        ("docs/how-it-works.md", "How it counts"),
        ("docs/how-it-works.md", "How it stores"),
        ("docs/how-it-works.md", "How it stays responsive"),
        ("docs/how-it-works.md", "How accurate is the meter"),
    ];
    for (doc, heading) in moved {
        assert!(
            readme.contains(&format!("]({doc}")),
            "README.md does not link {doc}"
        );
        assert!(
            anchors(&read(&root().join(doc))).contains(&slug(heading)),
            "{doc} has no section {heading}"
        );
    }
}

#[test]
fn the_meter_accuracy_table_is_what_the_script_prints() {
    if !root().join("../shared/transcripts").is_dir() {
        crate::support::skip("../shared/transcripts is absent");
        return;
    }
    let out = Command::new("python3")
        .arg(root().join("scripts/meter-accuracy.py"))
        .arg(env!("CARGO_BIN_EXE_compactd"))
        .output()
        .expect("python3 runs scripts/meter-accuracy.py");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8(out.stdout).unwrap();
    let doc = read(&root().join("docs/how-it-works.md"));
    assert!(
        doc.contains(table.trim()),
        "docs/how-it-works.md's table is stale; scripts/meter-accuracy.py prints:\n{table}"
    );
}
