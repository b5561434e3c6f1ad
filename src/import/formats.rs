//! The formats compactd reads, by name: its own log, every agent's
//! transcript (from the registry), and an OpenAI chat message array.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::agents::Agent;
use crate::transcript::Format;

/// Every format compactd reads: its own log, each agent's transcript (in
/// the registry's order), an OpenAI chat message array.
pub fn formats() -> Vec<Format> {
    std::iter::once(Format::COMPACTD)
        .chain(Agent::all().iter().map(|a| a.format()))
        .chain(std::iter::once(Format::OPENAI))
        .collect()
}

/// The format named `name` on the wire.
pub fn parse_name(name: &str) -> Option<Format> {
    formats().into_iter().find(|f| f.name() == name)
}

/// What a format is, for people (`Claude Code JSONL`).
pub fn description(format: Format) -> &'static str {
    match format {
        Format::COMPACTD => "compactd session JSONL",
        Format::OPENAI => "OpenAI chat message array (incl. SWE-agent .traj)",
        other => Agent::from_format(other).map_or("an unknown format", |a| a.format_description()),
    }
}

/// Every format's description, for an error saying what was tried.
pub(super) fn tried() -> String {
    formats()
        .into_iter()
        .map(description)
        .collect::<Vec<_>>()
        .join(", ")
}

impl<'de> Deserialize<'de> for Format {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Format, D::Error> {
        let name = String::deserialize(deserializer)?;
        parse_name(&name).ok_or_else(|| {
            let known: Vec<&str> = formats().into_iter().map(Format::name).collect();
            serde::de::Error::custom(format!(
                "unknown format `{name}`, expected one of {}",
                known.join(", ")
            ))
        })
    }
}

impl JsonSchema for Format {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Format".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let names: Vec<Value> = formats()
            .into_iter()
            .map(|f| Value::from(f.name()))
            .collect();
        let described: Vec<String> = formats()
            .into_iter()
            .map(|f| format!("`{}`: {}", f.name(), description(f)))
            .collect();
        schemars::json_schema!({
            "description": format!("A conversation format compactd reads: {}.", described.join("; ")),
            "type": "string",
            "enum": names,
        })
    }
}
