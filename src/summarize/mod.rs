//! Summarizers: the trait every provider implements, the built-in offline
//! one, and LLM providers over HTTP (`openai`, `anthropic`). Providers do
//! I/O; they never touch the session.

pub(crate) mod anthropic;
pub(crate) mod driver;
pub(crate) mod http;
pub(crate) mod offline;
pub(crate) mod openai;
pub(crate) mod prompt;
pub(crate) mod recount;
pub(crate) mod sse;
mod summarizer;

pub use crate::compaction::summary::SummaryRequest;
use crate::config::{SummarizerConfig, SummarizerProvider};
pub use summarizer::{
    BoxFuture, Progress, ProgressSink, SummarizeError, Summarizer, SummaryOutput,
};

/// Builds the summarizer a config names.
pub fn from_config(config: &SummarizerConfig) -> Box<dyn Summarizer> {
    match config.provider {
        SummarizerProvider::Offline => Box::new(offline::OfflineSummarizer {
            max_tokens: config.max_tokens,
        }),
        SummarizerProvider::Test => Box::new(offline::PacedSummarizer {
            delay: std::time::Duration::from_millis(config.delay_ms),
        }),
        SummarizerProvider::Openai => Box::new(http::HttpSummarizer::new(
            openai::OpenAi,
            http::Settings::from_config(config, openai::DEFAULT_BASE_URL),
        )),
        SummarizerProvider::Anthropic => Box::new(http::HttpSummarizer::new(
            anthropic::Anthropic,
            http::Settings::from_config(config, anthropic::DEFAULT_BASE_URL),
        )),
    }
}
