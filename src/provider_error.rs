//! Classifies a provider's error: did the request overflow the model's
//! context window, hit a rate limit, ask for more output than the model
//! allows, or fail otherwise? Pure. Used for errors that clients report
//! (`conversation/reportError`) and for errors from our own summarizers, so
//! both sides agree on what an overflow is.
//!
//! Providers word overflows in many ways, so an overflow is recognised by
//! its structure rather than by a list of phrases: a statement that the
//! request's input (prompt, input, messages, request) measured in tokens or
//! length exceeds a maximum, limit or context length/window, in any order,
//! numbers optional ("The input (61709 tokens) is longer than the model's
//! context length", "Your request exceeded model token limit"). The parts
//! are the word lists below. Rate limits are recognised first (several
//! carry overflow-like wording: "Request too large … tokens per minute"),
//! and a message whose subject is the output (`max_tokens` is too large)
//! is an output cap, not an overflow. The status decides only when the
//! body says nothing: 413 is an overflow, 429 and 529 a rate limit.

/// What kind of error a provider reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The input did not fit the model's context window: compact, then retry.
    Overflow,
    /// Too many requests or tokens per minute (or the provider is
    /// overloaded): wait, then retry unchanged.
    RateLimit,
    /// The requested output (`max_tokens`) exceeds what the model allows:
    /// compacting does not help.
    OutputLimit,
    Other,
}

/// Terms are word sequences matched on word boundaries; a trailing `*`
/// matches any word with that prefix.
type Terms = &'static [&'static str];

/// Waiting helps: rate limits, throttling, overload.
const RATE_LIMIT: Terms = &[
    "rate limit*",
    "ratelimit*",
    "too many requests",
    "per min*",
    "per day",
    "per hour",
    "overloaded",
    "resource exhausted",
    "resource has been exhausted",
    "throttl*",
    "wait before trying again",
];

/// Waiting does not help a quota (sent as 429).
const QUOTA: Terms = &["insufficient quota", "exceeded your current quota"];

/// Words that name the error's category, not what was measured: removed
/// before matching ("Input validation error: `max_new_tokens` must be …").
const NEUTRAL: Terms = &[
    "input validation error",
    "bad request",
    "invalid request",
    "request id",
];

/// What is measured: the request's own input.
const INPUT: Terms = &["prompt*", "input*", "request", "messages"];

/// A limit that can only be the context window; it implies the input.
const CONTEXT_LIMIT: Terms = &[
    "context length",
    "context window",
    "context size",
    "context limit",
    "max model len",
    "max seq len",
    "n ctx",
    "model token limit",
];

/// In what: a size, not a count of tools or images.
const QUANTITY: Terms = &["token*", "length", "long", "size", "byte*", "context"];

/// A comparison that went the wrong way (`>` reads "exceeds").
const EXCESS: Terms = &[
    "exceed*",
    "longer than",
    "greater than",
    "larger than",
    "more than",
    "overflow*",
];

/// Wording that carries its own limit.
const TOO_MUCH: Terms = &[
    "too long",
    "too large",
    "too many",
    "out of room",
    "not enough",
];

/// What the input is measured against.
const LIMIT: Terms = &[
    "max*",
    "limit*",
    "allowed",
    "supports up to",
    "context length",
    "context window",
    "context size",
];

/// A constraint the request broke (`<=` reads "at most").
const CONSTRAINT: Terms = &[
    "must have less than",
    "must be less than",
    "must be at most",
    "cannot exceed",
    "must not exceed",
    "should be",
];

/// How big the request was, stated beside a limit ("the request contains
/// 136973 tokens", "Current length is 42328 while limit is 40000").
const MEASURED: Terms = &[
    "you requested",
    "resulted in",
    "request contains",
    "request has",
    "given",
    "received",
    "actual",
    "current length",
];

/// The server's advice: make the input smaller.
const REMEDY: Terms = &["reduce", "shorten", "shorter", "decrease", "truncate"];

/// The requested output.
const OUTPUT: Terms = &[
    "max tokens",
    "max completion tokens",
    "max new tokens",
    "max output tokens",
    "maximum tokens",
    "maximum output",
    "completion tokens",
    "output tokens",
    "output length",
    "output limit",
];

/// Classifies an error from its HTTP status (if known) and message. A
/// message that starts with a status ("400 status code (no body)", "429
/// {…}") supplies the status when none is given.
pub fn classify_error(status: Option<u16>, message: &str) -> ErrorKind {
    let status = status.or_else(|| leading_status(message));
    let words = Words::new(message);
    if words.any(QUOTA) {
        return ErrorKind::Other;
    }
    if words.any(RATE_LIMIT) {
        return ErrorKind::RateLimit;
    }
    if is_overflow(message) {
        return ErrorKind::Overflow;
    }
    if words.any(OUTPUT) {
        return ErrorKind::OutputLimit;
    }
    match status {
        Some(413) => ErrorKind::Overflow,
        Some(429 | 529) => ErrorKind::RateLimit,
        // Cerebras answers an overflow with a body-less 400, which the
        // OpenAI SDK words exactly so (pi and opencode treat it the same).
        Some(400) if is_bodyless_sdk_error(message) => ErrorKind::Overflow,
        _ => ErrorKind::Other,
    }
}

/// The overflow structure: the input, measured in tokens or length, set
/// against a limit it broke (or a server telling to shorten it), unless the
/// statement is about the requested output.
fn is_overflow(message: &str) -> bool {
    let words = Words::new(message);
    let input = words.any(INPUT);
    let context = words.any(CONTEXT_LIMIT);
    let measured_against_limit = words.any(EXCESS) && (words.any(LIMIT) || context)
        || words.any(TOO_MUCH)
        || words.any(CONSTRAINT)
        || words.any(MEASURED) && words.any(LIMIT)
        // An error that states the model's maximum context ("This model's
        // maximum context length is 8192 tokens") was sent because of it.
        || context && words.has("max*");
    let remedy = words.any(REMEDY) && input;
    // A context limit names both what was measured and in what.
    let measured_input = context || input && words.any(QUANTITY);
    measured_input && (measured_against_limit || remedy) && !about_output(message)
}

/// The first sentence names the output and not the input: the output is
/// what is too large ("'max_tokens' is too large: 64000. This model's
/// maximum context length is …").
fn about_output(message: &str) -> bool {
    let lower = message.to_lowercase();
    let first = lower
        .split(". ")
        .next()
        .unwrap_or("")
        .split([';', '\n'])
        .next()
        .unwrap_or("");
    let subject = Words::new(first);
    subject.any(OUTPUT) && !subject.any(INPUT)
}

/// A message's words: lowercase, camelCase split, punctuation as spaces,
/// comparison signs as words, URLs and category names removed; padded with
/// spaces so terms match on word boundaries.
struct Words(String);

impl Words {
    fn new(message: &str) -> Words {
        let signs = without_urls(message)
            .replace(">=", " exceeds ")
            .replace("<=", " at most ")
            .replace('>', " exceeds ");
        let mut text = String::with_capacity(signs.len() + 2);
        text.push(' ');
        let mut previous = ' ';
        for c in signs.chars() {
            if previous.is_lowercase() && c.is_uppercase() {
                text.push(' ');
            }
            match c {
                c if c.is_alphanumeric() => text.extend(c.to_lowercase()),
                _ if text.ends_with(' ') => {}
                _ => text.push(' '),
            }
            previous = c;
        }
        text.push(' ');
        for term in NEUTRAL {
            text = text.replace(&format!(" {term} "), " ");
        }
        Words(text)
    }

    fn any(&self, terms: Terms) -> bool {
        terms.iter().any(|term| self.has(term))
    }

    fn has(&self, term: &str) -> bool {
        match term.strip_suffix('*') {
            Some(prefix) => self.0.contains(&format!(" {prefix}")),
            None => self.0.contains(&format!(" {term} ")),
        }
    }
}

/// The message without its URLs: an endpoint (`…/v1/messages`) or a docs
/// link (`…/rate-limits`) says nothing about this error.
fn without_urls(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(start) = rest.find("http://").or_else(|| rest.find("https://")) {
        out.push_str(&rest[..start]);
        let url = &rest[start..];
        let end = url
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | ')' | ']' | '>'))
            .unwrap_or(url.len());
        rest = &url[end..];
    }
    out.push_str(rest);
    out
}

/// A status code at the start of a message, as SDKs format errors.
fn leading_status(message: &str) -> Option<u16> {
    let digits: String = message.trim_start().chars().take(4).collect();
    let code = digits.get(..3)?;
    let after = digits.chars().nth(3);
    if !code.chars().all(|c| c.is_ascii_digit()) || after.is_some_and(|c| c.is_ascii_digit()) {
        return None;
    }
    code.parse().ok().filter(|c| (400..600).contains(c))
}

/// "400 status code (no body)": the OpenAI SDK's text for a response
/// without a body.
fn is_bodyless_sdk_error(message: &str) -> bool {
    let rest = message
        .trim()
        .trim_start_matches(|c: char| c.is_ascii_digit())
        .trim();
    rest.eq_ignore_ascii_case("status code (no body)")
}

#[cfg(test)]
mod tests {
    use super::*;
    use ErrorKind::*;

    fn check(status: Option<u16>, message: &str, expected: ErrorKind) {
        assert_eq!(
            classify_error(status, message),
            expected,
            "{status:?} {message:?}"
        );
    }

    /// The structure's parts, one case each; real messages are in
    /// tests/data/overflow-cases.jsonl and the shared corpus.
    #[test]
    fn structure() {
        let cases: [(Option<u16>, &str, ErrorKind); 26] = [
            // input + excess + limit, in either order, numbers optional
            (None, "prompt is too long: 213462 tokens > 200000 maximum", Overflow),
            (None, "the maximum context length was exceeded by the input", Overflow),
            (None, "Input length exceeds context length", Overflow),
            // measured beside a limit
            (None, "maximum prompt length is 131072 but the request contains 136973 tokens", Overflow),
            // a broken constraint
            (None, "`inputs` must have less than 1024 tokens. Given: 1168", Overflow),
            (None, "Range of input length should be [1, 30720]", Overflow),
            // a context limit implies the input
            (None, "Requested tokens (2285) exceed context window of 2048", Overflow),
            (None, "Cannot truncate prompt with n_keep (15028) >= n_ctx (7424)", Overflow),
            // the server's remedy
            (None, "Please reduce the length of the messages or completion.", Overflow),
            // an error stating the maximum context was sent because of it
            (None, "This model's maximum context length is 8192 tokens", Overflow),
            (None, "context length must be a positive integer", Other),
            // codes are words too
            (None, "context_length_exceeded", Overflow),
            // input and output together exceed the context: compacting helps
            (None, "input length and `max_tokens` exceed context limit: 178959 + 64000 > 200000", Overflow),
            // the output is the subject: an output cap
            (None, "'max_tokens' is too large: 64000. This model's maximum context length is 64001 tokens and your request has 24235 input tokens", OutputLimit),
            (Some(422), "Input validation error: `max_new_tokens` must be <= 192", OutputLimit),
            (None, "maxOutputTokens must be at most 8192", OutputLimit),
            // too many of something that is not a size
            (None, "Invalid 'tools': array too long. Expected an array with maximum length 128", Other),
            (None, "Input should be a valid string", Other),
            // rate limits first, whatever else they say
            (Some(413), "Request too large for model on tokens per minute (TPM): Limit 10000, Requested 15088, please reduce your message size", RateLimit),
            (None, "Number of request tokens has exceeded your per-minute rate limit", RateLimit),
            (Some(429), "You exceeded your current quota, please check your plan", Other),
            // a status alone decides nothing but 413 (and 429/529 for waits)
            (Some(400), "", Other),
            (Some(400), "invalid model name", Other),
            (Some(413), "", Overflow),
            (None, "429 status code (no body)", RateLimit),
            (None, "400 status code (no body)", Overflow),
        ];
        for (status, message, expected) in cases {
            check(status, message, expected);
        }
    }

    fn cases_in(path: &std::path::Path) -> Option<Vec<serde_json::Value>> {
        let text = std::fs::read_to_string(path).ok()?;
        Some(
            text.lines()
                .filter(|l| !l.trim().is_empty())
                .map(|l| serde_json::from_str(l).expect("a JSON case"))
                .collect(),
        )
    }

    /// Every case in the shared corpus of real provider errors.
    #[test]
    fn shared_cases() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../shared/overflow-errors.cases.jsonl");
        let Some(cases) = cases_in(&path) else {
            println!("SKIP: {} is absent", path.display());
            return;
        };
        let wrong: Vec<String> = cases
            .iter()
            .filter_map(|case| {
                let message = case["message"].as_str().expect("message");
                let status = case["status"].as_u64().map(|s| s as u16);
                let kind = classify_error(status, message);
                ((kind == Overflow) != case["overflow"].as_bool().expect("overflow"))
                    .then(|| format!("{kind:?} for {}: {message}", case["provider"]))
            })
            .collect();
        assert_eq!(cases.len(), 26, "{}", path.display());
        assert!(wrong.is_empty(), "misclassified:\n{}", wrong.join("\n"));
    }

    /// Real messages collected from providers' docs, source and public bug
    /// reports, each with its source; every one gets its own kind.
    #[test]
    fn collected_cases() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/overflow-cases.jsonl");
        let cases = cases_in(&path).expect("tests/data/overflow-cases.jsonl");
        let kind_of = |name: &str| match name {
            "overflow" => Overflow,
            "rate_limit" => RateLimit,
            "output_limit" => OutputLimit,
            "other" => Other,
            other => panic!("unknown kind {other}"),
        };
        let mut wrong = Vec::new();
        for case in &cases {
            assert!(
                case["source"].as_str().is_some_and(|s| !s.is_empty()),
                "{case}"
            );
            let text = case["text"].as_str().expect("text");
            let status = case["status"].as_u64().map(|s| s as u16);
            let expected = kind_of(case["expected"].as_str().expect("expected"));
            let kind = classify_error(status, text);
            if kind != expected {
                wrong.push(format!("{kind:?}, expected {expected:?}: {text}"));
            }
        }
        let overflows = cases.iter().filter(|c| c["expected"] == "overflow").count();
        assert!(
            overflows >= 30 && cases.len() - overflows >= 10,
            "{overflows} of {}",
            cases.len()
        );
        assert!(wrong.is_empty(), "misclassified:\n{}", wrong.join("\n"));
    }
}
