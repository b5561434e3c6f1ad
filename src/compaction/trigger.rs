//! When a session should compact. Pure: the meter and config go in, a
//! decision comes out.

use crate::config::Config;

/// The token count at which auto-compaction fires: the lowest of the
/// enabled limits (absolute, percentage of the window, window minus the
/// reserve). A limit of 0 is disabled; with none enabled, the window.
pub fn auto_compact_at(config: &Config, context_window: u64) -> u64 {
    let mut limits = Vec::with_capacity(3);
    if config.auto_compact_token_limit > 0 {
        limits.push(config.auto_compact_token_limit);
    }
    if config.auto_compact_percent > 0.0 {
        limits.push((context_window as f64 * config.auto_compact_percent / 100.0).floor() as u64);
    }
    if config.reserve_tokens > 0 && config.reserve_tokens < context_window {
        // "More than window - reserve" fires, so the limit is one above.
        limits.push(context_window - config.reserve_tokens + 1);
    }
    limits.into_iter().min().unwrap_or(context_window)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(limit: u64, percent: f64, reserve: u64, window: u64, expected: u64) {
        let config = Config {
            auto_compact_token_limit: limit,
            auto_compact_percent: percent,
            reserve_tokens: reserve,
            ..Config::default()
        };
        assert_eq!(
            auto_compact_at(&config, window),
            expected,
            "limit {limit} percent {percent} reserve {reserve} window {window}"
        );
    }

    #[test]
    fn lowest_enabled_limit_wins() {
        check(0, 90.0, 16_384, 200_000, 180_000);
        check(0, 90.0, 16_384, 100_000, 83_617);
        check(50_000, 90.0, 16_384, 200_000, 50_000);
        check(0, 0.0, 0, 200_000, 200_000);
        check(0, 0.0, 300_000, 200_000, 200_000); // a reserve beyond the window is ignored
    }
}
