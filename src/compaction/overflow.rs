//! Classifies a provider's error: did the request overflow the model's
//! context window, hit a rate limit, ask for more output than the model
//! allows, or fail otherwise? Pure. Used for errors that clients report
//! (`conversation/reportError`) and for errors from our own summarizers, so
//! both sides agree on what an overflow is.
//!
//! Providers word overflows differently and several rate-limit and
//! output-cap errors look like overflows ("Request too large … tokens per
//! min", "reduce the prompt length … or try again later", "`max_tokens`
//! must be less than …"). Rate limits are recognised first, then
//! overflows, then output caps; the order matters.

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

/// Phrases of rate-limit errors, lowercase. Checked first: several carry
/// overflow-like wording ("request too large", "reduce the prompt length").
const RATE_LIMIT: [&str; 10] = [
    "rate limit",
    "rate_limit",
    "ratelimit",
    "too many requests",
    "tokens per min",
    "requests per min",
    "tokens per day",
    "requests per day",
    "overloaded",
    "resource_exhausted",
];

/// Phrases of context-overflow errors, lowercase, from OpenAI, Azure,
/// Anthropic, Bedrock, Gemini, OpenRouter, vLLM, llama.cpp,
/// llama-cpp-python, Groq and Codex.
const OVERFLOW: [&str; 16] = [
    "prompt is too long",
    "input is too long",
    "maximum context length",
    "context_length_exceeded",
    "exceeds the context window",
    "exceed context window",
    "exceeds the available context size",
    "exceed_context_size_error",
    "exceed context limit",
    "exceeds the maximum number of tokens",
    "input token count",
    "context window exceeded",
    "out of room in the model's context window",
    "please reduce the length of the messages",
    "reduce the length of the messages or completion",
    "too many input tokens",
];

/// Phrases of output-cap errors, lowercase. Checked after overflows:
/// Anthropic's "input length and `max_tokens` exceed context limit" is an
/// overflow that mentions `max_tokens`.
const OUTPUT_LIMIT: [&str; 8] = [
    "max_tokens",
    "max_completion_tokens",
    "max_output_tokens",
    "maximum output tokens",
    "max output tokens",
    "output token limit",
    "output limit",
    "maxoutputtokens",
];

/// Quota errors arrive as 429 but waiting does not help.
const QUOTA: [&str; 2] = ["insufficient_quota", "exceeded your current quota"];

/// Classifies an error from its HTTP status (if known) and message. A
/// message that starts with a status ("400 status code (no body)", "429
/// {…}") supplies the status when none is given.
pub fn classify_error(status: Option<u16>, message: &str) -> ErrorKind {
    let lower = message.to_lowercase();
    let status = status.or_else(|| leading_status(&lower));
    let has = |phrases: &[&str]| phrases.iter().any(|p| lower.contains(p));
    if has(&QUOTA) {
        return ErrorKind::Other;
    }
    if status == Some(429) || has(&RATE_LIMIT) || status == Some(529) {
        return ErrorKind::RateLimit;
    }
    if has(&OVERFLOW) || status == Some(413) {
        return ErrorKind::Overflow;
    }
    if has(&OUTPUT_LIMIT) {
        return ErrorKind::OutputLimit;
    }
    // Some providers (Cerebras) answer an overflow with a bare 400.
    if status == Some(400) && without_body(&lower) {
        return ErrorKind::Overflow;
    }
    ErrorKind::Other
}

/// A status code at the start of a message, as SDKs format errors.
fn leading_status(lower: &str) -> Option<u16> {
    let digits: String = lower.trim_start().chars().take(4).collect();
    let code = digits.get(..3)?;
    let after = digits.chars().nth(3);
    if !code.chars().all(|c| c.is_ascii_digit()) || after.is_some_and(|c| c.is_ascii_digit()) {
        return None;
    }
    code.parse().ok().filter(|c| (400..600).contains(c))
}

/// The message says nothing beyond the status.
fn without_body(lower: &str) -> bool {
    let rest = lower
        .trim()
        .trim_start_matches(|c: char| c.is_ascii_digit())
        .trim()
        .trim_start_matches("status code")
        .trim();
    rest.is_empty() || rest == "(no body)"
}

#[cfg(test)]
mod tests {
    use super::*;
    use ErrorKind::*;

    #[test]
    fn inline_cases() {
        let cases: [(Option<u16>, &str, ErrorKind); 18] = [
            (Some(400), "prompt is too long: 213462 tokens > 200000 maximum", Overflow),
            (None, "input length and `max_tokens` exceed context limit: 178959 + 64000 > 200000", Overflow),
            (Some(400), r#"{"error":{"code":400,"message":"request (8796 tokens) exceeds the available context size (4096 tokens), try increasing it","type":"exceed_context_size_error"}}"#, Overflow),
            (Some(400), "This model's maximum context length is 4096 tokens. However, you requested 8828 tokens", Overflow),
            (Some(413), "", Overflow),
            (Some(400), "", Overflow),
            (None, "400 status code (no body)", Overflow),
            (Some(400), "invalid model name", Other),
            (Some(429), "", RateLimit),
            (None, "429 status code (no body)", RateLimit),
            (Some(429), "You exceeded your current quota, please check your plan and billing details.", Other),
            (None, "Request too large for gpt-4o on tokens per min (TPM): Limit 30000, Requested 36278.", RateLimit),
            (Some(529), r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#, RateLimit),
            (Some(400), "max_tokens: 100000 > 64000, which is the maximum allowed number of output tokens for claude-sonnet-4", OutputLimit),
            (Some(400), "`max_completion_tokens` must be less than or equal to `16384`", OutputLimit),
            (Some(500), "internal server error", Other),
            (None, "connection reset by peer", Other),
            (None, "4000 tokens used", Other),
        ];
        for (status, message, expected) in cases {
            assert_eq!(
                classify_error(status, message),
                expected,
                "{status:?} {message:?}"
            );
        }
    }

    /// Every case in the shared corpus of real provider errors.
    #[test]
    fn shared_cases() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../shared/overflow-errors.cases.jsonl");
        let Ok(text) = std::fs::read_to_string(&path) else {
            println!("SKIP: {} is absent", path.display());
            return;
        };
        let mut checked = 0;
        let mut wrong = Vec::new();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let case: serde_json::Value = serde_json::from_str(line).expect("a JSON case");
            let message = case["message"].as_str().expect("message");
            let status = case["status"].as_u64().map(|s| s as u16);
            let kind = classify_error(status, message);
            if (kind == Overflow) != case["overflow"].as_bool().expect("overflow") {
                wrong.push(format!("{kind:?} for {}: {message}", case["provider"]));
            }
            checked += 1;
        }
        assert!(checked >= 20, "only {checked} cases in {}", path.display());
        assert!(wrong.is_empty(), "misclassified:\n{}", wrong.join("\n"));
    }

    #[test]
    fn look_alikes_in_the_corpus_get_their_own_kind() {
        assert_eq!(
            classify_error(None, "Rate limit exceeded, please try again later"),
            RateLimit
        );
        assert_eq!(
            classify_error(None, "This request would exceed the rate limit for your organization of 20,000 input tokens per minute. Please reduce the prompt length or the maximum tokens requested, or try again later."),
            RateLimit
        );
        assert_eq!(
            classify_error(None, "`max_completion_tokens` must be less than or equal to `16384`, the maximum value for `max_completion_tokens` is less than the `context_window` for this model"),
            OutputLimit
        );
    }
}
