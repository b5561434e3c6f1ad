//! What every summarizer is: the trait, what it returns, how it reports
//! progress and how it fails.

use std::future::Future;
use std::pin::Pin;

use crate::compaction::summary::SummaryRequest;
use crate::conversation::Usage;
use crate::redact::Redactor;

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

impl SummarizeError {
    /// The error with the key (or any piece of it) taken out of its text.
    pub fn redacted(self, redactor: &Redactor) -> SummarizeError {
        match self {
            SummarizeError::ContextOverflow(m) => {
                SummarizeError::ContextOverflow(redactor.text(&m))
            }
            SummarizeError::Unusable(m) => SummarizeError::Unusable(redactor.text(&m)),
            SummarizeError::Failed(m) => SummarizeError::Failed(redactor.text(&m)),
        }
    }
}
