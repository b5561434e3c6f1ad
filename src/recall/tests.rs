use serde_json::json;

use super::*;
use crate::compaction::record::ReplacedRange;

fn message(value: serde_json::Value) -> Message {
    serde_json::from_value(value).unwrap()
}

fn index(messages: &[serde_json::Value]) -> Index {
    let mut index = Index::default();
    for m in messages {
        index.push(&message(m.clone()));
    }
    index
}

/// One `check()` for search: the docs found for `query`, best first.
fn check(index: &Index, query: &str) -> Vec<usize> {
    let query = Query::parse(query).unwrap();
    index
        .search(&query, |_| true, 10)
        .into_iter()
        .map(|f| f.doc)
        .collect()
}

#[test]
fn identifiers_file_names_and_error_codes_are_found_exactly_and_case_blind() {
    let index = index(&[
        json!({"role": "user", "content": "Fix parse_args in src/cli/Parse_Args.rs"}),
        json!({"role": "assistant", "content": "", "toolCalls": [{"id": "c1", "name": "Bash", "arguments": {"command": "cargo build"}}]}),
        json!({"role": "tool", "toolCallId": "c1", "content": "error[E0425]: cannot find value `frobnicate` in this scope"}),
        json!({"role": "user", "content": "the error is gone"}),
    ]);
    assert_eq!(check(&index, "src/cli/parse_args.rs"), [0]);
    assert_eq!(check(&index, "E0425"), [2]);
    assert_eq!(check(&index, "cargo build"), [1], "a tool call's arguments");
    assert_eq!(check(&index, "\"cannot find value\" frobnicate"), [2]);
    assert_eq!(
        check(&index, "error"),
        [3, 2],
        "the shorter message ranks first"
    );
    assert!(
        check(&index, "\"find cannot\"").is_empty(),
        "a phrase keeps its order"
    );
    assert!(
        check(&index, "frobnicate nowhere").is_empty(),
        "every term must occur"
    );
    assert_eq!(
        check(&index, "`frobnicate`"),
        [2],
        "punctuation is searched for"
    );
    assert!(check(&index, "foo(.*)[").is_empty(), "no pattern syntax");
}

#[test]
fn a_whole_word_ranks_above_the_same_text_inside_a_longer_one() {
    let index = index(&[
        json!({"role": "user", "content": "call frobnicate_widget_v20 here"}),
        json!({"role": "user", "content": "call frobnicate_widget_v2 here"}),
        json!({"role": "user", "content": "call frobnicate_widget_v21 here"}),
    ]);
    assert_eq!(check(&index, "frobnicate_widget_v2")[0], 1);
}

#[test]
fn a_match_never_spans_two_messages() {
    let index = index(&[
        json!({"role": "user", "content": "alpha"}),
        json!({"role": "user", "content": "beta"}),
    ]);
    assert!(check(&index, "\"alpha beta\"").is_empty());
    assert!(check(&index, "\"alpha\nbeta\"").is_empty());
}

#[test]
fn queries_are_bounded_and_empty_ones_refused() {
    assert_eq!(Query::parse("  \" \" "), Err(QueryError::Empty));
    assert_eq!(
        Query::parse(&"x".repeat(1_000_001)),
        Err(QueryError::TooLong(1_000_001))
    );
    let many: Vec<String> = (0..17).map(|i| format!("w{i}")).collect();
    assert_eq!(
        Query::parse(&many.join(" ")),
        Err(QueryError::TooManyTerms(17))
    );
    assert_eq!(Query::parse("A a").unwrap().terms(), ["a"]);
}

#[test]
fn snippets_cut_on_character_boundaries_around_the_match() {
    let text = format!("{}needle{}", "é".repeat(100), "ü".repeat(100));
    let at = text.find("needle").unwrap();
    let cut = snippet(&text, at, 30);
    assert!(
        cut.starts_with('…') && cut.ends_with('…') && cut.contains("needle"),
        "{cut}"
    );
    assert_eq!(snippet("short  text", 0, 30), "short text");
}

#[test]
fn each_message_knows_the_compaction_that_first_summarized_it() {
    let record = |last: Option<&str>, replaces: Option<(&str, &str)>, pruned: &[&str]| {
        let mut record: CompactionRecord = serde_json::from_value(json!({
            "id": "c", "messagesSummarized": 0, "tokensBefore": 0, "tokensAfter": 0,
            "trigger": "manual", "summarizer": "offline"
        }))
        .unwrap();
        record.last_summarized_message_id = last.map(str::to_string);
        record.replaces = replaces.map(|(f, t)| ReplacedRange {
            from_message_id: f.into(),
            to_message_id: t.into(),
        });
        record.pruned_message_ids = pruned.iter().map(|s| s.to_string()).collect();
        record
    };
    let ids = ["m1", "m2", "m3", "m4", "m5", "m6"];
    let records = [
        record(None, None, &["m2"]),
        record(Some("m3"), None, &[]),
        record(None, Some(("m4", "m5")), &[]),
    ];
    assert_eq!(
        summarized_by(&records, &ids),
        [Some(1), Some(0), Some(1), Some(2), Some(2), None]
    );
}

#[test]
fn a_tool_output_is_searched_after_its_tools_name() {
    let result = message(
        json!({"id": "t1", "role": "tool", "toolCallId": "c1", "toolName": "Bash", "content": "the colour is ochre"}),
    );
    let text = searchable_text(&result);
    assert_eq!(text, "Bash: the colour is ochre");
    let at = text.find("ochre").unwrap();
    assert!(
        snippet(&text, at, 240).ends_with("ochre"),
        "no name after the output"
    );
}
