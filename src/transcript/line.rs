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
    let text = Text::of(bytes);
    if bytes.len() < PARALLEL {
        return text.parse(0..text.raw.len());
    }
    // Parsing is most of a large import: the second half on another core.
    let half = text.raw.len() / 2;
    let (mut lines, rest) = std::thread::scope(|scope| {
        let second = scope.spawn(|| text.parse(half..text.raw.len()));
        let first = text.parse(0..half);
        (first, second.join().expect("parsing does not panic"))
    });
    lines.extend(rest);
    lines
}

/// The lines `split_lines` gives, handed to `each` in order a batch at a
/// time: a long text is parsed on a second thread while `each` reads the
/// batches parsed before, and only the batches between the two are held
/// (`split_lines` holds every line's JSON at once: a few times the file).
pub(crate) fn each_batch(bytes: &[u8], mut each: impl FnMut(&[Line])) {
    let text = Text::of(bytes);
    let count = text.raw.len();
    if bytes.len() < PARALLEL {
        return each(&text.parse(0..count));
    }
    let (send, receive) = std::sync::mpsc::sync_channel::<Vec<Line>>(4);
    // Batches come back read, to be freed on the thread that allocated
    // them (freeing across threads contends for malloc's arena lock).
    let (give_back, given_back) = std::sync::mpsc::channel::<Vec<Line>>();
    std::thread::scope(|scope| {
        let text = &text;
        scope.spawn(move || {
            for start in (0..count).step_by(BATCH) {
                let batch = text.parse(start..count.min(start + BATCH));
                if send.send(batch).is_err() {
                    return;
                }
                given_back.try_iter().for_each(drop);
            }
        });
        for batch in receive {
            each(&batch);
            let _ = give_back.send(batch);
        }
    });
}

/// A JSONL text cut at its newlines (`memchr`), as `split` would cut it,
/// the part after the last newline included.
struct Text<'a> {
    raw: Vec<&'a [u8]>,
    torn_tail: bool,
}

impl<'a> Text<'a> {
    fn of(bytes: &'a [u8]) -> Text<'a> {
        let mut raw: Vec<&[u8]> = Vec::new();
        let mut start = 0;
        for end in memchr::memchr_iter(b'\n', bytes) {
            raw.push(&bytes[start..end]);
            start = end + 1;
        }
        raw.push(&bytes[start..]);
        Text {
            raw,
            torn_tail: !bytes.ends_with(b"\n"),
        }
    }

    /// The non-blank lines among `range`, parsed.
    fn parse(&self, range: std::ops::Range<usize>) -> Vec<Line> {
        let last = self.raw.len().saturating_sub(1);
        self.raw[range.clone()]
            .iter()
            .zip(range)
            .filter(|(line, _)| !line.iter().all(u8::is_ascii_whitespace))
            .map(|(line, index)| Line {
                number: index + 1,
                value: match std::str::from_utf8(line) {
                    Err(_) => Err("not UTF-8 text".to_string()),
                    Ok(text) => serde_json::from_str::<Value>(text).map_err(|e| {
                        if index == last && self.torn_tail {
                            format!("torn last line ({e})")
                        } else {
                            format!("invalid JSON ({e})")
                        }
                    }),
                },
            })
            .collect()
    }
}

/// A text at least this long is parsed on two threads.
const PARALLEL: usize = 4 << 20;
/// Lines handed over at a time by `each_batch`.
const BATCH: usize = 256;

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines as `(number, JSON or why not)`, to compare.
    fn seen(lines: &[Line]) -> Vec<(usize, Result<Value, String>)> {
        lines.iter().map(|l| (l.number, l.value.clone())).collect()
    }

    /// `each_batch` hands over what `split_lines` gives, in order, a
    /// batch at a time: blank lines left out, bad lines said why, a torn
    /// last line said to be torn; on one thread and on two.
    #[test]
    fn batches_are_the_lines_split_lines_gives() {
        for lines in [10usize, 120_000] {
            let mut text = Vec::new();
            for n in 0..lines {
                match n % 7 {
                    3 => text.extend_from_slice(b"   \n"),
                    5 => text.extend_from_slice(b"{\"bad\n"),
                    6 => text.extend_from_slice(b"\xff\xfe\n"),
                    _ => text.extend_from_slice(
                        format!("{{\"n\":{n},\"pad\":\"{}\"}}\n", "x".repeat(60)).as_bytes(),
                    ),
                }
            }
            text.extend_from_slice(b"{\"torn\":");
            assert_eq!(text.len() >= PARALLEL, lines > 10);
            let whole = split_lines(&text);
            let mut batched = Vec::new();
            let mut batches = 0;
            each_batch(&text, |batch| {
                batches += 1;
                batched.extend(seen(batch));
            });
            assert_eq!(batched, seen(&whole));
            assert!(batches > 1 || lines == 10, "{batches} batches");
            let torn = &whole.last().unwrap().value;
            assert!(
                matches!(torn, Err(e) if e.starts_with("torn last line")),
                "{torn:?}"
            );
        }
    }
}
