//! The one auto-compaction decision, used by the server after every append
//! and check and by `compactd stats`/`replay` as they walk a transcript:
//! which triggers fire, whether automatic compaction may run (the
//! environment's kill switch, the session's switch or the config's, the
//! circuit breaker), which strategy it uses and how much it keeps, and
//! what its outcome does to the breaker.

use super::compaction::plan_options;
use super::meter::{auto_compact_at, context_window, trigger_settings};
use super::Access;
use crate::compaction::trigger::{self, AttemptVerdict, TriggerKind};
use crate::compaction::Strategy;
use crate::config::Config;
use crate::session::Session;

/// `COMPACTD_DISABLE_AUTOCOMPACT=1` turns automatic compaction off
/// everywhere, whatever the configuration says.
pub const DISABLE_ENV: &str = "COMPACTD_DISABLE_AUTOCOMPACT";

/// The triggers that fire for the session now, allowed or not.
pub fn triggers_fired(config: &Config, session: &Session) -> Vec<TriggerKind> {
    let settings = trigger_settings(config);
    let window = context_window(config, session);
    let at = trigger::auto_compact_at(&settings, window);
    trigger::evaluate(&settings, session.trigger_input(window, at))
}

/// Automatic compaction is allowed for the session: this process may
/// write it (not opened read-only, not following an agent, which compacts
/// by itself), the environment's kill switch is off,
/// the session's own switch (else the config's `autoCompact`) is on, and
/// the circuit breaker has not tripped.
pub fn allowed(config: &Config, session: &Session, access: Access) -> bool {
    let env = std::env::var(DISABLE_ENV).ok();
    let switch = session.auto_compact_switch.unwrap_or(config.auto_compact);
    access == Access::Write
        && trigger::auto_compact_enabled(switch, env.as_deref())
        && session.breaker.stopped.is_none()
}

/// The compaction to start automatically.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AutoCompaction {
    pub strategy: Strategy,
    pub keep_recent_tokens: u64,
}

/// What the decision found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AutoDecision {
    /// The triggers that fire, allowed or not.
    pub fired: Vec<TriggerKind>,
    /// Set when an automatic compaction should start now.
    pub start: Option<AutoCompaction>,
}

/// Decides whether to compact the session automatically; `compacting`
/// says a compaction of it is already running.
pub fn decide(
    config: &Config,
    session: &Session,
    access: Access,
    compacting: bool,
) -> AutoDecision {
    let fired = triggers_fired(config, session);
    let start = (!fired.is_empty() && !compacting && allowed(config, session, access)).then(|| {
        AutoCompaction {
            strategy: strategy(config, session),
            // Each failed attempt keeps less: full, half, then none.
            keep_recent_tokens: trigger::keep_for_attempt(
                config.keep_recent_tokens,
                session.breaker.failed_attempts,
            ),
        }
    });
    AutoDecision { fired, start }
}

/// The configured strategy, except that pruning is chosen when it alone
/// gets under the limit, and a handoff (which starts a new session and
/// cannot shrink this one) becomes a checkpoint.
fn strategy(config: &Config, session: &Session) -> Strategy {
    match config.strategy {
        Strategy::Checkpoint | Strategy::Incremental if prune_suffices(config, session) => {
            Strategy::Prune
        }
        Strategy::Handoff => Strategy::Checkpoint,
        other => other,
    }
}

/// Pruning alone would bring the context under every trigger.
fn prune_suffices(config: &Config, session: &Session) -> bool {
    let options = plan_options(config, Strategy::Prune, 0, None);
    let Ok(job) = session.plan(&options, 0) else {
        return false;
    };
    job.job.context_without_summary() < auto_compact_at(config, context_window(config, session))
}

/// Feeds an automatic compaction's outcome to the session's breaker:
/// `Ok((before, after))` tokens, or why it produced no compaction. A
/// compaction is judged by what it removed: `after` is what it left of the
/// context it planned on, compared with the auto-compaction point, so
/// messages appended while it ran (which the next trigger handles) never
/// count against it.
pub fn record_outcome(
    config: &Config,
    session: &mut Session,
    outcome: Result<(u64, u64), String>,
) -> AttemptVerdict {
    match outcome {
        Ok((before, after)) => {
            let at = auto_compact_at(config, context_window(config, session));
            session.breaker.record_attempt(before, after, after >= at)
        }
        Err(why) => session.breaker.record_no_progress(&why),
    }
}
