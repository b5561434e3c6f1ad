//! What a session counts: running totals over its view (tool results kept
//! out of the view count nothing; the synthetic results closing interrupted
//! calls count with their caller), the calibration learned from provider
//! usage, and the meter and trigger input built from both. Every figure is
//! our count of exactly what `Session::history` sends, and the calibration's
//! one `Correction` turns it into the provider's terms.

use super::totals::{synthetic_tokens, ViewTotals};
use super::{Counted, Session, Slot};
use crate::compaction::trigger::TriggerInput;
use crate::conversation::{Message, MessageBody, Role};
use crate::tokens::{Correction, Meter, MeterSource};

impl Session {
    /// The open calls got no result before the conversation moved on: the
    /// history closes them with synthetic results, counted with their
    /// caller (which is in the view while its calls are open).
    pub(super) fn close_interrupted(&mut self, interrupted: Vec<(String, String)>) {
        let Some(caller) = self.open_caller.take() else {
            return;
        };
        if interrupted.is_empty() {
            return;
        }
        let tokens = synthetic_tokens(self.encoding, &interrupted);
        let counted = &mut self.messages[caller];
        counted.interrupted = interrupted;
        counted.synthetic_tokens = tokens;
        self.totals.tokens += tokens;
        if let Some((_, after)) = &mut self.totals.latest_usage {
            *after += tokens;
        }
    }

    /// Content the agent re-attached right after its latest compaction
    /// (`transcript::Event::Attached`): in every request until the next
    /// compaction, but in no message, so it is counted on the compaction
    /// (`unseen_tokens`) and in the view; `tokens_after` follows.
    pub fn attach_unseen(&mut self, tokens: u64) {
        if let Some(record) = self.compactions.last_mut() {
            *record.unseen_tokens.get_or_insert(0) += tokens;
        }
        self.settle_tokens_after();
    }

    /// Content the agent attached to its requests after the latest
    /// message, in no message (`transcript::Event::AttachedMidway`: a
    /// file changed on disk, a reminder): counted with the last message of
    /// the view, which it leaves the view with. With no message in the
    /// view (right after a compaction) it is what the agent re-attached.
    pub fn attach_after_latest(&mut self, tokens: u64) {
        let last = self.view.iter().rev().find_map(|slot| match *slot {
            Slot::Message(i) => Some(i),
            Slot::Summary(_) => None,
        });
        let Some(i) = last else {
            return self.attach_unseen(tokens);
        };
        self.messages[i].attached_tokens += tokens;
        self.totals.tokens += tokens;
        if let Some((_, after)) = &mut self.totals.latest_usage {
            *after += tokens;
        }
    }

    pub(super) fn add_to_totals(&mut self, slot: Slot) {
        let tokens = self.slot_tokens(&slot);
        let (report, trailing) = match slot {
            Slot::Message(i) => {
                self.totals.messages += 1;
                if self.messages[i].message.role() == Role::User {
                    self.totals.user_turns += 1;
                }
                let counted = &self.messages[i];
                let report = self.current_usage(counted, self.compactions.len());
                (report, counted.trailing_tokens())
            }
            Slot::Summary(_) => (None, 0),
        };
        self.totals.tokens += tokens;
        match (report, &mut self.totals.latest_usage) {
            // Synthetic results and attachments come after the
            // reporting message.
            (Some(context), latest) => *latest = Some((context, trailing)),
            (None, Some((_, after))) => *after += tokens,
            (None, None) => {}
        }
    }

    /// A provider report is a calibration sample: the prompt it counted
    /// against our estimate of what the session held for that request.
    pub(super) fn calibrate(&mut self, message: &Message) {
        self.calibrate_against(message, self.estimated_tokens());
    }

    /// `calibrate` with our estimate of the request given.
    pub(super) fn calibrate_against(&mut self, message: &Message, estimate: u64) {
        let (Some(usage), MessageBody::Assistant { model, .. }) = (message.usage, &message.body)
        else {
            return;
        };
        if usage.implausible().is_some() {
            return;
        }
        let model = model.as_deref().or(self.model.as_deref());
        self.calibration
            .observe(model, estimate, usage.prompt_tokens());
    }

    pub(super) fn recompute_totals(&mut self) {
        self.totals = ViewTotals::default();
        for slot in self.view.clone() {
            self.add_to_totals(slot);
        }
    }

    /// The declared system prompt and tool definitions, in every request.
    pub(super) fn declared_tokens(&self) -> u64 {
        self.system_tokens + self.tool_tokens
    }

    fn fixed_tokens(&self) -> u64 {
        let checkpoint = self.checkpoint.map_or(0, |i| {
            self.summary_tokens[i] + self.compactions[i].unseen_tokens.unwrap_or(0)
        });
        self.declared_tokens() + checkpoint
    }

    /// Our own estimate of the whole view, ignoring provider usage.
    pub fn estimated_tokens(&self) -> u64 {
        self.fixed_tokens() + self.totals.tokens
    }

    /// How the provider's count of a request differs from ours, for the
    /// session's model (`tokens::calibration`).
    pub fn correction(&self) -> Correction {
        self.calibration.correction(self.model.as_deref())
    }

    /// Our estimate of the whole view as the provider would count it.
    pub fn calibrated_tokens(&self) -> u64 {
        self.correction().context(self.estimated_tokens())
    }

    /// The meter: the provider's latest current report plus our estimate
    /// of what came after it (it includes the overhead); otherwise our
    /// estimate of everything with the overhead the calibration learned.
    pub fn meter(&self, context_window: u64, auto_compact_at: u64) -> Meter {
        let correction = self.correction();
        let (context_tokens, source) = match self.totals.latest_usage {
            Some((reported, after)) => (reported + correction.scaled(after), MeterSource::Usage),
            None => (self.calibrated_tokens(), MeterSource::Estimate),
        };
        Meter {
            context_tokens,
            context_window,
            auto_compact_at,
            source,
            overhead_tokens: correction.context(self.declared_tokens()),
        }
    }

    /// What the auto-compaction triggers look at.
    pub fn trigger_input(&self, context_window: u64, auto_compact_at: u64) -> TriggerInput {
        TriggerInput {
            tokens: self.meter(context_window, auto_compact_at).context_tokens,
            window: context_window,
            messages: self.totals.messages,
            user_turns: self.totals.user_turns,
        }
    }

    /// Usage that still describes this view: reported after the latest
    /// compaction, by the session's model or one that counts as it does
    /// (`tokens::same_family`: after Claude Code's `/model`,
    /// the previous Claude model's usage measured the same prompt, where
    /// the calibration only fits it).
    pub(super) fn current_usage(&self, counted: &Counted, generation: usize) -> Option<u64> {
        if counted.generation != generation || counted.message.role() != Role::Assistant {
            return None;
        }
        let usage = counted
            .message
            .usage
            .filter(|u| u.implausible().is_none())?;
        if let (
            MessageBody::Assistant {
                model: Some(reported),
                ..
            },
            Some(ours),
        ) = (&counted.message.body, &self.model)
        {
            if !crate::tokens::same_family(reported, ours) {
                return None;
            }
        }
        let context = usage.context_tokens();
        (context > 0).then_some(context)
    }

    /// The running totals agree with a recount (for tests of the
    /// bookkeeping).
    #[cfg(test)]
    pub(crate) fn totals_match_recount(&self) -> bool {
        let mut recomputed = self.clone();
        recomputed.recompute_totals();
        recomputed.totals == self.totals
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::Usage;
    use crate::session::tests::session;
    use crate::tokens;

    #[test]
    fn meter_prefers_the_latest_report_plus_later_estimates() {
        let mut s = Session::new("s".into(), None, None, None, "P".into());
        let mut a = Message::assistant("a1", "done", vec![]);
        a.usage = Some(Usage {
            input: 500,
            ..Usage::default()
        });
        s.push(vec![Message::user("u1", "go"), a]);
        let after = [
            Message::user("u2", "more words here"),
            Message::assistant("a2", "ok", vec![]),
        ];
        let expected_after: u64 = after
            .iter()
            .map(|m| tokens::count_message(s.encoding(), m))
            .sum();
        s.push(after.to_vec());
        let m = s.meter(1000, 900);
        assert_eq!(
            (m.context_tokens, m.source),
            (500 + expected_after, MeterSource::Usage)
        );
        assert_eq!(
            m.percent(),
            ((500 + expected_after) as f64 / 10.0 * 10.0).round() / 10.0
        );
        let fresh = Session::new("t".into(), None, None, None, "P".into());
        assert_eq!(fresh.meter(1000, 900).source, MeterSource::Estimate);
        // Appending tracks the same totals as recomputing from scratch.
        let mut recomputed = s.clone();
        recomputed.recompute_totals();
        assert_eq!(recomputed.totals, s.totals);
    }

    /// A response from `model` whose usage reported a prompt of `input`.
    fn reported_by(model: &str, input: u64) -> Message {
        let mut a = Message::assistant("a1", "done", vec![]);
        a.usage = Some(Usage {
            input,
            ..Usage::default()
        });
        if let MessageBody::Assistant { model: m, .. } = &mut a.body {
            *m = Some(model.into());
        }
        a
    }

    #[test]
    fn usage_from_another_model_is_ignored() {
        let mut s = session();
        let a = reported_by("claude-sonnet-4-5", 5000);
        s.push(vec![Message::user("u1", "go"), a]);
        assert_eq!(s.meter(10_000, 9_000).source, tokens::MeterSource::Estimate);
    }

    #[test]
    fn a_claude_model_switched_to_is_metered_from_the_previous_ones_usage() {
        let mut s = session();
        s.set_model(Some("claude-opus-4-5".into()));
        let a = reported_by("claude-opus-4-5", 5000);
        s.push(vec![Message::user("u1", "go"), a]);
        // `/model haiku`, then a prompt: Opus's usage measured the prompt
        // Haiku is sent, but for the new message.
        s.set_model(Some("claude-haiku-4-5".into()));
        s.push(vec![Message::user("u2", "more words here")]);
        let meter = s.meter(200_000, 180_000);
        assert_eq!(meter.source, tokens::MeterSource::Usage);
        assert!(meter.context_tokens > 5000, "{meter:?}");
        assert!(s.totals_match_recount());
        // Another vendor's model counts differently: the estimate stands.
        s.set_model(Some("gpt-5".into()));
        assert_eq!(
            s.meter(200_000, 180_000).source,
            tokens::MeterSource::Estimate
        );
    }
}
