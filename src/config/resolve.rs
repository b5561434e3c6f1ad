//! Reading the configuration's layers: defaults < user `compactd.toml` <
//! workspace `compactd.toml` < `initializationOptions`, each checked on its
//! own (errors name the file), keys refused wherever they are written.
//!
//! A workspace's `compactd.toml` comes with whatever repository was cloned,
//! so it is trusted less than the others: it may not choose where the
//! conversation (and a key) is sent, which key is sent, nor where the logs
//! are written (`WORKSPACE_RESTRICTED`), unless the user's own
//! `compactd.toml` or the client lists the workspace in
//! `trustedWorkspaces`. What it may not set is left out with a warning,
//! so a cloned repository never stops compactd from starting.

use std::path::{Path, PathBuf};

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
        if let Some(dir) = user_dir {
            if let Some(layer) = read_toml_layer(&dir.join(CONFIG_FILE_NAME))? {
                merge(&mut merged, layer);
            }
        }
        let init_options = init_options.filter(|o| !o.is_null());
        if let Some(root) = workspace_root {
            let trusted = [Some(&merged), init_options]
                .into_iter()
                .flatten()
                .any(|layer| trusts(layer, root));
            if let Some(layer) = workspace_layer(root, trusted)? {
                merge(&mut merged, layer);
            }
        }
        if let Some(options) = init_options {
            merge(&mut merged, options.clone());
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

/// What a workspace's `compactd.toml` sets only when the workspace is
/// trusted: where the conversation and a key go (a provider that sends
/// nothing, `offline` or `test`, is always allowed), which key, where logs
/// are written, and the trust itself.
pub const WORKSPACE_RESTRICTED: [&str; 5] = [
    "summarizer.provider",
    "summarizer.baseUrl",
    "summarizer.apiKeyEnv",
    "dataDir",
    "trustedWorkspaces",
];

/// The most read of a `compactd.toml`: a real one is a few hundred bytes,
/// and one that is a symlink to a huge or endless file must not fill memory.
const CONFIG_MAX_BYTES: u64 = 1 << 20;

/// Whether `layer`'s `trustedWorkspaces` names `root` (both resolved, so a
/// symlink or a `..` does not matter).
fn trusts(layer: &serde_json::Value, root: &Path) -> bool {
    let real = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let root = real(root);
    layer
        .get("trustedWorkspaces")
        .and_then(|t| t.as_array())
        .into_iter()
        .flatten()
        .filter_map(|p| p.as_str())
        .any(|p| real(&expand_home(p)) == root)
}

/// `~/x` as the home's `x`.
fn expand_home(path: &str) -> PathBuf {
    match (path.strip_prefix("~/"), dirs::home_dir()) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => PathBuf::from(path),
    }
}

/// The workspace's `compactd.toml`, less what it may not set unless
/// `trusted` (each left out with a warning naming it).
fn workspace_layer(root: &Path, trusted: bool) -> Result<Option<serde_json::Value>, ConfigError> {
    let path = root.join(CONFIG_FILE_NAME);
    let Some(mut layer) = read_toml_layer(&path)? else {
        return Ok(None);
    };
    for ignored in untrusted_fields(&mut layer, trusted) {
        tracing::warn!(
            "{}: `{ignored}` ignored: a workspace's compactd.toml may not choose where the conversation or a key is sent, nor where logs are written; list this workspace in `trustedWorkspaces` in your own compactd.toml to allow it",
            path.display()
        );
    }
    Ok(Some(layer))
}

/// Removes from a workspace layer what it may not set (all of
/// `WORKSPACE_RESTRICTED` but the trust itself when `trusted`); the dotted
/// names of what was removed.
fn untrusted_fields(layer: &mut serde_json::Value, trusted: bool) -> Vec<&'static str> {
    let mut removed = Vec::new();
    for field in WORKSPACE_RESTRICTED {
        if trusted && field != "trustedWorkspaces" {
            continue;
        }
        let (parent, key) = match field.split_once('.') {
            Some((table, key)) => (layer.get_mut(table), key),
            None => (Some(&mut *layer), field),
        };
        let Some(parent) = parent.and_then(|p| p.as_object_mut()) else {
            continue;
        };
        // A provider that sends nothing anywhere may be chosen by anyone.
        let local = |v: &serde_json::Value| matches!(v.as_str(), Some("offline" | "test"));
        if field == "summarizer.provider" && parent.get(key).is_some_and(local) {
            continue;
        }
        let taken = parent.remove(key);
        if taken.is_some() {
            removed.push(field);
        }
    }
    removed
}

fn read_toml_layer(path: &Path) -> Result<Option<serde_json::Value>, ConfigError> {
    let text = match crate::regular_file::read_to_string_capped(path, CONFIG_MAX_BYTES) {
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
