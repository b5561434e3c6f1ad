//! The engine's compaction pipeline end to end on a session in memory:
//! plan, summarize (offline), record, apply, and replay from the log.

use crate::compaction::record::summary_id;
use crate::compaction::summary::{JobSummaries, SummaryInput, WrittenSummary};
use crate::compaction::{
    CompactionJob, CompactionRecord, JobTarget, PlanOptions, Strategy, Trigger,
};
use crate::conversation::{Message, Role, Usage};
use crate::session::Session;
use crate::tokens;

mod pipeline {
    use super::*;
    use crate::session::tests::session;

    pub(super) fn options(strategy: Strategy, keep: u64) -> PlanOptions {
        PlanOptions {
            strategy,
            keep_recent_tokens: keep,
            retention_window: 2,
            prune_protect_tokens: 40_000,
            prune_minimum_tokens: 20_000,
            instructions: None,
            max_tool_output_chars: 2000,
            compact_prompt: None,
            update_prompt: None,
        }
    }

    fn offline(input: &SummaryInput) -> WrittenSummary {
        WrittenSummary {
            text: crate::summarize::offline::summarize_offline(&input.request),
            summarizer: "offline".into(),
            usage: None,
            chunks: 1,
            degraded: None,
        }
    }

    /// The job's summaries, written offline.
    fn summaries(job: &CompactionJob) -> JobSummaries {
        JobSummaries {
            main: job.input.as_ref().map(offline),
            turn_prefix: job.turn_prefix.as_ref().map(offline),
        }
    }

    /// Plans, summarizes offline and applies one compaction.
    pub(super) fn compact(
        s: &mut Session,
        options: &PlanOptions,
    ) -> Result<CompactionRecord, String> {
        let before = s.estimated_tokens();
        let job = s.plan(options, before)?;
        let record = job.record(&summaries(&job), Trigger::Manual, 0, 0);
        s.apply_compaction(record.clone());
        Ok(record)
    }

    #[test]
    fn stale_usage_is_ignored_after_compaction() {
        let mut s = session();
        let mut a = Message::assistant("a1", "done", vec![]);
        a.usage = Some(Usage {
            input: 1000,
            output: 10,
            ..Usage::default()
        });
        s.push(vec![
            Message::user("u1", "go"),
            a,
            Message::user("u2", "more"),
            Message::assistant("a2", "ok", vec![]),
        ]);
        let before = s.meter(10_000, 9_000);
        assert_eq!(before.source, tokens::MeterSource::Usage);
        assert!(before.context_tokens > 1010);
        let job = s
            .plan(&options(Strategy::Checkpoint, 1), before.context_tokens)
            .unwrap();
        assert_eq!(
            job.target,
            JobTarget::Checkpoint {
                last_summarized_message_id: "u2".into(),
                first_kept_message_id: Some("a2".into())
            }
        );
        assert_eq!(job.messages_summarized, 3);
        let record = job.record(&summaries(&job), Trigger::Manual, 0, 0);
        s.apply_compaction(record.clone());
        let after = s.meter(10_000, 9_000);
        assert_eq!(
            after.source,
            tokens::MeterSource::Estimate,
            "usage from before the compaction is stale"
        );
        let history = s.history();
        assert_eq!(history[0].role(), Role::System);
        assert_eq!(history[1].id, summary_id(&record.id));
        assert!(history[1].text().starts_with("PREFIX"));
        assert_eq!(history[2].id, "a2");
        assert_eq!(history.len(), 3);
    }
}

/// Property tests: whatever the history and whatever the sequence of
/// compactions, the view sent to a model stays valid, nothing appended is
/// lost, and replaying the log gives the same view.
mod invariants {
    use super::pipeline::{compact, options};
    use super::{Message, Role, Session};
    use crate::compaction::Strategy as Kind;
    use crate::conversation::{validate_history, ToolCall};
    use crate::store::{self, LogEntry};
    use proptest::prelude::*;
    use proptest::strategy::Strategy;

    #[derive(Debug, Clone)]
    enum Turn {
        User(usize),
        Text(usize),
        /// Parallel calls: (output size, answered?, failed?) each; results
        /// arrive in the order of `order`.
        Tools {
            calls: Vec<(usize, bool, bool)>,
            reversed: bool,
        },
    }

    #[derive(Debug, Clone)]
    enum Step {
        Append(Vec<Turn>),
        Compact(Kind, u64),
    }

    fn turn() -> impl Strategy<Value = Turn> {
        prop_oneof![
            (1usize..400).prop_map(Turn::User),
            (1usize..400).prop_map(Turn::Text),
            (
                prop::collection::vec(
                    (
                        1usize..3000,
                        prop::bool::weighted(0.85),
                        prop::bool::weighted(0.1)
                    ),
                    1..4
                ),
                any::<bool>()
            )
                .prop_map(|(calls, reversed)| Turn::Tools { calls, reversed }),
        ]
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            3 => prop::collection::vec(turn(), 1..12).prop_map(Step::Append),
            1 => (
                prop_oneof![
                    Just(Kind::Checkpoint),
                    Just(Kind::Incremental),
                    Just(Kind::Prune)
                ],
                prop_oneof![Just(0u64), 1u64..400, 400u64..3000]
            )
                .prop_map(|(s, keep)| Step::Compact(s, keep)),
        ]
    }

    fn messages_of(turns: &[Turn], next: &mut usize) -> Vec<Message> {
        let mut out = Vec::new();
        let text = |n: usize, seed: usize| "word ".repeat(n / 5 + 1) + &seed.to_string();
        for t in turns {
            *next += 1;
            let n = *next;
            match t {
                Turn::User(len) => out.push(Message::user(format!("u{n}"), text(*len, n))),
                Turn::Text(len) => {
                    out.push(Message::assistant(format!("a{n}"), text(*len, n), vec![]))
                }
                Turn::Tools { calls, reversed } => {
                    let ids: Vec<String> = (0..calls.len()).map(|j| format!("c{n}-{j}")).collect();
                    let tool_calls = ids
                        .iter()
                        .map(|id| ToolCall {
                            id: id.clone(),
                            name: "edit".into(),
                            arguments: serde_json::json!({"path": format!("src/{id}.rs")}),
                        })
                        .collect();
                    out.push(Message::assistant(format!("a{n}"), "", tool_calls));
                    let mut results: Vec<Message> = calls
                        .iter()
                        .zip(&ids)
                        .filter(|((_, answered, _), _)| *answered)
                        .map(|((len, _, failed), id)| {
                            Message::tool_result(
                                format!("t-{id}"),
                                id.clone(),
                                text(*len, n),
                                *failed,
                            )
                        })
                        .collect();
                    if *reversed {
                        results.reverse();
                    }
                    out.extend(results);
                }
            }
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

        #[test]
        fn every_strategy_keeps_the_history_valid(steps in prop::collection::vec(step(), 1..14)) {
            let mut session = Session::new("p".into(), None, None, Some("sys".into()), "PREFIX".into());
            let mut log = vec![LogEntry::Header(store::SessionHeader {
                version: 1,
                session_id: "p".into(),
                created_at: 0,
                settings: store::SessionSettings { system_prompt: Some("sys".into()), ..Default::default() },
                follows: None,
            })];
            let mut next = 0;
            let mut appended = 0;
            for step in steps {
                match step {
                    Step::Append(turns) => {
                        let mut batch = messages_of(&turns, &mut next);
                        session.assign_ids(&mut batch).unwrap();
                        appended += batch.len();
                        log.extend(batch.iter().cloned().map(|message| LogEntry::Message { message }));
                        session.push(batch);
                    }
                    Step::Compact(strategy, keep) => {
                        let mut opts = options(strategy, keep);
                        opts.prune_protect_tokens = 500;
                        opts.prune_minimum_tokens = 100;
                        if let Ok(record) = compact(&mut session, &opts) {
                            prop_assert!(record.tokens_after <= record.tokens_before + 2_000 || strategy == Kind::Checkpoint,
                                "{strategy:?} grew the view: {} → {}", record.tokens_before, record.tokens_after);
                            log.push(LogEntry::Compaction(Box::new(record)));
                        }
                    }
                }
                let history = session.history();
                prop_assert!(validate_history(&history, true).is_ok(), "{:?}", validate_history(&history, true));
                prop_assert_eq!(history.first().map(|m| m.role()), Some(Role::System));
                prop_assert_eq!(session.all_messages().count(), appended, "nothing appended is lost");
                prop_assert!(session.totals_match_recount(), "running totals match a recount");
            }
            let replayed = store::replay("p", log, "PREFIX".into());
            prop_assert_eq!(replayed.history(), session.history(), "the log replays to the same view");
            prop_assert_eq!(replayed.estimated_tokens(), session.estimated_tokens());
        }
    }
}

mod split_turn {
    use super::pipeline::{compact, options};
    use super::*;
    use crate::conversation::ToolCall;

    #[test]
    fn a_cut_inside_a_long_turn_summarizes_its_prefix_separately() {
        let mut s = Session::new("s".into(), None, None, None, "PREFIX".into());
        let mut messages = vec![
            Message::user("u1", "first task"),
            Message::assistant("a1", "done", vec![]),
            Message::user("u2", "second task: refactor the lexer"),
        ];
        for i in 0..6 {
            let call = ToolCall {
                id: format!("c{i}"),
                name: "read".into(),
                arguments: serde_json::json!({"path": format!("src/f{i}.rs")}),
            };
            messages.push(Message::assistant(format!("a{}", i + 2), "", vec![call]));
            messages.push(Message::tool_result(
                format!("t{i}"),
                format!("c{i}"),
                "x ".repeat(200),
                false,
            ));
        }
        s.push(messages);
        let record = compact(&mut s, &options(Strategy::Checkpoint, 500)).unwrap();
        let first_kept = record.first_kept_message_id.clone().unwrap();
        assert!(
            first_kept.starts_with('a'),
            "the cut is inside the second turn: {first_kept}"
        );
        let (main, prefix) = record
            .summary
            .split_once("<turn-prefix>")
            .expect("a separate turn prefix summary");
        assert!(main.contains("first task"));
        assert!(
            prefix.contains("second task: refactor the lexer"),
            "{prefix}"
        );
        assert!(crate::conversation::validate_history(&s.history(), true).is_ok());
    }
}
