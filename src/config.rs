//! Configuration: defaults < user `compactd.toml` < workspace `compactd.toml`
//! < `initializationOptions`. Every field is optional on the wire; the
//! defaults live in `Default` impls so that one place states them.

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub const CONFIG_FILE_NAME: &str = "compactd.toml";

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
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct SummarizerConfig {
    pub provider: SummarizerProvider,
    /// The summarizer model's own context window; input larger than this
    /// is summarized in chunks.
    pub context_window: Option<u64>,
    /// `test` provider only: milliseconds to wait per chunk.
    pub delay_ms: u64,
}

impl Default for SummarizerConfig {
    fn default() -> Self {
        SummarizerConfig {
            provider: SummarizerProvider::Offline,
            context_window: None,
            delay_ms: 0,
        }
    }
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
        from_value(merged, "configuration")
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
    from_value::<Config>(json.clone(), &path.display().to_string())?;
    Ok(Some(json))
}

fn from_value<T: serde::de::DeserializeOwned>(
    value: serde_json::Value,
    source_name: &str,
) -> Result<T, ConfigError> {
    serde_path_to_error::deserialize(value).map_err(|e| ConfigError::Invalid {
        source_name: source_name.to_string(),
        field: e.path().to_string(),
        message: e.inner().to_string(),
    })
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
