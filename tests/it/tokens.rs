//! bpe-openai (what we ship) must count exactly like tiktoken (the oracle).

use compactd::tokens::Encoding;

use crate::support::{read_pi_session, transcripts_dir};

#[test]
fn counts_match_tiktoken_on_real_transcripts() {
    let Some(dir) = transcripts_dir() else { return };
    let o200k = tiktoken_rs::o200k_base().unwrap();
    let cl100k = tiktoken_rs::cl100k_base().unwrap();
    let mut texts: Vec<String> = Vec::new();
    for f in [
        "pi-session-jsonl/large-session.jsonl",
        "pi-session-jsonl/before-compaction.jsonl",
    ] {
        let path = dir.join(f);
        if f.contains("large") {
            for m in read_pi_session(&path) {
                texts.push(m["content"].as_str().unwrap_or("").to_string());
            }
        } else {
            texts.extend(
                std::fs::read_to_string(&path)
                    .unwrap()
                    .lines()
                    .map(str::to_string),
            );
        }
    }
    for entry in std::fs::read_dir(dir.join("claude-code-jsonl")).unwrap() {
        for file in std::fs::read_dir(entry.unwrap().path()).unwrap() {
            texts.extend(
                std::fs::read_to_string(file.unwrap().path())
                    .unwrap()
                    .lines()
                    .map(str::to_string),
            );
        }
    }
    assert!(texts.len() > 2000);
    let mut compared = 0;
    for text in &texts {
        assert_eq!(
            Encoding::O200k.count(text) as usize,
            o200k.encode_with_special_tokens(text).len(),
            "o200k differs on {:?}",
            &text[..text.len().min(80)]
        );
        assert_eq!(
            Encoding::Cl100k.count(text) as usize,
            cl100k.encode_with_special_tokens(text).len(),
            "cl100k differs"
        );
        compared += 1;
    }
    println!("{compared} texts counted identically");
}
