//! Messages an agent amends after writing them: a response written over
//! several lines of a transcript (Claude Code), or usage that comes after
//! the response (Codex). A followed transcript is read as the agent writes
//! it, so the session takes each later version in place of the earlier.

use super::{Session, Slot};
use crate::conversation::{Message, Role};
use crate::tokens;

impl Session {
    /// Replaces a message with a later version of itself (same id, same
    /// role): an agent writes one response over several lines of its
    /// transcript. Its count is redone and the meter follows; the file
    /// ledger sees its calls again when it is the newest assistant message.
    /// Usage that arrives with a later version (Codex writes it after the
    /// response) is the calibration sample the response would have been
    /// had it come whole, so a followed session calibrates as an import of
    /// the same transcript does. Costs the messages after it, not the
    /// session. `false`: no such message.
    pub fn replace_message(&mut self, message: Message) -> bool {
        let Some(&i) = self.index.get(&message.id) else {
            return false;
        };
        if self.messages[i].message.role() != message.role() {
            return false;
        }
        let later = &self.messages[i + 1..];
        if message.role() == Role::Assistant
            && !later.iter().any(|c| c.message.role() == Role::Assistant)
        {
            self.file_ledger.observe(&message);
        }
        // The newest turn may gain calls: their results must find them open.
        if later.iter().all(|c| c.message.role() == Role::Tool) {
            self.calls.add_to_open(&message);
            if !message.tool_calls().is_empty() {
                self.open_caller = Some(i);
            }
        }
        let from_it = self.view_tokens_from(i);
        if let (None, Some(from_it)) = (self.messages[i].message.usage, from_it) {
            let before = self.estimated_tokens() - from_it;
            self.calibrate_against(&message, before);
        }
        let tokens = tokens::recount_message(
            self.encoding,
            &self.messages[i].message,
            self.messages[i].tokens,
            &message,
        );
        let old = std::mem::replace(&mut self.messages[i].tokens, tokens);
        self.messages[i].message = std::sync::Arc::new(message);
        if from_it.is_some() && !self.pruned.contains_key(&i) {
            self.totals.tokens = self.totals.tokens - old + tokens;
        }
        self.totals.latest_usage = self.latest_usage();
        true
    }

    /// The view's tokens from message `i` (shown as itself or pruned) to
    /// the end; `None` when it is not in the view.
    fn view_tokens_from(&self, i: usize) -> Option<u64> {
        let mut tokens = 0;
        for slot in self.view.iter().rev() {
            tokens += self.slot_tokens(slot);
            match *slot {
                Slot::Message(j) if j == i => return Some(tokens),
                Slot::Message(j) if j < i => return None,
                _ => {}
            }
        }
        None
    }

    /// The latest current provider report in the view and the estimated
    /// tokens after it, looked up from the end.
    fn latest_usage(&self) -> Option<(u64, u64)> {
        let generation = self.compactions.len();
        let mut after = 0;
        for slot in self.view.iter().rev() {
            if let Slot::Message(i) = *slot {
                if let Some(context) = self.current_usage(&self.messages[i], generation) {
                    // Synthetic results closing its calls, and what was
                    // attached after it, follow the report.
                    return Some((context, after + self.messages[i].trailing_tokens()));
                }
            }
            after += self.slot_tokens(slot);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use crate::conversation::{Message, ToolCall, Usage};
    use crate::session::tests::session;
    use crate::tokens;

    #[test]
    fn a_replaced_message_moves_the_meter_as_a_recount_would() {
        let mut s = session();
        let mut first = Message::assistant("a1", "reading", vec![]);
        first.usage = Some(Usage {
            input: 900,
            ..Usage::default()
        });
        s.push(vec![Message::user("u1", "go"), first.clone()]);
        s.push(vec![Message::user("u2", "and then")]);
        // The second line of the response adds a call and final usage.
        let mut whole = Message::assistant("a1", "reading and then some more words", vec![]);
        whole.usage = Some(Usage {
            input: 950,
            ..Usage::default()
        });
        assert!(s.replace_message(whole));
        assert!(s.totals_match_recount());
        let after = tokens::count_message(s.encoding(), &Message::user("u2", "and then"));
        assert_eq!(s.meter(10_000, 9_000).context_tokens, 950 + after);
        assert!(!s.replace_message(Message::user("a1", "not an assistant")));
        assert!(!s.replace_message(Message::user("nope", "x")));
    }

    #[test]
    fn usage_that_comes_later_calibrates_as_the_whole_response_would() {
        let (mut amended, mut whole) = (session(), session());
        for turn in 0..5u64 {
            let text = "a request with a few words in it ".repeat(1 + 20 * turn as usize);
            let request = Message::user(format!("u{turn}"), text);
            let mut reply = Message::assistant(format!("a{turn}"), "done", vec![]);
            amended.push(vec![request.clone(), reply.clone()]);
            reply.usage = Some(Usage {
                input: 3_000 + 300 * turn * turn,
                ..Usage::default()
            });
            assert!(amended.replace_message(reply.clone()));
            whole.push(vec![request, reply]);
        }
        assert_ne!(whole.correction().overhead, 0);
        assert_eq!(amended.correction(), whole.correction());
        assert_eq!(amended.meter(100_000, 90_000), whole.meter(100_000, 90_000));
    }

    #[test]
    fn calls_a_later_version_adds_are_open_for_their_results() {
        let call = |id: &str| ToolCall {
            id: id.into(),
            name: "Read".into(),
            arguments: serde_json::json!({}),
        };
        let (mut amended, mut whole) = (session(), session());
        amended.push(vec![
            Message::user("u1", "go"),
            Message::assistant("a1", "reading", vec![call("c1")]),
        ]);
        // Claude Code writes the second call on a line of its own.
        let both = Message::assistant("a1", "reading", vec![call("c1"), call("c2")]);
        assert!(amended.replace_message(both.clone()));
        let results = vec![
            Message::tool_result("t1", "c1", "one", false),
            Message::tool_result("t2", "c2", "two", false),
        ];
        assert!(
            amended.push(results.clone()).is_empty(),
            "no result kept out"
        );
        whole.push(vec![Message::user("u1", "go"), both]);
        whole.push(results);
        assert!(amended.totals_match_recount());
        assert_eq!(amended.meter(100_000, 90_000), whole.meter(100_000, 90_000));
    }
}
