//! The MCP tools' answers as text a model reads: hits with their ids,
//! messages word for word (images and other binary parts named, not
//! inlined), the file ledger, the latest compaction.

use crate::conversation::{Message, MessageBody, PartKind};
use crate::files::disk;
use crate::session::Session;

/// The most characters `read_messages` returns; past it, the ids left.
const MAX_CHARS: usize = 60_000;

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

/// Positions of the messages asked for, in session order.
pub fn positions(
    session: &Session,
    ids: &[String],
    from: Option<&str>,
    to: Option<&str>,
) -> Result<Vec<usize>, String> {
    let position = |id: &str| {
        session
            .find(id)
            .ok_or_else(|| format!("no message `{id}` in this session"))
    };
    match (ids.is_empty(), from, to) {
        (false, None, None) => {
            let mut at = ids
                .iter()
                .map(|id| position(id))
                .collect::<Result<Vec<_>, _>>()?;
            at.sort_unstable();
            at.dedup();
            Ok(at)
        }
        (true, Some(from), Some(to)) => {
            let (from, to) = (position(from)?, position(to)?);
            match from <= to {
                true => Ok((from..=to).collect()),
                false => Err("`from` comes after `to`".into()),
            }
        }
        _ => Err("give `ids`, or `from` and `to`".into()),
    }
}

pub fn messages(
    positions: &[usize],
    messages: &[&Message],
    summarized: &[Option<usize>],
) -> String {
    let mut out = String::new();
    for (n, &i) in positions.iter().enumerate() {
        let message = messages[i];
        let mut block = format!("--- [{}] {}", message.id, heading(message));
        if summarized[i].is_some() {
            block.push_str(" · compacted");
        }
        block.push_str(" ---\n");
        block.push_str(&body(message));
        block.push('\n');
        if !out.is_empty() && out.len() + block.len() > MAX_CHARS {
            let left: Vec<&str> = positions[n..]
                .iter()
                .map(|&j| messages[j].id.as_str())
                .collect();
            out.push_str(&format!(
                "\n(Stopped at {MAX_CHARS} characters; not shown: {})",
                left.join(", ")
            ));
            break;
        }
        out.push_str(&block);
    }
    out
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
