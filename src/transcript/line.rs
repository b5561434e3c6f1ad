//! A JSONL transcript's lines, each parsed or said why not.

use serde_json::Value;

/// One line of a JSONL text: its 1-based number and its JSON, or why it
/// could not be read.
pub(crate) fn parse_line(number: usize, bytes: &[u8]) -> Line {
    Line {
        number,
        value: match std::str::from_utf8(bytes) {
            Err(_) => Err("not UTF-8 text".to_string()),
            Ok(text) => {
                serde_json::from_str::<Value>(text).map_err(|e| format!("invalid JSON ({e})"))
            }
        },
    }
}

/// One line of a JSONL file: its 1-based number and its JSON, or why it
/// could not be read.
pub struct Line {
    pub number: usize,
    pub value: Result<Value, String>,
}

/// The non-blank lines of a JSONL text, each parsed (a last line without
/// its newline that does not parse is said to be torn).
pub(crate) fn split_lines(bytes: &[u8]) -> Vec<Line> {
    let torn_tail = !bytes.ends_with(b"\n");
    // The text between newlines, found with `memchr` (as `split` would
    // cut it, the part after the last newline included).
    let mut raw: Vec<&[u8]> = Vec::new();
    let mut start = 0;
    for end in memchr::memchr_iter(b'\n', bytes) {
        raw.push(&bytes[start..end]);
        start = end + 1;
    }
    raw.push(&bytes[start..]);
    let last = raw.len().saturating_sub(1);
    let parse = |from: usize, raw: &[&[u8]]| -> Vec<Line> {
        raw.iter()
            .enumerate()
            .map(|(i, line)| (from + i, line))
            .filter(|(_, line)| !line.iter().all(u8::is_ascii_whitespace))
            .map(|(index, line)| Line {
                number: index + 1,
                value: match std::str::from_utf8(line) {
                    Err(_) => Err("not UTF-8 text".to_string()),
                    Ok(text) => serde_json::from_str::<Value>(text).map_err(|e| {
                        if index == last && torn_tail {
                            format!("torn last line ({e})")
                        } else {
                            format!("invalid JSON ({e})")
                        }
                    }),
                },
            })
            .collect()
    };
    if bytes.len() < PARALLEL {
        return parse(0, &raw);
    }
    // Parsing is most of a large import: the second half on another core.
    let half = raw.len() / 2;
    let (first, second) = raw.split_at(half);
    let (mut lines, rest) = std::thread::scope(|scope| {
        let second = scope.spawn(|| parse(half, second));
        let first = parse(0, first);
        (first, second.join().expect("parsing does not panic"))
    });
    lines.extend(rest);
    lines
}

/// A text at least this long is parsed on two threads.
const PARALLEL: usize = 4 << 20;
