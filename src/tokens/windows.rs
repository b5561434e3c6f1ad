//! Context windows of common models, used when neither the client nor the
//! config names one. Longest prefix wins.

const WINDOWS: &[(&str, u64)] = &[
    // Claude Code 2.1.330's default model; its `modelUsage` states the window.
    ("claude-opus-5", 1_000_000),
    ("claude-opus-4", 200_000),
    ("claude-sonnet-4", 200_000),
    ("claude-haiku-4", 200_000),
    ("claude-3", 200_000),
    ("claude", 200_000),
    ("gpt-5", 400_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4-32k", 32_768),
    ("gpt-4", 8_192),
    ("gpt-3.5-turbo", 16_385),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("codex-mini", 200_000),
    ("gemini-2.5", 1_048_576),
    ("gemini-2.0", 1_048_576),
    ("gemini-1.5-pro", 2_097_152),
    ("gemini", 1_048_576),
    ("deepseek", 128_000),
    ("qwen3-coder", 262_144),
    ("qwen", 131_072),
    ("llama-3", 131_072),
    ("mistral-large", 131_072),
    ("devstral", 131_072),
    ("grok-4", 256_000),
    ("grok", 131_072),
    ("kimi-k2", 131_072),
    ("glm-4", 131_072),
];

/// The window of a known model (provider prefixes like `openai/` ignored).
pub fn context_window_for(model: &str) -> Option<u64> {
    let m = model.to_ascii_lowercase();
    let m = m.rsplit('/').next().unwrap_or(&m);
    WINDOWS
        .iter()
        .filter(|(prefix, _)| m.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|(_, window)| *window)
}

#[cfg(test)]
mod tests {
    use super::context_window_for;

    #[test]
    fn longest_prefix_wins() {
        assert_eq!(context_window_for("gpt-4o-mini"), Some(128_000));
        assert_eq!(context_window_for("gpt-4"), Some(8_192));
        assert_eq!(
            context_window_for("anthropic/claude-sonnet-4-5"),
            Some(200_000)
        );
        assert_eq!(context_window_for("some-local-model"), None);
    }
}
