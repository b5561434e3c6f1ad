//! What every LLM summarizer over HTTP shares: the API key from the
//! environment, one request per attempt with an idle timeout, retries with
//! exponential backoff and jitter (honouring `Retry-After`), reading an SSE
//! stream while reporting characters received, classifying errors, and
//! rejecting unusable replies. A provider only describes its wire format
//! (`Wire`).
//!
//! Secrets: every text that leaves a call (errors, log lines, progress,
//! the summary itself) is redacted (`redact.rs`) before it is shortened.
//!
//! Cancellation: the server aborts the task that awaits `summarize`, which
//! drops the future and with it the response body and its connection.
//! Every wait here is a tokio future, so nothing delays that drop.

use std::time::{Duration, Instant};

use reqwest::header::{HeaderMap, HeaderValue, CONTENT_TYPE, RETRY_AFTER};
use reqwest::StatusCode;
use serde_json::Value;

use super::prompt::{self, Prompt};
use super::sse::{SseDecoder, SseEvent};
use super::{
    BoxFuture, Progress, ProgressSink, SummarizeError, Summarizer, SummaryOutput, SummaryRequest,
};
use crate::config::SummarizerConfig;
use crate::conversation::Usage;
use crate::provider_error::{classify_error, ErrorKind};
use crate::redact::{clip, Redactor};

/// At most this many attempts per summary call.
pub const MAX_ATTEMPTS: u32 = 4;
/// The first retry waits about this long, doubling after each attempt.
pub const BACKOFF_BASE: Duration = Duration::from_millis(200);
/// A `Retry-After` longer than this is not waited out: the call fails and
/// the caller falls back instead of stalling a compaction for minutes.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);
/// Error bodies are read up to this many bytes.
const MAX_ERROR_BODY: usize = 16 * 1024;
/// A provider's error message is quoted up to this many characters.
const MAX_ERROR_DETAIL: usize = 500;
/// Progress reports while streaming are at least this far apart.
const REPORT_EVERY: Duration = Duration::from_millis(200);

/// The settings a call needs, resolved from the configuration.
#[derive(Debug, Clone)]
pub struct Settings {
    pub model: Option<String>,
    pub base_url: String,
    pub api_key_env: Option<String>,
    pub max_tokens: u64,
    pub temperature: Option<f64>,
    pub seed: Option<u64>,
    pub extra_body: serde_json::Map<String, Value>,
    pub idle_timeout: Duration,
    pub stream: bool,
}

impl Settings {
    pub fn from_config(config: &SummarizerConfig, default_base_url: &str) -> Settings {
        Settings {
            model: config.model.clone(),
            base_url: config
                .base_url
                .clone()
                .unwrap_or_else(|| default_base_url.to_string())
                .trim_end_matches('/')
                .to_string(),
            api_key_env: config.api_key_env.clone(),
            max_tokens: config.max_tokens.unwrap_or(4096).max(1),
            temperature: config.temperature,
            seed: config.seed,
            extra_body: config.extra_body.clone().unwrap_or_default(),
            idle_timeout: Duration::from_millis(config.timeout_ms.max(1)),
            stream: config.stream,
        }
    }
}

/// Why generation stopped, normalized across providers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finish {
    Stop,
    /// Cut off at `max_tokens`.
    Length,
    /// Anything else the provider reports (content filter, refusal).
    Other(String),
}

/// A reply as received, before it is judged usable.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reply {
    pub text: String,
    pub usage: Option<Usage>,
    pub finish: Option<Finish>,
    /// The provider's end-of-stream marker arrived (`[DONE]`,
    /// `message_stop`).
    pub done: bool,
}

/// An error the provider reported inside a stream or a 200 body.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderError {
    pub status: Option<u16>,
    pub message: String,
}

/// One provider's wire format.
pub trait Wire: Send + Sync + 'static {
    fn provider(&self) -> &'static str;
    fn endpoint(&self, base_url: &str) -> String;
    /// Provider headers, with the key (if any) in its auth header.
    fn headers(&self, key: Option<&str>) -> Result<HeaderMap, String>;
    fn body(&self, settings: &Settings, prompt: &Prompt, stream: bool) -> Value;
    /// A complete (non-streamed) response body.
    fn complete(&self, body: &Value) -> Result<Reply, ProviderError>;
    /// One stream event, folded into `reply`; the text delta it carried is
    /// appended to `reply.text`.
    fn event(&self, event: &SseEvent, reply: &mut Reply) -> Result<(), ProviderError>;
}

pub struct HttpSummarizer<W: Wire> {
    wire: W,
    settings: Settings,
    name: String,
    client: Result<reqwest::Client, String>,
}

impl<W: Wire> HttpSummarizer<W> {
    pub fn new(wire: W, settings: Settings) -> HttpSummarizer<W> {
        let name = match &settings.model {
            Some(model) => format!("{}:{model}", wire.provider()),
            None => wire.provider().to_string(),
        };
        let client = reqwest::Client::builder()
            .connect_timeout(settings.idle_timeout)
            .build()
            .map_err(|e| format!("could not set up the HTTP client: {}", describe(e)));
        HttpSummarizer {
            wire,
            settings,
            name,
            client,
        }
    }
}

impl<W: Wire> Summarizer for HttpSummarizer<W> {
    fn name(&self) -> &str {
        &self.name
    }

    fn summarize<'a>(
        &'a self,
        request: SummaryRequest,
        progress: ProgressSink<'a>,
    ) -> BoxFuture<'a, Result<SummaryOutput, SummarizeError>> {
        Box::pin(async move {
            let key = api_key(self.settings.api_key_env.as_deref())?;
            if key.is_none() && hosted(&self.settings.base_url) {
                // Known before any request: no retries against a refusal.
                return Err(SummarizeError::Failed(format!(
                    "{} needs an API key and none is configured: put it in an environment variable and name that variable in summarizer.apiKeyEnv",
                    self.settings.base_url
                )));
            }
            let redactor = Redactor::new(key.as_deref());
            let prompt = prompt::build(&request);
            let call = Call {
                summarizer: self,
                key: key.as_deref(),
                redactor,
                prompt: &prompt,
                progress,
            };
            let reply = call.run().await.map_err(|e| e.redacted(&redactor))?;
            usable(&reply, &prompt).map_err(|e| e.redacted(&redactor))?;
            Ok(SummaryOutput {
                // A model may quote the key back (a prompt or a tool output
                // held it): the summary is stored and sent, so not verbatim.
                text: redactor.text(reply.text.trim()),
                summarizer: self.name.clone(),
                usage: reply.usage,
                chunks: 1,
            })
        })
    }
}

/// The providers' own APIs, which refuse every request without a key (a
/// local server, OpenRouter behind another URL, and the like may not).
fn hosted(base_url: &str) -> bool {
    let host = base_url
        .split("://")
        .nth(1)
        .and_then(|rest| rest.split(['/', ':']).next())
        .unwrap_or("");
    matches!(host, "api.openai.com" | "api.anthropic.com")
}

/// The key from the environment variable the config names, read now so a
/// key set or rotated after startup is used.
fn api_key(env_name: Option<&str>) -> Result<Option<String>, SummarizeError> {
    let Some(name) = env_name else {
        return Ok(None);
    };
    match std::env::var(name) {
        Ok(key) if !key.trim().is_empty() => Ok(Some(key.trim().to_string())),
        Ok(_) => Err(SummarizeError::Failed(format!(
            "the environment variable {name} (summarizer.apiKeyEnv) is empty"
        ))),
        Err(std::env::VarError::NotPresent) => Err(SummarizeError::Failed(format!(
            "the environment variable {name} (summarizer.apiKeyEnv) is not set"
        ))),
        Err(std::env::VarError::NotUnicode(_)) => Err(SummarizeError::Failed(format!(
            "the environment variable {name} (summarizer.apiKeyEnv) is not valid UTF-8"
        ))),
    }
}

/// Empty, truncated and echoed replies are unusable.
fn usable(reply: &Reply, prompt: &Prompt) -> Result<(), SummarizeError> {
    match &reply.finish {
        Some(Finish::Length) => {
            return Err(SummarizeError::Unusable(
                "the summary was cut off at maxTokens (finish reason: length)".into(),
            ))
        }
        Some(Finish::Other(reason)) => {
            return Err(SummarizeError::Unusable(format!(
                "generation stopped early (finish reason: {reason})"
            )))
        }
        Some(Finish::Stop) | None => {}
    }
    if reply.text.trim().is_empty() {
        return Err(SummarizeError::Unusable("the summary is empty".into()));
    }
    if prompt::echoes_instructions(&reply.text, prompt) {
        return Err(SummarizeError::Unusable(
            "the summary repeats the instructions instead of summarizing".into(),
        ));
    }
    Ok(())
}

/// How one attempt ended, when it did not produce a reply.
enum AttemptError {
    /// Worth another attempt: connection errors, timeouts, 408, 429, 5xx,
    /// a stream cut short.
    Transient {
        message: String,
        retry_after: Option<Duration>,
    },
    /// The stream ended empty with no end marker; some servers
    /// (llama-cpp-python) hide errors such as an overflow this way, so the
    /// next attempt asks without streaming.
    EmptyStream,
    Fatal(SummarizeError),
}

impl AttemptError {
    fn transient(message: impl Into<String>) -> AttemptError {
        AttemptError::Transient {
            message: message.into(),
            retry_after: None,
        }
    }
}

/// One summary call: up to `MAX_ATTEMPTS` attempts.
struct Call<'a, W: Wire> {
    summarizer: &'a HttpSummarizer<W>,
    key: Option<&'a str>,
    redactor: Redactor<'a>,
    prompt: &'a Prompt,
    progress: ProgressSink<'a>,
}

impl<W: Wire> Call<'_, W> {
    fn provider(&self) -> &'static str {
        self.summarizer.wire.provider()
    }

    async fn run(&self) -> Result<Reply, SummarizeError> {
        let client = self
            .summarizer
            .client
            .as_ref()
            .map_err(|e| SummarizeError::Failed(e.clone()))?;
        let mut stream = self.summarizer.settings.stream;
        let mut attempt = 1;
        loop {
            let error = match self.attempt(client, stream).await {
                Ok(reply) => return Ok(reply),
                Err(AttemptError::Fatal(e)) => return Err(e),
                Err(e) if attempt >= MAX_ATTEMPTS => {
                    let message = match e {
                        AttemptError::Transient { message, .. } => message,
                        _ => "the stream ended without a reply".into(),
                    };
                    return Err(SummarizeError::Failed(format!(
                        "{} (gave up after {attempt} attempts)",
                        self.named(&message)
                    )));
                }
                Err(e) => e,
            };
            let (message, delay) = match error {
                AttemptError::EmptyStream => {
                    stream = false;
                    (
                        "the stream ended empty; asking without streaming".to_string(),
                        Duration::ZERO,
                    )
                }
                AttemptError::Transient {
                    message,
                    retry_after: Some(wait),
                } => {
                    if wait > MAX_RETRY_AFTER {
                        return Err(SummarizeError::Failed(format!(
                            "{}; the provider asks to wait {} s, longer than the {} s compactd waits",
                            self.named(&message),
                            wait.as_secs(),
                            MAX_RETRY_AFTER.as_secs()
                        )));
                    }
                    (message, wait)
                }
                AttemptError::Transient { message, .. } => (message, backoff(attempt)),
                AttemptError::Fatal(_) => unreachable!("returned above"),
            };
            let message = self.redactor.text(&self.named(&message));
            tracing::warn!(
                "summarizer attempt {attempt} of {MAX_ATTEMPTS} failed: {message}; retrying in {} ms",
                delay.as_millis()
            );
            (self.progress)(Progress {
                message: format!(
                    "{message}; retrying in {:.1} s (attempt {} of {MAX_ATTEMPTS})",
                    delay.as_secs_f64(),
                    attempt + 1
                ),
                percentage: None,
            });
            tokio::time::sleep(delay).await;
            attempt += 1;
        }
    }

    /// `message`, saying which provider it is about.
    fn named(&self, message: &str) -> String {
        if message.starts_with(self.provider()) {
            message.to_string()
        } else {
            format!("{}: {message}", self.provider())
        }
    }

    async fn attempt(&self, client: &reqwest::Client, stream: bool) -> Result<Reply, AttemptError> {
        let settings = &self.summarizer.settings;
        let wire = &self.summarizer.wire;
        let mut headers = wire
            .headers(self.key)
            .map_err(|e| AttemptError::Fatal(SummarizeError::Failed(e)))?;
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let mut body = wire.body(settings, self.prompt, stream);
        for (name, value) in &settings.extra_body {
            body[name.as_str()] = value.clone();
        }
        let body = serde_json::to_vec(&body).expect("request bodies serialize");
        let send = client
            .post(wire.endpoint(&settings.base_url))
            .headers(headers)
            .body(body)
            .send();
        let response = match tokio::time::timeout(settings.idle_timeout, send).await {
            Err(_) => {
                return Err(AttemptError::transient(format!(
                    "no response within {} ms",
                    settings.idle_timeout.as_millis()
                )))
            }
            Ok(Err(e)) => return Err(AttemptError::transient(describe(e))),
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        if !status.is_success() {
            return Err(self.status_error(response).await);
        }
        let is_event_stream = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if stream && is_event_stream {
            self.read_stream(response).await
        } else {
            self.read_complete(response).await
        }
    }

    async fn read_complete(&self, response: reqwest::Response) -> Result<Reply, AttemptError> {
        let timeout = self.summarizer.settings.idle_timeout;
        let bytes = match tokio::time::timeout(timeout, response.bytes()).await {
            Err(_) => {
                return Err(AttemptError::transient(format!(
                    "the response did not complete within {} ms",
                    timeout.as_millis()
                )))
            }
            Ok(Err(e)) => return Err(AttemptError::transient(describe(e))),
            Ok(Ok(bytes)) => bytes,
        };
        let body: Value = serde_json::from_slice(&bytes).map_err(|e| {
            AttemptError::Fatal(SummarizeError::Failed(format!(
                "{} answered with a body that is not JSON ({e}): {}",
                self.provider(),
                self.redactor.clip(&String::from_utf8_lossy(&bytes), 300)
            )))
        })?;
        let reply = self
            .summarizer
            .wire
            .complete(&body)
            .map_err(|e| self.provider_error(e))?;
        let mut reporter = Reporter::new(self.progress, self.provider());
        reporter.finish(reply.text.chars().count());
        Ok(reply)
    }

    async fn read_stream(&self, mut response: reqwest::Response) -> Result<Reply, AttemptError> {
        let timeout = self.summarizer.settings.idle_timeout;
        let mut decoder = SseDecoder::default();
        let mut reply = Reply::default();
        let mut reporter = Reporter::new(self.progress, self.provider());
        let mut chars = 0;
        'read: loop {
            let chunk = match tokio::time::timeout(timeout, response.chunk()).await {
                Err(_) => {
                    return Err(AttemptError::transient(format!(
                        "the stream stalled for {} ms",
                        timeout.as_millis()
                    )))
                }
                Ok(Err(e)) => {
                    return Err(AttemptError::transient(format!(
                        "the stream broke off: {}",
                        describe(e)
                    )))
                }
                Ok(Ok(None)) => break,
                Ok(Ok(Some(chunk))) => chunk,
            };
            for event in decoder.push(&chunk) {
                self.fold_event(&event, &mut reply, &mut chars)?;
                if reply.done {
                    break 'read;
                }
            }
            reporter.update(chars);
        }
        if !reply.done {
            if let Some(event) = decoder.finish() {
                self.fold_event(&event, &mut reply, &mut chars)?;
            }
        }
        reporter.finish(chars);
        // Without an end marker, a finish reason still says the reply is
        // whole; without either it was cut short.
        if reply.done || reply.finish.is_some() {
            Ok(reply)
        } else if reply.text.is_empty() && reply.usage.is_none() {
            Err(AttemptError::EmptyStream)
        } else {
            Err(AttemptError::transient(
                "the stream ended before the summary was complete",
            ))
        }
    }

    fn fold_event(
        &self,
        event: &SseEvent,
        reply: &mut Reply,
        chars: &mut usize,
    ) -> Result<(), AttemptError> {
        let before = reply.text.len();
        self.summarizer
            .wire
            .event(event, reply)
            .map_err(|e| self.provider_error(e))?;
        *chars += reply.text[before..].chars().count();
        Ok(())
    }

    /// An error reported inside a 200 response (a stream error event).
    fn provider_error(&self, error: ProviderError) -> AttemptError {
        let message = format!(
            "{} reported an error: {}",
            self.provider(),
            self.redactor.clip(&error.message, MAX_ERROR_DETAIL)
        );
        match classify_error(error.status, &error.message) {
            ErrorKind::Overflow => AttemptError::Fatal(SummarizeError::ContextOverflow(message)),
            ErrorKind::RateLimit => AttemptError::transient(message),
            ErrorKind::OutputLimit => AttemptError::Fatal(SummarizeError::Failed(message)),
            // A server error mid-stream, with or without a status.
            ErrorKind::Other if error.status.is_none_or(retryable_status) => {
                AttemptError::transient(message)
            }
            ErrorKind::Other => AttemptError::Fatal(SummarizeError::Failed(message)),
        }
    }

    async fn status_error(&self, response: reqwest::Response) -> AttemptError {
        let status = response.status();
        let retry_after = retry_after(response.headers());
        let body = read_limited(response, self.summarizer.settings.idle_timeout).await;
        // Redacted before `error_detail` clips it, so a cut cannot split the key.
        let body = match body.cut {
            true => self.redactor.cut_text(&body.text),
            false => self.redactor.text(&body.text),
        };
        let detail = error_detail(&body);
        let code = status.as_u16();
        if matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) {
            // Auth errors often quote part of the key: leave their body out.
            let hint = match &self.summarizer.settings.api_key_env {
                Some(name) => format!("check the key in the environment variable {name}"),
                None => "no key was sent; name the environment variable holding it in summarizer.apiKeyEnv".to_string(),
            };
            return AttemptError::Fatal(SummarizeError::Failed(format!(
                "{} refused the request (HTTP {code}): {hint}",
                self.provider()
            )));
        }
        let message = format!("{} answered HTTP {code}: {detail}", self.provider());
        if classify_error(Some(code), &body) == ErrorKind::Overflow {
            return AttemptError::Fatal(SummarizeError::ContextOverflow(message));
        }
        if retryable_status(code) {
            return AttemptError::Transient {
                message,
                retry_after,
            };
        }
        AttemptError::Fatal(SummarizeError::Failed(message))
    }
}

/// 408, 429 and 5xx (529 is Anthropic's "overloaded").
fn retryable_status(code: u16) -> bool {
    code == 408 || code == 429 || (500..600).contains(&code)
}

/// The delay before attempt `attempt + 1`: 200 ms · 2^(attempt − 1), ±10%.
pub fn backoff(attempt: u32) -> Duration {
    let base = BACKOFF_BASE * 2u32.saturating_pow(attempt.saturating_sub(1));
    base.mul_f64(0.9 + fastrand::f64() * 0.2)
}

/// `retry-after-ms` (OpenAI) or `Retry-After` in seconds or as an HTTP date.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return Some(Duration::from_secs_f64((ms / 1000.0).max(0.0)));
    }
    let value = text(RETRY_AFTER.as_str())?;
    if let Ok(seconds) = value.parse::<f64>() {
        return Duration::try_from_secs_f64(seconds.max(0.0)).ok();
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(
        at.duration_since(std::time::SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

/// The body of an error response as read: up to `MAX_ERROR_BODY` bytes.
struct ErrorBody {
    text: String,
    /// Whether more followed that was not read.
    cut: bool,
}

async fn read_limited(mut response: reqwest::Response, timeout: Duration) -> ErrorBody {
    let mut body = Vec::new();
    let mut cut = false;
    loop {
        match tokio::time::timeout(timeout, response.chunk()).await {
            Ok(Ok(Some(chunk))) => body.extend_from_slice(&chunk),
            Ok(Ok(None)) => break,
            // Broken off or stalled: what arrived is all there is, but it
            // may end anywhere.
            _ => {
                cut = true;
                break;
            }
        }
        if body.len() > MAX_ERROR_BODY {
            body.truncate(MAX_ERROR_BODY);
            cut = true;
            break;
        }
    }
    ErrorBody {
        text: String::from_utf8_lossy(&body).into_owned(),
        cut,
    }
}

/// The human part of an error body: `error.message` (OpenAI, Anthropic,
/// llama.cpp), `message`, or the text itself.
fn error_detail(body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let message = parsed.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("message"))
            .or_else(|| v.get("error").filter(|e| e.is_string()))
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    let text = message.unwrap_or_else(|| body.trim().to_string());
    if text.is_empty() {
        "(no body)".to_string()
    } else {
        clip(&text, MAX_ERROR_DETAIL)
    }
}

/// An error object from a body or stream event as one line: its message,
/// then its type and code, which classification needs
/// ("context_length_exceeded").
pub fn describe_error_value(error: &Value) -> String {
    let Some(object) = error.as_object() else {
        return match error {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
    };
    let mut text = object
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("(no message)")
        .to_string();
    let tags: Vec<String> = ["type", "code"]
        .iter()
        .filter_map(|k| object.get(*k).filter(|v| !v.is_null()).map(|v| (k, v)))
        .map(|(k, v)| match v {
            Value::String(s) => format!("{k}: {s}"),
            other => format!("{k}: {other}"),
        })
        .collect();
    if !tags.is_empty() {
        text.push_str(&format!(" [{}]", tags.join(", ")));
    }
    text
}

/// A reqwest error with its causes ("error sending request for
/// http://127.0.0.1:9/v1/chat/completions: … connection refused"). The URL
/// is shown without user info, query or fragment, where credentials hide.
fn describe(error: reqwest::Error) -> String {
    let url = error.url().map(shown_url);
    let error = error.without_url();
    let mut text = if error.is_timeout() {
        "timed out".to_string()
    } else {
        error.to_string()
    };
    if let Some(url) = url {
        text.push_str(&format!(" for {url}"));
    }
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// A URL as errors may show it: scheme, host, port and path only.
fn shown_url(url: &reqwest::Url) -> String {
    let mut url = url.clone();
    let _ = url.set_username("");
    let _ = url.set_password(None);
    url.set_query(None);
    url.set_fragment(None);
    url.to_string()
}

/// Reports characters received, at most every `REPORT_EVERY`.
struct Reporter<'a> {
    sink: ProgressSink<'a>,
    provider: &'static str,
    reported: usize,
    last: Option<Instant>,
}

impl<'a> Reporter<'a> {
    fn new(sink: ProgressSink<'a>, provider: &'static str) -> Reporter<'a> {
        Reporter {
            sink,
            provider,
            reported: 0,
            last: None,
        }
    }

    fn update(&mut self, chars: usize) {
        if chars > self.reported && self.last.is_none_or(|t| t.elapsed() >= REPORT_EVERY) {
            self.send(chars);
        }
    }

    fn finish(&mut self, chars: usize) {
        if chars != self.reported {
            self.send(chars);
        }
    }

    fn send(&mut self, chars: usize) {
        self.reported = chars;
        self.last = Some(Instant::now());
        (self.sink)(Progress {
            message: format!("{}: {chars} characters received", self.provider),
            percentage: None,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_from_200ms_with_bounded_jitter() {
        for attempt in 1..=3 {
            let nominal = 200.0 * 2f64.powi(attempt as i32 - 1);
            for _ in 0..50 {
                let ms = backoff(attempt).as_secs_f64() * 1000.0;
                assert!(
                    ms >= nominal * 0.9 - 0.001 && ms <= nominal * 1.1 + 0.001,
                    "attempt {attempt}: {ms} ms"
                );
            }
        }
    }

    #[test]
    fn retry_after_reads_seconds_milliseconds_and_dates() {
        let mut headers = HeaderMap::new();
        headers.insert(RETRY_AFTER, HeaderValue::from_static("2"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert("retry-after-ms", HeaderValue::from_static("150"));
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(150)));
        let mut headers = HeaderMap::new();
        let soon = std::time::SystemTime::now() + Duration::from_secs(30);
        headers.insert(
            RETRY_AFTER,
            HeaderValue::from_str(&httpdate::fmt_http_date(soon)).unwrap(),
        );
        let wait = retry_after(&headers).unwrap();
        assert!(
            wait > Duration::from_secs(28) && wait <= Duration::from_secs(30),
            "{wait:?}"
        );
        headers.insert(RETRY_AFTER, HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&headers), None);
    }

    #[test]
    fn error_details_come_from_the_usual_places() {
        assert_eq!(
            error_detail(r#"{"error":{"message":"bad model","type":"invalid_request_error"}}"#),
            "bad model"
        );
        assert_eq!(
            error_detail(
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            ),
            "Overloaded"
        );
        assert_eq!(error_detail(r#"{"error":"flat"}"#), "flat");
        assert_eq!(error_detail("  plain text "), "plain text");
        assert_eq!(error_detail(""), "(no body)");
    }

    #[test]
    fn urls_in_errors_lose_their_credentials() {
        let url = reqwest::Url::parse("https://me:pw@h.example:8443/v1/chat?key=k#f").unwrap();
        assert_eq!(shown_url(&url), "https://h.example:8443/v1/chat");
    }

    #[test]
    fn unusable_replies_are_named() {
        let prompt = Prompt {
            system: "Summarize the coding conversation that follows for another assistant.".into(),
            user: "<conversation>\n</conversation>".into(),
        };
        let reply = |text: &str, finish| Reply {
            text: text.into(),
            finish,
            ..Reply::default()
        };
        let check = |r: Reply, needle: &str| match usable(&r, &prompt) {
            Err(SummarizeError::Unusable(m)) => assert!(m.contains(needle), "{m}"),
            other => panic!("expected unusable ({needle}), got {other:?}"),
        };
        check(reply("  \n", Some(Finish::Stop)), "empty");
        check(reply("## Goal\n- x", Some(Finish::Length)), "length");
        check(
            reply("ok", Some(Finish::Other("content_filter".into()))),
            "content_filter",
        );
        check(
            reply(
                "Summarize the coding conversation that follows for another assistant",
                None,
            ),
            "instructions",
        );
        assert!(usable(&reply("## Goal\n- fix it", Some(Finish::Stop)), &prompt).is_ok());
    }
}
