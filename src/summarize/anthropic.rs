//! Anthropic's Messages API (`POST {baseUrl}/v1/messages`), streamed by
//! default. Extended thinking is explicitly disabled; usage is assembled
//! from `message_start` (input, cache) and `message_delta` (output).

use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{json, Value};

use super::http::{describe_error_value, Finish, ProviderError, Reply, Settings, Wire};
use super::prompt::Prompt;
use super::sse::SseEvent;
use crate::conversation::Usage;

pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
const API_VERSION: &str = "2023-06-01";

pub struct Anthropic;

impl Wire for Anthropic {
    fn provider(&self) -> &'static str {
        "anthropic"
    }

    fn endpoint(&self, base_url: &str) -> String {
        if base_url.ends_with("/v1") {
            format!("{base_url}/messages")
        } else {
            format!("{base_url}/v1/messages")
        }
    }

    fn headers(&self, key: Option<&str>) -> Result<HeaderMap, String> {
        let mut headers = HeaderMap::new();
        headers.insert("anthropic-version", HeaderValue::from_static(API_VERSION));
        if let Some(key) = key {
            let mut value = HeaderValue::from_str(key).map_err(|_| {
                "the API key contains characters that cannot go in an HTTP header".to_string()
            })?;
            value.set_sensitive(true);
            headers.insert("x-api-key", value);
        }
        Ok(headers)
    }

    fn body(&self, settings: &Settings, prompt: &Prompt, stream: bool) -> Value {
        let mut body = json!({
            "model": settings.model.clone().unwrap_or_default(),
            "system": prompt.system,
            "messages": [{"role": "user", "content": prompt.user}],
            "max_tokens": settings.max_tokens,
            "stream": stream,
            "thinking": {"type": "disabled"},
        });
        if let Some(temperature) = settings.temperature {
            body["temperature"] = json!(temperature);
        }
        body
    }

    fn complete(&self, body: &Value) -> Result<Reply, ProviderError> {
        if body["type"] == "error" {
            return Err(provider_error(&body["error"]));
        }
        let text = body["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|block| block["type"] == "text")
            .filter_map(|block| block["text"].as_str())
            .collect::<String>();
        let mut usage = None;
        merge_usage(&mut usage, &body["usage"]);
        Ok(Reply {
            text,
            usage,
            finish: body["stop_reason"].as_str().map(finish),
            done: true,
        })
    }

    fn event(&self, event: &SseEvent, reply: &mut Reply) -> Result<(), ProviderError> {
        let Ok(data) = serde_json::from_str::<Value>(&event.data) else {
            return Err(ProviderError {
                status: None,
                // Whole: the caller redacts the key before clipping it.
                message: format!("a stream event is not JSON: {}", event.data),
            });
        };
        match data["type"].as_str().unwrap_or(&event.event) {
            "message_start" => merge_usage(&mut reply.usage, &data["message"]["usage"]),
            "content_block_delta" if data["delta"]["type"] == "text_delta" => {
                reply
                    .text
                    .push_str(data["delta"]["text"].as_str().unwrap_or_default());
            }
            "message_delta" => {
                if let Some(reason) = data["delta"]["stop_reason"].as_str() {
                    reply.finish = Some(finish(reason));
                }
                merge_usage(&mut reply.usage, &data["usage"]);
            }
            "message_stop" => reply.done = true,
            "error" => return Err(provider_error(&data["error"])),
            _ => {} // ping, content_block_start/stop, thinking deltas
        }
        Ok(())
    }
}

fn finish(reason: &str) -> Finish {
    match reason {
        "end_turn" | "stop_sequence" => Finish::Stop,
        "max_tokens" | "model_context_window_exceeded" => Finish::Length,
        other => Finish::Other(other.to_string()),
    }
}

/// Usage arrives in parts; later fields overwrite earlier ones.
fn merge_usage(usage: &mut Option<Usage>, value: &Value) {
    if !value.is_object() {
        return;
    }
    let current = usage.get_or_insert_with(Usage::default);
    let field = |name: &str| value[name].as_u64();
    if let Some(n) = field("input_tokens") {
        current.input = n;
    }
    if let Some(n) = field("output_tokens") {
        current.output = n;
    }
    if let Some(n) = field("cache_read_input_tokens") {
        current.cache_read = n;
    }
    if let Some(n) = field("cache_creation_input_tokens") {
        current.cache_write = n;
    }
}

/// An error object; its type stands in for the HTTP status a stream
/// cannot carry, so retries treat it like the status.
fn provider_error(error: &Value) -> ProviderError {
    let status = match error["type"].as_str() {
        Some("invalid_request_error") => Some(400),
        Some("authentication_error") => Some(401),
        Some("permission_error") => Some(403),
        Some("not_found_error") => Some(404),
        Some("request_too_large") => Some(413),
        Some("rate_limit_error") => Some(429),
        Some("api_error") => Some(500),
        Some("overloaded_error") => Some(529),
        _ => None,
    };
    ProviderError {
        status,
        message: describe_error_value(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summarize::sse::SseDecoder;

    #[test]
    fn a_message_stream_folds_into_a_reply() {
        let stream = concat!(
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":{\"input_tokens\":25,\"cache_read_input_tokens\":5,\"cache_creation_input_tokens\":0,\"output_tokens\":1}}}\n\n",
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
            "event: ping\ndata: {\"type\": \"ping\"}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"## Goal\"}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"\\n- fix\"}}\n\n",
            "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
            "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":9}}\n\n",
            "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
        );
        let mut reply = Reply::default();
        for event in SseDecoder::default().push(stream.as_bytes()) {
            Anthropic.event(&event, &mut reply).unwrap();
        }
        assert_eq!(
            reply,
            Reply {
                text: "## Goal\n- fix".into(),
                usage: Some(Usage {
                    input: 25,
                    output: 9,
                    cache_read: 5,
                    cache_write: 0
                }),
                finish: Some(Finish::Stop),
                done: true
            }
        );
    }

    #[test]
    fn error_events_carry_a_status_for_their_type() {
        let event = SseEvent {
            event: "error".into(),
            data: r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
                .into(),
        };
        let error = Anthropic.event(&event, &mut Reply::default()).unwrap_err();
        assert_eq!(error.status, Some(529));
        assert_eq!(error.message, "Overloaded [type: overloaded_error]");
    }

    #[test]
    fn the_body_disables_thinking_and_the_endpoint_takes_either_base() {
        let settings = Settings {
            model: Some("claude-haiku-4-5".into()),
            base_url: String::new(),
            api_key_env: None,
            max_tokens: 100,
            temperature: None,
            seed: Some(1),
            extra_body: Default::default(),
            idle_timeout: std::time::Duration::from_secs(1),
            stream: true,
        };
        let prompt = Prompt {
            system: "s".into(),
            user: "u".into(),
        };
        let body = Anthropic.body(&settings, &prompt, true);
        assert_eq!(body["thinking"], json!({"type": "disabled"}));
        assert_eq!(body["system"], "s");
        assert!(body.get("seed").is_none(), "the Messages API has no seed");
        assert_eq!(
            Anthropic.endpoint("https://api.anthropic.com"),
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(Anthropic.endpoint("http://h/v1"), "http://h/v1/messages");
        let reply = Anthropic
            .complete(&json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}], "stop_reason": "max_tokens", "usage": {"input_tokens": 3, "output_tokens": 4}}))
            .unwrap();
        assert_eq!(reply.text, "ab");
        assert_eq!(reply.finish, Some(Finish::Length));
    }
}
