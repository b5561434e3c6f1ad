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
            keep_recent_messages: 0,
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

    /// Plans, summarizes offline and applies one compaction. Its
    /// `tokensBefore` is in the terms of its `tokensAfter`: the
    /// calibrated count.
    pub(super) fn compact(
        s: &mut Session,
        options: &PlanOptions,
    ) -> Result<CompactionRecord, String> {
        let before = s.calibrated_tokens();
        let job = s.plan(options, before)?.prepare();
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
            .unwrap()
            .prepare();
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

    /// What the agent added to its next request after a message, in no
    /// message (a file changed on disk): the meter counts it after the
    /// latest usage, the estimate with the message, and it leaves the
    /// context with that message when a compaction takes it.
    #[test]
    fn content_attached_after_a_message_counts_until_the_message_goes() {
        let mut s = session();
        let mut a = Message::assistant("a1", "done", vec![]);
        a.usage = Some(Usage {
            input: 1000,
            ..Usage::default()
        });
        s.push(vec![
            Message::user("u1", "go"),
            a,
            Message::user("u2", "more"),
        ]);
        let (meter, estimate) = (s.meter(10_000, 9_000).context_tokens, s.estimated_tokens());
        let note = "Note: parser.rs was changed on disk: fn parse(input: &str) {}\n".repeat(20);
        let tokens = s.encoding().count(&note);
        s.attach_after_latest(tokens);
        assert_eq!(s.meter(10_000, 9_000).context_tokens, meter + tokens);
        assert_eq!(s.estimated_tokens(), estimate + tokens);
        assert!(s.totals_match_recount(), "a rebuilt view counts it too");
        s.push(vec![Message::assistant("a2", "ok", vec![])]);
        let kept = s.estimated_tokens();
        compact(&mut s, &options(Strategy::Checkpoint, 1)).unwrap();
        let summarized = s.estimated_tokens();
        let mut without = session();
        without.push(vec![
            Message::user("u1", "go"),
            Message::assistant("a1", "done", vec![]),
            Message::user("u2", "more"),
            Message::assistant("a2", "ok", vec![]),
        ]);
        compact(&mut without, &options(Strategy::Checkpoint, 1)).unwrap();
        assert!(kept > summarized);
        assert_eq!(
            summarized,
            without.estimated_tokens(),
            "gone with u2, which the compaction summarized"
        );
    }
}

/// Property tests: whatever the history and whatever the sequence of
/// compactions, the view sent to a model stays valid, nothing appended is
/// lost, the meter is the calibrated count of exactly what is sent, and
/// replaying the log gives the same view and meter.
mod invariants {
    use super::pipeline::{compact, options};
    use super::{tokens, Message, Role, Session, Usage};
    use crate::compaction::Strategy as Kind;
    use crate::conversation::{validate_history, ToolCall};
    use crate::store::{self, LogEntry};
    use proptest::prelude::*;
    use proptest::strategy::Strategy;

    #[derive(Debug, Clone)]
    enum Turn {
        User(usize),
        /// An assistant's text; `reports`: with the provider's usage.
        Text {
            len: usize,
            reports: bool,
        },
        /// Parallel calls: (output size, answered?, failed?) each; results
        /// arrive in the order of `order`.
        Tools {
            calls: Vec<(usize, bool, bool)>,
            reversed: bool,
            reports: bool,
        },
        /// A result arriving on its own for an earlier call: `pick` chooses
        /// among the calls still without a result (even) or all calls
        /// (odd), so it is late, a second result, or (right after its
        /// call) on time.
        Late {
            pick: usize,
            len: usize,
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
            (1usize..400, prop::bool::weighted(0.7))
                .prop_map(|(len, reports)| Turn::Text { len, reports }),
            (
                prop::collection::vec(
                    (
                        1usize..3000,
                        prop::bool::weighted(0.85),
                        prop::bool::weighted(0.1)
                    ),
                    1..4
                ),
                any::<bool>(),
                prop::bool::weighted(0.5)
            )
                .prop_map(|(calls, reversed, reports)| Turn::Tools {
                    calls,
                    reversed,
                    reports
                }),
            (any::<usize>(), 1usize..2000).prop_map(|(pick, len)| Turn::Late { pick, len }),
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

    /// Calls made so far, and whether each got a result.
    type Calls = Vec<(String, bool)>;

    /// The messages of `turns`; an assistant message that reports usage
    /// has an empty one, which `report_usage` fills in.
    fn messages_of(turns: &[Turn], next: &mut usize, calls_made: &mut Calls) -> Vec<Message> {
        let mut out = Vec::new();
        let text = |n: usize, seed: usize| "word ".repeat(n / 5 + 1) + &seed.to_string();
        let assistant = |n: usize, text: String, calls, reports: bool| {
            let mut message = Message::assistant(format!("a{n}"), text, calls);
            message.usage = reports.then(Usage::default);
            message
        };
        for t in turns {
            *next += 1;
            let n = *next;
            match t {
                Turn::User(len) => out.push(Message::user(format!("u{n}"), text(*len, n))),
                Turn::Text { len, reports } => {
                    out.push(assistant(n, text(*len, n), vec![], *reports))
                }
                Turn::Tools {
                    calls,
                    reversed,
                    reports,
                } => {
                    let ids: Vec<String> = (0..calls.len()).map(|j| format!("c{n}-{j}")).collect();
                    let tool_calls = ids
                        .iter()
                        .map(|id| ToolCall {
                            id: id.clone(),
                            name: "edit".into(),
                            arguments: serde_json::json!({"path": format!("src/{id}.rs")}),
                        })
                        .collect();
                    out.push(assistant(n, String::new(), tool_calls, *reports));
                    calls_made.extend(ids.iter().zip(calls).map(|(id, c)| (id.clone(), c.1)));
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
                Turn::Late { pick, len } => {
                    let unanswered: Vec<usize> = (0..calls_made.len())
                        .filter(|&i| !calls_made[i].1)
                        .collect();
                    let chosen = match (pick % 2, unanswered.len(), calls_made.len()) {
                        (_, _, 0) => continue,
                        (0, n, _) if n > 0 => unanswered[pick / 2 % n],
                        (_, _, all) => pick / 2 % all,
                    };
                    calls_made[chosen].1 = true;
                    let call = calls_made[chosen].0.clone();
                    out.push(Message::tool_result(
                        format!("late{n}"),
                        call,
                        text(*len, n),
                        false,
                    ));
                }
            }
        }
        out
    }

    /// A provider that counts `OVERHEAD` tokens compactd never sees (its
    /// own framing, say) and two of its tokens per token of compactd's: an
    /// exact fit, so the calibration must find it exactly.
    const OVERHEAD: u64 = 700;
    fn provider(held: u64) -> u64 {
        OVERHEAD + 2 * held
    }

    /// Our count of messages as `history()` gives them.
    fn count(session: &Session, messages: &[Message]) -> u64 {
        messages
            .iter()
            .map(|m| tokens::count_message(session.encoding(), m))
            .sum()
    }

    /// Fills in the usage of each assistant message that reports one, as
    /// the provider would report the request it answers: what `history()`
    /// sent for it, the synthetic results closing the calls its arrival
    /// interrupts included.
    fn report_usage(session: &Session, batch: &mut [Message]) {
        let mut scratch = session.clone();
        for message in batch.iter_mut() {
            if message.usage.is_some() {
                let mut probe = scratch.clone();
                probe.push(vec![message.clone()]);
                let history = probe.history();
                let (last, sent) = history.split_last().unwrap();
                assert_eq!(last.id, message.id, "calls at the end stay pending");
                message.usage = Some(Usage {
                    input: provider(count(&probe, sent)),
                    ..Usage::default()
                });
            }
            scratch.push(vec![message.clone()]);
        }
    }

    /// The meter is the calibration applied once to our count of what
    /// `history()` sends: after the latest current report, that report
    /// plus the scaled count of what follows it; without one, the
    /// overhead plus the scaled count of everything. (Scaling rounds, so
    /// it is applied to the sum, never message by message.) And the
    /// calibration, fed what was sent for each report, finds the
    /// provider's exact fit once its scale applies.
    fn check_meter(session: &Session, current: &[String]) -> Result<(), TestCaseError> {
        let history = session.history();
        let correction = session.correction();
        let meter = session.meter(1_000_000, 900_000);
        let report = history
            .iter()
            .rposition(|m| m.usage.is_some() && current.contains(&m.id));
        let expected = match report {
            Some(at) => {
                prop_assert_eq!(meter.source, tokens::MeterSource::Usage);
                let reported = history[at].usage.unwrap().context_tokens();
                reported + correction.scaled(count(session, &history[at + 1..]))
            }
            None => {
                prop_assert_eq!(meter.source, tokens::MeterSource::Estimate);
                correction.context(count(session, &history))
            }
        };
        prop_assert_eq!(meter.context_tokens, expected, "{:?}", correction);
        if correction.scale != 1.0 {
            prop_assert!((correction.scale - 2.0).abs() < 1e-9, "{:?}", correction);
            prop_assert_eq!(correction.overhead, OVERHEAD, "{:?}", correction);
        }
        Ok(())
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
                mirrors: None,
            })];
            let mut next = 0;
            let mut appended = 0;
            let mut calls_made = Vec::new();
            // Ids appended since the latest compaction: their usage is current.
            let mut current: Vec<String> = Vec::new();
            for step in steps {
                match step {
                    Step::Append(turns) => {
                        let mut batch = messages_of(&turns, &mut next, &mut calls_made);
                        session.assign_ids(&mut batch).unwrap();
                        report_usage(&session, &mut batch);
                        current.extend(batch.iter().map(|m| m.id.clone()));
                        appended += batch.len();
                        log.extend(batch.iter().cloned().map(LogEntry::message));
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
                            current.clear();
                        }
                    }
                }
                let history = session.history();
                prop_assert!(validate_history(&history, true).is_ok(), "{:?}", validate_history(&history, true));
                prop_assert_eq!(history.first().map(|m| m.role()), Some(Role::System));
                prop_assert_eq!(session.all_messages().count(), appended, "nothing appended is lost");
                prop_assert!(session.totals_match_recount(), "running totals match a recount");
                prop_assert_eq!(session.estimated_tokens(), count(&session, &history), "our count is exactly what is sent");
                check_meter(&session, &current)?;
            }
            let replayed = store::replay("p", log, "PREFIX".into());
            prop_assert_eq!(replayed.history(), session.history(), "the log replays to the same view");
            prop_assert_eq!(replayed.estimated_tokens(), session.estimated_tokens());
            prop_assert_eq!(replayed.correction(), session.correction(), "and the same calibration");
            prop_assert_eq!(replayed.meter(1_000_000, 900_000), session.meter(1_000_000, 900_000));
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

mod progress {
    use crate::engine::compaction::RisingProgress;
    use crate::summarize::Progress;
    use std::sync::Mutex;

    #[test]
    fn two_parts_report_one_rising_sequence() {
        let seen: Mutex<Vec<Option<u32>>> = Mutex::new(Vec::new());
        let sink = |p: Progress| seen.lock().unwrap().push(p.percentage);
        let rising = RisingProgress::new(&sink);
        let report = |start: f64, span: f64, percentage: Option<u32>| {
            let message = String::new();
            rising.report(
                start,
                span,
                Progress {
                    message,
                    percentage,
                },
            );
        };
        // The main summary (three quarters of the input): chunks, then a
        // re-chunk that starts over, then a report without a percentage.
        for p in [Some(0), Some(40), Some(80), Some(10), None] {
            report(0.0, 75.0, p);
        }
        // The split turn's prefix: the driver starts again from 0.
        for p in [Some(0), Some(50), Some(100)] {
            report(75.0, 25.0, p);
        }
        assert_eq!(
            *seen.lock().unwrap(),
            [
                Some(0),
                Some(30),
                Some(60),
                Some(60),
                None,
                Some(75),
                Some(87),
                Some(100)
            ]
        );
    }
}

/// The overhead the client never sends: learned from usage, carried into
/// the meter after a compaction and into `tokensAfter`, never counted
/// twice, and the same after the log is replayed.
mod overhead {
    use super::pipeline::{compact, options};
    use super::*;
    use crate::store::{self, LogEntry, SessionHeader, SessionSettings};

    /// A provider that counts 6,000 tokens of system prompt and tools
    /// compactd never sees, and 1.25 tokens per token of compactd's.
    fn provider(estimate: u64) -> u64 {
        6_000 + estimate * 5 / 4
    }

    /// Turns with usage as that provider reports it, pushed and logged.
    fn converse(session: &mut Session, log: &mut Vec<LogEntry>, turns: usize) {
        for n in 0..turns {
            let user = Message::user(
                format!("u{n}"),
                format!("step {n}: {}", "words ".repeat(300)),
            );
            log.push(LogEntry::message(user.clone()));
            session.push(vec![user]);
            let mut reply = Message::assistant(format!("a{n}"), "ok ".repeat(100), vec![]);
            reply.usage = Some(Usage {
                input: provider(session.estimated_tokens()),
                ..Usage::default()
            });
            log.push(LogEntry::message(reply.clone()));
            session.push(vec![reply]);
        }
    }

    fn header(settings: SessionSettings) -> LogEntry {
        LogEntry::Header(SessionHeader {
            version: 1,
            session_id: "o".into(),
            created_at: 0,
            settings,
            follows: None,
            mirrors: None,
        })
    }

    #[test]
    fn tokens_after_and_the_meter_after_a_compaction_include_the_overhead() {
        let mut s = Session::new("o".into(), None, None, None, "PREFIX".into());
        let mut log = vec![header(SessionSettings::default())];
        converse(&mut s, &mut log, 12);
        let correction = s.correction();
        assert!(correction.overhead.abs_diff(6_000) < 50, "{correction:?}");
        assert!((correction.scale - 1.25).abs() < 0.02, "{correction:?}");
        // With usage, the meter is the report plus the scaled newer
        // messages: the overhead is in the report, not added again.
        let meter = s.meter(200_000, 180_000);
        assert_eq!(meter.source, tokens::MeterSource::Usage);
        let last = s.all_messages().last().unwrap().usage.unwrap();
        assert_eq!(meter.context_tokens, last.context_tokens());
        assert_eq!(meter.overhead_tokens, correction.overhead);

        let record = compact(&mut s, &options(Strategy::Checkpoint, 800)).unwrap();
        let truth = provider(s.estimated_tokens());
        assert_eq!(record.tokens_after, s.calibrated_tokens());
        let off = record.tokens_after.abs_diff(truth) as f64 / truth as f64;
        assert!(off < 0.01, "{} vs {truth}", record.tokens_after);
        let meter = s.meter(200_000, 180_000);
        assert_eq!(meter.source, tokens::MeterSource::Estimate);
        assert_eq!(meter.context_tokens, record.tokens_after);

        log.push(LogEntry::Compaction(Box::new(record)));
        let resumed = store::replay("o", log, "PREFIX".into());
        assert_eq!(resumed.meter(200_000, 180_000), meter);
    }

    #[test]
    fn a_declared_system_prompt_and_tools_are_counted_before_any_usage() {
        let tools = vec![serde_json::json!({
            "name": "read_file",
            "description": "Reads a file from the workspace.",
            "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}
        })];
        let settings = SessionSettings {
            system_prompt: Some("You are a careful coding agent.".into()),
            tool_definitions: Some(tools.clone()),
            ..SessionSettings::default()
        };
        let s = store::replay("o", vec![header(settings)], "PREFIX".into());
        let declared = tokens::count_message(
            s.encoding(),
            &Message::system("system", "You are a careful coding agent."),
        ) + tokens::count_tool_definitions(s.encoding(), &tools);
        let meter = s.meter(200_000, 180_000);
        assert_eq!(meter.overhead_tokens, declared);
        assert_eq!(meter.context_tokens, declared);
        // Declared tools are part of every plan's fixed tokens.
        assert_eq!(s.plan_input().system_tokens, declared);
    }
}

/// Overflow recovery and the prune-or-summarize choice look at the context
/// as the provider counts it, overhead included.
mod overhead_decisions {
    use super::*;
    use crate::config::Config;
    use crate::engine::compaction::overflow_keep;

    /// A 32k-window session of six turns, each reply reported by a provider
    /// that counts `overhead` tokens beyond compactd's count; `turn(n)` is
    /// the user message, the reply, and what follows the reply.
    fn reported(
        overhead: u64,
        turn: impl Fn(usize) -> (Message, Message, Vec<Message>),
    ) -> Session {
        let mut s = Session::new(
            "o".into(),
            Some("gpt-4o".into()),
            Some(32_000),
            None,
            "P".into(),
        );
        for n in 0..6 {
            let (user, mut reply, after) = turn(n);
            s.push(vec![user]);
            reply.usage = Some(Usage {
                input: overhead + s.estimated_tokens(),
                ..Usage::default()
            });
            s.push(vec![reply]);
            s.push(after);
        }
        s
    }

    /// Six long requests.
    fn session_with_overhead(overhead: u64) -> Session {
        reported(overhead, |n| {
            (
                Message::user(format!("u{n}"), "words ".repeat(3_000)),
                Message::assistant(format!("a{n}"), "ok", vec![]),
                Vec::new(),
            )
        })
    }

    #[test]
    fn overflow_recovery_keeps_less_when_the_overhead_leaves_no_room() {
        let config = Config {
            keep_recent_tokens: 7_000,
            reserve_tokens: 4_000,
            ..Config::default()
        };
        // Without overhead the full tail fits under the limit (28,001).
        assert_eq!(overflow_keep(&config, &session_with_overhead(0)), 7_000);
        // With 20k of system prompt and tools, a 7k tail leaves no room
        // for the summary; half of it does.
        assert_eq!(
            overflow_keep(&config, &session_with_overhead(20_000)),
            3_500
        );
        // When nothing leaves room, the least that can be planned.
        assert_eq!(overflow_keep(&config, &session_with_overhead(40_000)), 0);
    }

    /// Six turns, each reading a 4,000-token file.
    fn reads_with_overhead(overhead: u64) -> Session {
        reported(overhead, |n| {
            let call = crate::conversation::ToolCall {
                id: format!("c{n}"),
                name: "read".into(),
                arguments: serde_json::json!({"path": format!("f{n}.rs")}),
            };
            (
                Message::user(format!("u{n}"), "next file"),
                Message::assistant(format!("a{n}"), "", vec![call]),
                vec![Message::tool_result(
                    format!("t{n}"),
                    format!("c{n}"),
                    "code ".repeat(4_000),
                    false,
                )],
            )
        })
    }

    #[test]
    fn auto_compaction_prunes_only_when_pruning_gets_under_the_limit_with_the_overhead() {
        let config = Config {
            reserve_tokens: 4_000,
            prune_protect_tokens: 4_000,
            prune_minimum_tokens: 1_000,
            ..Config::default()
        };
        let strategy = |overhead| {
            let decision = crate::engine::auto::decide(
                &config,
                &reads_with_overhead(overhead),
                crate::engine::Access::Write,
                false,
            );
            decision.start.map(|start| start.strategy)
        };
        assert_eq!(strategy(5_000), Some(Strategy::Prune));
        // 25k of system prompt and tools stay after any pruning: only a
        // summary gets under the limit.
        assert_eq!(strategy(25_000), Some(Strategy::Checkpoint));
    }
}

/// One writer per session, and a read-only session that nothing changes:
/// the engine's side of what `tests/it/locking.rs` checks with two
/// processes.
mod access {
    use super::super::create::{self, Opened};
    use super::super::{append, auto, Access, EngineError, SessionEnv};
    use crate::config::Config;
    use crate::conversation::Message;
    use crate::files::{disk, FileEvent, FileOp, FileTools, Origin};
    use crate::store::{Durability, SessionSettings, SessionStore, StoreError};

    fn env() -> SessionEnv {
        SessionEnv::new(&Config::default(), disk::workspace(Vec::new()))
    }

    fn open(store: &SessionStore, id: &str) -> Result<Opened, EngineError> {
        create::open(store, id, SessionSettings::default(), None, &env())
    }

    fn is_read_only_refusal(result: Result<(), EngineError>) -> bool {
        matches!(
            result,
            Err(EngineError::Refused(StoreError::ReadOnly { .. }))
        )
    }

    #[test]
    fn the_lock_admits_one_writer_and_readers_change_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path(), Durability::Flush);
        let mut writer = open(&store, "s").unwrap();
        assert!(!writer.resumed);
        let first = vec![Message::user("m1", "hello")];
        append::append(&mut writer.open, first, &FileTools::default()).unwrap();
        assert!(matches!(
            open(&store, "s"),
            Err(EngineError::Refused(StoreError::Locked {
                pid: Some(_),
                ..
            }))
        ));

        let mut reader = create::open_read_only(&store, "s", &env()).unwrap();
        assert_eq!(reader.open.access(), Access::ReadOnly);
        assert_eq!(reader.open.session.message_count(), 1);
        let more = vec![Message::user("m2", "no")];
        let refused = append::append(&mut reader.open, more, &FileTools::default()).map(|_| ());
        assert!(is_read_only_refusal(refused));
        assert!(is_read_only_refusal(append::pin(
            &mut reader.open,
            "keep".into()
        )));
        assert!(is_read_only_refusal(append::set_auto_compact(
            &mut reader.open,
            true
        )));
        let event = FileEvent::new(dir.path().join("f"), FileOp::Read, Origin::Explicit);
        assert!(is_read_only_refusal(append::record_file_events(
            &mut reader.open,
            &[event]
        )));
        let settings = SessionSettings {
            model: Some("gpt-4".into()),
            ..SessionSettings::default()
        };
        append::change_settings(&mut reader.open, settings).unwrap();
        assert_eq!(reader.open.session.model, None, "settings are not applied");
        let config = Config {
            auto_compact: true,
            ..Config::default()
        };
        assert!(!auto::allowed(
            &config,
            &reader.open.session,
            Access::ReadOnly
        ));
        assert!(auto::allowed(&config, &writer.open.session, Access::Write));
        assert_eq!(store.load("s").unwrap().unwrap().entries.len(), 2);

        drop(writer);
        let reopened = open(&store, "s").unwrap();
        assert!(reopened.resumed);
        assert_eq!(reopened.open.session.message_count(), 1);
        assert!(matches!(
            create::open_read_only(&store, "absent", &env()),
            Err(EngineError::Invalid(_))
        ));
    }
}
