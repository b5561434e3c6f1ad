//! OpenAI-compatible chat completions (`POST {baseUrl}/chat/completions`):
//! OpenAI, OpenRouter, vLLM, llama.cpp's server, Ollama, LM Studio.
//! Streaming asks for usage in the last chunk (`stream_options`);
//! reasoning is never requested and reasoning deltas are ignored.

use reqwest::header::{HeaderMap, HeaderValue, AUTHORIZATION};
use serde_json::{json, Value};

use super::http::{Finish, ProviderError, Reply, Settings, Wire};
use super::prompt::Prompt;
use super::sse::SseEvent;
use crate::conversation::Usage;

pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

pub struct OpenAi;

impl Wire for OpenAi {
    fn provider(&self) -> &'static str {
        "openai"
    }

    fn endpoint(&self, base_url: &str) -> String {
        format!("{base_url}/chat/completions")
    }

    fn headers(&self, key: Option<&str>) -> Result<HeaderMap, String> {
        let mut headers = HeaderMap::new();
        if let Some(key) = key {
            let mut value = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
                "the API key contains characters that cannot go in an HTTP header".to_string()
            })?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        Ok(headers)
    }

    fn body(&self, settings: &Settings, prompt: &Prompt, stream: bool) -> Value {
        let mut body = json!({
            "messages": [
                {"role": "system", "content": prompt.system},
                {"role": "user", "content": prompt.user},
            ],
            "max_tokens": settings.max_tokens,
            "stream": stream,
        });
        if let Some(model) = &settings.model {
            body["model"] = json!(model);
        }
        if let Some(temperature) = settings.temperature {
            body["temperature"] = json!(temperature);
        }
        if let Some(seed) = settings.seed {
            body["seed"] = json!(seed);
        }
        if stream {
            body["stream_options"] = json!({"include_usage": true});
        }
        body
    }

    fn complete(&self, body: &Value) -> Result<Reply, ProviderError> {
        if let Some(error) = body.get("error") {
            return Err(provider_error(error));
        }
        let choice = &body["choices"][0];
        Ok(Reply {
            text: choice["message"]["content"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            usage: usage(&body["usage"]),
            finish: choice["finish_reason"].as_str().map(finish),
            done: true,
        })
    }

    fn event(&self, event: &SseEvent, reply: &mut Reply) -> Result<(), ProviderError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            reply.done = true;
            return Ok(());
        }
        let Ok(chunk) = serde_json::from_str::<Value>(data) else {
            return Err(ProviderError {
                status: None,
                // Whole: the caller redacts the key before clipping it.
                message: format!("a stream event is not JSON: {data}"),
            });
        };
        if let Some(error) = chunk.get("error") {
            return Err(provider_error(error));
        }
        if let Some(choice) = chunk["choices"].get(0) {
            if let Some(text) = choice["delta"]["content"].as_str() {
                reply.text.push_str(text);
            }
            if let Some(reason) = choice["finish_reason"].as_str() {
                reply.finish = Some(finish(reason));
            }
        }
        if let Some(usage) = usage(&chunk["usage"]) {
            reply.usage = Some(usage);
        }
        Ok(())
    }
}

fn finish(reason: &str) -> Finish {
    match reason {
        "stop" => Finish::Stop,
        "length" => Finish::Length,
        other => Finish::Other(other.to_string()),
    }
}

/// OpenAI usage: cached prompt tokens are reported inside `prompt_tokens`.
fn usage(value: &Value) -> Option<Usage> {
    let prompt = value["prompt_tokens"].as_u64()?;
    let cached = value
        .pointer("/prompt_tokens_details/cached_tokens")
        .and_then(Value::as_u64)
        .unwrap_or(0)
        .min(prompt);
    Some(Usage {
        input: prompt - cached,
        output: value["completion_tokens"].as_u64().unwrap_or(0),
        cache_read: cached,
        cache_write: 0,
    })
}

fn provider_error(error: &Value) -> ProviderError {
    let status = error["code"]
        .as_u64()
        .or_else(|| error["status"].as_u64())
        .and_then(|c| u16::try_from(c).ok());
    ProviderError {
        status,
        message: super::http::describe_error_value(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summarize::sse::SseDecoder;

    fn settings() -> Settings {
        Settings {
            model: Some("m".into()),
            base_url: "http://x/v1".into(),
            api_key_env: None,
            max_tokens: 64,
            temperature: Some(0.0),
            seed: Some(7),
            extra_body: Default::default(),
            idle_timeout: std::time::Duration::from_secs(1),
            stream: true,
        }
    }

    #[test]
    fn the_body_asks_for_a_streamed_summary_with_usage() {
        let prompt = Prompt {
            system: "sys".into(),
            user: "usr".into(),
        };
        let body = OpenAi.body(&settings(), &prompt, true);
        assert_eq!(
            body,
            json!({
                "model": "m",
                "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "usr"}],
                "max_tokens": 64, "temperature": 0.0, "seed": 7,
                "stream": true, "stream_options": {"include_usage": true}
            })
        );
        let body = OpenAi.body(&settings(), &prompt, false);
        assert!(body.get("stream_options").is_none());
        assert_eq!(
            OpenAi.endpoint("http://x/v1"),
            "http://x/v1/chat/completions"
        );
    }

    #[test]
    fn a_llama_server_stream_folds_into_a_reply() {
        // As llama-server sends it (reasoning delta added to show it is ignored).
        let stream = concat!(
            "data: {\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null}}]}\n\n",
            "data: {\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":{\"reasoning_content\":\"hmm\"}}]}\n\n",
            "data: {\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":{\"content\":\"## Goal\"}}]}\n\n",
            "data: {\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":{\"content\":\" fix\"}}]}\n\n",
            "data: {\"choices\":[{\"finish_reason\":\"stop\",\"index\":0,\"delta\":{}}]}\n\n",
            "data: {\"choices\":[],\"usage\":{\"completion_tokens\":3,\"prompt_tokens\":120,\"total_tokens\":123,\"prompt_tokens_details\":{\"cached_tokens\":20}}}\n\n",
            "data: [DONE]\n\n",
        );
        let mut reply = Reply::default();
        for event in SseDecoder::default().push(stream.as_bytes()) {
            OpenAi.event(&event, &mut reply).unwrap();
        }
        assert_eq!(
            reply,
            Reply {
                text: "## Goal fix".into(),
                usage: Some(Usage {
                    input: 100,
                    output: 3,
                    cache_read: 20,
                    cache_write: 0
                }),
                finish: Some(Finish::Stop),
                done: true,
            }
        );
    }

    #[test]
    fn complete_bodies_and_errors() {
        let reply = OpenAi
            .complete(&json!({
                "choices": [{"message": {"role": "assistant", "content": "sum"}, "finish_reason": "length"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5}
            }))
            .unwrap();
        assert_eq!(reply.text, "sum");
        assert_eq!(reply.finish, Some(Finish::Length));
        assert_eq!(reply.usage.unwrap().input, 10);
        let error = OpenAi
            .complete(&json!({"error": {"code": 503, "message": "busy"}}))
            .unwrap_err();
        assert_eq!(error.status, Some(503));
        assert!(error.message.contains("busy"));
    }
}
