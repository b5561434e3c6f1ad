//! Credentials written where compactd would send or show them: in the base
//! URL, in the extra request body, or the key's own value anywhere in the
//! configuration. Messages name what was found, never its value.

use serde_json::Value;

use crate::redact::Redactor;

const ADVICE: &str =
    "put the key in an environment variable and name that variable in `summarizer.apiKeyEnv`";

/// Field and parameter names that carry credentials, compared
/// lower-case with only letters and digits kept (`X-Api-Key` → `xapikey`).
const NAMES: [&str; 13] = [
    "key",
    "token",
    "auth",
    "bearer",
    "password",
    "passwd",
    "pwd",
    "secret",
    "sig",
    "signature",
    "credential",
    "credentials",
    "authorization",
];
/// … and names ending like these (`x_api_key`, `access_token`).
const ENDINGS: [&str; 14] = [
    "apikey",
    "accesskey",
    "secretkey",
    "privatekey",
    "apitoken",
    "accesstoken",
    "authtoken",
    "bearertoken",
    "sessiontoken",
    "refreshtoken",
    "secret",
    "password",
    "credentials",
    "authorization",
];

/// The credential word `name` matches, if any.
fn credential_name(name: &str) -> Option<&'static str> {
    let plain: String = name
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    NAMES
        .iter()
        .find(|n| **n == plain)
        .or_else(|| ENDINGS.iter().find(|e| plain.ends_with(**e)))
        .copied()
}

pub fn check_base_url(text: &str) -> Result<(), String> {
    let url = reqwest::Url::parse(text)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https") && u.has_host())
        .ok_or("must be an http:// or https:// URL")?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(format!(
            "must not hold credentials (`user:password@`); {ADVICE}"
        ));
    }
    if let Some(word) = url
        .query_pairs()
        .find_map(|(name, _)| credential_name(&name))
    {
        return Err(format!(
            "must not hold credentials in its query string (a parameter named like `{word}`); {ADVICE}"
        ));
    }
    Ok(())
}

pub fn check_extra_body(extra: &Value) -> Result<(), String> {
    match credential_field(extra) {
        Some(word) => Err(format!(
            "must not hold credentials (a field named like `{word}`); {ADVICE}"
        )),
        None => Ok(()),
    }
}

/// The credential word of a field name anywhere in `value`.
fn credential_field(value: &Value) -> Option<&'static str> {
    match value {
        Value::Object(map) => map
            .iter()
            .find_map(|(name, v)| credential_name(name).or_else(|| credential_field(v))),
        Value::Array(items) => items.iter().find_map(credential_field),
        _ => None,
    }
}

/// Refuses the key's value (or a piece of it) anywhere in `layer` when
/// the variable `env_name` holds a key: it would be sent, stored or
/// echoed from there. Errs with the field (its names redacted, in case
/// one is the key) and why.
pub fn check_key_value(layer: &Value, env_name: &str) -> Result<(), (String, String)> {
    let Some(key) = std::env::var(env_name)
        .ok()
        .map(|k| k.trim().to_string())
        .filter(|k| !k.is_empty())
    else {
        return Ok(());
    };
    let redactor = Redactor::new(Some(&key));
    let mut path = Vec::new();
    if find(layer, &redactor, &mut path) {
        let field: Vec<String> = path.iter().map(|name| redactor.text(name)).collect();
        return Err((
            field.join("."),
            format!("holds the value of the environment variable {env_name} (the API key); keys are sent only from the environment"),
        ));
    }
    Ok(())
}

/// Whether `value` holds a piece of the key; `path` is left at it.
fn find(value: &Value, redactor: &Redactor, path: &mut Vec<String>) -> bool {
    match value {
        Value::String(text) => redactor.finds(text),
        Value::Object(map) => map.iter().any(|(name, v)| {
            path.push(name.clone());
            let is_key_env = path.len() == 2 && path[0] == "summarizer" && name == "apiKeyEnv";
            let found = !is_key_env && (redactor.finds(name) || find(v, redactor, path));
            if !found {
                path.pop();
            }
            found
        }),
        Value::Array(items) => items.iter().enumerate().any(|(i, v)| {
            path.push(i.to_string());
            let found = find(v, redactor, path);
            if !found {
                path.pop();
            }
            found
        }),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_names_and_ordinary_options() {
        for name in [
            "api_key",
            "X-Api-Key",
            "key",
            "token",
            "access_token",
            "Authorization",
            "client_secret",
            "sig",
        ] {
            assert!(credential_name(name).is_some(), "{name}");
        }
        for name in [
            "max_tokens",
            "max_completion_tokens",
            "budget_tokens",
            "keep_alive",
            "n_keep",
            "top_k",
            "chat_template_kwargs",
            "frequency_penalty",
            "api-version",
            "cache_prompt",
        ] {
            assert_eq!(credential_name(name), None, "{name}");
        }
    }
}
