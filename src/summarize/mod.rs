//! Summarizers: the trait every provider implements, the built-in offline
//! one, and LLM providers over HTTP (`openai`, `anthropic`). Providers do
//! I/O; they never touch the session.

pub mod anthropic;
pub mod driver;
pub mod http;
pub mod offline;
pub mod openai;
pub mod prompt;
pub mod redact;
pub mod sse;

use std::future::Future;
use std::pin::Pin;

pub use crate::compaction::summary::SummaryRequest;
use crate::config::{SummarizerConfig, SummarizerProvider};
use crate::conversation::Usage;

#[derive(Debug, Clone, PartialEq)]
pub struct SummaryOutput {
    pub text: String,
    /// Which summarizer produced the text (for the compaction entry).
    pub summarizer: String,
    pub usage: Option<Usage>,
    pub chunks: u32,
}

/// A progress update while summarizing.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    pub message: String,
    pub percentage: Option<u32>,
}

pub type ProgressSink<'a> = &'a (dyn Fn(Progress) + Send + Sync);

#[derive(Debug, thiserror::Error)]
pub enum SummarizeError {
    /// The input did not fit the summarizer's own context window; the
    /// caller answers by chunking smaller, not by failing.
    #[error("the summarizer's context window overflowed: {0}")]
    ContextOverflow(String),
    /// The summary came back unusable (empty, truncated, echoing the
    /// instructions); the caller may retry once, then fall back.
    #[error("unusable summary: {0}")]
    Unusable(String),
    /// Anything else (network, HTTP status, protocol): the caller falls
    /// down the fallback ladder.
    #[error("summarizer failed: {0}")]
    Failed(String),
}

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

pub trait Summarizer: Send + Sync {
    fn name(&self) -> &str;
    fn summarize<'a>(
        &'a self,
        request: SummaryRequest,
        progress: ProgressSink<'a>,
    ) -> BoxFuture<'a, Result<SummaryOutput, SummarizeError>>;
}

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
