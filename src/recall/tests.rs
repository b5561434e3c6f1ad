use serde_json::json;

use super::*;
use crate::compaction::record::ReplacedRange;
use crate::session::Session;

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
    let position = |id: &str| ids.iter().position(|i| *i == id);
    assert_eq!(
        summarized_by(&records, ids.len(), position),
        (
            vec![Some(1), Some(0), Some(1), Some(2), Some(2), None],
            false
        )
    );
    // A record naming a message not there yet says so.
    let later = [record(Some("m9"), None, &[])];
    assert_eq!(
        summarized_by(&later, ids.len(), position),
        (vec![None; 6], true)
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

/// What a search finds, worked out plainly: per message, each term's
/// occurrences counted (a whole word half again), BM25 over the messages
/// holding every term, best first.
fn plain_search(texts: &[String], terms: &[String], limit: usize) -> Vec<(usize, f64, usize)> {
    let word = |b: Option<&u8>| b.is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_');
    let holding: Vec<(usize, Vec<f64>, usize)> = texts
        .iter()
        .enumerate()
        .filter_map(|(doc, text)| {
            let bytes = text.as_bytes();
            let tf: Vec<f64> = terms
                .iter()
                .map(|term| {
                    memmem::find_iter(bytes, term.as_bytes())
                        .map(|at| {
                            let t = term.as_bytes();
                            let joined = (at > 0 && word(bytes.get(at - 1)) && word(t.first()))
                                || (word(bytes.get(at + t.len())) && word(t.last()));
                            if joined {
                                1.0
                            } else {
                                1.5
                            }
                        })
                        .sum()
                })
                .collect();
            let at = memmem::find(bytes, terms[0].as_bytes())?;
            tf.iter().all(|&c| c > 0.0).then_some((doc, tf, at))
        })
        .collect();
    let total = texts.len() as f64;
    let average = (texts.iter().map(|t| t.len() + 1).sum::<usize>() as f64 / total).max(1.0);
    let df = holding.len() as f64;
    let mut found: Vec<(usize, f64, usize)> = holding
        .into_iter()
        .map(|(doc, tf, at)| {
            let length = texts[doc].len() as f64;
            let score = tf
                .iter()
                .map(|&tf| {
                    let idf = ((total - df + 0.5) / (df + 0.5) + 1.0).ln();
                    idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * length / average))
                })
                .sum();
            (doc, score, at)
        })
        .collect();
    found.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0)));
    found.truncate(limit);
    found
}

#[test]
fn a_search_finds_what_a_plain_count_of_each_message_finds() {
    // Short words from a small alphabet: terms occur often, several times
    // in a message, inside longer words and across word boundaries.
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n) as usize
    };
    let alphabet = ["ab", "ba", "a", "b_", "x", " ", " ", "\n", "A"];
    for round in 0..40 {
        let texts: Vec<String> = (0..1 + next(60))
            .map(|_| (0..next(40)).map(|_| alphabet[next(9)]).collect())
            .collect();
        let mut index = Index::default();
        for text in &texts {
            index.push(&Message::user("m", text.clone()));
        }
        let lowered: Vec<String> = texts.iter().map(|t| t.to_ascii_lowercase()).collect();
        for query in ["ab", "a b", "ba ab_", "\"a b\" x", "b_a", "aba b", "x a b"] {
            let parsed = Query::parse(query).unwrap();
            for limit in [1, 3, 100] {
                let found: Vec<(usize, f64, usize)> = index
                    .search(&parsed, |_| true, limit)
                    .into_iter()
                    .map(|f| (f.doc, f.score, f.at))
                    .collect();
                let plain = plain_search(&lowered, parsed.terms(), limit);
                assert_eq!(found.len(), plain.len(), "{round} {query:?}");
                for (f, p) in found.iter().zip(&plain) {
                    assert_eq!((f.0, f.2), (p.0, p.2), "{round} {query:?}");
                    assert!((f.1 - p.1).abs() < 1e-9, "{round} {query:?}");
                }
            }
        }
    }
}

fn session_of(messages: &[(&str, &str)]) -> Session {
    let mut session = Session::new("s".into(), None, None, None, String::new());
    session.push(
        messages
            .iter()
            .map(|(id, text)| Message::user(*id, *text))
            .collect(),
    );
    session
}

/// The ids a live index finds for `query`, best first.
fn live_ids(index: &LiveIndex, count: usize, query: &str) -> Vec<String> {
    index
        .search(&Query::parse(query).unwrap(), count, |_| true, 10, 40)
        .into_iter()
        .map(|hit| hit.message.id.clone())
        .collect()
}

#[test]
fn a_live_index_takes_what_the_session_gained_and_only_that() {
    let mut session = session_of(&[("m1", "alpha one"), ("m2", "beta two")]);
    let mut feed = Feed::default();
    let mut live = LiveIndex::default();
    live.apply(feed.delta(&session).unwrap());
    assert_eq!(live_ids(&live, 2, "alpha"), ["m1"]);
    assert!(feed.delta(&session).is_none(), "nothing new: nothing to do");

    session.push(vec![Message::user("m3", "alpha six")]);
    let delta = feed.delta(&session).unwrap();
    assert_eq!((delta.shared_from, delta.text_from), (2, 2));
    assert_eq!(delta.messages.len(), 1, "only the new message");
    live.apply(delta);
    assert_eq!(live_ids(&live, 3, "alpha"), ["m3", "m1"]);
    // A search sees no more than the session held when it was asked for.
    assert_eq!(live_ids(&live, 2, "alpha"), ["m1"]);

    // An amended message is indexed again: its new text found, its old
    // one not, the messages after it kept.
    let mut amended = Message::assistant("m4", "gamma first", vec![]);
    session.push(vec![amended.clone(), Message::user("m5", "delta five")]);
    live.apply(feed.delta(&session).unwrap());
    amended = Message::assistant("m4", "gamma second", vec![]);
    assert!(session.replace_message(amended));
    let delta = feed.delta(&session).unwrap();
    assert_eq!(delta.text_from, 3);
    live.apply(delta);
    assert_eq!(live_ids(&live, 5, "second"), ["m4"]);
    assert!(live_ids(&live, 5, "first").is_empty());
    assert_eq!(live_ids(&live, 5, "five"), ["m5"]);
    assert_eq!(live.len(), 5);
}

#[test]
fn a_session_read_again_keeps_its_index_and_another_conversation_starts_it_over() {
    let texts: Vec<(String, String)> = (0..400)
        .map(|i| (format!("m{i}"), format!("message number {i} end")))
        .collect();
    let pairs: Vec<(&str, &str)> = texts
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let mut feed = Feed::default();
    let mut live = LiveIndex::default();
    live.apply(feed.delta(&session_of(&pairs[..300])).unwrap());

    // The same log read again, grown: the old messages' text is kept (the
    // newest few indexed again), every message is the new session's.
    let reread = session_of(&pairs);
    let delta = feed.delta(&reread).unwrap();
    assert_eq!((delta.shared_from, delta.text_from), (0, 300 - live::TAIL));
    live.apply(delta);
    assert_eq!(live.len(), 400);
    assert_eq!(live_ids(&live, 400, "\"number 350 end\""), ["m350"]);
    assert_eq!(live_ids(&live, 400, "\"number 12 end\""), ["m12"]);

    // Another conversation: everything anew.
    let other = session_of(&[("x1", "number 350 end elsewhere")]);
    let delta = feed.delta(&other).unwrap();
    assert_eq!((delta.shared_from, delta.text_from), (0, 0));
    live.apply(delta);
    assert_eq!(live.len(), 1);
    assert_eq!(live_ids(&live, 1, "\"number 350 end\""), ["x1"]);
}

#[test]
fn a_compaction_marks_what_it_summarized_in_the_live_index() {
    let mut session = session_of(&[("m1", "alpha"), ("m2", "alpha"), ("m3", "alpha")]);
    let mut feed = Feed::default();
    let mut live = LiveIndex::default();
    live.apply(feed.delta(&session).unwrap());
    let record: CompactionRecord = serde_json::from_value(json!({
        "id": "k1", "messagesSummarized": 2, "tokensBefore": 0, "tokensAfter": 0,
        "trigger": "manual", "summarizer": "offline", "lastSummarizedMessageId": "m2"
    }))
    .unwrap();
    session.apply_compaction(record);
    live.apply(feed.delta(&session).unwrap());
    session.push(vec![Message::user("m4", "alpha")]);
    live.apply(feed.delta(&session).unwrap());
    let query = Query::parse("alpha").unwrap();
    let compacted: Vec<(String, Option<&str>)> = live
        .search(&query, 4, |c| c.summarized.is_some(), 10, 40)
        .into_iter()
        .map(|hit| (hit.message.id.clone(), hit.summarized.map(|(_, id)| id)))
        .collect();
    assert_eq!(
        compacted,
        [
            ("m2".to_string(), Some("k1")),
            ("m1".to_string(), Some("k1"))
        ]
    );
}

#[test]
fn a_selection_is_in_session_order_and_names_what_it_cannot_find() {
    let session = session_of(&[("m1", "a"), ("m2", "b"), ("m3", "c")]);
    let ids = |picked: Vec<Selected>| -> Vec<String> {
        picked.iter().map(|s| s.message.id.clone()).collect()
    };
    let asked = ["m3".to_string(), "m1".into(), "m3".into()];
    assert_eq!(
        ids(select(&session, Selection::Ids(&asked)).unwrap()),
        ["m1", "m3"]
    );
    let range = Selection::Range {
        first: "m2",
        last: "m3",
    };
    assert_eq!(ids(select(&session, range).unwrap()), ["m2", "m3"]);
    let missing = ["m1".to_string(), "m9".into(), "m8".into()];
    assert_eq!(
        select(&session, Selection::Ids(&missing)).unwrap_err(),
        Unselectable::Missing {
            asked: Asked::Id(1),
            id: "m9"
        }
    );
    let reversed = Selection::Range {
        first: "m3",
        last: "m1",
    };
    assert_eq!(
        select(&session, reversed).unwrap_err(),
        Unselectable::Reversed {
            first: "m3",
            last: "m1"
        }
    );
}

#[test]
fn an_index_built_at_once_by_several_threads_is_the_one_built_message_by_message() {
    let messages: Vec<Arc<Message>> = (0..50)
        .map(|i| {
            let text = format!("Message {i} ÉTÉ \0 {}", "Word ".repeat(i % 7));
            let message = match i % 3 {
                0 => Message::user(format!("m{i}"), text),
                1 => Message::assistant(
                    format!("m{i}"),
                    text,
                    vec![crate::conversation::ToolCall {
                        id: format!("c{i}"),
                        name: "Bash".into(),
                        arguments: json!({"command": format!("ls {i}")}),
                    }],
                ),
                _ => Message::tool_result(format!("m{i}"), format!("c{i}"), "", false),
            };
            Arc::new(message)
        })
        .collect();
    let mut one_by_one = Index::default();
    for message in &messages {
        one_by_one.push(message);
    }
    let at_once = Index::build(&messages);
    assert_eq!(
        (&at_once.text, &at_once.starts),
        (&one_by_one.text, &one_by_one.starts)
    );
    for threads in [2, 3, 7, 64] {
        let built = Index::build_in(
            &messages,
            one_by_one.starts.clone(),
            one_by_one.text.len(),
            threads,
        );
        assert_eq!(built.text, one_by_one.text, "{threads} threads");
    }
}
