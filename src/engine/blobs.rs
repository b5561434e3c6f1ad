//! Where a message's large data lives: an image's or a document's `data`
//! goes to the blob store (`store::blobs`) before the log line that names
//! it is written, and comes back when a client reads the history. The
//! session in memory holds only the reference and what counting needs (an
//! image's size), so a session of 200 screenshots holds none of them.

use super::{EngineError, EngineResult, OpenSession};
use crate::conversation::{Message, PartKind};
use crate::store::{blobs, Blobs};

/// Refuses a part a client sent with compactd's own `$stored` reference
/// (a part sends its `data`), by name.
pub fn refuse_references(messages: &[Message]) -> EngineResult<()> {
    for (index, message) in messages.iter().enumerate() {
        if let Some(at) = message.parts().iter().position(|p| p.stored().is_some()) {
            return Err(EngineError::Invalid(format!(
                "messages[{index}].content[{at}]: `$stored` is compactd's own field (a part sends its `data`)"
            )));
        }
    }
    Ok(())
}

/// Stores the large data of `messages`' parts apart (parts already stored
/// apart stay as they are).
pub fn store_data(blobs: &Blobs, messages: &mut [Message]) -> EngineResult<()> {
    for (index, message) in messages.iter_mut().enumerate() {
        let Some(parts) = message.content_mut().part_list_mut() else {
            continue;
        };
        for (at, part) in parts.iter_mut().enumerate() {
            let large = part.data().is_some_and(|d| d.len() >= blobs::MIN_BYTES);
            if !large || !matches!(part.kind(), PartKind::Image | PartKind::Document) {
                continue;
            }
            let data = part.data().unwrap_or_default();
            let name = blobs.put(data).map_err(|e| {
                EngineError::Failed(format!("storing messages[{index}].content[{at}]: {e}"))
            })?;
            part.store_data(Some(name));
        }
    }
    Ok(())
}

/// Gives the parts stored apart their data back, as it was sent. A blob
/// that is missing leaves the part's `$stored` reference in place; the
/// returned warnings name it.
pub fn restore_data(blobs: &Blobs, messages: &mut [Message]) -> Vec<String> {
    let mut warnings = Vec::new();
    for message in messages.iter_mut() {
        let id = message.id.clone();
        let Some(parts) = message.content_mut().part_list_mut() else {
            continue;
        };
        for part in parts.iter_mut() {
            let Some(name) = part.stored().and_then(|s| s.sha256.clone()) else {
                continue;
            };
            match blobs.get(&name) {
                Ok(data) => part.restore_data(data),
                Err(e) => warnings.push(format!(
                    "message {id}: its {} data (blob {name}) could not be read: {e}",
                    part.type_name()
                )),
            }
        }
    }
    warnings
}

/// Messages whose parts stored apart get their data back as they are
/// written out (`Serialize`), one message at a time: a history of 200
/// screenshots is never held with all its images at once, only the text
/// it is written into. A blob that cannot be read leaves the part's
/// `$stored` reference in place, with a warning in the log.
pub struct Restoring<'a> {
    messages: &'a [Message],
    blobs: Blobs,
    session_id: &'a str,
}

impl<'a> Restoring<'a> {
    /// The history a model should see, written as a client reads it.
    pub fn history(open: &'a OpenSession, messages: &'a [Message]) -> Restoring<'a> {
        Restoring {
            messages,
            blobs: open.log.blobs(),
            session_id: &open.session.id,
        }
    }
}

impl serde::Serialize for Restoring<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = serializer.serialize_seq(Some(self.messages.len()))?;
        for message in self.messages {
            if !message.parts().iter().any(|p| p.stored().is_some()) {
                seq.serialize_element(message)?;
                continue;
            }
            let mut restored = [message.clone()];
            for warning in restore_data(&self.blobs, &mut restored) {
                tracing::warn!("session {}: {warning}", self.session_id);
            }
            seq.serialize_element(&restored[0])?;
        }
        seq.end()
    }
}

/// Drops the large data of parts without storing it (a followed
/// transcript's images: their bytes stay in the agent's file); what
/// counting needs is kept.
pub fn drop_data(message: &mut Message) {
    if let Some(parts) = message.content_mut().part_list_mut() {
        for part in parts.iter_mut() {
            let large = part.data().is_some_and(|d| d.len() >= blobs::MIN_BYTES);
            if large && matches!(part.kind(), PartKind::Image | PartKind::Document) {
                part.store_data(None);
            }
        }
    }
}

/// The blobs a session's messages name that are not stored (found on
/// load: reported, not fatal).
pub fn missing<'a>(blobs: &Blobs, messages: impl IntoIterator<Item = &'a Message>) -> Vec<String> {
    let mut out = Vec::new();
    for message in messages {
        for part in message.parts() {
            if let Some(name) = part.stored().and_then(|s| s.sha256.as_deref()) {
                if !blobs.has(name) {
                    out.push(format!(
                        "message {}: its {} data (blob {name}) is missing",
                        message.id,
                        part.type_name()
                    ));
                }
            }
        }
    }
    out
}
