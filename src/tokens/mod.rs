//! Token counting and the context meter. Pure apart from the lazily loaded,
//! process-wide vocabularies.

mod calibration;
mod images;
mod pieces;
mod windows;

pub use calibration::{model_key, same_family, Calibration, Correction};
pub use images::{image_notes, ImageRule};
pub use windows::context_window_for;

use crate::conversation::{Message, MessageBody, Part, PartKind};

/// Set when this process counts without the vocabulary (`estimate_only`).
static ESTIMATED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// From now on this process counts every text as `estimate` does, and
/// never loads a vocabulary. For a process that shows no count and whose
/// answer is bounded in characters (an agent's hook): loading o200k is
/// ~40 ms, most of what such a process would cost.
pub fn estimate_only() {
    ESTIMATED.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// A count without a vocabulary: a token per four characters, what o200k
/// averages on prose and code.
pub fn estimate(text: &str) -> u64 {
    text.chars().count().div_ceil(4) as u64
}

/// How a model's tokens are counted: the BPE vocabulary for text (Claude's
/// and other closed tokenizers are not public; o200k is the closest public
/// estimate) and the provider's rule for images (`images`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Encoding {
    /// o200k text, Anthropic's image rule: Claude, and models not known.
    #[default]
    O200k,
    /// o200k text, OpenAI's image rule: GPT-4o, GPT-4.1 and later.
    O200kOpenAi,
    /// cl100k text, OpenAI's image rule: the GPT-3.5/GPT-4 generation.
    Cl100k,
}

impl Encoding {
    /// o200k for current models, cl100k for the GPT-3.5/GPT-4 generation;
    /// OpenAI's image rule for OpenAI's models.
    pub fn for_model(model: Option<&str>) -> Encoding {
        let Some(model) = model else {
            return Encoding::O200k;
        };
        let m = model.to_ascii_lowercase();
        let m = m.rsplit('/').next().unwrap_or(&m);
        let old_openai =
            (m.starts_with("gpt-4") && !m.starts_with("gpt-4o") && !m.starts_with("gpt-4.1"))
                || m.starts_with("gpt-3.5")
                || m.starts_with("text-embedding-ada")
                || m.starts_with("text-embedding-3");
        let openai = m.starts_with("gpt-")
            || m.starts_with("chatgpt")
            || ["o1", "o3", "o4"]
                .iter()
                .any(|o| m == *o || m.starts_with(&format!("{o}-")));
        if old_openai {
            Encoding::Cl100k
        } else if openai {
            Encoding::O200kOpenAi
        } else {
            Encoding::O200k
        }
    }

    /// The text vocabulary's name.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::O200k | Encoding::O200kOpenAi => "o200k_base",
            Encoding::Cl100k => "cl100k_base",
        }
    }

    /// What a count of `message` is named by in the log: the vocabulary,
    /// and for a message with images the image rule too.
    pub fn count_name(self, message: &Message) -> std::borrow::Cow<'static, str> {
        if message.parts().iter().any(|p| p.kind() == PartKind::Image) {
            format!("{}+{}-images", self.name(), self.images().name()).into()
        } else {
            self.name().into()
        }
    }

    pub fn images(self) -> ImageRule {
        match self {
            Encoding::O200k => ImageRule::Anthropic,
            Encoding::O200kOpenAi | Encoding::Cl100k => ImageRule::OpenAi,
        }
    }

    fn tokenizer(self) -> &'static bpe_openai::Tokenizer {
        match self {
            Encoding::O200k | Encoding::O200kOpenAi => bpe_openai::o200k_base(),
            Encoding::Cl100k => bpe_openai::cl100k_base(),
        }
    }

    pub fn count(self, text: &str) -> u64 {
        if text.is_empty() {
            return 0;
        }
        if ESTIMATED.load(std::sync::atomic::Ordering::Relaxed) {
            return estimate(text);
        }
        match self {
            // The same count, piece by piece (`pieces`).
            Encoding::O200k | Encoding::O200kOpenAi => pieces::count(self.tokenizer(), text),
            Encoding::Cl100k => self.tokenizer().count(text) as u64,
        }
    }
}

/// Loads the default vocabulary on a background thread so that the first
/// request that needs it does not pay the ~60 ms start-up.
pub fn preload_in_background() {
    std::thread::Builder::new()
        .name("compactd-vocab".into())
        .spawn(|| {
            let _ = Encoding::O200k.count("warm up");
        })
        .ok();
}

/// Framing tokens chat formats add around each message (role markers and
/// separators); 4 matches OpenAI's published accounting.
pub const PER_MESSAGE_OVERHEAD: u64 = 4;
/// Extra tokens per tool call for its framing (id, type, name keys).
pub const PER_TOOL_CALL_OVERHEAD: u64 = 8;

/// The tokens a part other than text occupies: an image by the provider's
/// rule for its size; thinking as its text (an agent's tool loop sends the
/// turn's thinking back, and on the shared pi and Claude Code sessions
/// counting it keeps the estimate nearest the provider's count; Anthropic
/// drops earlier turns' thinking, which the usage then shows); redacted
/// thinking nothing (its size is not known); a document's text, or its
/// bytes / 4; any other kind its JSON.
fn count_part(encoding: Encoding, part: &Part) -> u64 {
    match part.kind() {
        PartKind::Text | PartKind::RedactedThinking => 0,
        PartKind::Thinking => encoding.count(part.thinking().unwrap_or("")),
        PartKind::Image => encoding.images().tokens(part.image_size()),
        PartKind::Document => match part.str_field("text") {
            Some(text) => encoding.count(text),
            None => {
                let length = part
                    .stored()
                    .map_or(part.data().map_or(0, str::len) as u64, |s| s.length);
                length * 3 / 4 / 4
            }
        },
        PartKind::Other => count_json(encoding, &serde_json::Value::Object(part.fields().clone())),
    }
}

/// The estimated tokens one message occupies in a prompt.
pub fn count_message(encoding: Encoding, message: &Message) -> u64 {
    let mut total = PER_MESSAGE_OVERHEAD;
    for part in message.parts() {
        total += count_part(encoding, part);
    }
    match &message.body {
        MessageBody::System { content } | MessageBody::User { content } => {
            total += encoding.count(content);
        }
        MessageBody::Assistant {
            content,
            thinking,
            tool_calls,
            ..
        } => {
            total += encoding.count(content);
            if let Some(thinking) = thinking {
                total += encoding.count(thinking);
            }
            for call in tool_calls {
                total += count_call(encoding, call);
            }
        }
        MessageBody::Tool {
            content, tool_name, ..
        } => {
            total += encoding.count(content);
            if let Some(name) = tool_name {
                total += encoding.count(name);
            }
        }
    }
    total
}

/// `count_message(encoding, new)` for `new`, a later version of `old`
/// (an agent's response written over several lines, each adding a block)
/// that `count_message` gave `old_tokens`: only what changed is counted
/// again, so a response of many blocks costs its length, not its length
/// times its blocks. The count is a sum over the message's text, thinking,
/// calls and parts, so it is the same figure.
pub fn recount_message(encoding: Encoding, old: &Message, old_tokens: u64, new: &Message) -> u64 {
    let mut total = old_tokens as i128;
    let text = |total: &mut i128, old: &str, new: &str| {
        if old != new {
            *total += encoding.count(new) as i128 - encoding.count(old) as i128;
        }
    };
    match (&old.body, &new.body) {
        (MessageBody::System { content: a }, MessageBody::System { content: b })
        | (MessageBody::User { content: a }, MessageBody::User { content: b }) => {
            text(&mut total, a, b)
        }
        (
            MessageBody::Assistant {
                content: a,
                thinking: a_thinking,
                tool_calls: a_calls,
                ..
            },
            MessageBody::Assistant {
                content: b,
                thinking: b_thinking,
                tool_calls: b_calls,
                ..
            },
        ) => {
            text(&mut total, a, b);
            text(
                &mut total,
                a_thinking.as_deref().unwrap_or(""),
                b_thinking.as_deref().unwrap_or(""),
            );
            total += changed_tail(a_calls, b_calls, |call| count_call(encoding, call));
        }
        (
            MessageBody::Tool {
                content: a,
                tool_name: a_name,
                ..
            },
            MessageBody::Tool {
                content: b,
                tool_name: b_name,
                ..
            },
        ) => {
            text(&mut total, a, b);
            text(
                &mut total,
                a_name.as_deref().unwrap_or(""),
                b_name.as_deref().unwrap_or(""),
            );
        }
        _ => return count_message(encoding, new),
    }
    total += changed_tail(old.parts(), new.parts(), |p| count_part(encoding, p));
    total.max(0) as u64
}

/// What `new`'s items count beyond `old`'s: the items past the prefix
/// both share, new counted in and old counted out.
fn changed_tail<T: PartialEq>(old: &[T], new: &[T], count: impl Fn(&T) -> u64) -> i128 {
    let same = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let sum = |items: &[T]| items.iter().map(|i| count(i) as i128).sum::<i128>();
    sum(&new[same..]) - sum(&old[same..])
}

/// One tool call as `count_message` counts it.
fn count_call(encoding: Encoding, call: &crate::conversation::ToolCall) -> u64 {
    PER_TOOL_CALL_OVERHEAD + encoding.count(&call.name) + count_json(encoding, &call.arguments)
}

/// The most tokens `count_message` can give the message with any
/// vocabulary: BPE never makes more tokens than bytes, so a count above
/// this (a hand-edited log) is not a count at all.
pub fn max_tokens(message: &Message) -> u64 {
    let bytes = |text: &str| text.len() as u64;
    let mut total = PER_MESSAGE_OVERHEAD;
    for part in message.parts() {
        // An image's count has no relation to its bytes: bound it by the
        // most any rule gives.
        total += match part.kind() {
            PartKind::Image => 2_000,
            PartKind::Thinking => part.thinking().map_or(0, str::len) as u64,
            PartKind::Text | PartKind::RedactedThinking => 0,
            _ => {
                json_bytes(&serde_json::Value::Object(part.fields().clone()))
                    + part.stored().map_or(0, |s| s.length)
            }
        };
    }
    match &message.body {
        MessageBody::System { content } | MessageBody::User { content } => total += bytes(content),
        MessageBody::Assistant {
            content,
            thinking,
            tool_calls,
            ..
        } => {
            total += bytes(content) + thinking.as_deref().map_or(0, bytes);
            for call in tool_calls {
                total += PER_TOOL_CALL_OVERHEAD + bytes(&call.name) + 2;
                total += json_bytes(&call.arguments);
            }
        }
        MessageBody::Tool {
            content, tool_name, ..
        } => total += bytes(content) + tool_name.as_deref().map_or(0, bytes),
    }
    total
}

/// The length of a value's compact JSON, without building it.
fn json_bytes(value: &serde_json::Value) -> u64 {
    struct Count(u64);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len() as u64;
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// The estimated tokens of tool definitions as the provider gets them:
/// each one's JSON, compact. Providers render them their own way (OpenAI
/// as a TypeScript-like namespace, a little shorter than the JSON;
/// Anthropic inside a tool-use system prompt of a few hundred tokens); the
/// calibration learns that difference from the first usage.
pub fn count_tool_definitions(encoding: Encoding, tools: &[serde_json::Value]) -> u64 {
    tools
        .iter()
        .map(|tool| encoding.count(&tool.to_string()))
        .sum()
}

fn count_json(encoding: Encoding, value: &serde_json::Value) -> u64 {
    match value {
        serde_json::Value::Null => 0,
        serde_json::Value::String(s) => encoding.count(s) + 2,
        other => encoding.count(&other.to_string()),
    }
}

/// Where the meter's figure comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MeterSource {
    /// The provider's reported usage at the latest assistant turn, plus the
    /// estimate of what came after it.
    Usage,
    /// Our own count of everything.
    Estimate,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meter {
    pub context_tokens: u64,
    pub context_window: u64,
    pub auto_compact_at: u64,
    pub source: MeterSource,
    /// The part of `context_tokens` that is in every request but no
    /// message: the declared system prompt and tool definitions and the
    /// calibrated overhead, in the provider's tokens.
    pub overhead_tokens: u64,
}

impl Meter {
    pub fn percent(&self) -> f64 {
        if self.context_window == 0 {
            return 0.0;
        }
        (self.context_tokens as f64 * 1000.0 / self.context_window as f64).round() / 10.0
    }
}

/// 950, 90.4k, 200k, 1M, 1.5M.
pub fn human(n: u64) -> String {
    let scaled = |value: f64, unit: &str| {
        let text = if value < 100.0 {
            format!("{value:.1}")
        } else {
            format!("{value:.0}")
        };
        format!("{}{unit}", text.trim_end_matches(".0"))
    };
    match n {
        0..=999 => n.to_string(),
        1_000..=999_999 => scaled(n as f64 / 1_000.0, "k"),
        _ => scaled(n as f64 / 1_000_000.0, "M"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A response written block by block (thinking, then text, then one
    /// call after another, a call's arguments rewritten, a user message
    /// edited) is recounted to what a whole count gives each version.
    #[test]
    fn a_message_recounted_from_its_earlier_version_counts_as_counted_whole() {
        use crate::conversation::ToolCall;
        let encoding = Encoding::for_model(Some("claude-opus-4-5"));
        let call = |id: &str, path: &str| ToolCall {
            id: id.into(),
            name: "Read".into(),
            arguments: serde_json::json!({"file_path": path}),
        };
        let with_thinking = |mut m: Message, thinking: &str| {
            if let MessageBody::Assistant { thinking: t, .. } = &mut m.body {
                *t = Some(thinking.into());
            }
            m
        };
        let versions = [
            with_thinking(
                Message::assistant("a", "", vec![]),
                "Let me look at the parser first.",
            ),
            with_thinking(
                Message::assistant("a", "Reading it.", vec![]),
                "Let me look at the parser first.",
            ),
            with_thinking(
                Message::assistant("a", "Reading it.", vec![call("c1", "src/parser.rs")]),
                "Let me look at the parser first.",
            ),
            with_thinking(
                Message::assistant(
                    "a",
                    "Reading it.",
                    vec![call("c1", "src/parser.rs"), call("c2", "src/lexer.rs")],
                ),
                "Let me look at the parser first.",
            ),
            with_thinking(
                Message::assistant(
                    "a",
                    "Reading them.",
                    vec![call("c1", "src/main.rs"), call("c2", "src/lexer.rs")],
                ),
                "Something else entirely.",
            ),
            Message::assistant("a", "", vec![]),
            Message::user("a", "a user message instead"),
            Message::user("a", "a user message, edited"),
            Message::tool_result("a", "c1", "fn main() {}", false),
        ];
        let mut tokens = count_message(encoding, &versions[0]);
        for pair in versions.windows(2) {
            tokens = recount_message(encoding, &pair[0], tokens, &pair[1]);
            assert_eq!(tokens, count_message(encoding, &pair[1]), "{:?}", pair[1]);
        }
    }

    #[test]
    fn model_picks_vocabulary() {
        assert_eq!(Encoding::for_model(Some("gpt-4-turbo")), Encoding::Cl100k);
        assert_eq!(
            Encoding::for_model(Some("openai/gpt-3.5-turbo")),
            Encoding::Cl100k
        );
        // OpenAI's current models: o200k text and OpenAI's image rule.
        let gpt = Encoding::for_model(Some("gpt-4o-mini"));
        assert_eq!(
            (gpt.name(), gpt.images()),
            ("o200k_base", ImageRule::OpenAi)
        );
        assert_eq!(
            Encoding::for_model(Some("o3-mini")).images(),
            ImageRule::OpenAi
        );
        assert_eq!(
            Encoding::for_model(Some("claude-sonnet-4-5")),
            Encoding::O200k
        );
        assert_eq!(Encoding::O200k.images(), ImageRule::Anthropic);
        assert_eq!(Encoding::for_model(None), Encoding::O200k);
    }

    #[test]
    fn counts_known_strings() {
        assert_eq!(Encoding::O200k.count("hello world"), 2);
        assert_eq!(Encoding::Cl100k.count("hello world"), 2);
        assert_eq!(Encoding::O200k.count(""), 0);
    }

    #[test]
    fn numbers_read_like_a_status_bar() {
        let cases = [
            (950, "950"),
            (90_400, "90.4k"),
            (90_449, "90.4k"),
            (200_000, "200k"),
            (177_000, "177k"),
            (14_667, "14.7k"),
            (1_000_000, "1M"),
            (1_500_000, "1.5M"),
        ];
        for (n, text) in cases {
            assert_eq!(human(n), text, "{n}");
        }
    }
}
