//! Reading conversations from files: our own session logs and OpenAI-style
//! chat message arrays. Other agents' formats arrive with later importers.

pub mod openai;

use std::path::Path;

use crate::conversation::Message;
use crate::store;

/// A conversation read from a file.
#[derive(Debug, Default)]
pub struct Imported {
    pub format: &'static str,
    pub messages: Vec<Message>,
    pub system_prompt: Option<String>,
    pub model: Option<String>,
    /// Parts of the input that were not understood and were skipped.
    pub skipped: Vec<String>,
    /// Our own logs carry compactions; they are replayed as they are.
    pub log_entries: Option<Vec<store::LogEntry>>,
}

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("{path}: {message}")]
    Read { path: String, message: String },
    #[error("{path}: not a known conversation format (tried: compactd session JSONL, OpenAI chat message array): {detail}")]
    UnknownFormat { path: String, detail: String },
}

pub fn read_file(path: &Path) -> Result<Imported, ImportError> {
    let bytes = std::fs::read(path).map_err(|e| ImportError::Read {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    parse(&bytes).map_err(|detail| ImportError::UnknownFormat {
        path: path.display().to_string(),
        detail,
    })
}

/// Detects the format from the content.
pub fn parse(bytes: &[u8]) -> Result<Imported, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "the file is not UTF-8 text".to_string())?;
    let trimmed = text.trim_start();
    if trimmed.is_empty() {
        return Err("the file is empty".into());
    }
    if trimmed.starts_with('[') || trimmed.starts_with('{') && !looks_like_jsonl(trimmed) {
        let value: serde_json::Value =
            serde_json::from_str(trimmed).map_err(|e| format!("invalid JSON: {e}"))?;
        return openai::from_value(&value);
    }
    let loaded = store::parse_log(bytes);
    let is_ours = loaded
        .entries
        .iter()
        .any(|e| matches!(e, store::LogEntry::Header(_)));
    if !is_ours {
        return Err("no compactd session header found".into());
    }
    let messages = loaded
        .entries
        .iter()
        .filter_map(|e| match e {
            store::LogEntry::Message { message } => Some(message.clone()),
            _ => None,
        })
        .collect();
    Ok(Imported {
        format: "compactd",
        messages,
        skipped: loaded.warnings,
        log_entries: Some(loaded.entries),
        ..Imported::default()
    })
}

fn looks_like_jsonl(text: &str) -> bool {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let first = lines.next();
    let second = lines.next();
    matches!((first, second), (Some(a), Some(_)) if serde_json::from_str::<serde_json::Value>(a).is_ok())
}
