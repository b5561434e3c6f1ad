//! Where Gemini CLI compresses by itself: its rule over its settings.
//!
//! Before each request of a turn (`tryCompressChat`) it compresses when the
//! prompt tokens its latest response reported reach `compressionThreshold`
//! × the model's token limit: `model.compressionThreshold` in its settings
//! (default 0.5; unset, a remote experiment may set it, so the figure is
//! then an estimate), the limit 1,048,576 for every model but Gemma 4's
//! (256,000). It compresses only when a prompt of the user's precedes the
//! kept part (a turn's first request after the first prompt).

use std::path::Path;

use serde_json::Value;

use super::home::gemini_dir;
use crate::agents::limits::{AutoCompactPoint, Basis};
use crate::agents::{read_json, Homes};

/// Its default threshold, a fraction of the model's token limit.
const DEFAULT_THRESHOLD: f64 = 0.5;
/// Its token limit of every model but Gemma 4's (`tokenLimit`).
pub(super) const TOKEN_LIMIT: u64 = 1_048_576;
const GEMMA_4_TOKEN_LIMIT: u64 = 256_000;

/// Its token limit for `model`.
pub(super) fn token_limit(model: Option<&str>) -> u64 {
    match model {
        Some("gemma-4-31b-it" | "gemma-4-26b-a4b-it") => GEMMA_4_TOKEN_LIMIT,
        _ => TOKEN_LIMIT,
    }
}

/// The threshold its settings set (the workspace's `.gemini/settings.json`
/// over the user's), and the file that set it.
pub(super) fn threshold(homes: &Homes, workspace: &Path) -> Option<(f64, String)> {
    let user = gemini_dir(homes).join("settings.json");
    let project = workspace.join(".gemini").join("settings.json");
    [project, user].into_iter().find_map(|file| {
        let value = read_json(&file)?
            .pointer("/model/compressionThreshold")
            .and_then(Value::as_f64)
            // 0 is no setting to it (`if (this.compressionThreshold)`).
            .filter(|t| *t > 0.0)?;
        Some((value, file.display().to_string()))
    })
}

/// Its point in a window of `window` tokens.
pub(super) fn point(threshold: Option<(f64, String)>, window: u64) -> AutoCompactPoint {
    let (fraction, source) = match &threshold {
        Some((t, file)) => (*t, file.as_str()),
        None => (DEFAULT_THRESHOLD, "Gemini CLI's default"),
    };
    let at = (fraction * window as f64) as u64;
    AutoCompactPoint {
        at: Some(at),
        basis: if threshold.is_some() {
            Basis::Exact
        } else {
            Basis::Estimate
        },
        rule: format!(
            "Gemini CLI: prompt tokens ≥ compressionThreshold {fraction} ({source}) × token limit {window} = {at}"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_point_follows_its_settings() {
        let dir = tempfile::tempdir().unwrap();
        let homes = Homes::under(dir.path());
        let ws = dir.path().join("ws");
        assert_eq!(threshold(&homes, &ws), None);
        let default = point(None, token_limit(Some("gemini-2.5-pro")));
        assert_eq!(
            (default.at, default.basis),
            (Some(524_288), Basis::Estimate)
        );
        std::fs::create_dir_all(gemini_dir(&homes)).unwrap();
        std::fs::write(
            gemini_dir(&homes).join("settings.json"),
            r#"{"model": {"compressionThreshold": 0.2}}"#,
        )
        .unwrap();
        let set = point(threshold(&homes, &ws), TOKEN_LIMIT);
        assert_eq!((set.at, set.basis), (Some(209_715), Basis::Exact));
        std::fs::create_dir_all(ws.join(".gemini")).unwrap();
        std::fs::write(
            ws.join(".gemini/settings.json"),
            r#"{"model": {"compressionThreshold": 0.0002}}"#,
        )
        .unwrap();
        // The measured case: 513 estimated tokens ≥ 209.7 compressed.
        assert_eq!(point(threshold(&homes, &ws), TOKEN_LIMIT).at, Some(209));
        assert_eq!(token_limit(Some("gemma-4-31b-it")), 256_000);
    }
}
