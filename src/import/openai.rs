//! OpenAI chat-completions message arrays (`[{role, content, tool_calls}]`),
//! bare or under `messages`, or SWE-agent's `.traj` `history` (whose tool
//! messages name their calls in `tool_call_ids`).

use serde_json::Value;

use crate::conversation::{Content, Message, MessageBody, ToolCall, Usage};
use crate::store::SessionSettings;
use crate::transcript::parts::{content_of, Dialect};
use crate::transcript::{builder, Emitter, Format, Imported};

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
    let mut out = Emitter::new(Format::OPENAI);
    let mut first_error = None;
    let mut system_prompt = false;
    for (index, item) in array.iter().enumerate() {
        // Array positions stand in for line numbers, 1-based like them.
        let number = index + 1;
        match messages_from(item) {
            Ok(messages) => {
                for message in messages {
                    // A leading system message is the session's system prompt.
                    let leading = !out.has_messages() && !system_prompt;
                    match (&message.body, leading) {
                        (MessageBody::System { content }, true) => {
                            system_prompt = true;
                            out.settings(SessionSettings {
                                system_prompt: Some(content.to_string()),
                                ..SessionSettings::default()
                            })
                        }
                        _ => {
                            let id = item.get("id").and_then(Value::as_str);
                            out.message(number, id, message, false);
                        }
                    }
                }
            }
            Err(why) => {
                first_error.get_or_insert_with(|| why.clone());
                out.skip_because(number, "unreadable messages", why);
            }
        }
    }
    if !out.has_messages() && !system_prompt && !array.is_empty() {
        return Err(format!(
            "not an OpenAI chat message array: none of its {} items is a message ({})",
            array.len(),
            first_error.unwrap_or_default()
        ));
    }
    let events = out.drain();
    Ok(builder::collect(Format::OPENAI, events, out.skipped))
}

/// Usually one message; a SWE-agent observation answering several calls
/// becomes one result per call.
fn messages_from(item: &Value) -> Result<Vec<Message>, String> {
    let role = item
        .get("role")
        .and_then(Value::as_str)
        .ok_or("no `role`")?;
    let content: Content = content_of(item.get("content"), Dialect::Chat);
    let usage = item.get("usage").and_then(usage_from);
    let body = match role {
        "system" | "developer" => MessageBody::System { content },
        "user" => MessageBody::User { content },
        "assistant" => MessageBody::Assistant {
            content,
            thinking: item
                .get("reasoning_content")
                .or_else(|| item.get("thinking"))
                .and_then(Value::as_str)
                .map(str::to_string),
            tool_calls: item
                .get("tool_calls")
                .and_then(Value::as_array)
                .map(|calls| calls.iter().filter_map(tool_call_from).collect())
                .unwrap_or_default(),
            model: item
                .get("model")
                .and_then(Value::as_str)
                .map(str::to_string),
        },
        "tool" | "function" => {
            let ids: Vec<String> = match item.get("tool_call_id").and_then(Value::as_str) {
                Some(id) => vec![id.to_string()],
                None => item
                    .get("tool_call_ids")
                    .and_then(Value::as_array)
                    .map(|ids| {
                        ids.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_string)
                            .collect()
                    })
                    .unwrap_or_default(),
            };
            if ids.is_empty() {
                return Err("tool message without `tool_call_id`".into());
            }
            let name = item.get("name").and_then(Value::as_str).map(str::to_string);
            return Ok(ids
                .into_iter()
                .map(|id| Message {
                    id: String::new(),
                    body: MessageBody::Tool {
                        tool_call_id: id,
                        tool_name: name.clone(),
                        content: content.clone(),
                        is_error: false,
                    },
                    usage: None,
                    extra: Default::default(),
                })
                .collect());
        }
        other => return Err(format!("unknown role `{other}`")),
    };
    Ok(vec![Message {
        id: String::new(),
        body,
        usage,
        extra: Default::default(),
    }])
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
    let cached = usage
        .pointer("/prompt_tokens_details/cached_tokens")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    // prompt_tokens already includes the cached ones.
    Some(Usage {
        input: n("prompt_tokens").saturating_sub(cached),
        output: n("completion_tokens"),
        cache_read: cached,
        cache_write: 0,
    })
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
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a.rs\"}"}}],
             "usage": {"prompt_tokens": 100, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 60}}},
            {"role": "tool", "tool_call_id": "c1", "content": "fn a(){}"},
            {"role": "wizard", "content": "?"}
        ]))
        .unwrap();
        assert_eq!(imported.settings.system_prompt.as_deref(), Some("sys"));
        let messages: Vec<&Message> = imported.messages().collect();
        assert_eq!(messages.len(), 3);
        assert_eq!(
            messages[1].tool_calls()[0].arguments,
            json!({"path": "a.rs"})
        );
        assert_eq!(
            messages[1].usage.unwrap().context_tokens(),
            105,
            "cached counted once"
        );
        assert_eq!(
            imported.skipped.reasons(),
            ["unreadable messages: 1 (first at line 5: unknown role `wizard`)"]
        );
    }

    #[test]
    fn swe_agent_observations_answer_by_tool_call_ids() {
        let imported = from_value(&json!({"history": [
            {"role": "user", "content": "fix it"},
            {"role": "assistant", "content": "look", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}}]},
            {"role": "tool", "content": "a.py", "tool_call_ids": ["c1"], "message_type": "observation"}
        ]}))
        .unwrap();
        let last = imported.messages().last().unwrap();
        assert_eq!(last.answers(), Some("c1"));
    }
}
