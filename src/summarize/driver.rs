//! Runs a summarizer so that compaction never gets stuck: input larger than
//! the summarizer's window is chunked at turn boundaries and the partial
//! summaries merged in bounded rounds; an overflow answer chunks smaller;
//! an unusable summary is retried once; and a failing summarizer falls down
//! the ladder (LLM → LLM with tool outputs elided → offline), saying so.
//! No I/O of its own: everything goes through the `Summarizer` trait.

use super::offline::OfflineSummarizer;
use super::{Progress, ProgressSink, SummarizeError, Summarizer, SummaryOutput, SummaryRequest};
use crate::compaction::chunk::{group_for_merge, plan_chunks};
use crate::compaction::clip_middle;
use crate::compaction::summary::{with_text, SummaryInput, WrittenSummary};
use crate::conversation::Usage;
use crate::tokens::Encoding;

/// The summarizer's limits.
#[derive(Debug, Clone, Copy)]
pub struct DriverSettings {
    /// The summarizer's own context window; `None` means unbounded.
    pub window: Option<u64>,
    /// Tokens reserved for the summary it writes.
    pub output_budget: u64,
    /// `summarizer.maxTokens`, which the offline rung honours too.
    pub max_summary_tokens: Option<u64>,
    pub encoding: Encoding,
}

impl DriverSettings {
    /// The settings the configuration gives for a conversation counted in
    /// `encoding`.
    pub fn from_config(config: &crate::config::Config, encoding: Encoding) -> DriverSettings {
        let window = config.summarizer.context_window;
        DriverSettings {
            window,
            // Room for the summary the summarizer writes.
            output_budget: window
                .map(|w| (w / 4).min(config.reserve_tokens.max(1024)))
                .unwrap_or(0),
            max_summary_tokens: config.summarizer.max_tokens,
            encoding,
        }
    }
}

/// Merge rounds before the deterministic merge takes over.
const MAX_MERGE_ROUNDS: u32 = 4;
/// Times an overflow answer may halve the chunk size.
const MAX_OVERFLOW_SPLITS: u32 = 4;
const ELIDED: &str = "[tool output elided]";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rung {
    Full,
    Elided,
    Offline,
}

/// Summarizes `input`; never fails, since the offline rung always answers.
pub async fn summarize(
    primary: &dyn Summarizer,
    input: &SummaryInput,
    settings: DriverSettings,
    progress: ProgressSink<'_>,
) -> WrittenSummary {
    let offline = OfflineSummarizer {
        max_tokens: settings.max_summary_tokens,
    };
    let rungs: &[Rung] = if primary.name() == "offline" {
        &[Rung::Offline]
    } else {
        &[Rung::Full, Rung::Elided, Rung::Offline]
    };
    let mut failures: Vec<String> = Vec::new();
    for rung in rungs {
        let (summarizer, rung_input): (&dyn Summarizer, std::borrow::Cow<'_, SummaryInput>) =
            match rung {
                Rung::Full => (primary, std::borrow::Cow::Borrowed(input)),
                Rung::Elided => (primary, std::borrow::Cow::Owned(elide_tool_outputs(input))),
                Rung::Offline => (&offline, std::borrow::Cow::Borrowed(input)),
            };
        let rung_settings = match rung {
            // The deterministic summarizer has no window to respect, but
            // honours one when configured (as test summarizers do).
            Rung::Offline if primary.name() != "offline" => DriverSettings {
                window: None,
                ..settings
            },
            _ => settings,
        };
        match run_rung(summarizer, &rung_input, rung_settings, progress).await {
            Ok(mut output) => {
                if !failures.is_empty() {
                    output.degraded = Some(failures.join("; "));
                }
                return output;
            }
            Err(e) => {
                tracing::warn!("summarizer rung {rung:?} failed: {e}");
                failures.push(format!("{} failed ({e})", rung_name(*rung, primary)));
            }
        }
    }
    unreachable!("the offline rung always answers")
}

fn rung_name(rung: Rung, primary: &dyn Summarizer) -> String {
    match rung {
        Rung::Full => primary.name().to_string(),
        Rung::Elided => format!("{} with tool outputs elided", primary.name()),
        Rung::Offline => "offline".into(),
    }
}

async fn run_rung(
    summarizer: &dyn Summarizer,
    input: &SummaryInput,
    settings: DriverSettings,
    progress: ProgressSink<'_>,
) -> Result<WrittenSummary, SummarizeError> {
    let budget = settings
        .window
        .map(|w| w.saturating_sub(settings.output_budget).max(256));
    let previous_tokens = input
        .request
        .previous_summary
        .as_deref()
        .map(|s| settings.encoding.count(s))
        .unwrap_or(0);
    let total: u64 = input.tokens.iter().sum::<u64>() + previous_tokens;
    // Chunks hold at most half the usable window, leaving room for the
    // prompt and the running summary.
    let mut chunk_limit = match budget {
        Some(b) if total > b => Some((b / 2).max(128)),
        _ => None,
    };
    let mut splits = 0;
    loop {
        let attempt = match chunk_limit {
            None => call(summarizer, input.request.clone(), progress)
                .await
                .map(|o| WrittenSummary {
                    text: o.text,
                    summarizer: o.summarizer,
                    usage: o.usage,
                    chunks: o.chunks.max(1),
                    degraded: None,
                }),
            Some(limit) => run_chunked(summarizer, input, limit, settings, progress).await,
        };
        match attempt {
            Err(SummarizeError::ContextOverflow(why)) if splits < MAX_OVERFLOW_SPLITS => {
                splits += 1;
                let next = chunk_limit.map(|l| l / 2).unwrap_or(total / 2).max(64);
                tracing::info!("summarizer overflowed ({why}); chunking at {next} tokens");
                chunk_limit = Some(next);
            }
            other => return other,
        }
    }
}

async fn run_chunked(
    summarizer: &dyn Summarizer,
    input: &SummaryInput,
    limit: u64,
    settings: DriverSettings,
    progress: ProgressSink<'_>,
) -> Result<WrittenSummary, SummarizeError> {
    let chunks = plan_chunks(&input.tokens, &input.turn_start, &input.cut_point, limit);
    let n = chunks.len();
    let mut partials: Vec<String> = Vec::with_capacity(n + 1);
    let mut usage: Option<Usage> = None;
    let mut name = summarizer.name().to_string();
    if let Some(previous) = &input.request.previous_summary {
        partials.push(previous.clone());
    }
    for (i, chunk) in chunks.iter().enumerate() {
        progress(Progress {
            message: format!("summarizing chunk {} of {n}", i + 1),
            percentage: Some((i * 80 / n.max(1)) as u32),
        });
        let mut messages = input.request.messages[chunk.clone()].to_vec();
        let chunk_tokens: u64 = input.tokens[chunk.clone()].iter().sum();
        if messages.len() == 1 && chunk_tokens > limit {
            // One message larger than a chunk: keep its head and tail.
            let chars = (limit as usize).saturating_mul(3).max(256);
            messages[0] = with_text(&messages[0], &clip_middle(messages[0].text(), chars)).into();
        }
        let request = SummaryRequest {
            previous_summary: None,
            messages,
            partial_summaries: Vec::new(),
            ..input.request.clone()
        };
        let output = call(summarizer, request, progress).await?;
        name = output.summarizer.clone();
        Usage::accumulate(&mut usage, output.usage);
        partials.push(output.text);
    }
    let text = merge_partials(
        summarizer, input, partials, limit, settings, progress, &mut usage,
    )
    .await?;
    Ok(WrittenSummary {
        text,
        summarizer: name,
        usage,
        chunks: n as u32,
        degraded: None,
    })
}

/// Merges partial summaries in bounded rounds of summarizer calls, then
/// deterministically if several remain.
async fn merge_partials(
    summarizer: &dyn Summarizer,
    input: &SummaryInput,
    mut partials: Vec<String>,
    limit: u64,
    settings: DriverSettings,
    progress: ProgressSink<'_>,
    usage: &mut Option<Usage>,
) -> Result<String, SummarizeError> {
    let mut round = 0;
    while partials.len() > 1 && round < MAX_MERGE_ROUNDS {
        round += 1;
        let sizes: Vec<u64> = partials
            .iter()
            .map(|p| settings.encoding.count(p))
            .collect();
        let groups = group_for_merge(&sizes, limit);
        if groups.len() == partials.len() {
            break; // every partial alone fills a chunk: merging cannot shrink
        }
        progress(Progress {
            message: format!(
                "merging {} partial summaries (round {round})",
                partials.len()
            ),
            percentage: Some(80 + round * 4),
        });
        let mut merged = Vec::with_capacity(groups.len());
        for group in groups {
            if group.len() == 1 {
                merged.push(partials[group.start].clone());
                continue;
            }
            let request = SummaryRequest {
                previous_summary: None,
                messages: Vec::new(),
                partial_summaries: partials[group].to_vec(),
                ..input.request.clone()
            };
            let output = call(summarizer, request, progress).await?;
            Usage::accumulate(usage, output.usage);
            merged.push(output.text);
        }
        partials = merged;
    }
    Ok(if partials.len() == 1 {
        partials.remove(0)
    } else {
        // Still several after the bounded rounds: merge deterministically.
        super::offline::merge_summaries(&partials)
    })
}

/// One summarizer call, retried once when the summary is unusable.
async fn call(
    summarizer: &dyn Summarizer,
    request: SummaryRequest,
    progress: ProgressSink<'_>,
) -> Result<SummaryOutput, SummarizeError> {
    match summarizer.summarize(request.clone(), progress).await {
        Err(SummarizeError::Unusable(why)) => {
            tracing::info!("unusable summary ({why}); retrying once");
            summarizer.summarize(request, progress).await
        }
        other => other,
    }
}

fn elide_tool_outputs(input: &SummaryInput) -> SummaryInput {
    let mut out = input.clone();
    for (message, tokens) in out.request.messages.iter_mut().zip(out.tokens.iter_mut()) {
        if message.answers().is_some() {
            *message = with_text(message, ELIDED).into();
            *tokens = crate::tokens::PER_MESSAGE_OVERHEAD + 6;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::Message;
    use crate::summarize::BoxFuture;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Mutex;

    /// A summarizer that follows a script of answers and records what it
    /// was asked.
    struct Scripted {
        answers: Mutex<Vec<Result<String, SummarizeError>>>,
        calls: AtomicU32,
        window: Option<u64>,
        seen: Mutex<Vec<(usize, usize)>>, // (messages, partials) per call
    }

    impl Scripted {
        fn new(answers: Vec<Result<String, SummarizeError>>) -> Scripted {
            Scripted {
                answers: Mutex::new(answers),
                calls: AtomicU32::new(0),
                window: None,
                seen: Mutex::new(Vec::new()),
            }
        }
    }

    impl Summarizer for Scripted {
        fn name(&self) -> &str {
            "scripted"
        }
        fn summarize<'a>(
            &'a self,
            request: SummaryRequest,
            _: ProgressSink<'a>,
        ) -> BoxFuture<'a, Result<SummaryOutput, SummarizeError>> {
            Box::pin(async move {
                self.calls.fetch_add(1, Ordering::SeqCst);
                self.seen
                    .lock()
                    .unwrap()
                    .push((request.messages.len(), request.partial_summaries.len()));
                if let Some(window) = self.window {
                    let size: u64 = request
                        .messages
                        .iter()
                        .map(|m| crate::tokens::count_message(Encoding::O200k, m))
                        .sum();
                    if size > window {
                        return Err(SummarizeError::ContextOverflow(format!(
                            "{size} > {window}"
                        )));
                    }
                }
                let mut answers = self.answers.lock().unwrap();
                let answer = if answers.is_empty() {
                    Ok("summary".to_string())
                } else {
                    answers.remove(0)
                };
                answer.map(|text| SummaryOutput {
                    text,
                    summarizer: "scripted".into(),
                    usage: Some(Usage {
                        input: 10,
                        output: 2,
                        ..Usage::default()
                    }),
                    chunks: 1,
                })
            })
        }
    }

    fn input(turns: usize) -> SummaryInput {
        let mut messages = Vec::new();
        for i in 0..turns {
            messages.push(Message::user(
                format!("u{i}"),
                "please do the next step of the plan ".repeat(10),
            ));
            messages.push(Message::assistant(
                format!("a{i}"),
                "done with that step, moving on ".repeat(10),
                vec![],
            ));
        }
        SummaryInput::new(
            SummaryRequest {
                previous_summary: None,
                messages: messages.into_iter().map(Into::into).collect(),
                partial_summaries: Vec::new(),
                later: Vec::new(),
                earlier: Vec::new(),
                instructions: None,
                max_tool_output_chars: 2000,
                compact_prompt: None,
                update_prompt: None,
            },
            Encoding::O200k,
        )
    }

    fn settings(window: Option<u64>) -> DriverSettings {
        DriverSettings {
            window,
            output_budget: 200,
            max_summary_tokens: None,
            encoding: Encoding::O200k,
        }
    }

    fn run(s: &Scripted, input: &SummaryInput, window: Option<u64>) -> WrittenSummary {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(summarize(s, input, settings(window), &|_| {}))
    }

    #[test]
    fn chunk_sizes_count_clipped_arguments_and_outputs() {
        let call = crate::conversation::ToolCall {
            id: "c".into(),
            name: "write".into(),
            arguments: serde_json::json!({"path": "a.rs", "content": "x y z ".repeat(5000)}),
        };
        let messages = vec![
            Message::assistant("a", "", vec![call]),
            Message::tool_result("t", "c", "out put ".repeat(5000), false),
        ];
        let request = SummaryRequest {
            previous_summary: None,
            messages: messages.into_iter().map(Into::into).collect(),
            partial_summaries: Vec::new(),
            later: Vec::new(),
            earlier: Vec::new(),
            instructions: None,
            max_tool_output_chars: 2000,
            compact_prompt: None,
            update_prompt: None,
        };
        let input = SummaryInput::new(request, Encoding::O200k);
        // Unclipped, each would be over 15,000 tokens.
        assert!(
            input.tokens.iter().all(|t| *t < 1_200),
            "{:?}",
            input.tokens
        );
        assert!(
            input.request.messages[1].text().len() > 30_000,
            "the request itself is not clipped"
        );
    }

    #[test]
    fn fits_in_one_call() {
        let s = Scripted::new(vec![]);
        let out = run(&s, &input(3), Some(100_000));
        assert_eq!(
            (
                out.chunks,
                out.degraded.as_deref(),
                s.calls.load(Ordering::SeqCst)
            ),
            (1, None, 1)
        );
        assert_eq!(out.usage.unwrap().input, 10);
    }

    #[test]
    fn too_big_input_is_chunked_and_merged() {
        let s = Scripted::new(vec![]);
        let big = input(40); // ~6k tokens
        let out = run(&s, &big, Some(1_200));
        assert!(out.chunks > 4, "{}", out.chunks);
        assert_eq!(out.degraded, None);
        let seen = s.seen.lock().unwrap();
        assert!(
            seen.iter().any(|(_, partials)| *partials > 1),
            "partials were merged: {seen:?}"
        );
        assert_eq!(
            out.usage.unwrap().input,
            10 * s.calls.load(Ordering::SeqCst) as u64
        );
    }

    #[test]
    fn overflow_answers_chunk_smaller() {
        // No window configured, but the summarizer overflows above 700 tokens.
        let mut s = Scripted::new(vec![]);
        s.window = Some(700);
        let out = run(&s, &input(20), None);
        assert!(out.chunks > 1);
        assert_eq!(out.degraded, None, "{:?}", out.degraded);
    }

    #[test]
    fn unusable_is_retried_once_then_the_ladder_descends() {
        let s = Scripted::new(vec![
            Err(SummarizeError::Unusable("empty".into())),
            Ok("second try".into()),
        ]);
        let out = run(&s, &input(2), None);
        assert_eq!(out.text, "second try");
        assert_eq!(out.degraded, None);

        let s = Scripted::new(vec![
            Err(SummarizeError::Unusable("empty".into())),
            Err(SummarizeError::Unusable("empty again".into())),
            Err(SummarizeError::Failed("HTTP 500".into())),
        ]);
        let out = run(&s, &input(2), None);
        assert_eq!(out.summarizer, "offline");
        let why = out.degraded.unwrap();
        assert!(
            why.contains("scripted failed") && why.contains("tool outputs elided failed"),
            "{why}"
        );
        assert!(out.text.starts_with("## Task\n"), "{}", out.text);
    }
}
