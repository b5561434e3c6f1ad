//! What every transcript reader shares: a transcript's lines (`Line`), the
//! `Format` it is in, what a reader emits as it reads (`emit`: the
//! `Emitter`, its `Event`s, the `Reader` trait), how a whole transcript's
//! events become log entries and how a foreign compaction is placed
//! (`builder`), reading only what a growing file gained (`tail`), and
//! when a line says something happened (`time`). The agents' own readers
//! live in their modules (`agents`); `import` detects a file's format and
//! reads it through them.

pub(crate) mod builder;
pub(crate) mod emit;
mod format;
mod imported;
mod line;
pub(crate) mod parts;
pub(crate) mod tail;
#[cfg(test)]
pub(crate) mod testing;
pub(crate) mod time;

use serde_json::Value;

pub(crate) use builder::{place, place_clearing, ChangedFiles};
pub use emit::{Emitter, Event, ForeignCompaction, Reader};
pub use format::Format;
pub use imported::{Imported, Skips};
pub use line::Line;
pub(crate) use line::{parse_line, split_lines};

/// A whole transcript through its reader: the batch import.
pub(crate) fn read_all(reader: &mut dyn Reader, format: Format, lines: &[Line]) -> Imported {
    let mut out = Emitter::new(format);
    emit::feed(reader, lines, &mut out);
    reader.finish(&mut out);
    let events = out.drain();
    builder::collect(format, events, out.skipped)
}

/// A whole JSONL transcript through its reader, each line read as soon as
/// it is parsed (`line::each_batch`): the batch import of a file.
pub(crate) fn read_all_text(reader: &mut dyn Reader, format: Format, bytes: &[u8]) -> Imported {
    let mut out = Emitter::new(format);
    line::each_batch(bytes, |lines| emit::feed(reader, lines, &mut out));
    reader.finish(&mut out);
    let events = out.drain();
    builder::collect(format, events, out.skipped)
}

/// Text of a string or of the text parts of a content array; images become
/// a short placeholder so the message keeps its place.
pub fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| match p.get("type").and_then(Value::as_str) {
                Some("image") | Some("input_image") | Some("image_url") => Some("[image]".into()),
                _ => p
                    .get("text")
                    .and_then(Value::as_str)
                    .or_else(|| p.as_str())
                    .map(str::to_string),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}
