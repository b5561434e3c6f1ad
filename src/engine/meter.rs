//! The context window that applies to a session, and its meter.

use crate::compaction::trigger::{self, TriggerSettings};
use crate::config::Config;
use crate::session::Session;
use crate::tokens::{self, Meter};

/// The session's own window, else the configured one, else the table's
/// entry for its model (or the configured model), else the default.
pub fn context_window(config: &Config, session: &Session) -> u64 {
    session
        .context_window
        .or(config.context_window)
        .or_else(|| {
            session
                .model
                .as_deref()
                .or(config.model.as_deref())
                .and_then(tokens::context_window_for)
        })
        .unwrap_or(config.default_context_window)
}

/// The limits the auto-compaction triggers use.
pub fn trigger_settings(config: &Config) -> TriggerSettings {
    TriggerSettings {
        auto_compact_token_limit: config.auto_compact_token_limit,
        auto_compact_percent: config.auto_compact_percent,
        reserve_tokens: config.reserve_tokens,
        message_threshold: config.message_threshold,
        turn_threshold: config.turn_threshold,
    }
}

/// The token count at which auto-compaction fires in a window.
pub fn auto_compact_at(config: &Config, window: u64) -> u64 {
    trigger::auto_compact_at(&trigger_settings(config), window)
}

/// The session's meter in the window that applies to it.
pub fn meter(config: &Config, session: &Session) -> Meter {
    let window = context_window(config, session);
    session.meter(window, auto_compact_at(config, window))
}
