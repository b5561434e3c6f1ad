//! Configuration: defaults < user `compactd.toml` < workspace `compactd.toml`
//! < `initializationOptions`. Every field is optional on the wire; the
//! defaults live in `Default` impls so that one place states them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::files::{watch::WatchMode, FileToolRule};

pub const CONFIG_FILE_NAME: &str = "compactd.toml";
/// The default `maxImportBytes`: 1 GiB.
pub const DEFAULT_MAX_IMPORT_BYTES: u64 = 1 << 30;
/// The smallest `maxFrameBytes` accepted.
pub const MIN_MAX_FRAME_BYTES: u64 = 4096;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct Config {
    /// Where session logs live. Default: `$XDG_DATA_HOME/compactd/sessions`.
    pub data_dir: Option<PathBuf>,
    /// The conversation's model, used to pick a tokenizer and a context window.
    pub model: Option<String>,
    /// The conversation model's context window in tokens. Default: from the
    /// built-in table of common models, else `defaultContextWindow`.
    pub context_window: Option<u64>,
    /// The window assumed for models the built-in table does not know.
    pub default_context_window: u64,
    /// Newest tokens kept verbatim when compacting.
    pub keep_recent_tokens: u64,
    /// Compact automatically when a trigger fires.
    pub auto_compact: bool,
    /// Auto-compact at this percentage of the context window (0 disables).
    pub auto_compact_percent: f64,
    /// Auto-compact at this absolute token count (0 disables).
    pub auto_compact_token_limit: u64,
    /// Auto-compact when fewer than this many tokens remain in the window
    /// (0 disables).
    pub reserve_tokens: u64,
    /// Auto-compact when the messages since the last compaction reach this
    /// count (0 disables).
    pub message_threshold: u64,
    /// Auto-compact when the user turns since the last compaction reach
    /// this count (0 disables).
    pub turn_threshold: u64,
    /// The default compaction strategy.
    pub strategy: crate::compaction::Strategy,
    /// `incremental`: the newest messages never replaced.
    pub retention_window: usize,
    /// `prune`: the newest tool output (in tokens) that is never pruned.
    pub prune_protect_tokens: u64,
    /// `prune`: act only when at least this many tokens can be freed.
    pub prune_minimum_tokens: u64,
    /// Replaces the default prompt LLM summarizers get for a first summary.
    pub compact_prompt: Option<String>,
    /// Replaces the default prompt LLM summarizers get to update a previous
    /// summary.
    pub update_prompt: Option<String>,
    /// How tool outputs are clipped in the summarizer input (head and tail
    /// kept), in characters.
    pub max_tool_output_chars: usize,
    /// The message that introduces the summary in the compacted history.
    pub summary_prefix: Option<String>,
    /// The summarizer that writes compaction summaries.
    pub summarizer: SummarizerConfig,
    /// Files listed in each of `<read-files>` and `<modified-files>`; the
    /// rest are counted ("… and N more").
    pub max_listed_files: usize,
    /// Tool calls that read or change files, by tool name: added to the
    /// shipped mapping (pi, Claude Code, OpenAI-style, `apply_patch`), or
    /// replacing an entry of it; `null` removes one.
    pub file_tools: BTreeMap<String, Option<FileToolRule>>,
    /// How files in the ledger are watched for changes by others.
    pub file_watcher: WatchMode,
    /// Directories watched at most (one per directory holding ledger
    /// files, plus the workspace roots); beyond it, the least recently
    /// touched files go unwatched.
    pub max_watched_paths: usize,
    /// The largest file `conversation/import` and the CLI commands read, in
    /// bytes (default 1 GiB). Larger files, and anything but a regular file
    /// (a FIFO, a device, a directory), are refused.
    pub max_import_bytes: u64,
    /// The largest frame (message body) accepted from the client, in bytes.
    /// A bigger one is refused (-32600, with its id when the body starts
    /// with one) and skipped unread. At least 4096.
    #[schemars(range(min = 4096))]
    pub max_frame_bytes: u64,
    /// When an append to a session log counts as done: `flush` (handed to
    /// the operating system: survives compactd crashing or being killed,
    /// not a power loss; about 10 µs per append) or `fsync` (also synced to
    /// the disk: survives a power loss; 3–5 ms per append, measured with
    /// `cargo bench --bench append` on a 2-core VM). Session headers and
    /// compactions are always synced.
    pub durability: crate::store::Durability,
    /// `auto`: follow the newest Claude Code, Codex or pi session of the
    /// workspace, and each one that starts later (`conversation/didFollow`).
    /// `off`: follow only what `conversation/follow` asks for.
    pub follow: FollowMode,
}

/// Whether the server follows the workspace's agent sessions by itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum FollowMode {
    /// Follow the newest session, and switch when a new one starts.
    Auto,
    /// Only `conversation/follow`.
    #[default]
    Off,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            data_dir: None,
            model: None,
            context_window: None,
            default_context_window: 128_000,
            keep_recent_tokens: 20_000,
            auto_compact: true,
            auto_compact_percent: 90.0,
            auto_compact_token_limit: 0,
            reserve_tokens: 16_384,
            message_threshold: 0,
            turn_threshold: 0,
            strategy: crate::compaction::Strategy::Checkpoint,
            retention_window: 6,
            prune_protect_tokens: 40_000,
            prune_minimum_tokens: 20_000,
            compact_prompt: None,
            update_prompt: None,
            max_tool_output_chars: 2_000,
            summary_prefix: None,
            summarizer: SummarizerConfig::default(),
            max_listed_files: crate::files::DEFAULT_MAX_LISTED_FILES,
            file_tools: BTreeMap::new(),
            file_watcher: WatchMode::Auto,
            max_watched_paths: 256,
            max_import_bytes: DEFAULT_MAX_IMPORT_BYTES,
            max_frame_bytes: crate::transport::DEFAULT_MAX_FRAME_BYTES,
            durability: crate::store::Durability::Flush,
            follow: FollowMode::Off,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "camelCase")]
pub enum SummarizerProvider {
    /// The built-in deterministic summarizer: no network, no key.
    #[default]
    Offline,
    /// The offline summarizer behind a pacing delay per chunk, for protocol
    /// tests of progress and cancellation.
    Test,
    /// Any OpenAI-compatible `/chat/completions` endpoint (OpenAI,
    /// OpenRouter, vLLM, llama.cpp's server, Ollama, LM Studio).
    Openai,
    /// Anthropic's Messages API.
    Anthropic,
}

impl SummarizerProvider {
    pub fn name(self) -> &'static str {
        match self {
            SummarizerProvider::Offline => "offline",
            SummarizerProvider::Test => "test",
            SummarizerProvider::Openai => "openai",
            SummarizerProvider::Anthropic => "anthropic",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct SummarizerConfig {
    pub provider: SummarizerProvider,
    /// The model that writes summaries; it may be a cheaper one than the
    /// conversation's.
    pub model: Option<String>,
    /// The API base URL. Default: `https://api.openai.com/v1` (openai),
    /// `https://api.anthropic.com` (anthropic). For openai, requests go to
    /// `{baseUrl}/chat/completions`, so include the `/v1`. Credentials
    /// (`user:password@`, a `key=` or `token=` parameter) are refused.
    pub base_url: Option<String>,
    /// The NAME of the environment variable holding the API key, read at
    /// call time. The key itself is never accepted in configuration.
    /// Unset: no key is sent (local servers).
    pub api_key_env: Option<String>,
    /// The most tokens a summary may take. Default: 80% of `reserveTokens`.
    pub max_tokens: Option<u64>,
    /// Sampling temperature. Default: the provider's.
    pub temperature: Option<f64>,
    /// Sampling seed (openai only; servers that support it answer
    /// deterministically).
    pub seed: Option<u64>,
    /// Extra fields merged into every request body, for provider options
    /// compactd has no key for: `{"chat_template_kwargs": {"enable_thinking":
    /// false}}` turns thinking off on llama.cpp or vLLM serving Qwen3,
    /// `{"frequency_penalty": 0.5}` stops a small model from looping.
    /// Credential fields (`api_key`, `token`…) are refused.
    pub extra_body: Option<serde_json::Map<String, serde_json::Value>>,
    /// Milliseconds to wait for the response to start and between any two
    /// pieces of it before the attempt counts as timed out (and is retried).
    pub timeout_ms: u64,
    /// The summarizer model's own context window; input larger than this
    /// is summarized in chunks.
    pub context_window: Option<u64>,
    /// Stream the summary (progress reports characters received).
    pub stream: bool,
    /// `test` provider only: milliseconds to wait per chunk.
    pub delay_ms: u64,
}

impl Default for SummarizerConfig {
    fn default() -> Self {
        SummarizerConfig {
            provider: SummarizerProvider::Offline,
            model: None,
            base_url: None,
            api_key_env: None,
            max_tokens: None,
            temperature: None,
            seed: None,
            extra_body: None,
            timeout_ms: 120_000,
            context_window: None,
            stream: true,
            delay_ms: 0,
        }
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

impl Config {
    /// The default session directory.
    pub fn sessions_dir(&self) -> PathBuf {
        if let Some(dir) = &self.data_dir {
            return dir.clone();
        }
        dirs::data_dir()
            .unwrap_or_else(std::env::temp_dir)
            .join("compactd")
            .join("sessions")
    }

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

    /// The user-level config directory (`$XDG_CONFIG_HOME/compactd`).
    pub fn user_config_dir() -> Option<PathBuf> {
        dirs::config_dir().map(|d| d.join("compactd"))
    }
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

/// Credentials written where compactd would send or show them: in the base
/// URL, in the extra request body, or the key's own value anywhere in the
/// configuration. Messages name what was found, never its value.
mod credentials {
    use serde_json::Value;

    use crate::summarize::redact::Redactor;

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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn layers_merge_in_order() {
        let user = tempfile::tempdir().unwrap();
        let workspace = tempfile::tempdir().unwrap();
        std::fs::write(
            user.path().join(CONFIG_FILE_NAME),
            "keepRecentTokens = 1000\nreserveTokens = 5\n[summarizer]\ndelayMs = 7\n",
        )
        .unwrap();
        std::fs::write(
            workspace.path().join(CONFIG_FILE_NAME),
            "keepRecentTokens = 2000\n",
        )
        .unwrap();
        let options = json!({"reserveTokens": 9, "summarizer": {"provider": "test"}});
        let config =
            Config::resolve(Some(&options), Some(workspace.path()), Some(user.path())).unwrap();
        assert_eq!(config.keep_recent_tokens, 2000, "workspace beats user");
        assert_eq!(config.reserve_tokens, 9, "initializationOptions beat files");
        assert_eq!(config.summarizer.delay_ms, 7, "nested fields merge");
        assert_eq!(config.summarizer.provider, SummarizerProvider::Test);
        assert_eq!(config.auto_compact_percent, 90.0, "defaults fill the rest");
    }

    #[test]
    fn llm_summarizer_settings_and_the_max_tokens_default() {
        let config = Config::resolve(
            Some(&json!({"reserveTokens": 1000, "summarizer": {
                "provider": "openai", "model": "smollm2", "baseUrl": "http://127.0.0.1:8765/v1",
                "apiKeyEnv": "MY_LLM_KEY", "temperature": 0, "timeoutMs": 5000,
                "contextWindow": 4096, "stream": false
            }})),
            None,
            None,
        )
        .unwrap();
        let s = &config.summarizer;
        assert_eq!(s.provider, SummarizerProvider::Openai);
        assert_eq!(s.max_tokens, Some(800), "80% of reserveTokens");
        assert_eq!(s.api_key_env.as_deref(), Some("MY_LLM_KEY"));
        assert_eq!(
            (s.timeout_ms, s.context_window, s.stream),
            (5000, Some(4096), false)
        );
        let config = Config::resolve(
            Some(&json!({"summarizer": {"provider": "anthropic", "model": "m", "maxTokens": 99}})),
            None,
            None,
        )
        .unwrap();
        assert_eq!(config.summarizer.max_tokens, Some(99), "explicit wins");
        let err = Config::resolve(
            Some(&json!({"summarizer": {"provider": "anthropic"}})),
            None,
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("summarizer.model"), "{err}");
        let err = Config::resolve(
            Some(&json!({"summarizer": {"provider": "openai", "extraBody": {"stream": false}}})),
            None,
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("summarizer.extraBody.stream"), "{err}");
    }

    #[test]
    fn keys_in_configuration_are_refused_without_being_echoed() {
        let key = "sk-proj-AbCdEf0123456789SECRET";
        for summarizer in [
            json!({"provider": "openai", "apiKey": key}),
            json!({"provider": "openai", "apiKeyEnv": key}),
            json!({"provider": "openai", "temperature": key}),
            json!({"provider": "openai", "model": 1, "baseUrl": key, "stream": key}),
        ] {
            let err = Config::resolve(Some(&json!({ "summarizer": summarizer })), None, None)
                .unwrap_err()
                .to_string();
            assert!(!err.contains("SECRET"), "key echoed: {err}");
            assert!(err.contains("summarizer."), "{err}");
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(CONFIG_FILE_NAME),
            format!("[summarizer]\nprovider = \"openai\"\napiKey = \"{key}\"\n"),
        )
        .unwrap();
        let err = Config::resolve(None, Some(dir.path()), None)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("apiKeyEnv") && !err.contains("SECRET"),
            "{err}"
        );
    }

    #[test]
    fn credentials_in_the_base_url_and_extra_body_are_refused_without_being_echoed() {
        // (a base URL, a word of the reason)
        let urls = [
            ("https://me:SECRETpw@api.example/v1", "user:password@"),
            ("https://SECRETuser@api.example/v1", "user:password@"),
            ("https://api.example/v1?key=SECRET", "named like `key`"),
            (
                "https://api.example/v1?x=1&Api_Key=SECRET",
                "named like `apikey`",
            ),
            (
                "https://api.example/v1?access_token=SECRET",
                "named like `accesstoken`",
            ),
            ("SECRET", "http:// or https:// URL"),
            ("file:///SECRET", "http:// or https:// URL"),
        ];
        // (an extra body, a word of the reason)
        let bodies = [
            (json!({"api_key": "SECRET"}), "named like `apikey`"),
            (
                json!({"x": [{"Authorization": "Bearer SECRET"}]}),
                "named like `authorization`",
            ),
            (json!({"token": "SECRET"}), "named like `token`"),
        ];
        let cases = urls
            .into_iter()
            .map(|(url, why)| (json!({ "baseUrl": url }), "baseUrl", why))
            .chain(
                bodies
                    .into_iter()
                    .map(|(body, why)| (json!({ "extraBody": body }), "extraBody", why)),
            );
        for (summarizer, field, why) in cases {
            let mut summarizer = summarizer;
            summarizer["provider"] = json!("openai");
            let err = Config::resolve(Some(&json!({ "summarizer": summarizer })), None, None)
                .unwrap_err()
                .to_string();
            assert!(!err.contains("SECRET"), "echoed: {err}");
            assert!(
                err.contains(&format!("summarizer.{field}")) && err.contains(why),
                "{err}"
            );
        }
        // Ordinary URLs and options pass.
        let ok = json!({"summarizer": {"provider": "openai",
            "baseUrl": "http://127.0.0.1:8765/v1?api-version=2024-02-01",
            "extraBody": {"max_completion_tokens": 5, "keep_alive": "5m", "n_keep": 1,
                          "thinking": {"budget_tokens": 0}}}});
        assert!(Config::resolve(Some(&ok), None, None).is_ok());
    }

    #[test]
    fn the_key_value_itself_is_refused_anywhere_in_the_configuration() {
        let key = "sk-cfg-Qw3Er5Ty7Ui9Op1As";
        // A unique variable: the environment is shared by the test process.
        std::env::set_var("COMPACTD_CONFIG_TEST_KEY", key);
        for summarizer in [
            json!({"baseUrl": format!("https://api.example/v1/{key}")}),
            json!({"baseUrl": format!("https://api.example/v1?q={}", &key[3..20])}),
            json!({"extraBody": {"user": format!("Bearer {key}")}}),
            json!({"extraBody": {key: 1}}),
            json!({"model": key}),
        ] {
            let mut summarizer = summarizer;
            summarizer["provider"] = json!("openai");
            summarizer["apiKeyEnv"] = json!("COMPACTD_CONFIG_TEST_KEY");
            let err = Config::resolve(Some(&json!({ "summarizer": summarizer })), None, None)
                .unwrap_err()
                .to_string();
            assert!(!err.contains(&key[3..11]), "echoed: {err}");
            assert!(
                err.contains("COMPACTD_CONFIG_TEST_KEY") && err.contains("`summarizer."),
                "{err}"
            );
        }
        // Outside the summarizer settings too, even where a type error
        // would have quoted it.
        let options = json!({"keepRecentTokens": key, "fileTools": {key: null},
            "summarizer": {"apiKeyEnv": "COMPACTD_CONFIG_TEST_KEY"}});
        let err = Config::resolve(Some(&options), None, None)
            .unwrap_err()
            .to_string();
        assert!(!err.contains(&key[3..11]), "echoed: {err}");
        assert!(err.contains("COMPACTD_CONFIG_TEST_KEY"), "{err}");
    }

    #[test]
    fn file_tools_extend_the_shipped_mapping() {
        let workspace = tempfile::tempdir().unwrap();
        std::fs::write(
            workspace.path().join(CONFIG_FILE_NAME),
            "[fileTools.open_doc]\noperation = \"read\"\npathField = \"uri\"\n",
        )
        .unwrap();
        let options = json!({"fileTools": {"Write": null}});
        let config = Config::resolve(Some(&options), Some(workspace.path()), None).unwrap();
        let tools = crate::files::FileTools::new(&config.file_tools);
        let call = |name: &str, args| crate::conversation::ToolCall {
            id: "c".into(),
            name: name.into(),
            arguments: args,
        };
        assert_eq!(
            tools.ops(&call("open_doc", json!({"uri": "a.rs"}))).len(),
            1
        );
        assert!(tools
            .ops(&call("Write", json!({"file_path": "b.rs"})))
            .is_empty());
        assert_eq!(
            tools.ops(&call("Edit", json!({"file_path": "b.rs"}))).len(),
            1
        );
        let err = Config::resolve(
            Some(&json!({"fileTools": {"x": {"operation": "rename"}}})),
            None,
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("fileTools.x.operation"), "{err}");
    }

    #[test]
    fn errors_name_the_field() {
        let err = Config::resolve(
            Some(&json!({"summarizer": {"provider": "nope"}})),
            None,
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("summarizer.provider"), "{err}");
        let err = Config::resolve(Some(&json!({"keepRecentTokenz": 1})), None, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("keepRecentTokenz"), "{err}");
    }
}
