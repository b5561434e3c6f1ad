//! A transcript format's name on the wire.

use serde::Serialize;

/// A conversation format compactd reads, by its name on the wire:
/// compactd's own session log, an OpenAI chat message array, or an agent's
/// transcript, named as the agent is (`agents`). `import` lists them all,
/// reads the name back and describes each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Format(&'static str);

impl Format {
    /// compactd's own session log (JSONL).
    pub const COMPACTD: Format = Format("compactd");
    /// An OpenAI chat-completions message array, bare or under `messages`
    /// or `history` (SWE-agent `.traj`).
    pub const OPENAI: Format = Format("openai");

    /// An agent's transcript format, by the agent's name.
    pub const fn named(name: &'static str) -> Format {
        Format(name)
    }

    pub fn name(self) -> &'static str {
        self.0
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl Serialize for Format {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.0)
    }
}
