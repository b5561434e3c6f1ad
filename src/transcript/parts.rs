//! The parts of an agent's content arrays that are not text, as compactd
//! parts (`conversation::Part`): images, documents, thinking with its
//! signature, redacted thinking, reasoning. Each agent writes them in its
//! provider's shape: Anthropic's blocks (Claude Code), pi's, and OpenAI
//! Responses items (Codex).

use serde_json::Value;

use crate::conversation::{Content, Part};

/// How a provider writes the parts of a message (an agent's own shape is
/// read in its module, through `Dialect::Agent`).
#[derive(Debug, Clone, Copy)]
pub enum Dialect {
    /// Anthropic Messages blocks: `image`/`document` with a `source`,
    /// `thinking` with `signature`, `redacted_thinking`.
    Anthropic,
    /// An agent's own blocks, read by its function.
    Agent(fn(&Value) -> Option<Part>),
    /// OpenAI Responses: `input_image` with an `image_url` (often a `data:`
    /// URL), `input_text`/`output_text`.
    Responses,
    /// OpenAI Chat Completions: `image_url` with `{url}`.
    Chat,
}

/// A block that is not text, as a part; `None` for text and for what is
/// not content (tool calls and results are read elsewhere).
pub fn part_of(block: &Value, dialect: Dialect) -> Option<Part> {
    let kind = block.get("type").and_then(Value::as_str)?;
    let get = |key: &str| block.get(key).cloned();
    match (dialect, kind) {
        (Dialect::Anthropic, "image" | "document") => {
            let source = block.get("source")?;
            let mut fields = vec![];
            match source.get("type").and_then(Value::as_str) {
                Some("base64") => {
                    fields.extend(source.get("media_type").cloned().map(|m| ("mediaType", m)));
                    fields.extend(source.get("data").cloned().map(|d| ("data", d)));
                }
                Some("url") => fields.extend(source.get("url").cloned().map(|u| ("url", u))),
                Some("text") => fields.extend(source.get("data").cloned().map(|t| ("text", t))),
                _ => return None,
            }
            fields.extend(get("title").map(|t| ("title", t)));
            Some(Part::new(kind, fields))
        }
        (Dialect::Anthropic, "thinking") => Some(Part::new(
            "thinking",
            [("thinking", get("thinking")?)]
                .into_iter()
                .chain(get("signature").map(|s| ("signature", s))),
        )),
        (Dialect::Anthropic, "redacted_thinking") => {
            Some(Part::new("redactedThinking", [("data", get("data")?)]))
        }
        (Dialect::Agent(read), _) => read(block),
        (Dialect::Responses, "input_image") | (Dialect::Chat, "image_url") => {
            let url = block
                .get("image_url")
                .and_then(|u| u.get("url").unwrap_or(u).as_str())?;
            Some(match data_url(url) {
                Some((media, data)) => Part::new(
                    "image",
                    [("mediaType", media.into()), ("data", data.into())],
                ),
                None => Part::new("image", [("url", url.into())]),
            })
        }
        _ => None,
    }
}

/// A message's content from an agent's content (a string, or an array of
/// blocks): the string form when it holds only text (as before parts
/// were kept), else its parts in order.
pub fn content_of(content: Option<&Value>, dialect: Dialect) -> Content {
    let Some(Value::Array(blocks)) = content else {
        return Content::text(super::content_text(content));
    };
    let parts: Vec<Option<Part>> = blocks.iter().map(|b| part_of(b, dialect)).collect();
    if parts.iter().all(Option::is_none) {
        return Content::text(super::content_text(content));
    }
    let mut out = Content::default();
    for (block, part) in blocks.iter().zip(parts) {
        match (part, text_of(block)) {
            (Some(part), _) => out.push(part),
            (None, Some(text)) => out.push_text(text),
            // Tool calls and results are read elsewhere.
            (None, None) => {}
        }
    }
    out
}

/// A text block's text (`text`, `input_text`, `output_text`, or a bare
/// string).
fn text_of(block: &Value) -> Option<&str> {
    if let Some(text) = block.as_str() {
        return Some(text);
    }
    let kind = block.get("type").and_then(Value::as_str);
    match kind {
        Some("text" | "input_text" | "output_text") | None => {
            block.get("text").and_then(Value::as_str)
        }
        _ => None,
    }
}

/// `data:image/png;base64,AAAA` → (`image/png`, `AAAA`).
fn data_url(url: &str) -> Option<(&str, &str)> {
    let rest = url.strip_prefix("data:")?;
    let (head, data) = rest.split_once(',')?;
    let media = head.strip_suffix(";base64")?;
    Some((media, data))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_dialect_keeps_images_and_signed_thinking() {
        let anthropic = json!([
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR"}},
            {"type": "text", "text": "what is this?"}
        ]);
        let content = content_of(Some(&anthropic), Dialect::Anthropic);
        assert_eq!(content.as_str(), "what is this?");
        assert_eq!(
            serde_json::to_value(&content).unwrap(),
            json!([
                {"type": "image", "mediaType": "image/png", "data": "iVBOR"},
                {"type": "text", "text": "what is this?"}
            ])
        );
        let thinking = json!({"type": "thinking", "thinking": "hmm", "signature": "EqQB"});
        let part = part_of(&thinking, Dialect::Anthropic).unwrap();
        assert_eq!(
            (part.thinking(), part.str_field("signature")),
            (Some("hmm"), Some("EqQB"))
        );
        let codex = json!({"type": "input_image", "image_url": "data:image/jpeg;base64,/9j/"});
        let part = part_of(&codex, Dialect::Responses).unwrap();
        assert_eq!(
            (part.media_type(), part.data()),
            (Some("image/jpeg"), Some("/9j/"))
        );
        // Text only stays a string, as it always was.
        let text = json!([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]);
        assert_eq!(
            serde_json::to_value(content_of(Some(&text), Dialect::Anthropic)).unwrap(),
            json!("a\nb")
        );
    }
}
