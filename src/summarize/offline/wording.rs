//! How the digest words what it quotes: requests as one line, text
//! clipped at a word boundary, the line of an output that says what went
//! wrong. Used by `extract.rs` as it reads messages and by `digest.rs` as
//! it merges and shrinks.

use crate::conversation::request::{collapse, strip_ansi, typed_text};
use crate::conversation::rules::sentences;

/// Characters of a later request (its beginning and its end), of an
/// error line.
const REQUEST_CHARS: usize = 200;
const LINE_CHARS: usize = 160;

/// A request worth listing: five words or more, and not a short question
/// ("continue", "ok", "yes, do it" and "why?" are counted, not listed).
pub fn substantial(request: &str) -> bool {
    let typed = typed_part(request);
    let words = typed.split_whitespace().count();
    // A question about something pasted ("this is the console: […] why
    // did it fail?") has its subject: it is a request, not small talk.
    let pasted = typed.contains("[…]");
    words >= 5 && (words >= 15 || pasted || !typed.trim_end().ends_with('?'))
}

/// A later request as one line: what the person typed, without what they
/// pasted after it, clipped at both ends (`clip_ends`).
pub fn request_line(request: &str) -> String {
    clip_ends(&typed_part(request), REQUEST_CHARS)
}

/// `text` in at most about `chars` characters, keeping its beginning and
/// its last sentences: people paste a log, a diff or a review and write
/// what they want at the end ("… make a plan to fix that path only for the
/// nightly builds"), so cutting only the tail would lose the request.
pub fn clip_ends(text: &str, chars: usize) -> String {
    let text = collapse(text);
    if text.chars().count() <= chars {
        return clip_collapsed(text, chars);
    }
    // The ending in two fifths of the budget, the beginning in the rest:
    // within `chars` in all, so clipping the result again changes nothing.
    let tail_budget = chars * 2 / 5;
    let mut tail = String::new();
    for sentence in sentences(&text).iter().rev() {
        let longer = match tail.is_empty() {
            true => sentence.to_string(),
            false => format!("{sentence} {tail}"),
        };
        if longer.chars().count() > tail_budget {
            break;
        }
        tail = longer;
    }
    if tail.is_empty() {
        // One long last sentence: its last words (all but the first word
        // of the text), read from the end.
        let mut words = text.split(' ');
        words.next();
        let mut kept = 0;
        let mut start = text.len();
        for word in words.rev() {
            let longer = kept + usize::from(kept > 0) + word.chars().count();
            if longer > tail_budget {
                break;
            }
            kept = longer;
            start -= word.len() + usize::from(start < text.len());
        }
        tail = text[start..].to_string();
    }
    let head = clip_collapsed(text, chars.saturating_sub(tail.chars().count() + 2));
    format!("{head} {tail}")
}

/// The part of a request the person typed (see `request::typed_text`); for
/// a request that is all pasted output, the line of it that says what
/// went wrong.
pub fn typed_part(request: &str) -> String {
    typed_text(request).unwrap_or_else(|| format!("[pasted output] {}", error_line(request)))
}

/// Whitespace collapsed, cut at a word boundary to at most `chars`
/// characters (with "…"), never inside a code span (a span the text
/// itself leaves open is cut off too).
pub fn clip(text: &str, chars: usize) -> String {
    clip_collapsed(collapse(text), chars)
}

/// `clip` of a text already collapsed.
fn clip_collapsed(text: String, chars: usize) -> String {
    if text.chars().count() <= chars {
        if text.matches('`').count() % 2 == 1 {
            let open = text.rfind('`').unwrap_or(0);
            return format!("{}…", text[..open].trim_end());
        }
        return text;
    }
    let end = text
        .char_indices()
        .nth(chars)
        .map(|(i, _)| i)
        .unwrap_or(text.len());
    let mut cut = &text[..text[..end].rfind(' ').unwrap_or(end)];
    if cut.matches('`').count() % 2 == 1 {
        cut = &cut[..cut.rfind('`').unwrap_or(0)];
    }
    let cut = cut.trim_end_matches([' ', ',', ';', ':', '(', '-']);
    format!("{cut}…")
}

/// The line of a failed tool's output that says what went wrong: the
/// first that names an error (not a lead-in ending with ":"), the
/// exception at the end of a Python traceback, else the first line.
pub fn error_line(text: &str) -> String {
    const SIGNS: [&str; 13] = [
        "error",
        "failed",
        "failure",
        "exception",
        "not found",
        "no such file",
        "cannot",
        "could not",
        "denied",
        "invalid",
        "panic",
        "traceback",
        "aborted",
    ];
    // The whole output: the line that matters may sit in the middle that
    // `maxToolOutputChars` would clip away.
    let text = strip_ansi(text)
        .replace("<tool_use_error>", "")
        .replace("</tool_use_error>", "");
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && l.chars().count() <= 240 && !passed(l))
        .collect();
    let exception = |l: &&&str| {
        let head = l.split(':').next().unwrap_or("");
        !head.contains(' ') && (head.ends_with("Error") || head.ends_with("Exception"))
    };
    let traceback = lines.iter().any(|l| l.starts_with("Traceback"));
    let named = lines.iter().find(|l| {
        let lower = l.to_lowercase();
        !lower.starts_with("command exited with code")
            && !lower.starts_with("traceback")
            && !l.ends_with(':')
            && SIGNS.iter().any(|s| lower.contains(s))
    });
    // Without a line naming the error, the last line (a test runner's
    // tally, an exit status) says most.
    let line = traceback
        .then(|| lines.iter().rev().find(exception))
        .flatten()
        .or(named)
        .or(lines.last())
        .copied()
        .unwrap_or("(no output)");
    clip(line.trim_matches(['=', '-', ' ']), LINE_CHARS)
}

/// A test runner's line for a test that passed (`test_errors.py::test_y
/// PASSED [17%]`, `test parse_error ... ok`): it names no failure, whatever
/// the test is called.
fn passed(line: &str) -> bool {
    line.contains(" PASSED") || line.ends_with(" ... ok") || line.starts_with("ok ")
}

/// The failure a test run reports: the line naming the failing test
/// (pytest's `FAILED tests/x.py::test_x - assert …` summary, a `test_x
/// FAILED` progress line, cargo's `test x ... FAILED`, a tally such as "2
/// failed"), with the assertion that failed when the output shows it
/// (`E   assert '1.0.0' == '2.0.0'`, a panic's message). `None` when no
/// test failed.
pub fn test_failure(output: &str) -> Option<String> {
    let output = strip_ansi(output);
    let lines: Vec<&str> = output.lines().map(str::trim).collect();
    let failed = |line: &&str| {
        let words: Vec<&str> = line.split_whitespace().collect();
        words.contains(&"FAILED")
            || words.windows(2).any(|w| {
                w[1].trim_matches(|c: char| !c.is_alphanumeric()) == "failed"
                    && w[0].parse::<u32>().is_ok_and(|n| n > 0)
            })
    };
    // pytest's short summary names the test and the assertion on one line.
    if let Some(summary) = lines
        .iter()
        .find(|l| l.starts_with("FAILED ") && l.contains(" - "))
    {
        return Some(clip(summary, LINE_CHARS));
    }
    let named = lines
        .iter()
        .find(|l| failed(l) && !l.starts_with("test result") && !l.contains("passed"))
        .or_else(|| lines.iter().find(|l| failed(l)))?;
    let assertion = lines
        .iter()
        .find(|l| l.starts_with("E ") || l.contains("panicked at") || l.starts_with("assertion"));
    Some(match assertion {
        Some(assertion) => clip(
            &format!("{named} … {}", assertion.trim_start_matches("E ").trim()),
            LINE_CHARS,
        ),
        None => clip(named, LINE_CHARS),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clipping_both_ends_fits_and_is_done_once() {
        let text = "OK, so this was just so you know what there is now, but after more than a decade I want to pick it up again and fix the broken APIs. Also, I deleted config.ru, as a first step let's figure out what would be the simplest way to serve it up on localhost (as I believe running off file:// has some limitations)";
        let once = clip_ends(text, 200);
        assert!(once.chars().count() <= 200, "{once}");
        assert!(once.starts_with("OK, so this was just so you know what there is now, but after more than a decade I want to pick it up"), "{once}");
        assert!(once.ends_with("has some limitations)"), "{once}");
        assert_eq!(clip_ends(&once, 200), once, "a second pass changes nothing");
        assert_eq!(clip_ends("short enough", 200), "short enough");
    }
}
