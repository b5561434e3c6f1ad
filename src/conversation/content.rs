//! A message's content: a string (one text part), or parts as a provider
//! takes them: `text`, `image` (base64 `data` with its `mediaType`, or a
//! `url`), `thinking` (with its `signature`), `redactedThinking` (opaque
//! `data`), `document`, or any other kind. A part is kept as the client
//! sent it, every field included (`cache_control`, a signature, an unknown
//! kind), and given back as it came: compactd reads the kinds it knows
//! through `Part`'s accessors and never rewrites one. The only change it
//! makes is where large data lives: a big image's or document's `data`
//! moves to the blob store (`store::blobs`) and the part holds a
//! `StoredData` reference until the history is read.

use schemars::JsonSchema;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::image;

/// The key a part stored apart carries in the log.
pub const STORED_KEY: &str = "$stored";

/// A message's content.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Content {
    /// The text of the text parts, joined by newlines (the whole string
    /// when the content is one): what summaries, rules and requests read.
    text: String,
    /// The parts, when the content came as an array.
    parts: Option<Vec<Part>>,
}

impl Content {
    /// Content that is one text (the string form).
    pub fn text(text: impl Into<String>) -> Content {
        Content {
            text: text.into(),
            parts: None,
        }
    }

    /// Content made of parts (the array form).
    pub fn parts(parts: Vec<Part>) -> Content {
        let text = join_text(&parts);
        Content {
            text,
            parts: Some(parts),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty() && self.parts.as_ref().is_none_or(Vec::is_empty)
    }

    /// The parts, when the content is an array.
    pub fn part_list(&self) -> Option<&[Part]> {
        self.parts.as_deref()
    }

    pub fn part_list_mut(&mut self) -> Option<&mut Vec<Part>> {
        self.parts.as_mut()
    }

    /// Appends `text` as a new line of the text: to the string, or to the
    /// last part when it is text (else as a new text part).
    pub fn append_line(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        match &mut self.parts {
            None => {
                if !self.text.is_empty() {
                    self.text.push('\n');
                }
                self.text.push_str(text);
            }
            Some(parts) => {
                match parts.last_mut().filter(|p| p.kind() == PartKind::Text) {
                    Some(last) => last.append_text(text),
                    None => parts.push(Part::text(text)),
                }
                self.text = join_text(parts);
            }
        }
    }

    /// Adds text as a part of its own (the string form while there are no
    /// other parts).
    pub fn push_text(&mut self, text: &str) {
        match &mut self.parts {
            None => self.append_line(text),
            Some(_) => self.push(Part::text(text)),
        }
    }

    /// Adds a part; a string content becomes parts, its text the first.
    pub fn push(&mut self, part: Part) {
        let parts = self.parts.get_or_insert_with(|| {
            if self.text.is_empty() {
                Vec::new()
            } else {
                vec![Part::text(&self.text)]
            }
        });
        parts.push(part);
        self.text = join_text(parts);
    }

    /// Replaces the text, keeping the non-text parts (a clipped tool
    /// output for the summarizer): the string form with no other parts.
    pub fn set_text(&mut self, text: String) {
        match &mut self.parts {
            Some(parts) => {
                parts.retain(|p| p.kind() != PartKind::Text);
                parts.insert(0, Part::text(&text));
                self.text = text;
            }
            None => self.text = text,
        }
    }
}

impl From<String> for Content {
    fn from(text: String) -> Content {
        Content::text(text)
    }
}

impl From<&str> for Content {
    fn from(text: &str) -> Content {
        Content::text(text)
    }
}

impl std::ops::Deref for Content {
    type Target = str;
    fn deref(&self) -> &str {
        &self.text
    }
}

fn join_text(parts: &[Part]) -> String {
    let texts: Vec<&str> = parts.iter().filter_map(Part::text_of).collect();
    texts.join("\n")
}

impl Serialize for Content {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.parts {
            Some(parts) => parts.serialize(serializer),
            None => self.text.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Content, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::String(text) => Ok(Content::text(text)),
            Value::Null => Ok(Content::default()),
            Value::Array(items) => {
                let parts = items
                    .into_iter()
                    .enumerate()
                    .map(|(i, item)| {
                        Part::from_value(item).map_err(|e| format!("content[{i}]: {e}"))
                    })
                    .collect::<Result<Vec<Part>, String>>()
                    .map_err(D::Error::custom)?;
                Ok(Content::parts(parts))
            }
            other => Err(D::Error::custom(format!(
                "content: expected a string or an array of parts, got {}",
                kind_of(&other)
            ))),
        }
    }
}

impl JsonSchema for Content {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Content".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let part = generator.subschema_for::<Part>();
        schemars::json_schema!({
            "description": "A string (one text part), or the parts a provider takes (`Part`).",
            "anyOf": [
                {"type": "string"},
                {"type": "array", "items": part}
            ]
        })
    }
}

/// The kinds of part compactd reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartKind {
    Text,
    Image,
    Thinking,
    RedactedThinking,
    Document,
    /// Any other kind: kept and given back, counted as its JSON.
    Other,
}

/// One part of a message's content, as the client sent it.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    /// Every field as it came, but `data` while it is stored apart.
    fields: Map<String, Value>,
    stored: Option<StoredData>,
}

/// Where a part's `data` went, and what is known of it without reading
/// it back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredData {
    /// The blob's name (`sha256` of the data as sent); `None` when the
    /// data was not kept (a followed transcript's image: its bytes stay in
    /// the agent's file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// The length of `data` as sent (base64 text).
    pub length: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub height: Option<u32>,
}

impl Part {
    pub fn text(text: &str) -> Part {
        let mut fields = Map::new();
        fields.insert("type".into(), "text".into());
        fields.insert("text".into(), text.into());
        Part {
            fields,
            stored: None,
        }
    }

    /// Appends a line to a text part's text.
    fn append_text(&mut self, more: &str) {
        if let Some(Value::String(text)) = self.fields.get_mut("text") {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(more);
        }
    }

    /// A part of any kind from its fields (a reader building one).
    pub fn new(kind: &str, fields: impl IntoIterator<Item = (&'static str, Value)>) -> Part {
        let mut map = Map::new();
        map.insert("type".into(), kind.into());
        for (key, value) in fields {
            map.insert(key.into(), value);
        }
        Part {
            fields: map,
            stored: None,
        }
    }

    /// A part from JSON: a known kind must have its fields (the error names
    /// what is missing); any other kind needs only a `type`.
    pub fn from_value(value: Value) -> Result<Part, String> {
        let Value::Object(mut fields) = value else {
            return Err(format!("a part is an object, got {}", kind_of(&value)));
        };
        let stored = match fields.remove(STORED_KEY) {
            Some(value) => Some(
                serde_json::from_value::<StoredData>(value)
                    .map_err(|e| format!("`{STORED_KEY}`: {e}"))?,
            ),
            None => None,
        };
        let part = Part { fields, stored };
        part.check()?;
        Ok(part)
    }

    fn check(&self) -> Result<(), String> {
        let kind = match self.fields.get("type") {
            Some(Value::String(kind)) => kind.as_str(),
            Some(other) => return Err(format!("`type` must be a string, got {}", kind_of(other))),
            None => return Err("a part needs a `type`".into()),
        };
        let string = |key: &str| matches!(self.fields.get(key), Some(Value::String(_)));
        let absent_or_string =
            |key: &str| matches!(self.fields.get(key), None | Some(Value::String(_)));
        let has_data = string("data") || self.stored.is_some();
        let problem = match kind {
            // Anthropic's shape, sent as is: say where its fields go.
            "image" | "document" if self.fields.contains_key("source") && !has_data => {
                return Err(format!(
                    "an {kind} part takes `mediaType` with `data` (base64), or `url`, not \
                     Anthropic's `source` (its `media_type` and `data` or `url` move up; see \
                     docs/protocol.md, Content parts)"
                ))
            }
            "text" if !string("text") => Some("a text part needs `text` (a string)"),
            "image" if !(has_data || string("url")) => {
                Some("an image part needs `data` (base64) or `url`")
            }
            "image" | "document" if !absent_or_string("mediaType") => {
                Some("`mediaType` must be a string")
            }
            "thinking" if !string("thinking") => {
                Some("a thinking part needs `thinking` (a string)")
            }
            "thinking" if !absent_or_string("signature") => Some("`signature` must be a string"),
            "redactedThinking" if !has_data => {
                Some("a redactedThinking part needs `data` (a string)")
            }
            "document" if !(has_data || string("url") || string("text")) => {
                Some("a document part needs `data` (base64), `url` or `text`")
            }
            _ => None,
        };
        match problem {
            Some(problem) => Err(problem.to_string()),
            None => Ok(()),
        }
    }

    pub fn kind(&self) -> PartKind {
        match self.fields.get("type").and_then(Value::as_str) {
            Some("text") => PartKind::Text,
            Some("image") => PartKind::Image,
            Some("thinking") => PartKind::Thinking,
            Some("redactedThinking") => PartKind::RedactedThinking,
            Some("document") => PartKind::Document,
            _ => PartKind::Other,
        }
    }

    /// The `type` as sent.
    pub fn type_name(&self) -> &str {
        self.fields
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// A text part's text.
    pub fn text_of(&self) -> Option<&str> {
        match self.kind() {
            PartKind::Text => self.str_field("text"),
            _ => None,
        }
    }

    /// A thinking part's thinking.
    pub fn thinking(&self) -> Option<&str> {
        match self.kind() {
            PartKind::Thinking => self.str_field("thinking"),
            _ => None,
        }
    }

    pub fn str_field(&self, key: &str) -> Option<&str> {
        self.fields.get(key).and_then(Value::as_str)
    }

    pub fn media_type(&self) -> Option<&str> {
        self.str_field("mediaType")
    }

    /// The inline `data`, while it is not stored apart.
    pub fn data(&self) -> Option<&str> {
        self.str_field("data")
    }

    pub fn stored(&self) -> Option<&StoredData> {
        self.stored.as_ref()
    }

    /// An image's width and height: from the stored reference, else from
    /// the header of its inline data.
    pub fn image_size(&self) -> Option<(u32, u32)> {
        if let Some(stored) = &self.stored {
            return stored.width.zip(stored.height);
        }
        let header = image::decode_base64_prefix(self.data()?, 64 * 1024)?;
        image::dimensions(&header)
    }

    /// Moves `data` out (to be stored apart under `sha256`); the part keeps
    /// what counting and describing it need.
    pub fn store_data(&mut self, sha256: Option<String>) -> Option<String> {
        let size = match self.kind() {
            PartKind::Image => self.image_size(),
            _ => None,
        };
        let Some(Value::String(data)) = self.fields.remove("data") else {
            return None;
        };
        self.stored = Some(StoredData {
            sha256,
            length: data.len() as u64,
            width: size.map(|s| s.0),
            height: size.map(|s| s.1),
        });
        Some(data)
    }

    /// Puts stored data back, as it was sent.
    pub fn restore_data(&mut self, data: String) {
        self.fields.insert("data".into(), Value::String(data));
        self.stored = None;
    }

    /// The part as JSON (for counting an unknown kind).
    pub fn fields(&self) -> &Map<String, Value> {
        &self.fields
    }

    /// A line naming the part where it is not kept (a summary):
    /// `[image: image/png 1280×720, message m12]`.
    pub fn describe(&self, message_id: &str) -> String {
        let what = match self.kind() {
            PartKind::Image => "image",
            PartKind::Document => "document",
            _ => self.type_name(),
        };
        let mut details: Vec<String> = Vec::new();
        if let Some(media) = self.media_type() {
            details.push(media.to_string());
        }
        if let Some((w, h)) = self.image_size() {
            details.push(format!("{w}×{h}"));
        }
        if let Some(title) = self.str_field("title").or_else(|| self.str_field("url")) {
            details.push(title.to_string());
        }
        details.push(format!("message {message_id}"));
        format!("[{what}: {}]", details.join(", "))
    }
}

impl Serialize for Part {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let extra = usize::from(self.stored.is_some());
        let mut map = serializer.serialize_map(Some(self.fields.len() + extra))?;
        for (key, value) in &self.fields {
            map.serialize_entry(key, value)?;
        }
        if let Some(stored) = &self.stored {
            map.serialize_entry(STORED_KEY, stored)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Part {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Part, D::Error> {
        Part::from_value(Value::deserialize(deserializer)?).map_err(D::Error::custom)
    }
}

impl JsonSchema for Part {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Part".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "One part of a message's content, kept and given back exactly as sent (every field, known or not). compactd reads `text` (`text`), `image` (`data` base64 with `mediaType`, or `url`), `thinking` (`thinking`, `signature`), `redactedThinking` (`data`) and `document` (`data`, `url` or `text`); any other `type` is kept as it came.",
            "type": "object",
            "properties": {
                "type": {"type": "string", "description": "`text`, `image`, `thinking`, `redactedThinking`, `document`, or any other kind"},
                "text": {"type": "string"},
                "data": {"type": "string", "description": "base64 (an image, a document) or opaque (redacted thinking)"},
                "mediaType": {"type": "string"},
                "url": {"type": "string"},
                "thinking": {"type": "string"},
                "signature": {"type": "string"}
            },
            "required": ["type"],
            "additionalProperties": true
        })
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parts_come_back_as_they_came() {
        let sent = json!([
            {"type": "text", "text": "look", "cache_control": {"type": "ephemeral"}},
            {"type": "image", "mediaType": "image/png", "data": "iVBORw0KGgoAAAANSUhEUgAABQAAAALQ"},
            {"type": "thinking", "thinking": "hmm", "signature": "sig=="},
            {"type": "redactedThinking", "data": "opaque"},
            {"type": "reasoning", "encrypted_content": "xyz", "summary": []}
        ]);
        let content: Content = serde_json::from_value(sent.clone()).unwrap();
        assert_eq!(content.as_str(), "look");
        assert_eq!(serde_json::to_value(&content).unwrap(), sent);
        let parts = content.part_list().unwrap();
        assert_eq!(parts[1].image_size(), Some((1280, 720)));
        assert_eq!(parts[4].kind(), PartKind::Other);
        let plain: Content = serde_json::from_value(json!("hi")).unwrap();
        assert_eq!(serde_json::to_value(&plain).unwrap(), json!("hi"));
    }

    #[test]
    fn a_part_without_what_its_kind_needs_is_refused_by_name() {
        let check = |part: Value, expected: &str| {
            let err = serde_json::from_value::<Content>(json!([part]))
                .unwrap_err()
                .to_string();
            assert!(err.contains(expected), "{err}");
        };
        check(
            json!({"type": "image"}),
            "content[0]: an image part needs `data` (base64) or `url`",
        );
        check(
            json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}}),
            "content[0]: an image part takes `mediaType` with `data` (base64), or `url`, not Anthropic's `source`",
        );
        check(json!({"text": "x"}), "a part needs a `type`");
        check(json!({"type": "thinking"}), "`thinking`");
        check(json!(7), "a part is an object");
    }

    #[test]
    fn stored_data_goes_and_comes_back() {
        let mut part = Part::from_value(
            json!({"type": "image", "mediaType": "image/png", "data": "iVBORw0KGgoAAAANSUhEUgAABQAAAALQ"}),
        )
        .unwrap();
        let sent = serde_json::to_value(&part).unwrap();
        let data = part.store_data(Some("abc".into())).unwrap();
        let logged = serde_json::to_value(&part).unwrap();
        assert_eq!(logged["$stored"]["width"], 1280);
        assert!(logged.get("data").is_none());
        let mut read_back: Part = serde_json::from_value(logged).unwrap();
        assert_eq!(read_back.image_size(), Some((1280, 720)));
        assert_eq!(
            read_back.describe("m12"),
            "[image: image/png, 1280×720, message m12]"
        );
        read_back.restore_data(data);
        assert_eq!(serde_json::to_value(&read_back).unwrap(), sent);
    }
}
