//! Claude Code's one trim of its context that no transcript line records:
//! after the person was away long enough for the provider's prompt cache
//! to expire, the next request replaces the results of all but the newest
//! tool calls with `[Old tool result content cleared]`. Read from
//! 2.1.330's code (`minIdleSeconds: 3900, keepToolUses: 12,
//! clearAtLeastTokens: 20000`, `minTriggerToolUses: 27`; results of the
//! reading, searching, shell, web and editing tools; Claude Code's own
//! estimate, about 4 characters a token). The time-based clearing first
//! appears in 2.1.81 (`tengu_time_based_microcompact`, there behind a
//! flag compactd cannot see, so it is taken as on); 2.1.7–2.1.14 have
//! only the older clearing near the auto-compaction point, which writes a
//! `microcompact_boundary` line. A 2.1.14 session whose prompt fell
//! 86,733 → 67,071 tokens 4.7 hours after the last response, once taken
//! for this, was a resume (`resume.rs`).
//!
//! Pure: the reader feeds it the results, the responses' and prompts'
//! times, and the version each line names.

/// Seconds without a response after which the next prompt clears.
const MIN_IDLE_MS: u64 = 3_900_000;
/// Results of the newest tool calls that are kept.
const KEEP: usize = 12;
/// Fewer results than this are left alone.
const MIN_RESULTS: usize = KEEP + 15;
/// A clearing that saves less than this (Claude Code's estimate) is not
/// made.
const MIN_SAVED_TOKENS: u64 = 20_000;
/// Claude Code's estimate: characters per token.
const CHARS_PER_TOKEN: u64 = 4;
/// The first version with the rule.
const SINCE: (u32, u32, u32) = (2, 1, 81);
/// The tools whose results it clears.
const CLEARED_TOOLS: [&str; 9] = [
    "Read",
    "Bash",
    "Grep",
    "Glob",
    "WebSearch",
    "WebFetch",
    "Edit",
    "Write",
    "MultiEdit",
];

/// What the rule needs of the transcript so far.
#[derive(Debug, Clone, Default)]
pub(super) struct IdleClearing {
    /// Results of the tools it clears since the latest compaction (or
    /// clearing): their message id and length in characters.
    results: Vec<(String, u64)>,
    /// When the latest response was written (ms since the epoch).
    last_response_ms: Option<u64>,
    version: Option<(u32, u32, u32)>,
}

impl IdleClearing {
    /// The version a line names (`"version": "2.1.14"`).
    pub(super) fn version(&mut self, version: (u32, u32, u32)) {
        self.version = Some(version);
    }

    /// A tool's result, as the message `id`.
    pub(super) fn result(&mut self, id: String, tool: Option<&str>, chars: u64) {
        if tool.is_some_and(|t| CLEARED_TOOLS.contains(&t)) {
            self.results.push((id, chars));
        }
    }

    pub(super) fn response(&mut self, at_ms: Option<u64>) {
        if at_ms.is_some() {
            self.last_response_ms = at_ms;
        }
    }

    /// The agent compacted: what it keeps starts over.
    pub(super) fn compacted(&mut self) {
        self.results.clear();
    }

    /// A prompt the person typed at `at_ms`: the ids of the results the
    /// request it starts no longer holds, if Claude Code clears here.
    pub(super) fn prompt(&mut self, at_ms: Option<u64>) -> Option<Vec<String>> {
        let idle = at_ms?.checked_sub(self.last_response_ms?)?;
        if idle < MIN_IDLE_MS || self.version? < SINCE || self.results.len() < MIN_RESULTS {
            return None;
        }
        let cut = self.results.len() - KEEP;
        let saved: u64 = self.results[..cut].iter().map(|(_, c)| c).sum::<u64>() / CHARS_PER_TOKEN;
        if saved < MIN_SAVED_TOKENS {
            return None;
        }
        Some(self.results.drain(..cut).map(|(id, _)| id).collect())
    }
}

/// A Claude Code version (`2.1.81`) as numbers, to compare.
pub(super) fn parse_version(version: &str) -> Option<(u32, u32, u32)> {
    let mut parts = version.split('.').map(|p| p.parse::<u32>().ok());
    match (parts.next(), parts.next(), parts.next()) {
        (Some(Some(a)), Some(Some(b)), Some(Some(c))) => Some((a, b, c)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR_MS: u64 = 3_600_000;

    fn session(version: &str, results: usize, chars: u64) -> IdleClearing {
        let mut idle = IdleClearing::default();
        idle.version(parse_version(version).expect("a version"));
        for n in 0..results {
            idle.result(format!("r{n}"), Some("Read"), chars);
        }
        idle.response(Some(10 * HOUR_MS));
        idle
    }

    #[test]
    fn a_prompt_after_65_minutes_away_clears_all_but_the_12_newest_results() {
        let mut idle = session("2.1.330", 45, 3_000);
        let cleared = idle
            .prompt(Some(10 * HOUR_MS + MIN_IDLE_MS))
            .expect("cleared");
        assert_eq!(cleared.len(), 33);
        assert_eq!((cleared[0].as_str(), cleared[32].as_str()), ("r0", "r32"));
        // What was cleared is not cleared again.
        assert_eq!(idle.prompt(Some(20 * HOUR_MS)), None);
    }

    #[test]
    fn nothing_is_cleared_short_of_any_of_its_conditions() {
        let back = Some(10 * HOUR_MS + MIN_IDLE_MS);
        assert_eq!(
            session("2.1.330", 45, 3_000).prompt(Some(10 * HOUR_MS + MIN_IDLE_MS - 1)),
            None,
            "back too soon"
        );
        assert_eq!(
            session("2.1.14", 45, 3_000).prompt(back),
            None,
            "a version without the rule"
        );
        assert_eq!(
            session("2.1.330", 26, 9_000).prompt(back),
            None,
            "too few results"
        );
        assert_eq!(
            session("2.1.330", 45, 2_400).prompt(back),
            None,
            "33 × 600 tokens saves too little"
        );
        let mut other_tool = session("2.1.330", 0, 0);
        for n in 0..45 {
            other_tool.result(format!("t{n}"), Some("TodoWrite"), 9_000);
        }
        assert_eq!(other_tool.prompt(back), None, "a tool it does not clear");
        let mut compacted = session("2.1.330", 45, 3_000);
        compacted.compacted();
        assert_eq!(compacted.prompt(back), None, "a compaction took them");
    }
}
