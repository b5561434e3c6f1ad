//! Reading the configuration's layers: defaults < user `compactd.toml` <
//! workspace `compactd.toml` < `initializationOptions`, each checked on its
//! own (errors name the file), keys refused wherever they are written.

use std::path::Path;

use super::credentials;
use super::settings::{Config, CONFIG_FILE_NAME, MIN_MAX_FRAME_BYTES};
use super::summarizer::SummarizerProvider;

impl Config {
    /// Resolves configuration from every layer. `workspace_root` is where a
    /// project `compactd.toml` may live; `user_dir` the user config dir
    /// (`None` skips it, as tests do).
    pub fn resolve(
        init_options: Option<&serde_json::Value>,
        workspace_root: Option<&Path>,
        user_dir: Option<&Path>,
    ) -> Result<Config, ConfigError> {
        let mut merged = serde_json::Value::Object(Default::default());
        let files = [
            user_dir.map(|d| d.join(CONFIG_FILE_NAME)),
            workspace_root.map(|d| d.join(CONFIG_FILE_NAME)),
        ];
        for path in files.into_iter().flatten() {
            if let Some(layer) = read_toml_layer(&path)? {
                merge(&mut merged, layer);
            }
        }
        if let Some(options) = init_options {
            if !options.is_null() {
                merge(&mut merged, options.clone());
            }
        }
        reject_inline_keys(&merged, "configuration")?;
        let mut config: Config = from_value(merged, "configuration")?;
        config.summarizer.max_tokens = config
            .summarizer
            .max_tokens
            .or(Some(default_summary_max_tokens(config.reserve_tokens)));
        const OWN_FIELDS: [&str; 7] = [
            "messages",
            "system",
            "stream",
            "stream_options",
            "model",
            "max_tokens",
            "temperature",
        ];
        if let Some(field) = config
            .summarizer
            .extra_body
            .iter()
            .flat_map(|extra| extra.keys())
            .find(|k| OWN_FIELDS.contains(&k.as_str()))
        {
            return Err(ConfigError::Invalid {
                source_name: "configuration".into(),
                field: format!("summarizer.extraBody.{field}"),
                message: "compactd sets this field itself; use the summarizer setting for it"
                    .into(),
            });
        }
        if config.max_frame_bytes < MIN_MAX_FRAME_BYTES {
            return Err(ConfigError::Invalid {
                source_name: "configuration".into(),
                field: "maxFrameBytes".into(),
                message: format!(
                    "must be at least {MIN_MAX_FRAME_BYTES}, or the server could not read even `shutdown`"
                ),
            });
        }
        if config.summarizer.provider == SummarizerProvider::Anthropic
            && config.summarizer.model.is_none()
        {
            return Err(ConfigError::Invalid {
                source_name: "configuration".into(),
                field: "summarizer.model".into(),
                message: "the anthropic provider needs a model (for example \"claude-haiku-4-5\")"
                    .into(),
            });
        }
        Ok(config)
    }
}

/// The default `summarizer.maxTokens`: 80% of the reserve, which is what
/// the summary has to fit in (or of the default reserve when it is off).
fn default_summary_max_tokens(reserve_tokens: u64) -> u64 {
    let reserve = if reserve_tokens == 0 {
        Config::default().reserve_tokens
    } else {
        reserve_tokens
    };
    reserve * 4 / 5
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: {message}")]
    File { path: String, message: String },
    #[error("invalid {source_name} at `{field}`: {message}")]
    Invalid {
        source_name: String,
        field: String,
        message: String,
    },
}

fn read_toml_layer(path: &Path) -> Result<Option<serde_json::Value>, ConfigError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(ConfigError::File {
                path: path.display().to_string(),
                message: e.to_string(),
            })
        }
    };
    let value: toml::Value = toml::from_str(&text).map_err(|e| ConfigError::File {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    // Validate the layer on its own so errors name the file.
    let json = serde_json::to_value(value).expect("TOML is representable as JSON");
    reject_inline_keys(&json, &path.display().to_string())?;
    from_value::<Config>(json.clone(), &path.display().to_string())?;
    Ok(Some(json))
}

/// API keys live in the environment only. A key written into the
/// configuration is refused with a pointer to `apiKeyEnv`, and the error
/// never repeats the value.
fn reject_inline_keys(layer: &serde_json::Value, source_name: &str) -> Result<(), ConfigError> {
    let Some(summarizer) = layer.get("summarizer").and_then(|s| s.as_object()) else {
        return Ok(());
    };
    let invalid = |field: &str, message: &str| ConfigError::Invalid {
        source_name: source_name.to_string(),
        field: format!("summarizer.{field}"),
        message: message.to_string(),
    };
    for field in ["apiKey", "api_key", "key", "token", "authorization"] {
        if summarizer.contains_key(field) {
            return Err(invalid(
                field,
                "API keys are not accepted in configuration; put the key in an environment variable and name that variable in `summarizer.apiKeyEnv`",
            ));
        }
    }
    let key_env = summarizer.get("apiKeyEnv");
    if let Some(name) = key_env {
        let valid = name.as_str().is_some_and(|n| {
            !n.is_empty()
                && n.len() <= 128
                && !n.starts_with(|c: char| c.is_ascii_digit())
                && n.chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        });
        // Upper case only: keys mix cases, so a key pasted here is refused
        // (and never echoed) instead of being looked up and named in errors.
        if !valid && !name.is_null() {
            return Err(invalid(
                "apiKeyEnv",
                "must be the name of an environment variable (upper-case letters, digits, `_`), not a key",
            ));
        }
    }
    if let Some(url) = summarizer.get("baseUrl").and_then(|u| u.as_str()) {
        credentials::check_base_url(url).map_err(|m| invalid("baseUrl", &m))?;
    }
    if let Some(extra) = summarizer.get("extraBody") {
        credentials::check_extra_body(extra).map_err(|m| invalid("extraBody", &m))?;
    }
    if let Some(name) = key_env.and_then(|n| n.as_str()) {
        credentials::check_key_value(layer, name).map_err(|(field, message)| {
            ConfigError::Invalid {
                source_name: source_name.to_string(),
                field,
                message,
            }
        })?;
    }
    Ok(())
}

fn from_value<T: serde::de::DeserializeOwned>(
    value: serde_json::Value,
    source_name: &str,
) -> Result<T, ConfigError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let field = e.path().to_string();
        let mut message = e.inner().to_string();
        // A misplaced key must not come back in the error text.
        if field.starts_with("summarizer") {
            message = redact_quoted(&message);
        }
        ConfigError::Invalid {
            source_name: source_name.to_string(),
            field,
            message,
        }
    })
}

/// Replaces the text inside double quotes (serde quotes offending values).
fn redact_quoted(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut inside = false;
    for c in message.chars() {
        if c == '"' {
            if inside {
                out.push_str("…\"");
            } else {
                out.push('"');
            }
            inside = !inside;
        } else if !inside {
            out.push(c);
        }
    }
    out
}

/// Deep-merges `layer` over `base`: objects merge key by key, anything else
/// replaces.
pub fn merge(base: &mut serde_json::Value, layer: serde_json::Value) {
    match (base, layer) {
        (serde_json::Value::Object(base), serde_json::Value::Object(layer)) => {
            for (key, value) in layer {
                match base.get_mut(&key) {
                    Some(existing) => merge(existing, value),
                    None => {
                        base.insert(key, value);
                    }
                }
            }
        }
        (base, layer) => *base = layer,
    }
}
