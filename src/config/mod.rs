//! Configuration: defaults < user `compactd.toml` < workspace `compactd.toml`
//! < `initializationOptions`. Every field is optional on the wire; the
//! defaults live in `Default` impls so that one place states them
//! (`settings`, `summarizer`); `resolve` reads and checks the layers,
//! `credentials` refuses keys written where they would be sent or shown.

mod credentials;
mod resolve;
mod settings;
mod summarizer;
#[cfg(test)]
mod tests;

pub use resolve::{merge, ConfigError};
pub use settings::{
    Config, FollowMode, CONFIG_FILE_NAME, DEFAULT_MAX_IMPORT_BYTES, MIN_MAX_FRAME_BYTES,
};
pub use summarizer::{SummarizerConfig, SummarizerProvider};
