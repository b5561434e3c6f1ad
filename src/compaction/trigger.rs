//! When a session should compact, and the safeguards that keep automatic
//! compaction from looping. Pure: the meter, counts and limits go in, a
//! decision comes out.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The limits the triggers compare against (each 0 is disabled).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TriggerSettings {
    pub auto_compact_token_limit: u64,
    pub auto_compact_percent: f64,
    pub reserve_tokens: u64,
    pub message_threshold: u64,
    pub turn_threshold: u64,
}

/// The token count at which auto-compaction fires: the lowest of the
/// enabled limits (absolute, percentage of the window, window minus the
/// reserve). A limit of 0 is disabled; with none enabled, the window.
pub fn auto_compact_at(config: &TriggerSettings, context_window: u64) -> u64 {
    token_limits(config, context_window)
        .into_iter()
        .map(|(_, at)| at)
        .min()
        .unwrap_or(context_window)
}

/// Which limit fired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum TriggerKind {
    /// tokens ≥ autoCompactTokenLimit
    Tokens,
    /// tokens ≥ autoCompactPercent of the window
    Percent,
    /// tokens > window − reserveTokens
    Reserve,
    /// messages since the last compaction ≥ messageThreshold
    Messages,
    /// user turns since the last compaction ≥ turnThreshold
    Turns,
}

/// Each enabled token limit with the count at which it fires.
fn token_limits(config: &TriggerSettings, window: u64) -> Vec<(TriggerKind, u64)> {
    let mut limits = Vec::with_capacity(3);
    if config.auto_compact_token_limit > 0 {
        limits.push((TriggerKind::Tokens, config.auto_compact_token_limit));
    }
    if config.auto_compact_percent > 0.0 {
        limits.push((
            TriggerKind::Percent,
            (window as f64 * config.auto_compact_percent / 100.0).ceil() as u64,
        ));
    }
    if config.reserve_tokens > 0 && config.reserve_tokens < window {
        // "More than window − reserve" fires, so the count is one above.
        limits.push((TriggerKind::Reserve, window - config.reserve_tokens + 1));
    }
    limits
}

/// What the triggers look at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TriggerInput {
    pub tokens: u64,
    pub window: u64,
    /// Messages in the view since the last compaction.
    pub messages: u64,
    /// User messages in the view since the last compaction.
    pub user_turns: u64,
}

/// Every trigger that fires for `input`.
pub fn evaluate(config: &TriggerSettings, input: TriggerInput) -> Vec<TriggerKind> {
    let mut fired: Vec<TriggerKind> = token_limits(config, input.window)
        .into_iter()
        .filter(|(_, at)| input.tokens >= *at)
        .map(|(kind, _)| kind)
        .collect();
    if config.message_threshold > 0 && input.messages >= config.message_threshold {
        fired.push(TriggerKind::Messages);
    }
    if config.turn_threshold > 0 && input.user_turns >= config.turn_threshold {
        fired.push(TriggerKind::Turns);
    }
    fired
}

/// Whether automatic compaction runs, given its switch (the session's, else
/// the config's `autoCompact`) and the environment's kill switch
/// (`COMPACTD_DISABLE_AUTOCOMPACT=1`), which wins.
pub fn auto_compact_enabled(switch: bool, disable_env: Option<&str>) -> bool {
    switch && !matches!(disable_env.map(str::trim), Some("1") | Some("true"))
}

/// How much of the recent tail an automatic attempt keeps: full, half,
/// then none, one step per failed attempt.
pub fn keep_for_attempt(keep_recent_tokens: u64, failed_attempts: u32) -> u64 {
    match failed_attempts {
        0 => keep_recent_tokens,
        1 => keep_recent_tokens / 2,
        _ => 0,
    }
}

/// Consecutive failed automatic attempts after which auto-compaction stops
/// for the session.
pub const MAX_FAILED_ATTEMPTS: u32 = 3;
/// A compaction that saves less than this share did not help.
pub const MIN_SAVING: f64 = 0.05;

/// Per-session auto-compaction state: the circuit breaker.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CircuitBreaker {
    /// Consecutive automatic compactions that did not help.
    pub failed_attempts: u32,
    /// Why auto-compaction stopped for this session, once it has.
    pub stopped: Option<String>,
}

/// The verdict on one finished automatic compaction.
#[derive(Debug, Clone, PartialEq)]
pub enum AttemptVerdict {
    Helped,
    /// Try again on the next trigger with a smaller tail.
    Failed {
        reason: String,
    },
    /// The breaker tripped: stop auto-compacting.
    Stop {
        reason: String,
    },
}

impl CircuitBreaker {
    /// Records the outcome of an automatic compaction: `before`/`after`
    /// tokens and whether any trigger still fires afterwards.
    pub fn record_attempt(&mut self, before: u64, after: u64, still_over: bool) -> AttemptVerdict {
        let saved = if before == 0 {
            0.0
        } else {
            before.saturating_sub(after) as f64 / before as f64
        };
        if saved >= MIN_SAVING && !still_over {
            self.failed_attempts = 0;
            return AttemptVerdict::Helped;
        }
        self.failed_attempts += 1;
        let why = if still_over {
            format!(
                "the context is still over the limit after compaction ({before} → {after} tokens)"
            )
        } else {
            format!(
                "compaction saved only {:.1}% ({before} → {after} tokens)",
                saved * 100.0
            )
        };
        if self.failed_attempts >= MAX_FAILED_ATTEMPTS {
            let reason = format!(
                "auto-compaction stopped for this session after {MAX_FAILED_ATTEMPTS} attempts that did not help: {why}"
            );
            self.stopped = Some(reason.clone());
            AttemptVerdict::Stop { reason }
        } else {
            AttemptVerdict::Failed { reason: why }
        }
    }

    /// A failed attempt that produced no compaction at all (nothing to cut,
    /// or the summarizer failed) counts like one that did not help.
    pub fn record_no_progress(&mut self, why: &str) -> AttemptVerdict {
        self.failed_attempts += 1;
        if self.failed_attempts >= MAX_FAILED_ATTEMPTS {
            let reason = format!(
                "auto-compaction stopped for this session after {MAX_FAILED_ATTEMPTS} attempts that did not help: {why}"
            );
            self.stopped = Some(reason.clone());
            AttemptVerdict::Stop { reason }
        } else {
            AttemptVerdict::Failed {
                reason: why.to_string(),
            }
        }
    }

    /// Re-enabling auto-compaction (or a manual compaction that helped)
    /// resets the breaker.
    pub fn reset(&mut self) {
        *self = CircuitBreaker::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(
        limit: u64,
        percent: f64,
        reserve: u64,
        messages: u64,
        turns: u64,
    ) -> TriggerSettings {
        TriggerSettings {
            auto_compact_token_limit: limit,
            auto_compact_percent: percent,
            reserve_tokens: reserve,
            message_threshold: messages,
            turn_threshold: turns,
        }
    }

    fn input(tokens: u64, window: u64, messages: u64, user_turns: u64) -> TriggerInput {
        TriggerInput {
            tokens,
            window,
            messages,
            user_turns,
        }
    }

    #[test]
    fn lowest_enabled_limit_wins() {
        let check = |c: TriggerSettings, window: u64, expected: u64| {
            assert_eq!(auto_compact_at(&c, window), expected)
        };
        check(config(0, 90.0, 16_384, 0, 0), 200_000, 180_000);
        check(config(0, 90.0, 16_384, 0, 0), 100_000, 83_617);
        check(config(50_000, 90.0, 16_384, 0, 0), 200_000, 50_000);
        check(config(0, 0.0, 0, 0, 0), 200_000, 200_000);
        check(config(0, 0.0, 300_000, 0, 0), 200_000, 200_000); // a reserve beyond the window is ignored
    }

    /// Each trigger exactly at, and one below, its boundary.
    #[test]
    fn trigger_boundaries() {
        use TriggerKind::*;
        let cases: &[(TriggerSettings, TriggerInput, &[TriggerKind])] = &[
            (config(1000, 0.0, 0, 0, 0), input(999, 10_000, 0, 0), &[]),
            (
                config(1000, 0.0, 0, 0, 0),
                input(1000, 10_000, 0, 0),
                &[Tokens],
            ),
            (config(0, 90.0, 0, 0, 0), input(8_999, 10_000, 0, 0), &[]),
            (
                config(0, 90.0, 0, 0, 0),
                input(9_000, 10_000, 0, 0),
                &[Percent],
            ),
            (config(0, 0.0, 2_000, 0, 0), input(8_000, 10_000, 0, 0), &[]),
            (
                config(0, 0.0, 2_000, 0, 0),
                input(8_001, 10_000, 0, 0),
                &[Reserve],
            ),
            (config(0, 0.0, 0, 10, 0), input(0, 10_000, 9, 0), &[]),
            (
                config(0, 0.0, 0, 10, 0),
                input(0, 10_000, 10, 0),
                &[Messages],
            ),
            (config(0, 0.0, 0, 0, 3), input(0, 10_000, 50, 2), &[]),
            (config(0, 0.0, 0, 0, 3), input(0, 10_000, 50, 3), &[Turns]),
            (
                config(0, 90.0, 2_000, 10, 3),
                input(9_500, 10_000, 10, 3),
                &[Percent, Reserve, Messages, Turns],
            ),
            // 0 disables each of them.
            (
                config(0, 0.0, 0, 0, 0),
                input(u64::MAX / 2, 10_000, 1_000, 1_000),
                &[],
            ),
        ];
        for (c, i, expected) in cases {
            assert_eq!(evaluate(c, *i), *expected, "{i:?}");
        }
    }

    #[test]
    fn environment_and_config_disable_auto_compaction() {
        assert!(auto_compact_enabled(true, None));
        assert!(auto_compact_enabled(true, Some("0")));
        assert!(!auto_compact_enabled(true, Some("1")));
        assert!(!auto_compact_enabled(false, None));
    }

    #[test]
    fn breaker_shrinks_the_tail_then_stops() {
        let mut state = CircuitBreaker::default();
        assert_eq!(keep_for_attempt(20_000, state.failed_attempts), 20_000);
        assert!(
            matches!(
                state.record_attempt(100_000, 99_000, false),
                AttemptVerdict::Failed { .. }
            ),
            "1% saved"
        );
        assert_eq!(keep_for_attempt(20_000, state.failed_attempts), 10_000);
        assert!(
            matches!(
                state.record_attempt(100_000, 60_000, true),
                AttemptVerdict::Failed { .. }
            ),
            "still over"
        );
        assert_eq!(keep_for_attempt(20_000, state.failed_attempts), 0);
        match state.record_attempt(100_000, 95_500, true) {
            AttemptVerdict::Stop { reason } => assert!(reason.contains("3 attempts"), "{reason}"),
            other => panic!("{other:?}"),
        }
        assert!(state.stopped.is_some());
        state.reset();
        assert_eq!(state, CircuitBreaker::default());
        assert_eq!(
            state.record_attempt(100_000, 50_000, false),
            AttemptVerdict::Helped
        );
    }
}
