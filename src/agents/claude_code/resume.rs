//! What Claude Code's resume leaves out, writing nothing of it: a resumed
//! session (`--resume`, `--continue`, `/resume`) is rebuilt from the
//! transcript by walking `parentUuid` back from its last line, and a line
//! off that chain is gone. Parallel tool calls are written as one line
//! each, their results pointing back at different calls, so the walk
//! passes through one branch: the other results are lost, and their
//! calls, left without a result, are dropped too. Read from 2.1.7–2.1.14's
//! code (the walk from the leaf, then the calls without a result removed).
//! On a 2.1.7 session resumed after `/exit` the meter said 128,795 where
//! the provider counted 114,069 (+12.9%); with the results off the chain
//! left out, 115,708 (+1.4%).
//!
//! A resume shows in the transcript as the assistant line Claude Code adds
//! when the rebuilt conversation ends with the person's turn (model
//! `<synthetic>`, "No response requested.") or as the `SessionStart:resume`
//! hook's progress line; the chain starts at that line's parent. The
//! reader prunes the results off the chain from the view, as the agent's
//! own trim (their calls, a few tokens each, stay counted).
//!
//! Pure: the reader feeds it each line's uuid and parent and the results'
//! lines.

use std::collections::{HashMap, HashSet};
use std::hash::{DefaultHasher, Hash, Hasher};

use serde_json::Value;

/// The text of the assistant line a resume adds.
const NO_RESPONSE: &str = "No response requested.";
/// The hook a resume runs, as its progress line names it.
const RESUME_HOOK: &str = "SessionStart:resume";

#[derive(Debug, Clone, Default)]
pub(super) struct Resume {
    /// Each line's parent, by uuid, since the latest compaction (the walk
    /// never goes past one: the boundary has no parent). Uuids are kept as
    /// their 64-bit hashes: a followed transcript has a line for every
    /// block of every turn, and two strings for each cost more than the
    /// read of the line.
    parents: HashMap<u64, u64>,
    /// The tool results since the latest compaction: their line's uuid and
    /// the id of the message each became.
    results: Vec<(u64, String)>,
}

impl Resume {
    /// A line of the main conversation.
    pub(super) fn line(&mut self, entry: &Value) {
        let text = |key: &str| entry.get(key).and_then(Value::as_str);
        if let (Some(uuid), Some(parent)) = (text("uuid"), text("parentUuid")) {
            self.parents.insert(hash(uuid), hash(parent));
        }
    }

    /// A tool result read from the line `uuid`, as the message `id`.
    pub(super) fn result(&mut self, uuid: &str, id: String) {
        self.results.push((hash(uuid), id));
    }

    /// The agent compacted or cleared: nothing before is in its requests.
    pub(super) fn compacted(&mut self) {
        self.parents.clear();
        self.results.clear();
    }

    /// When `entry` shows that Claude Code resumed the session: the ids of
    /// the results its rebuilt conversation no longer holds.
    pub(super) fn resumed(&mut self, entry: &Value) -> Option<Vec<String>> {
        let leaf = entry.get("parentUuid").and_then(Value::as_str)?;
        if !is_resume(entry) {
            return None;
        }
        let mut chain = HashSet::new();
        let mut at = Some(hash(leaf));
        while let Some(uuid) = at.filter(|uuid| chain.insert(*uuid)) {
            at = self.parents.get(&uuid).copied();
        }
        let (kept, lost): (Vec<_>, Vec<_>) = std::mem::take(&mut self.results)
            .into_iter()
            .partition(|(uuid, _)| chain.contains(uuid));
        self.results = kept;
        let lost: Vec<String> = lost.into_iter().map(|(_, id)| id).collect();
        (!lost.is_empty()).then_some(lost)
    }
}

fn hash(uuid: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    uuid.hash(&mut hasher);
    hasher.finish()
}

/// The line a resume writes: the filler response, or its hook's progress.
fn is_resume(entry: &Value) -> bool {
    let at = |pointer: &str| entry.pointer(pointer).and_then(Value::as_str);
    match at("/type") {
        Some("assistant") => {
            let blocks = entry.pointer("/message/content").and_then(Value::as_array);
            at("/message/model") == Some("<synthetic>")
                && blocks.is_some_and(|blocks| {
                    blocks.len() == 1
                        && blocks[0].get("text").and_then(Value::as_str) == Some(NO_RESPONSE)
                })
        }
        Some("progress") => at("/data/hookName") == Some(RESUME_HOOK),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn line(uuid: &str, parent: &str) -> Value {
        json!({"type": "user", "uuid": uuid, "parentUuid": parent})
    }

    fn filler(parent: &str) -> Value {
        json!({"type": "assistant", "uuid": "f", "parentUuid": parent,
            "message": {"model": "<synthetic>", "content": [{"type": "text", "text": NO_RESPONSE}]}})
    }

    /// Two parallel calls: the results point back at their own call, the
    /// next response at the second result; the first result is off the
    /// chain a resume walks.
    fn parallel_turn(resume: &mut Resume) {
        for (uuid, parent) in [
            ("p", "root"),
            ("call-a", "p"),
            ("call-b", "call-a"),
            ("result-a", "call-a"),
            ("result-b", "call-b"),
            ("next", "result-b"),
        ] {
            resume.line(&line(uuid, parent));
        }
        resume.result("result-a", "m-a".into());
        resume.result("result-b", "m-b".into());
    }

    #[test]
    fn a_resume_loses_the_results_off_the_chain_from_its_last_line() {
        let mut resume = Resume::default();
        parallel_turn(&mut resume);
        assert_eq!(
            resume.resumed(&filler("next")),
            Some(vec!["m-a".to_string()])
        );
        // Lost once: a second resume loses nothing more.
        assert_eq!(resume.resumed(&filler("next")), None);
        let hook = json!({"type": "progress", "parentUuid": "next",
            "data": {"hookName": RESUME_HOOK}});
        let mut again = Resume::default();
        parallel_turn(&mut again);
        assert_eq!(again.resumed(&hook), Some(vec!["m-a".to_string()]));
    }

    #[test]
    fn other_lines_and_a_compaction_lose_nothing() {
        let mut resume = Resume::default();
        parallel_turn(&mut resume);
        let answer = json!({"type": "assistant", "parentUuid": "next",
            "message": {"model": "claude-x", "content": [{"type": "text", "text": NO_RESPONSE}]}});
        assert_eq!(resume.resumed(&answer), None);
        let other_hook = json!({"type": "progress", "parentUuid": "next",
            "data": {"hookName": "SessionStart:startup"}});
        assert_eq!(resume.resumed(&other_hook), None);
        resume.compacted();
        assert_eq!(resume.resumed(&filler("next")), None);
    }

    #[test]
    fn a_cycle_in_the_parents_ends_the_walk() {
        let mut resume = Resume::default();
        resume.line(&line("a", "b"));
        resume.line(&line("b", "a"));
        resume.result("c", "m-c".into());
        assert_eq!(resume.resumed(&filler("a")), Some(vec!["m-c".to_string()]));
    }
}
