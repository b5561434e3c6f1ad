//! What the readers' tests share: a text read through a reader, and the
//! messages its events leave.

use super::{split_lines, Emitter, Event, Format, Reader};
use crate::conversation::Message;

/// The events `reader` gives for `text`, line by line as a follow reads
/// them.
pub(crate) fn events(reader: &mut dyn Reader, format: Format, text: &str) -> Vec<Event> {
    let mut out = Emitter::new(format);
    let mut events = Vec::new();
    for line in split_lines(text.as_bytes()) {
        if let Some(value) = out.readable(&line) {
            reader.line(line.number, value, &mut out);
        }
        events.extend(out.drain());
    }
    events
}

/// The messages as they stand after every amendment, in order.
pub(crate) fn messages(events: &[Event]) -> Vec<Message> {
    let mut messages: Vec<Message> = Vec::new();
    for event in events {
        match event {
            Event::Message { message, .. } => messages.push(message.clone()),
            Event::Amend(message) => {
                let at = messages.iter().position(|m| m.id == message.id).unwrap();
                messages[at] = message.clone();
            }
            _ => {}
        }
    }
    messages
}
