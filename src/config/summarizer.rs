//! The summarizer's configuration: which provider, and how it is reached.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "camelCase")]
pub enum SummarizerProvider {
    /// The built-in deterministic summarizer: no network, no key.
    #[default]
    Offline,
    /// The offline summarizer behind a pacing delay per chunk, for protocol
    /// tests of progress and cancellation. Accepted, but left out of the
    /// published schema (and so of the editors' settings): it is no choice
    /// for a user.
    #[schemars(skip)]
    Test,
    /// Any OpenAI-compatible `/chat/completions` endpoint (OpenAI,
    /// OpenRouter, vLLM, llama.cpp's server, Ollama, LM Studio).
    Openai,
    /// Anthropic's Messages API.
    Anthropic,
}

impl SummarizerProvider {
    pub fn name(self) -> &'static str {
        match self {
            SummarizerProvider::Offline => "offline",
            SummarizerProvider::Test => "test",
            SummarizerProvider::Openai => "openai",
            SummarizerProvider::Anthropic => "anthropic",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct SummarizerConfig {
    pub provider: SummarizerProvider,
    /// The model that writes summaries; it may be a cheaper one than the
    /// conversation's.
    pub model: Option<String>,
    /// The API base URL. Default: `https://api.openai.com/v1` (openai),
    /// `https://api.anthropic.com` (anthropic). For openai, requests go to
    /// `{baseUrl}/chat/completions`, so include the `/v1`. Credentials
    /// (`user:password@`, a `key=` or `token=` parameter) are refused.
    pub base_url: Option<String>,
    /// The NAME of the environment variable holding the API key, read at
    /// call time. The key itself is never accepted in configuration.
    /// Unset: no key is sent (local servers).
    pub api_key_env: Option<String>,
    /// The most tokens a summary may take. Default: 80% of `reserveTokens`.
    pub max_tokens: Option<u64>,
    /// Sampling temperature. Default: the provider's.
    pub temperature: Option<f64>,
    /// Sampling seed (openai only; servers that support it answer
    /// deterministically).
    pub seed: Option<u64>,
    /// Extra fields merged into every request body, for provider options
    /// compactd has no key for: `{"chat_template_kwargs": {"enable_thinking":
    /// false}}` turns thinking off on llama.cpp or vLLM serving Qwen3,
    /// `{"frequency_penalty": 0.5}` stops a small model from looping.
    /// Credential fields (`api_key`, `token`…) are refused.
    pub extra_body: Option<serde_json::Map<String, serde_json::Value>>,
    /// Milliseconds to wait for the response to start and between any two
    /// pieces of it before the attempt counts as timed out (and is retried).
    pub timeout_ms: u64,
    /// The summarizer model's own context window; input larger than this
    /// is summarized in chunks.
    pub context_window: Option<u64>,
    /// Stream the summary (progress reports characters received).
    pub stream: bool,
    /// `test` provider only: milliseconds to wait per chunk.
    pub delay_ms: u64,
    /// After a checkpoint compaction, ask the provider what the compacted
    /// history costs (Anthropic's `count_tokens`, free), report it as
    /// `providerTokensAfter` and feed it to the calibration. Needs the
    /// `anthropic` provider; with others the result says why not.
    pub recount: bool,
}

impl Default for SummarizerConfig {
    fn default() -> Self {
        SummarizerConfig {
            provider: SummarizerProvider::Offline,
            model: None,
            base_url: None,
            api_key_env: None,
            max_tokens: None,
            temperature: None,
            seed: None,
            extra_body: None,
            timeout_ms: 120_000,
            context_window: None,
            stream: true,
            delay_ms: 0,
            recount: false,
        }
    }
}
