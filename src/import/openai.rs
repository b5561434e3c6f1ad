//! OpenAI chat-completions message arrays (`[{role, content, tool_calls}]`),
//! bare or under `messages` (or SWE-agent's `history`).

use serde_json::Value;

use super::Imported;
use crate::conversation::{Message, MessageBody, ToolCall, Usage};

pub fn from_value(value: &Value) -> Result<Imported, String> {
    let array = match value {
        Value::Array(items) => items,
        Value::Object(map) => map
            .get("messages")
            .or_else(|| map.get("history"))
            .and_then(Value::as_array)
            .ok_or("a JSON object without a `messages` or `history` array")?,
        _ => return Err("JSON that is neither an array nor an object".into()),
    };
    let mut imported = Imported {
        format: "openai",
        ..Imported::default()
    };
    for (index, item) in array.iter().enumerate() {
        match message_from(item) {
            Ok(Some(message)) => imported.messages.push(message),
            Ok(None) => {}
            Err(why) => imported.skipped.push(format!("message {index}: {why}")),
        }
    }
    if imported.messages.is_empty() && !array.is_empty() {
        return Err(format!(
            "no chat messages found ({} items skipped: {})",
            imported.skipped.len(),
            imported.skipped.first().cloned().unwrap_or_default()
        ));
    }
    // A leading system message is the session's system prompt.
    if let Some(MessageBody::System { content }) = imported.messages.first().map(|m| &m.body) {
        imported.system_prompt = Some(content.clone());
        imported.messages.remove(0);
    }
    Ok(imported)
}

fn message_from(item: &Value) -> Result<Option<Message>, String> {
    let role = item
        .get("role")
        .and_then(Value::as_str)
        .ok_or("no `role`")?;
    let content = content_text(item.get("content"));
    let id = item
        .get("id")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let body = match role {
        "system" | "developer" => MessageBody::System { content },
        "user" => MessageBody::User { content },
        "assistant" => {
            let tool_calls = item
                .get("tool_calls")
                .and_then(Value::as_array)
                .map(|calls| calls.iter().filter_map(tool_call_from).collect())
                .unwrap_or_default();
            MessageBody::Assistant {
                content,
                thinking: item
                    .get("reasoning_content")
                    .or_else(|| item.get("thinking"))
                    .and_then(Value::as_str)
                    .map(str::to_string),
                tool_calls,
                model: None,
            }
        }
        "tool" | "function" => MessageBody::Tool {
            tool_call_id: item
                .get("tool_call_id")
                .and_then(Value::as_str)
                .ok_or("tool message without `tool_call_id`")?
                .to_string(),
            tool_name: item.get("name").and_then(Value::as_str).map(str::to_string),
            content,
            is_error: false,
        },
        other => return Err(format!("unknown role `{other}`")),
    };
    let usage = item.get("usage").and_then(usage_from);
    Ok(Some(Message { id, body, usage }))
}

fn tool_call_from(call: &Value) -> Option<ToolCall> {
    let function = call.get("function")?;
    let arguments = match function.get("arguments") {
        Some(Value::String(s)) => {
            serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone()))
        }
        Some(other) => other.clone(),
        None => Value::Null,
    };
    Some(ToolCall {
        id: call
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        name: function.get("name").and_then(Value::as_str)?.to_string(),
        arguments,
    })
}

fn usage_from(usage: &Value) -> Option<Usage> {
    let n = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
    Some(Usage {
        input: n("prompt_tokens"),
        output: n("completion_tokens"),
        cache_read: usage
            .pointer("/prompt_tokens_details/cached_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0),
        cache_write: 0,
    })
}

/// Text of a content field: a string, or an array of parts whose text
/// parts are joined.
pub fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str).or_else(|| p.as_str()))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_tool_calls_and_system_prompt() {
        let imported = from_value(&json!([
            {"role": "system", "content": "sys"},
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a.rs\"}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "fn a(){}"},
            {"role": "wizard", "content": "?"}
        ]))
        .unwrap();
        assert_eq!(imported.system_prompt.as_deref(), Some("sys"));
        assert_eq!(imported.messages.len(), 3);
        assert_eq!(
            imported.messages[1].tool_calls()[0].arguments,
            json!({"path": "a.rs"})
        );
        assert_eq!(imported.skipped, ["message 4: unknown role `wizard`"]);
    }
}
