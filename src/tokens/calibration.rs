//! What the provider counts that compactd does not, learned from usage.
//!
//! Every request carries parts no client sends to compactd (the agent's
//! system prompt and tool definitions, the provider's own framing), and the
//! provider's tokenizer is not compactd's: on the shared Claude sessions
//! Claude counts 20–40% more than o200k for the same messages. Each
//! assistant turn with usage is a sample: the prompt the provider reported,
//! `r`, against compactd's count of what it held for that request, `e`.
//! compactd fits `r ≈ overhead + scale · e` per model:
//!
//! - `overhead` is each sample's `r − scale · e`, averaged with weights
//!   `1 / (e + 1000)²`. A sample's error grows with `e` (the tokenizer
//!   mismatch and the content mix scale with the messages), so the turns
//!   where compactd held little (the first of a session, the first after a
//!   compaction) decide it and one odd turn late in a long session barely
//!   moves it. Running sums keep it O(1) per sample and let it follow the
//!   current `scale`. Clamped at ≥ 0.
//! - `scale` is an exponential moving average (α = 0.2) of each sample's
//!   slope from the weighted centroid of the samples before it (where the
//!   overhead is measured): `(r − r̄) / (e − ē)`, when `e` is far enough
//!   from `ē` to measure it (by 1,000 tokens and by `ē`). The slope does
//!   not depend on the current estimates, so exact data give the exact
//!   scale; the average follows the content mix (code, JSON and prose
//!   tokenize differently) within a few turns, while one odd turn moves it
//!   by a fifth of its deviation. It applies once it has three samples
//!   (before, 1): the first slopes span a few small turns, and one large
//!   tool output of unusual content would swing them.
//! - Once the scale has three samples, a sample more than 50% away from
//!   what the fit predicts is ignored: a whole request cannot change like
//!   that in one turn, so it was not what compactd held (one sent before a
//!   compaction finished, say). Three such samples in a row mean the
//!   requests did change (the agent added tools, say): the fit starts over
//!   from the third.
//!
//! Why not one number, `r − e` smoothed: that number grows with the session
//! (16k → 55k over one Claude Code session) because it absorbs the
//! tokenizer difference of every message, so right after a compaction it
//! overstates the context by about as much as the compaction saved. At the
//! first request after each of the two real compactions in the shared pi
//! session `before-compaction`, the median of the last eight `r − e` would
//! have been +114% and +99% off; this fit is −0.1% and −4.5% off
//! (`compactd stats`).
//!
//! Everything here is derived from samples taken in log order, so a
//! resumed session (its log replayed) gets the same calibration.

use std::collections::HashMap;

/// Samples with less than this many estimated tokens weigh the same in the
/// overhead; a scale is measured across at least this many.
const SMALL_ESTIMATE: f64 = 1000.0;
/// The weight of a new sample in the scale's moving average.
const SCALE_ALPHA: f64 = 0.2;
/// Scales outside this range are not a tokenizer difference: a slope
/// beyond it is content compactd does not see (a client's re-attached
/// files, say), and multiplying every new message by it moved the meter by
/// 2.5× a large tool result's count. Claude counts coding sessions 1.19–
/// 1.42× o200k (the shared and the quality benchmark's Claude Code
/// transcripts, whole sessions); another model's tokenizer may be anything
/// (GPT-2's counts indented code twice as o200k does).
const SCALE_RANGE: (f64, f64) = (0.5, 3.0);
const ANTHROPIC_SCALE_RANGE: (f64, f64) = (1.0, 1.6);
/// The scale applies, and a sample this far from the fit's prediction is
/// an outlier, once the scale has `SETTLED` samples; `OUTLIERS_TRUSTED`
/// outliers in a row are not.
const OUTLIER: f64 = 0.5;
const SETTLED: u32 = 3;
/// The scale a Claude model's fit starts from until its own samples
/// settle it: Claude counts coding sessions 19–42% above o200k (the shared
/// and the quality benchmark's Claude Code transcripts); starting at 1
/// under-counted a large first tool result by up to 17%.
const ANTHROPIC_PRIOR: f64 = 1.2;
const OUTLIERS_TRUSTED: u32 = 3;

/// Provider tokens ≈ `overhead` + `scale` × compactd's count.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Correction {
    /// Tokens in every request that compactd holds no message for.
    pub overhead: u64,
    /// Provider tokens per compactd token of the messages.
    pub scale: f64,
}

impl Correction {
    /// No usage seen: compactd's own count.
    pub const NONE: Correction = Correction {
        overhead: 0,
        scale: 1.0,
    };

    /// `tokens` of compactd's count in the provider's tokens.
    pub fn scaled(&self, tokens: u64) -> u64 {
        (tokens as f64 * self.scale).round() as u64
    }

    /// A request holding `tokens` of compactd's count, as the provider
    /// would count it: the overhead plus the scaled count.
    pub fn context(&self, tokens: u64) -> u64 {
        self.overhead + self.scaled(tokens)
    }
}

/// The calibration of one session, per model.
#[derive(Debug, Clone, Default)]
pub struct Calibration {
    models: HashMap<String, ModelFit>,
    /// The model of the latest sample.
    latest: Option<String>,
}

impl Calibration {
    /// Adds a sample: the provider reported `reported` prompt tokens for a
    /// request that held `estimate` tokens of compactd's count.
    pub fn observe(&mut self, model: Option<&str>, estimate: u64, reported: u64) {
        if reported == 0 {
            return;
        }
        let key = model_key(model);
        let (prior, range) = if key.contains("claude") {
            (ANTHROPIC_PRIOR, ANTHROPIC_SCALE_RANGE)
        } else {
            (1.0, SCALE_RANGE)
        };
        self.models
            .entry(key.clone())
            .or_insert_with(|| ModelFit::with_prior(prior, range))
            .observe(estimate as f64, reported as f64);
        self.latest = Some(key);
    }

    /// The correction for a model (`Correction::NONE` before its first
    /// sample). A Claude model switched to mid-session, before its first
    /// sample, takes the correction of the Claude model before it: the
    /// agent's system prompt and tools are the same, its vocabulary close
    /// (Claude Code's `/model`).
    pub fn correction(&self, model: Option<&str>) -> Correction {
        let key = model_key(model);
        let switched_from = || {
            let latest = self.latest.as_ref()?;
            same_family(&key, latest).then(|| self.models.get(latest))?
        };
        self.models
            .get(&key)
            .or_else(switched_from)
            .map_or(Correction::NONE, ModelFit::correction)
    }
}

/// Two models whose counts of one prompt are close enough to stand in for
/// each other until the other reports: the same model, or two Claude
/// models (one agent's system prompt and tools; Claude Haiku 4.5 counted a
/// conversation 6.6% lower than Claude Opus 4.5 had, the one switch in the
/// real sessions).
pub fn same_family(a: &str, b: &str) -> bool {
    let (a, b) = (model_key(Some(a)), model_key(Some(b)));
    a == b || (a.contains("claude") && b.contains("claude"))
}

/// Models compare without a provider prefix, case-insensitively.
pub fn model_key(model: Option<&str>) -> String {
    let model = model.unwrap_or_default();
    model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase()
}

#[derive(Debug, Clone)]
struct ModelFit {
    /// Σw, Σw·r, Σw·e over the samples, w = 1 / (e + SMALL_ESTIMATE)².
    weight: f64,
    weighted_reported: f64,
    weighted_estimate: f64,
    scale: f64,
    scale_samples: u32,
    outliers_in_a_row: u32,
    /// The scale before the samples settle it.
    prior: f64,
    /// The scales the fit may reach.
    range: (f64, f64),
}

impl Default for ModelFit {
    fn default() -> ModelFit {
        ModelFit {
            weight: 0.0,
            weighted_reported: 0.0,
            weighted_estimate: 0.0,
            scale: 1.0,
            scale_samples: 0,
            outliers_in_a_row: 0,
            prior: 1.0,
            range: SCALE_RANGE,
        }
    }
}

impl ModelFit {
    fn settled(&self) -> bool {
        self.scale_samples >= SETTLED
    }

    fn with_prior(prior: f64, range: (f64, f64)) -> ModelFit {
        ModelFit {
            prior,
            range,
            ..ModelFit::default()
        }
    }

    /// The scale in use: the prior until the samples settle it.
    fn applied_scale(&self) -> f64 {
        if self.settled() {
            self.scale
        } else {
            self.prior
        }
    }

    fn overhead(&self) -> f64 {
        if self.weight == 0.0 {
            return 0.0;
        }
        let scale = self.applied_scale();
        ((self.weighted_reported - scale * self.weighted_estimate) / self.weight).max(0.0)
    }

    fn is_outlier(&self, e: f64, r: f64) -> bool {
        let predicted = self.overhead() + self.scale * e;
        self.settled() && (r - predicted).abs() > OUTLIER * predicted
    }

    fn observe(&mut self, e: f64, r: f64) {
        if self.is_outlier(e, r) {
            self.outliers_in_a_row += 1;
            if self.outliers_in_a_row < OUTLIERS_TRUSTED {
                return;
            }
            *self = ModelFit::with_prior(self.prior, self.range);
        }
        self.outliers_in_a_row = 0;
        if self.weight > 0.0 {
            let (e0, r0) = (
                self.weighted_estimate / self.weight,
                self.weighted_reported / self.weight,
            );
            if e - e0 >= SMALL_ESTIMATE.max(e0) {
                self.add_scale(((r - r0) / (e - e0)).clamp(SCALE_RANGE.0, SCALE_RANGE.1));
            }
        }
        let w = 1.0 / (e + SMALL_ESTIMATE).powi(2);
        self.weight += w;
        self.weighted_reported += w * r;
        self.weighted_estimate += w * e;
    }

    /// One slope sample into the average, which stays within the model's
    /// range: bounding the average rather than each sample keeps it
    /// unbiased where the samples scatter around a scale inside it.
    fn add_scale(&mut self, sample: f64) {
        let scale = if self.scale_samples == 0 {
            sample
        } else {
            self.scale + SCALE_ALPHA * (sample - self.scale)
        };
        self.scale = scale.clamp(self.range.0, self.range.1);
        self.scale_samples += 1;
    }

    fn correction(&self) -> Correction {
        Correction {
            overhead: self.overhead().round() as u64,
            scale: self.applied_scale(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Samples from a provider that counts `overhead + scale · e`.
    fn calibrated(overhead: u64, scale: f64, estimates: &[u64]) -> Correction {
        let mut calibration = Calibration::default();
        for &e in estimates {
            let r = overhead + (e as f64 * scale).round() as u64;
            calibration.observe(Some("m"), e, r);
        }
        calibration.correction(Some("m"))
    }

    #[test]
    fn a_provider_that_counts_overhead_plus_scale_is_learned() {
        let c = calibrated(17_900, 1.35, &[120, 2_400, 9_000, 30_000, 61_000, 90_000]);
        assert!((c.scale - 1.35).abs() < 0.001, "{c:?}");
        assert!(c.overhead.abs_diff(17_900) < 10, "{c:?}");
        // A compacted view of 20k tokens is predicted within 1%.
        let truth = 17_900.0 + 1.35 * 20_000.0;
        assert!((c.context(20_000) as f64 - truth).abs() / truth < 0.01);
    }

    /// One large result whose provider count grew far more than compactd's
    /// (content compactd does not see came with it) moves a Claude
    /// session's scale to its bound at most, and the meter by at most that
    /// bound times the result's count: not 2.5× it.
    #[test]
    fn one_large_result_moves_the_scale_within_its_bounds() {
        let mut calibration = Calibration::default();
        let model = Some("claude-opus-4-5");
        let mut e = 300u64;
        for _ in 0..6 {
            calibration.observe(model, e, 16_000 + e * 13 / 10);
            e += 4_000;
        }
        let before = calibration.correction(model);
        assert!((before.scale - 1.3).abs() < 0.01, "{before:?}");
        // Three parallel reads of 30k tokens: the provider reports 90k more.
        for _ in 0..10 {
            e += 30_000;
            let r = 16_000 + (e as f64 * 1.3) as u64 + 60_000;
            calibration.observe(model, e, r);
        }
        let after = calibration.correction(model);
        assert!(after.scale <= ANTHROPIC_SCALE_RANGE.1, "{after:?}");
        assert!(after.scaled(10_000) <= 16_000, "{after:?}");
        // Other models: their own bounds.
        let mut other = Calibration::default();
        for e in [300u64, 5_000, 10_000, 20_000] {
            other.observe(Some("gpt-5"), e, 1_000 + e * 9);
        }
        assert!(SCALE_RANGE.1 > ANTHROPIC_SCALE_RANGE.1);
        assert_eq!(other.correction(Some("gpt-5")).scale, SCALE_RANGE.1);
    }

    #[test]
    fn one_sample_gives_the_overhead_and_no_scale() {
        let c = calibrated(2_600, 1.2, &[160]);
        assert_eq!(c.scale, 1.0);
        assert_eq!(c.overhead, 2_600 + 192 - 160);
        assert_eq!(Calibration::default().correction(None), Correction::NONE);
    }

    #[test]
    fn overhead_is_never_negative() {
        let mut calibration = Calibration::default();
        calibration.observe(None, 5_000, 4_000);
        assert_eq!(calibration.correction(None).overhead, 0);
    }

    #[test]
    fn models_are_calibrated_apart_and_prefixes_ignored() {
        let mut calibration = Calibration::default();
        calibration.observe(Some("anthropic/Claude-Sonnet-4-5"), 100, 16_100);
        calibration.observe(Some("gpt-4o"), 100, 1_100);
        // A Claude model starts from its prior scale (1.2), others from 1.
        let claude = calibration.correction(Some("claude-sonnet-4-5"));
        assert_eq!((claude.overhead, claude.scale), (16_100 - 120, 1.2));
        let gpt = calibration.correction(Some("gpt-4o"));
        assert_eq!((gpt.overhead, gpt.scale), (1_000, 1.0));
        assert_eq!(calibration.correction(None), Correction::NONE);
    }

    /// Switched to another Claude model (`/model`), the meter keeps the
    /// overhead and scale learned so far until the new model reports;
    /// another provider's model learns its own.
    #[test]
    fn a_claude_model_switched_to_starts_from_the_one_before() {
        let mut calibration = Calibration::default();
        for e in [300u64, 10_000, 20_000, 30_000] {
            calibration.observe(Some("claude-opus-4-5"), e, 18_000 + e * 13 / 10);
        }
        let opus = calibration.correction(Some("claude-opus-4-5"));
        assert_eq!(calibration.correction(Some("claude-haiku-4-5")), opus);
        assert_eq!(calibration.correction(Some("gpt-5")), Correction::NONE);
        calibration.observe(Some("claude-haiku-4-5"), 30_000, 60_000);
        assert_ne!(calibration.correction(Some("claude-haiku-4-5")), opus);
    }

    #[test]
    fn one_request_compactd_did_not_hold_is_ignored_three_are_not() {
        let mut calibration = Calibration::default();
        for e in [100u64, 10_000, 20_000, 30_000, 40_000] {
            calibration.observe(None, e, 1_000 + e * 13 / 10);
        }
        let settled = calibration.correction(None);
        // Sent before a compaction finished: the provider counted the old,
        // long history against compactd's short new view.
        calibration.observe(None, 8_000, 150_000);
        assert_eq!(calibration.correction(None), settled);
        calibration.observe(None, 9_000, 1_000 + 9_000 * 13 / 10);
        // The agent now sends 40k more tokens of tools with every request:
        // the third such request starts the fit over.
        for e in [10_000u64, 11_000, 12_000] {
            calibration.observe(None, e, 41_000 + e * 13 / 10);
        }
        let changed = calibration.correction(None);
        assert_eq!(changed.context(12_000), 41_000 + 15_600, "{changed:?}");
    }
}
