//! Counting o200k text as `bpe_openai` does, faster: its count is the sum
//! of the byte-pair counts of the pieces its pre-tokenization regex cuts
//! the text into. Here a piece of ASCII text is cut by hand (the regex's
//! rules for ASCII, below), any piece whose bounds depend on a character
//! beyond ASCII is cut by the regex itself, and the count of each short
//! piece is remembered (a thread's last 64k of them): a coding session
//! says the same identifiers, words and indentation over and over. The
//! figures are the vocabulary's, to the token (the tests hold this against
//! the regex and the counts of whole texts).
//!
//! The regex (o200k, leftmost-first, anchored where the last piece ended):
//! 1. `[^\r\n\p{L}\p{N}]?[\p{Lu}…]*[\p{Ll}…]+('s|'t|'re|'ve|'m|'ll|'d)?`,
//!    then the same with `[\p{Lu}…]+[\p{Ll}…]*`: in ASCII, one optional
//!    character that is no letter, digit or line break, the run of upper
//!    case letters, the run of lower case ones, a contraction (any case);
//! 2. `\p{N}{1,3}`: up to three digits;
//! 3. ` ?[^\s\p{L}\p{N}]+[\r\n/]*`: an optional space, the run of other
//!    characters, then the run of line breaks and slashes;
//! 4. `\s*[\r\n]+`: a run of white space up to its last line break;
//! 5. `\s+$`: white space to the end of the text;
//! 6. `\s+\s` less its last character, else `\s+`: white space, all but
//!    its last character when there are two or more.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use bpe_openai::Tokenizer;

/// Pieces of at most this many bytes have their counts remembered (the
/// piece and its length make one 128-bit key).
const CACHED_LENGTH: usize = 15;
/// How many counts of longer pieces a thread remembers before it starts
/// over.
const CACHED_PIECES: usize = 1 << 16;
/// Short pieces (most of them) are remembered in a table of this many
/// slots, each one word: the piece's bytes, its length and its count.
const SHORT_SLOTS: usize = 1 << 16;
const SHORT_LENGTH: usize = 7;
/// Slots looked at for a short piece: past them it replaces the first.
const PROBES: usize = 8;

struct Counts {
    short: Vec<u64>,
    long: HashMap<u128, u32, BuildHasherDefault<PieceHasher>>,
}

thread_local! {
    static COUNTS: RefCell<Counts> = RefCell::new(Counts {
        short: vec![0; SHORT_SLOTS],
        long: HashMap::default(),
    });
}

/// `tokenizer.count(text)`, for o200k's tokenizer.
pub(super) fn count(tokenizer: &Tokenizer, text: &str) -> u64 {
    let bytes = text.as_bytes();
    COUNTS.with_borrow_mut(|counts| {
        let mut total = 0u64;
        let mut start = 0;
        while start < bytes.len() {
            let end = match ascii_piece(bytes, start) {
                Some(end) => end,
                None => start + regex_piece(tokenizer, &text[start..]),
            };
            total += piece_count(counts, tokenizer, bytes, start..end);
            start = end;
        }
        total
    })
}

/// The length of the regex's first piece of `text` (not empty).
fn regex_piece(tokenizer: &Tokenizer, text: &str) -> usize {
    tokenizer
        .split(text)
        .next()
        .map_or(text.len(), str::len)
        .max(1)
}

/// The count of the piece `at` in `text`.
fn piece_count(
    counts: &mut Counts,
    tokenizer: &Tokenizer,
    text: &[u8],
    at: std::ops::Range<usize>,
) -> u64 {
    let piece = &text[at.clone()];
    // Every byte is a token of its own.
    if piece.len() == 1 {
        return 1;
    }
    if piece.len() <= SHORT_LENGTH {
        // Its bytes read as one word (the bytes after it masked off).
        let bytes = match text.get(at.start..at.start + 8) {
            Some(eight) => u64::from_le_bytes(eight.try_into().expect("8 bytes")),
            None => piece.iter().rev().fold(0, |word, b| word << 8 | *b as u64),
        };
        let bytes = bytes & ((1 << (8 * piece.len())) - 1);
        return short_count(&mut counts.short, tokenizer, piece, bytes);
    }
    if piece.len() > CACHED_LENGTH {
        return tokenizer.bpe.count(piece) as u64;
    }
    let mut key = [0u8; 16];
    key[..piece.len()].copy_from_slice(piece);
    key[15] = piece.len() as u8;
    let key = u128::from_le_bytes(key);
    if let Some(count) = counts.long.get(&key) {
        return *count as u64;
    }
    let count = tokenizer.bpe.count(piece) as u32;
    if counts.long.len() >= CACHED_PIECES {
        counts.long.clear();
    }
    counts.long.insert(key, count);
    count as u64
}

/// A piece of 2 to 7 bytes: 56 bits of bytes, 4 of length, 4 of count.
fn short_count(slots: &mut [u64], tokenizer: &Tokenizer, piece: &[u8], bytes: u64) -> u64 {
    const KEY: u64 = (1 << 60) - 1;
    let key = bytes | (piece.len() as u64) << 56;
    let hash = (key ^ key >> 29).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let first = (hash >> 48) as usize;
    let mut free = first;
    for probe in 0..PROBES {
        let at = (first + probe) % SHORT_SLOTS;
        match slots[at] {
            0 => {
                free = at;
                break;
            }
            slot if slot & KEY == key => return slot >> 60,
            _ => {}
        }
    }
    let count = tokenizer.bpe.count(piece) as u64;
    slots[free] = key | count << 60;
    count
}

fn is_upper(b: u8) -> bool {
    b.is_ascii_uppercase()
}

fn is_lower(b: u8) -> bool {
    b.is_ascii_lowercase()
}

fn is_letter(b: u8) -> bool {
    b.is_ascii_alphabetic()
}

/// `\s` in ASCII: tab, line feed, vertical tab, form feed, carriage
/// return, space.
fn is_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | b' ')
}

fn is_break(b: u8) -> bool {
    matches!(b, b'\n' | b'\r')
}

/// `[^\s\p{L}\p{N}]` in ASCII.
fn is_other(b: u8) -> bool {
    b.is_ascii() && !is_space(b) && !b.is_ascii_alphanumeric()
}

/// `[^\r\n\p{L}\p{N}]` in ASCII: what may come before a word.
fn is_lead(b: u8) -> bool {
    b.is_ascii() && !is_break(b) && !b.is_ascii_alphanumeric()
}

/// Where the piece that starts at `start` ends, when that depends on ASCII
/// characters only; `None` when a character beyond ASCII could change it.
fn ascii_piece(bytes: &[u8], start: usize) -> Option<usize> {
    let first = *bytes.get(start)?;
    if !first.is_ascii() {
        return None;
    }
    let next = bytes.get(start + 1).copied();
    if next.is_some_and(|b| !b.is_ascii()) {
        // A word, a digit, a mark or a space of another script may follow.
        return None;
    }
    if is_letter(first) {
        return word(bytes, start);
    }
    if is_lead(first) && next.is_some_and(is_letter) {
        return word(bytes, start + 1);
    }
    if first.is_ascii_digit() {
        return digits(bytes, start);
    }
    if first == b' ' && next.is_some_and(is_other) {
        return others(bytes, start + 1);
    }
    if is_other(first) {
        return others(bytes, start);
    }
    spaces(bytes, start)
}

/// Upper case letters, lower case letters, a contraction.
fn word(bytes: &[u8], start: usize) -> Option<usize> {
    let mut end = run(bytes, start, is_upper);
    end = run(bytes, end, is_lower);
    match bytes.get(end) {
        Some(b) if !b.is_ascii() => None,
        Some(b'\'') => contraction(bytes, end),
        _ => Some(end),
    }
}

/// `'s|'t|'re|'ve|'m|'ll|'d` in any case after `quote`, or nothing.
fn contraction(bytes: &[u8], quote: usize) -> Option<usize> {
    let lower = |i: usize| bytes.get(i).map(u8::to_ascii_lowercase);
    match lower(quote + 1) {
        // `(?i)s` also matches ſ, beyond ASCII.
        Some(b) if !b.is_ascii() => None,
        Some(b's' | b't' | b'm' | b'd') => Some(quote + 2),
        Some(first @ (b'r' | b'v' | b'l')) => match lower(quote + 2) {
            Some(b) if !b.is_ascii() => None,
            Some(b'e') if first != b'l' => Some(quote + 3),
            Some(b'l') if first == b'l' => Some(quote + 3),
            _ => Some(quote),
        },
        _ => Some(quote),
    }
}

/// Up to three digits.
fn digits(bytes: &[u8], start: usize) -> Option<usize> {
    let mut end = start;
    while end < bytes.len() && end - start < 3 && bytes[end].is_ascii_digit() {
        end += 1;
    }
    match bytes.get(end) {
        // A digit of another script would be taken too.
        Some(b) if end - start < 3 && !b.is_ascii() => None,
        _ => Some(end),
    }
}

/// Other characters, then line breaks and slashes.
fn others(bytes: &[u8], start: usize) -> Option<usize> {
    let end = run(bytes, start, is_other);
    match bytes.get(end) {
        Some(b) if !b.is_ascii() => None,
        _ => Some(run(bytes, end, |b| is_break(b) || b == b'/')),
    }
}

/// White space: up to its last line break; all of it at the end of the
/// text; else all but its last character, or the one.
fn spaces(bytes: &[u8], start: usize) -> Option<usize> {
    let end = run(bytes, start, is_space);
    if bytes.get(end).is_some_and(|b| !b.is_ascii()) {
        // White space of another script would lengthen the run.
        return None;
    }
    if let Some(last) = bytes[start..end].iter().rposition(|b| is_break(*b)) {
        return Some(start + last + 1);
    }
    if end == bytes.len() || end - start == 1 {
        return Some(end);
    }
    Some(end - 1)
}

fn run(bytes: &[u8], start: usize, class: impl Fn(u8) -> bool) -> usize {
    start
        + bytes[start..]
            .iter()
            .position(|b| !class(*b))
            .unwrap_or(bytes.len() - start)
}

/// A multiply-xorshift hash of the 128-bit keys (the standard library's
/// would cost more than the lookup saves).
#[derive(Default)]
struct PieceHasher(u64);

impl Hasher for PieceHasher {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u128(*b as u128);
        }
    }

    fn write_u128(&mut self, n: u128) {
        let h = ((n as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (n >> 64) as u64 ^ self.0)
            .wrapping_mul(0x517c_c1b7_2722_0a95);
        self.0 = h ^ (h >> 29);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn pieces(text: &str) -> Vec<&str> {
        let tokenizer = bpe_openai::o200k_base();
        let bytes = text.as_bytes();
        let mut out = Vec::new();
        let mut start = 0;
        while start < bytes.len() {
            let end = ascii_piece(bytes, start)
                .unwrap_or_else(|| start + regex_piece(tokenizer, &text[start..]));
            out.push(&text[start..end]);
            start = end;
        }
        out
    }

    fn regex_pieces(text: &str) -> Vec<&str> {
        bpe_openai::o200k_base().split(text).collect()
    }

    fn same(text: &str) {
        assert_eq!(pieces(text), regex_pieces(text), "{text:?}");
        let tokenizer = bpe_openai::o200k_base();
        assert_eq!(
            count(tokenizer, text),
            tokenizer.count(text) as u64,
            "{text:?}"
        );
    }

    #[test]
    fn cuts_as_the_regex_cuts() {
        for text in [
            "Hello world, HTTPServer getHTTPResponse DON'T I'm we'REady they'll 'sword",
            "  hello\n\n  there \t\x0bvt\x0cff\r\nx  ",
            "a1234567 12ab (x) ((y)) //z */\n/ - -- ' '' 's 'S 'Ll 'lL 're 'r 'v",
            "fn main() {\n    let x = 1;\n}\n",
            "\u{0}\u{1f}A\u{7f}b  \n",
            "   ",
            " \n",
            "x ",
            "naïve café — ÉTÉ 「日本語」 ٣٤ a\u{a0}b a\u{85}b it'ſ e\u{301} \u{3000}x",
            "1é 12é 123é ' é",
        ] {
            same(text);
        }
    }

    #[test]
    fn every_ascii_byte_is_one_token() {
        let tokenizer = bpe_openai::o200k_base();
        for b in 0u8..128 {
            assert_eq!(tokenizer.bpe.count(&[b]), 1, "{b}");
        }
    }

    #[test]
    fn this_repositorys_text_counts_the_same() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        for dir in ["src/tokens", "src/transcript", "docs"] {
            for entry in std::fs::read_dir(root.join(dir)).unwrap().flatten() {
                let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
                same(&text);
            }
        }
    }

    fn tricky() -> impl Strategy<Value = String> {
        let alphabet: Vec<char> = "aZz Ab'sStTrReEvVlLmMdD09 \t\n\r\x0b\x0c/.,;-_(){}\"#\u{0}é\u{a0}\u{85}\u{301}日٣ſ\u{3000}"
            .chars()
            .collect();
        proptest::collection::vec(proptest::sample::select(alphabet), 0..40)
            .prop_map(|chars| chars.into_iter().collect())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn any_text_cuts_as_the_regex_cuts(text in tricky()) {
            same(&text);
        }
    }
}
