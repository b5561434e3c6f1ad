//! Asking the provider what a compacted history really costs
//! (`summarizer.recount`): Anthropic's free `count_tokens` endpoint
//! (`POST {baseUrl}/v1/messages/count_tokens`) counts the history exactly
//! as a request would send it. OpenAI's API has no such endpoint, and a
//! probe request would be a paid call to a model, so there the answer is a
//! note saying so, and `tokensAfter` stays compactd's estimate.

use std::time::Duration;

use serde_json::{json, Value};

use super::anthropic;
use crate::config::{SummarizerConfig, SummarizerProvider};
use crate::conversation::{Message, MessageBody, PartKind, Role};
use crate::redact::Redactor;

/// What the provider said a request with this history would cost, or
/// why it was not asked.
pub async fn recount(
    config: &SummarizerConfig,
    model: Option<&str>,
    system: Option<&str>,
    tools: &[Value],
    messages: &[Message],
) -> Result<u64, String> {
    match config.provider {
        SummarizerProvider::Anthropic => {}
        SummarizerProvider::Openai => {
            return Err(
                "the OpenAI API has no endpoint that counts a prompt's tokens; tokensAfter is compactd's estimate"
                    .into(),
            )
        }
        _ => {
            return Err(
                "a recount needs the anthropic summarizer (its count_tokens endpoint); tokensAfter is compactd's estimate"
                    .into(),
            )
        }
    }
    let key = match config.api_key_env.as_deref().map(std::env::var) {
        Some(Ok(key)) if !key.trim().is_empty() => Some(key.trim().to_string()),
        Some(_) => return Err("the recount's key (summarizer.apiKeyEnv) is not set".into()),
        None => None,
    };
    let redactor = Redactor::new(key.as_deref());
    let url = endpoint(config);
    let body = request_body(config, model, system, tools, messages);
    let client = reqwest::Client::builder()
        .timeout(Duration::from_millis(config.timeout_ms.max(1)))
        .build()
        .map_err(|e| format!("the recount's HTTP client: {e}"))?;
    let mut request = client
        .post(&url)
        .header("anthropic-version", "2023-06-01")
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(key) = &key {
        request = request.header("x-api-key", key);
    }
    let response = request
        .send()
        .await
        .map_err(|e| redactor.text(&format!("the recount failed: {e}")))?;
    let status = response.status();
    let text = response
        .text()
        .await
        .map_err(|e| redactor.text(&format!("the recount's answer: {e}")))?;
    let answer: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    match answer["input_tokens"].as_u64() {
        Some(tokens) if status.is_success() => Ok(tokens),
        _ => Err(redactor.clip(
            &format!(
                "the recount was refused ({status}): {}",
                answer["error"]["message"]
            ),
            300,
        )),
    }
}

/// `count_tokens` under the summarizer's base URL (with or without `/v1`).
fn endpoint(config: &SummarizerConfig) -> String {
    let base = config
        .base_url
        .as_deref()
        .unwrap_or(anthropic::DEFAULT_BASE_URL)
        .trim_end_matches('/');
    match base.ends_with("/v1") {
        true => format!("{base}/messages/count_tokens"),
        false => format!("{base}/v1/messages/count_tokens"),
    }
}

/// The request the compacted history would be: the conversation's model
/// when it is a Claude model (else the summarizer's), the system prompt,
/// the tools in Anthropic's shape (others would be refused), the messages.
fn request_body(
    config: &SummarizerConfig,
    model: Option<&str>,
    system: Option<&str>,
    tools: &[Value],
    messages: &[Message],
) -> Value {
    let model = model
        .filter(|m| m.to_ascii_lowercase().contains("claude"))
        .or(config.model.as_deref())
        .unwrap_or_default();
    let mut body = json!({"model": model, "messages": anthropic_messages(messages)});
    if let Some(system) = system {
        body["system"] = system.into();
    }
    let tools: Vec<&Value> = tools
        .iter()
        .filter(|t| t.get("input_schema").is_some())
        .collect();
    if !tools.is_empty() {
        body["tools"] = json!(tools);
    }
    body
}

/// compactd's messages as Anthropic Messages: parts as blocks (thinking
/// first, with its signature), calls as `tool_use`, results as
/// `tool_result` blocks of a user message, neighbours of one role merged.
pub fn anthropic_messages(messages: &[Message]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for message in messages {
        let mut blocks = blocks(message);
        let role = match &message.body {
            MessageBody::System { .. } => continue,
            MessageBody::Tool {
                tool_call_id,
                is_error,
                ..
            } => {
                let result = json!({"type": "tool_result", "tool_use_id": tool_call_id,
                    "content": blocks, "is_error": is_error});
                blocks = vec![result];
                "user"
            }
            MessageBody::Assistant { tool_calls, .. } => {
                for call in tool_calls {
                    blocks.push(json!({"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}));
                }
                "assistant"
            }
            MessageBody::User { .. } => "user",
        };
        match out.last_mut() {
            Some(last) if last["role"] == role => {
                if let Some(existing) = last["content"].as_array_mut() {
                    existing.extend(blocks);
                }
            }
            _ => out.push(json!({"role": role, "content": blocks})),
        }
    }
    out
}

fn blocks(message: &Message) -> Vec<Value> {
    if message.parts().is_empty() {
        return match message.text() {
            "" => Vec::new(),
            text => vec![json!({"type": "text", "text": text})],
        };
    }
    let mut thinking = Vec::new();
    let mut rest = Vec::new();
    for part in message.parts() {
        let block = match part.kind() {
            PartKind::Text => json!({"type": "text", "text": part.text_of().unwrap_or("")}),
            PartKind::Image | PartKind::Document => {
                let kind = if part.kind() == PartKind::Image {
                    "image"
                } else {
                    "document"
                };
                match (part.data(), part.str_field("url")) {
                    (Some(data), _) => json!({"type": kind, "source": {"type": "base64",
                        "media_type": part.media_type().unwrap_or("image/png"), "data": data}}),
                    (None, Some(url)) => {
                        json!({"type": kind, "source": {"type": "url", "url": url}})
                    }
                    _ => continue,
                }
            }
            PartKind::Thinking => {
                json!({"type": "thinking", "thinking": part.thinking().unwrap_or(""),
                "signature": part.str_field("signature").unwrap_or("")})
            }
            PartKind::RedactedThinking => {
                json!({"type": "redacted_thinking", "data": part.data().unwrap_or("")})
            }
            PartKind::Other => continue,
        };
        match (part.kind(), message.role()) {
            (PartKind::Thinking | PartKind::RedactedThinking, Role::Assistant) => {
                thinking.push(block)
            }
            _ => rest.push(block),
        }
    }
    thinking.extend(rest);
    thinking
}
