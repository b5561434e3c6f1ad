//! The MCP tools' answers as text a model reads: hits with their ids,
//! messages word for word (images and other binary parts named, not
//! inlined), the file ledger, the latest compaction.

use crate::conversation::{Message, MessageBody, PartKind};
use crate::files::disk;
use crate::recall::{Selected, Unselectable};
use crate::session::Session;

/// The most characters `read_messages` returns, all told; past it, where
/// to read on.
const MAX_CHARS: usize = 60_000;
/// Kept for the note that ends an answer cut short.
const NOTE_MAX: usize = 2_000;
/// A message is begun at the end of an answer only when this much of it
/// fits; else it is left for the next call whole.
const MIN_PART: usize = 2_000;

pub struct Hit<'a> {
    pub id: &'a str,
    pub role: &'a str,
    pub compacted: bool,
    pub snippet: String,
}

pub fn hits(query: &str, hits: &[Hit], searched: usize) -> String {
    if hits.is_empty() {
        return format!("No message of the {searched} in this session holds all of: {query}");
    }
    let mut out = format!(
        "{} message(s) of {searched} match, best first (\"compacted\": summarized away, no longer in your context). Read one whole with read_messages.\n",
        hits.len()
    );
    for hit in hits {
        let state = if hit.compacted { " · compacted" } else { "" };
        out.push_str(&format!(
            "\n[{}] {}{state}: {}",
            hit.id, hit.role, hit.snippet
        ));
    }
    out
}

/// A selection refused, in the tools' terms.
pub fn refused(e: &Unselectable) -> String {
    match e {
        Unselectable::Missing { id, .. } => format!("no message `{id}` in this session"),
        Unselectable::Reversed { .. } => "`from` comes after `to`".into(),
    }
}

/// The messages selected, word for word, the first from its
/// `offset`-th character: at most [`MAX_CHARS`] characters in all. Past
/// them the answer stops, inside a message if need be, and ends saying
/// where: the `offset` that reads the cut message on, and the messages not
/// shown.
pub fn messages(selected: &[Selected], offset: usize) -> String {
    let budget = MAX_CHARS - NOTE_MAX;
    let mut out = String::new();
    let mut used = 0;
    for (n, picked) in selected.iter().enumerate() {
        let message = picked.message;
        let text = body(message);
        let total = text.chars().count();
        let from = if n == 0 { offset.min(total) } else { 0 };
        let rest = after_chars(&text, from);
        let mut head = format!("--- [{}] {}", message.id, heading(message));
        if picked.summarized.is_some() {
            head.push_str(" · compacted");
        }
        if from > 0 {
            head.push_str(&format!(" · from character {from} of {total}"));
        }
        head.push_str(" ---\n");
        let head_chars = head.chars().count();
        if used + head_chars + (total - from) < budget {
            out.push_str(&head);
            out.push_str(rest);
            out.push('\n');
            used += head_chars + (total - from) + 1;
            continue;
        }
        let room = budget.saturating_sub(used + head_chars + 1);
        let (cut, left) = if room >= MIN_PART || out.is_empty() {
            out.push_str(&head);
            out.push_str(before_chars(rest, room));
            out.push('\n');
            let next = from + room.min(total - from);
            (Some((message.id.as_str(), next, total)), &selected[n + 1..])
        } else {
            (None, &selected[n..])
        };
        let contiguous =
            left.len() > 1 && left.windows(2).all(|w| w[1].position == w[0].position + 1);
        let left: Vec<&str> = left.iter().map(|s| s.message.id.as_str()).collect();
        out.push_str(&stop_note(cut, &left, contiguous));
        return before_chars(&out, MAX_CHARS).to_string();
    }
    out
}

/// What ends an answer cut at [`MAX_CHARS`]: how to read on.
fn stop_note(cut: Option<(&str, usize, usize)>, left: &[&str], contiguous: bool) -> String {
    let mut note =
        format!("\n(The answer stops here: read_messages returns at most {MAX_CHARS} characters.");
    if let Some((id, next, total)) = cut {
        let call = serde_json::json!({"ids": [id], "offset": next});
        note.push_str(&format!(
            " [{id}] is cut after character {next} of {total}: read_messages {call} reads on."
        ));
    }
    if let (true, Some(first), Some(last)) = (contiguous, left.first(), left.last()) {
        let call = serde_json::json!({"from": first, "to": last});
        note.push_str(&format!(
            " Not shown: {} more messages, read_messages {call}.",
            left.len()
        ));
    } else if !left.is_empty() {
        let mut ids = Vec::new();
        let mut chars = 0;
        for id in left {
            chars += id.chars().count() + 3;
            if chars > NOTE_MAX / 2 {
                break;
            }
            ids.push(*id);
        }
        let call = serde_json::json!({ "ids": ids });
        note.push_str(&format!(" Not shown: read_messages {call}"));
        if ids.len() < left.len() {
            note.push_str(&format!(
                ", then the other {} of the ids asked for",
                left.len() - ids.len()
            ));
        }
        note.push('.');
    }
    note.push(')');
    before_chars(&note, NOTE_MAX).to_string()
}

/// `text` from its `n`-th character on.
fn after_chars(text: &str, n: usize) -> &str {
    text.char_indices().nth(n).map_or("", |(at, _)| &text[at..])
}

/// The first `n` characters of `text`.
fn before_chars(text: &str, n: usize) -> &str {
    text.char_indices()
        .nth(n)
        .map_or(text, |(at, _)| &text[..at])
}

fn heading(message: &Message) -> String {
    match &message.body {
        MessageBody::Tool {
            tool_call_id,
            tool_name,
            is_error,
            ..
        } => format!(
            "tool result of {}{}{}",
            tool_name.as_deref().unwrap_or("a call"),
            format_args!(" ({tool_call_id})"),
            if *is_error { ", an error" } else { "" }
        ),
        _ => message.role().as_str().to_string(),
    }
}

/// The message's content word for word; binary parts by kind and size.
fn body(message: &Message) -> String {
    let content = message.content();
    let mut out = match content.part_list() {
        None => content.as_str().to_string(),
        Some(parts) => parts
            .iter()
            .map(|part| match part.kind() {
                PartKind::Text => part.text_of().unwrap_or("").to_string(),
                PartKind::Thinking => {
                    format!("(thinking) {}", part.str_field("thinking").unwrap_or(""))
                }
                kind => format!(
                    "[{kind:?} {}{}]",
                    part.str_field("mediaType").unwrap_or(""),
                    part.str_field("data")
                        .map(|d| format!(", {} bytes of base64", d.len()))
                        .unwrap_or_default()
                )
                .to_lowercase(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
    };
    if let MessageBody::Assistant { tool_calls, .. } = &message.body {
        for call in tool_calls {
            out.push_str(&format!(
                "\n→ {} ({}) {}",
                call.name, call.id, call.arguments
            ));
        }
    }
    out
}

pub fn files(session: &Session) -> String {
    let ledger = &session.file_ledger;
    let records = ledger.ledger.records();
    if records.is_empty() {
        return "This session's tool calls read or changed no file.".into();
    }
    let mut out = String::from("path · status · last operation · reads · changes · unchanged on disk since the last read\n");
    for record in records {
        let unchanged = match &record.read_hash {
            // Followed transcripts carry no content hashes.
            None => "unknown",
            Some(hash) if disk::content_hash(&record.path).as_ref() == Some(hash) => "yes",
            Some(_) => "no",
        };
        out.push_str(&format!(
            "{} · {:?} · {:?} · {} · {} · {unchanged}\n",
            ledger.workspace.display(&record.path),
            record.status(),
            record.last_op,
            record.reads,
            record.modifications
        ));
    }
    out
}

pub fn last_summary(session: &Session) -> String {
    let Some(record) = session.last_compaction() else {
        return "This session has not been compacted.".into();
    };
    let dropped = match record.dropped.is_empty() {
        true => String::new(),
        false => format!("\nIt left out: {}.", record.dropped.join(", ")),
    };
    format!(
        "Compaction {} by {} ({:?}): {} tokens before, {} after, {} messages summarized.{dropped}\n\n{}",
        record.id,
        record.summarizer,
        record.trigger,
        record.tokens_before,
        record.tokens_after,
        record.messages_summarized,
        record.summary
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(all: &[&Message], positions: &[usize], offset: usize) -> String {
        let selected: Vec<Selected> = positions
            .iter()
            .map(|&position| Selected {
                position,
                message: all[position],
                summarized: None,
            })
            .collect();
        messages(&selected, offset)
    }

    /// The `offset` an answer says reads on.
    fn read_on(answer: &str) -> Option<usize> {
        let at = answer.rfind("\"offset\":")? + "\"offset\":".len();
        let digits: String = answer[at..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    }

    #[test]
    fn a_message_over_the_cap_is_cut_and_read_on_by_offset_word_for_word() {
        // Multi-byte characters: the cap and the offsets count characters.
        let text: String = (0..40_000).map(|i| format!("é{i:05}😀 ")).collect();
        let big = Message::user("m1", text.clone());
        let after = Message::user("m2", "after");
        let all = [&big, &after];
        let mut offset = 0;
        let mut whole = String::new();
        let mut calls = 0;
        loop {
            let answer = read(&all, &[0, 1], offset);
            calls += 1;
            assert!(answer.chars().count() <= MAX_CHARS, "{calls}");
            let Some(next) = read_on(&answer) else {
                let body = answer.split_once(" ---\n").unwrap().1;
                let (rest, tail) = body.split_once("\n--- [m2]").unwrap();
                whole.push_str(rest);
                assert_eq!(tail, " user ---\nafter\n");
                break;
            };
            let body = answer.split_once(" ---\n").unwrap().1;
            let part = body.split_once("\n\n(The answer stops here").unwrap().0;
            assert_eq!(part.chars().count(), next - offset);
            if offset > 0 {
                assert!(answer.contains(&format!("from character {offset} of")));
            }
            assert!(
                answer.contains(r#"read_messages {"from":"m2","to":"m2"}"#)
                    || answer.contains(r#"{"ids":["m2"]}"#),
                "{}",
                &answer[answer.len() - 400..]
            );
            whole.push_str(part);
            offset = next;
        }
        assert_eq!(whole, text);
        assert!(calls > 5, "{calls}");
    }

    #[test]
    fn messages_past_the_cap_are_named_with_the_call_that_reads_them() {
        let text = "x".repeat(20_000);
        let owned: Vec<Message> = (0..8)
            .map(|i| Message::user(format!("m{i}"), text.clone()))
            .collect();
        let all: Vec<&Message> = owned.iter().collect();
        let range = read(&all, &[0, 1, 2, 3, 4, 5, 6, 7], 0);
        assert!(range.chars().count() <= MAX_CHARS);
        // Two whole, the third begun.
        assert!(range.contains("--- [m2] user ---"), "{range}");
        assert!(range.contains(r#"{"ids":["m2"],"offset":"#));
        assert!(
            range.contains(r#"Not shown: 5 more messages, read_messages {"from":"m3","to":"m7"}"#)
        );
        let picked = read(&all, &[0, 2, 4, 7], 0);
        assert!(
            picked.contains(r#"Not shown: read_messages {"ids":["m7"]}"#),
            "{picked}"
        );
        // What fits whole is not cut.
        let small = read(&all, &[0, 1], 0);
        assert!(!small.contains("stops here"));
    }
}
