//! compactd's own session log as an import: read back as it is.

use crate::store::{self, LogEntry, SessionSettings};
use crate::transcript::{Format, Imported, Skips};

/// Our own session log, read back as it is.
pub(super) fn compactd_log(bytes: &[u8]) -> Imported {
    let loaded = store::parse_log(bytes);
    let mut skipped = Skips::default();
    for warning in &loaded.warnings {
        let (line, detail) = warning
            .strip_prefix("line ")
            .and_then(|rest| rest.split_once(": "))
            .map(|(n, d)| (n.parse().unwrap_or(0), d.to_string()))
            .unwrap_or((0, warning.clone()));
        skipped.add(line, "unreadable lines", Some(detail));
    }
    let mut settings = SessionSettings::default();
    let mut entries = Vec::new();
    for entry in loaded.entries {
        match entry {
            LogEntry::Header(header) if entries.is_empty() => settings = header.settings,
            LogEntry::Header(header) => entries.push(LogEntry::Settings(header.settings)),
            other => entries.push(other),
        }
    }
    let message_lines = vec![0; entries.len()];
    let mut imported = Imported {
        format: Format::COMPACTD,
        settings,
        entries,
        message_lines,
        skipped,
        subagents: Vec::new(),
    };
    imported.message_lines.truncate(imported.message_count());
    imported
}
