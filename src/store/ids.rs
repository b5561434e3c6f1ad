//! Session ids become file names (`<id>.jsonl`, `<id>.lock`) on every
//! platform compactd runs on, so only a conservative alphabet is accepted,
//! and names Windows reserves are refused too.

use super::StoreError;

pub const MAX_ID_LEN: usize = 128;

/// How much of a rejected id an error message repeats.
const SHOWN_ID_CHARS: usize = 64;

/// Device names Windows resolves in every directory, whatever the extension
/// (`con.jsonl` is the console). `com0` and `lpt0` are listed by Microsoft's
/// naming rules as well.
const WINDOWS_DEVICES: &[&str] = &[
    "con", "prn", "aux", "nul", "com0", "com1", "com2", "com3", "com4", "com5", "com6", "com7",
    "com8", "com9", "lpt0", "lpt1", "lpt2", "lpt3", "lpt4", "lpt5", "lpt6", "lpt7", "lpt8", "lpt9",
];

/// Accepts `[A-Za-z0-9][A-Za-z0-9._-]{0,127}` without `..`, without a
/// trailing `.` (Windows drops it, so two ids would share a file) and
/// without a Windows device name before the first `.`.
pub fn validate_session_id(id: &str) -> Result<(), StoreError> {
    match id_problem(id) {
        None => Ok(()),
        Some(why) => Err(StoreError::InvalidId {
            shown: shown_id(id),
            why,
        }),
    }
}

fn id_problem(id: &str) -> Option<&'static str> {
    let stem = id.split('.').next().unwrap_or_default();
    if id.is_empty() {
        Some("it is empty")
    } else if id.len() > MAX_ID_LEN {
        Some("it is longer than 128 characters")
    } else if !id.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        Some("it must start with a letter or digit")
    } else if !id
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    {
        Some("only letters, digits, '.', '_' and '-' are allowed")
    } else if id.contains("..") {
        Some("it must not contain `..`")
    } else if id.ends_with('.') {
        Some("it must not end with '.'")
    } else if WINDOWS_DEVICES.contains(&stem.to_ascii_lowercase().as_str()) {
        Some("it is a device name on Windows")
    } else {
        None
    }
}

/// A session id as error messages show it: escaped, and cut to its first
/// 64 characters with its length when longer, so a client that sent a huge
/// id does not get it back.
pub fn shown_id(id: &str) -> String {
    let chars = id.chars().count();
    if chars <= SHOWN_ID_CHARS {
        return id.escape_debug().to_string();
    }
    let head: String = id.chars().take(SHOWN_ID_CHARS).collect();
    format!("{}… ({} bytes)", head.escape_debug(), id.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Some(fragment)`: rejected with a message containing it.
    fn check(id: &str, expected: Option<&str>) {
        match (validate_session_id(id), expected) {
            (Ok(()), None) => {}
            (Err(e), Some(fragment)) => {
                let message = e.to_string();
                assert!(message.contains(fragment), "{id:?}: {message}");
                assert!(message.len() < 400, "{id:?}: message too long");
            }
            (result, _) => panic!("{id:?}: got {result:?}, expected {expected:?}"),
        }
    }

    #[test]
    fn session_ids_are_portable_file_names() {
        let long = "x".repeat(129);
        let cases: &[(&str, Option<&str>)] = &[
            ("abc", None),
            ("0f9e-11", None),
            ("my_session.2", None),
            (&"x".repeat(128), None),
            ("console", None),
            ("com10", None),
            ("lpt", None),
            ("xcon", None),
            ("con-1", None),
            ("", Some("empty")),
            ("../x", Some("start with")),
            ("a/b", Some("only letters")),
            ("a\\b", Some("only letters")),
            (".hidden", Some("start with")),
            ("a..b", Some("`..`")),
            ("-x", Some("start with")),
            (&long, Some("longer than 128")),
            ("a b", Some("only letters")),
            ("a\nb", Some("a\\nb")),
            ("session.", Some("end with '.'")),
            ("con", Some("device name")),
            ("CON", Some("device name")),
            ("nul", Some("device name")),
            ("Prn", Some("device name")),
            ("aux", Some("device name")),
            ("con.txt", Some("device name")),
            ("NUL.tar.gz", Some("device name")),
            ("com1", Some("device name")),
            ("COM9", Some("device name")),
            ("com0", Some("device name")),
            ("lpt1", Some("device name")),
            ("LpT9.log", Some("device name")),
        ];
        for (id, expected) in cases {
            check(id, *expected);
        }
    }

    #[test]
    fn a_huge_id_is_not_echoed_in_full() {
        let huge = "é".repeat(50_000);
        let message = validate_session_id(&huge).unwrap_err().to_string();
        assert!(message.contains("(100000 bytes)"), "{message}");
        assert!(message.chars().count() < 400, "{message}");
        assert_eq!(shown_id("short"), "short");
    }
}
