//! The id at the start of a JSON-RPC message whose body is cut short (a
//! frame over the size cap): answering it with that id lets the client match
//! the refusal. Shared by the framing (which reports it) and the decoder.

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;

/// The top-level `id` of a JSON object that may be cut anywhere (the start
/// of an oversized frame's body): found when it comes before the cut, as
/// clients put it before `params`. `None` when there is none to be seen.
pub fn leading_id(prefix: &[u8]) -> Option<Value> {
    let mut found = None;
    let mut de = serde_json::Deserializer::from_slice(prefix);
    // The cut makes the document end early, so this errors after the
    // visitor stored what it saw; only the stored id matters.
    let _ = IdSeed(&mut found).deserialize(&mut de);
    found.filter(|id| matches!(id, Value::Number(_) | Value::String(_)))
}

struct IdSeed<'a>(&'a mut Option<Value>);

impl<'de> DeserializeSeed<'de> for IdSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for IdSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON-RPC message")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            if key == "id" {
                *self.0 = Some(map.next_value::<Value>()?);
                return Ok(());
            }
            map.next_value::<IgnoredAny>()?;
        }
        Ok(())
    }
}
