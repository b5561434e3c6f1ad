//! Keeps an API key out of text that may have echoed it: provider error
//! bodies, stream error events, connection errors and summaries. Whatever
//! leaves a summarizer (an error, a log line, a progress report, a summary)
//! goes through `Redactor` before it is shortened, so a cut never splits a
//! key into a part that no longer matches it.
//!
//! Redacted: the whole key; any run of at least `MIN_PIECE` characters that
//! occurs in it (providers quote keys in part, "sk-proj-…abcd", and a text
//! someone else cut may hold only its start); and, at the end of a text
//! that was cut before it got here, any prefix of it.

/// What a redacted key becomes.
pub const REDACTED: &str = "[redacted]";
/// The shortest run of a key's characters treated as a piece of it. Eight
/// random characters never occur in ordinary text by chance; fewer would
/// redact words that merely share a few letters with the key.
pub const MIN_PIECE: usize = 8;

/// Redacts one key (or nothing, when no key is in use).
#[derive(Debug, Clone, Copy, Default)]
pub struct Redactor<'a> {
    key: Option<&'a str>,
}

impl<'a> Redactor<'a> {
    pub fn new(key: Option<&'a str>) -> Redactor<'a> {
        Redactor {
            key: key.filter(|k| !k.is_empty()),
        }
    }

    /// `text` with the key and every piece of it replaced.
    pub fn text(&self, text: &str) -> String {
        match self.key {
            Some(key) => replace_pieces(text, key, false),
            None => text.to_string(),
        }
    }

    /// `text` that was cut short before it got here: a prefix of the key at
    /// its very end, however short, is replaced too.
    pub fn cut_text(&self, text: &str) -> String {
        match self.key {
            Some(key) => replace_pieces(text, key, true),
            None => text.to_string(),
        }
    }

    /// Redacts, then clips to `max` characters (with `…` when clipped).
    /// Only the part that can show is redacted: the first `max` characters
    /// and a key's length beyond them, where a key shown in part ends.
    pub fn clip(&self, text: &str, max: usize) -> String {
        let window = max + self.key.map_or(0, |k| k.chars().count());
        match text.char_indices().nth(window) {
            None => clip(&self.text(text), max),
            Some((end, _)) => {
                let head = clip(&self.cut_text(&text[..end]), max);
                if head.ends_with('…') {
                    head
                } else {
                    format!("{head}…")
                }
            }
        }
    }

    /// Whether `text` holds the key or a piece of it.
    pub fn finds(&self, text: &str) -> bool {
        self.key.is_some() && self.text(text) != text
    }
}

/// At most `max` characters of `text`, with `…` when it was longer; a
/// `[redacted]` marker the cut would split is kept whole, so the reader
/// sees that a key was there.
pub fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut end = text.char_indices().nth(max).map_or(text.len(), |(i, _)| i);
    if let Some(start) = (end.saturating_sub(REDACTED.len() - 1)..end)
        .find(|&i| text.is_char_boundary(i) && text[i..].starts_with(REDACTED))
    {
        end = start + REDACTED.len();
    }
    if end == text.len() {
        return text.to_string();
    }
    format!("{}…", &text[..end])
}

/// Replaces, left to right, every longest run of `text` that occurs in
/// `key` and is at least `MIN_PIECE` characters long (or the whole key, for
/// a shorter key); with `cut_end`, also a prefix of `key` ending `text`.
fn replace_pieces(text: &str, key: &str, cut_end: bool) -> String {
    let key: Vec<char> = key.chars().collect();
    let chars: Vec<char> = text.chars().collect();
    let min = MIN_PIECE.min(key.len());
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let rest = &chars[i..];
        let run = longest_run_in(rest, &key);
        let at_cut_end = cut_end && rest.len() < min && key.starts_with(rest);
        if run >= min || at_cut_end {
            out.push_str(REDACTED);
            i += run.max(if at_cut_end { rest.len() } else { 0 });
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    out
}

/// The length of the longest prefix of `text` that occurs somewhere in `key`.
fn longest_run_in(text: &[char], key: &[char]) -> usize {
    let mut best = 0;
    for start in 0..key.len() {
        if key.len() - start <= best || best == text.len() {
            break; // nothing later in the key can match longer
        }
        let run = key[start..]
            .iter()
            .zip(text)
            .take_while(|(k, t)| k == t)
            .count();
        best = best.max(run);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "sk-proj-AbCdEf0123456789SECRET";

    fn check(text: &str, cut: bool, expected: &str) {
        let redactor = Redactor::new(Some(KEY));
        let got = if cut {
            redactor.cut_text(text)
        } else {
            redactor.text(text)
        };
        assert_eq!(got, expected, "{text:?} (cut: {cut})");
    }

    #[test]
    fn keys_and_pieces_of_them_are_redacted() {
        check(
            &format!("bad key {KEY} given"),
            false,
            "bad key [redacted] given",
        );
        check(&format!("{KEY}{KEY}"), false, "[redacted][redacted]");
        // Providers quote the start and the end of a key.
        check(
            "Incorrect API key provided: sk-proj-****CRET.",
            false,
            "Incorrect API key provided: [redacted]****CRET.",
        );
        check(
            "key ending 0123456789SECRET",
            false,
            "key ending [redacted]",
        );
        // Short runs of the key's characters are ordinary text.
        check(
            "sk-proj is a prefix; 0123 too",
            false,
            "sk-proj is a prefix; 0123 too",
        );
        check("", false, "");
    }

    #[test]
    fn a_key_prefix_at_a_cut_end_is_redacted() {
        check(
            "the body ended with sk-pr",
            true,
            "the body ended with [redacted]",
        );
        check(
            "the body ended with sk-proj-AbC",
            true,
            "the body ended with [redacted]",
        );
        check(
            "the body ended with s",
            true,
            "the body ended with [redacted]",
        );
        // Not at a cut, a short prefix is ordinary text.
        check(
            "the body ended with sk-pr",
            false,
            "the body ended with sk-pr",
        );
        check(
            "the body ended with SECRET",
            true,
            "the body ended with SECRET",
        );
    }

    #[test]
    fn redacting_before_clipping_never_leaves_a_piece() {
        let redactor = Redactor::new(Some(KEY));
        for cut in 0..80 {
            let text = format!("{}{KEY} and more", "x".repeat(cut));
            let clipped = redactor.clip(&text, 40);
            assert!(!clipped.contains("sk-p"), "{clipped}");
        }
    }

    #[test]
    fn clipping_a_long_text_redacts_only_what_shows() {
        let redactor = Redactor::new(Some(KEY));
        let long = format!("{}{KEY}{}", "x".repeat(95), "y".repeat(1_000_000));
        assert_eq!(
            redactor.clip(&long, 100),
            format!("{}[redacted]…", "x".repeat(95))
        );
        let long = format!("{KEY}{}", "y".repeat(100));
        assert_eq!(
            redactor.clip(&long, 40),
            format!("[redacted]{}…", "y".repeat(30))
        );
        // Redacting can make the head shorter than `max`: still marked cut.
        let long = format!("{KEY}{KEY}{}", "y".repeat(100));
        assert_eq!(
            redactor.clip(&long, 40),
            format!("[redacted][redacted]{}…", "y".repeat(10))
        );
        assert_eq!(redactor.clip("short", 40), "short");
    }

    #[test]
    fn clipping_keeps_a_redaction_marker_whole() {
        assert_eq!(clip("abc[redacted] def", 5), "abc[redacted]…");
        assert_eq!(clip("abc[redacted]", 5), "abc[redacted]");
        assert_eq!(clip("abc[redacted] def", 3), "abc…");
        assert_eq!(clip("abcdef", 3), "abc…");
        assert_eq!(clip("äöü", 2), "äö…");
    }

    #[test]
    fn finds_reports_pieces_and_no_key_redacts_nothing() {
        let redactor = Redactor::new(Some(KEY));
        assert!(redactor.finds(&format!("http://h/v1?k={KEY}")));
        assert!(redactor.finds("AbCdEf0123"));
        assert!(!redactor.finds("http://127.0.0.1:8765/v1"));
        assert_eq!(Redactor::new(None).text(KEY), KEY);
        assert_eq!(Redactor::new(Some("")).text(KEY), KEY);
        assert!(!Redactor::new(None).finds(KEY));
    }

    #[test]
    fn a_short_key_is_redacted_whole_only() {
        let redactor = Redactor::new(Some("abc"));
        assert_eq!(redactor.text("xabcx ab"), "x[redacted]x ab");
        assert_eq!(redactor.cut_text("xabcx ab"), "x[redacted]x [redacted]");
    }
}
