//! Reading a conversation another tool wrote, as one batch: the formats
//! compactd reads (its own log, an OpenAI chat message array, and every
//! agent's transcript, read by the agent's reader in `agents`), told apart
//! by their content. Importers never fail on a bad line: they skip it and
//! say why (`Skips`); only a file in no known format, or one that is not
//! text at all, is an error.
//!
//! Every importer produces the same thing: a list of our session log
//! entries (messages, settings changes, compactions), so an imported
//! conversation replays, meters and compacts exactly like one a client
//! appended.

mod compactd_log;
mod detect;
mod file;
mod formats;
pub(crate) mod openai;

use std::path::Path;

use serde_json::Value;

pub use crate::transcript::{Format, Imported, Skips};
pub use formats::{description, formats, parse_name};

use crate::agents::Agent;
use crate::transcript::{split_lines, Line};
use compactd_log::compactd_log;
use detect::{agent_of, classify, detect_lines, looks_binary};
use formats::tried;

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("{path}: {message}")]
    Read { path: String, message: String },
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
}

/// Reads and imports a file; `format: None` detects it. Only a regular
/// file of at most `max_bytes` is read (see `file.rs`).
pub fn read_file(
    path: &Path,
    format: Option<Format>,
    max_bytes: u64,
) -> Result<Imported, ImportError> {
    let bytes = file::read_regular(path, max_bytes).map_err(|message| ImportError::Read {
        path: path.display().to_string(),
        message,
    })?;
    let mut imported = parse(&bytes, format).map_err(|message| ImportError::Invalid {
        path: path.display().to_string(),
        message,
    })?;
    if let Some(agent) = Agent::from_format(imported.format) {
        imported.subagents = agent.companions(path);
    }
    Ok(imported)
}

/// Imports bytes; `format: None` detects the format from the content.
pub fn parse(bytes: &[u8], format: Option<Format>) -> Result<Imported, String> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err("the file is empty".into());
    }
    if looks_binary(bytes) {
        return Err(format!(
            "not a conversation: the file is binary, not text (tried: {})",
            tried()
        ));
    }
    let start = bytes.iter().position(|b| !b.is_ascii_whitespace());
    let trimmed = &bytes[start.unwrap_or(bytes.len())..];
    // A JSON document (array or object) rather than JSON lines. Looked at
    // as bytes: JSON lines fail to parse as one document at their second
    // line, and converting the whole file to text first cost a tenth of an
    // import.
    if trimmed.starts_with(b"[") || trimmed.starts_with(b"{") {
        match document(trimmed) {
            Ok(document) => return parse_document(document, format),
            Err(e) if trimmed.starts_with(b"[") => return Err(format!("invalid JSON: {e}")),
            Err(_) => {}
        }
    }
    let format = match format {
        Some(format) => format,
        None => detect_lines(&split_lines(head(bytes)))?,
    };
    let imported = match format {
        Format::COMPACTD => compactd_log(bytes),
        Format::OPENAI => {
            return Err(
                "not an OpenAI chat message array: the file is JSON lines, not one JSON document"
                    .into(),
            )
        }
        other => {
            let agent = agent_of(other)?;
            match agent.batch_reader() {
                Some(mut reader) => crate::transcript::read_all_text(&mut *reader, other, bytes),
                None => agent.import(&split_lines(bytes)),
            }
        }
    };
    if imported.message_count() == 0 {
        // Nothing read: whether any line was of the format at all, once
        // more from the start (an error's path only).
        return unrecognized(bytes, format).map_or(Ok(imported), Err);
    }
    Ok(imported)
}

/// The text up to the line after the ones format detection looks at.
fn head(bytes: &[u8]) -> &[u8] {
    match memchr::memchr_iter(b'\n', bytes).nth(detect::DETECTED_FROM) {
        Some(end) => &bytes[..=end],
        None => bytes,
    }
}

/// Why a file of JSON lines none of which became a message is not of
/// `format`, when none of its lines is one of that format's.
fn unrecognized(bytes: &[u8], format: Format) -> Option<String> {
    let lines = split_lines(bytes);
    let recognized = lines
        .iter()
        .any(|l| matches!(&l.value, Ok(v) if classify(v) == Some(format)));
    if !recognized {
        let guess = detect_lines(&lines)
            .map(|f| format!("it looks like {}", description(f)))
            .unwrap_or_else(|e| e);
        return Some(format!(
            "not a {} file: none of its {} lines is a {} entry ({guess})",
            description(format),
            lines.len(),
            format.name()
        ));
    }
    None
}

/// The file as one JSON document; one whose text is not all UTF-8 is read
/// with the bad bytes replaced, as a line of JSON lines is not.
fn document(trimmed: &[u8]) -> Result<Value, serde_json::Error> {
    serde_json::from_slice::<Value>(trimmed).or_else(|e| {
        // JSON lines: the first line parsed, the next is "trailing".
        if e.to_string().starts_with("trailing characters") || std::str::from_utf8(trimmed).is_ok()
        {
            return Err(e);
        }
        serde_json::from_str::<Value>(&String::from_utf8_lossy(trimmed))
    })
}

fn parse_document(document: Value, format: Option<Format>) -> Result<Imported, String> {
    let is_chat = match &document {
        Value::Array(_) => true,
        Value::Object(map) => map.contains_key("messages") || map.contains_key("history"),
        _ => false,
    };
    // A single pretty-printed entry of a JSONL format is a one-line file.
    let single = if is_chat { None } else { classify(&document) };
    match (format, single) {
        (Some(Format::OPENAI), None) => openai::from_value(&document),
        (None, None) => openai::from_value(&document)
            .map_err(|e| format!("not a known conversation format (tried: {}); {e}", tried())),
        (Some(format), None) => Err(format!(
            "not a {}: the file is one JSON document ({})",
            description(format),
            if is_chat {
                "it looks like an OpenAI chat message array"
            } else {
                "in no known format"
            }
        )),
        (format, Some(detected)) => {
            let format = format.unwrap_or(detected);
            let line = Line {
                number: 1,
                value: Ok(document),
            };
            let lines = [line];
            match format {
                Format::COMPACTD => {
                    let text = serde_json::to_vec(lines[0].value.as_ref().expect("parsed"))
                        .expect("JSON serializes");
                    Ok(compactd_log(&text))
                }
                Format::OPENAI => openai::from_value(lines[0].value.as_ref().expect("parsed")),
                other => Ok(agent_of(other)?.import(&lines)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each agent's lines are told apart in its module's tests.
    #[test]
    fn detects_its_own_log_from_one_line() {
        let line = r#"{"type":"header","version":1,"sessionId":"s","createdAt":0}"#;
        let value: Value = serde_json::from_str(line).unwrap();
        assert_eq!(classify(&value), Some(Format::COMPACTD));
        let names: Vec<&str> = formats().into_iter().map(Format::name).collect();
        assert_eq!(names.first(), Some(&"compactd"));
        assert_eq!(names.last(), Some(&"openai"));
        for name in names {
            assert_eq!(parse_name(name).map(Format::name), Some(name));
        }
    }

    #[test]
    fn unknown_formats_name_what_was_tried() {
        let err = parse(b"{\"type\":\"wat\"}\n{\"type\":\"wat\"}\n", None).unwrap_err();
        assert!(err.contains("tried: compactd session JSONL, "), "{err}");
        assert!(err.contains("type `wat`"), "{err}");
        assert_eq!(parse(b"  \n", None).unwrap_err(), "the file is empty");
        assert!(parse(&[0u8, 1, 2, 0xff], None)
            .unwrap_err()
            .contains("binary"));
    }

    #[test]
    fn skips_group_by_kind() {
        let mut skips = Skips::default();
        skips.add(3, "file-history-snapshot lines", None);
        skips.add(9, "file-history-snapshot lines", None);
        skips.add(4, "unreadable lines", Some("invalid JSON".into()));
        assert_eq!(skips.total(), 3);
        assert_eq!(
            skips.reasons(),
            [
                "file-history-snapshot lines: 2 (first at line 3)",
                "unreadable lines: 1 (first at line 4: invalid JSON)"
            ]
        );
    }
}
