//! What an image costs in a prompt, by the provider's published rule for its
//! size (read from the image's header, never by tokenizing its base64,
//! which would count a 1 MB screenshot as hundreds of thousands of tokens):
//!
//! - **Anthropic** (<https://docs.anthropic.com/en/docs/build-with-claude/vision>,
//!   "Evaluate image size"): an image whose long edge is over 1568 px, or
//!   that would cost over ~1,600 tokens, is first scaled down keeping its
//!   aspect ratio; it then costs `width × height / 750` tokens.
//! - **OpenAI** (<https://platform.openai.com/docs/guides/images-vision>,
//!   "Calculating costs", GPT-4o and GPT-4.1 at `detail: high`): scaled to
//!   fit 2048 × 2048, then so its shortest side is at most 768 px; it costs
//!   85 tokens plus 170 per 512-px tile.
//!
//! An image of unknown size (a `url`) is counted as a 1920 × 1080
//! screenshot. The calibration learns what the rule misses from usage.

/// Which provider's rule counts an image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageRule {
    Anthropic,
    OpenAi,
}

/// The size an image of unknown size is counted as.
const UNKNOWN_SIZE: (u32, u32) = (1920, 1080);

impl ImageRule {
    pub fn name(self) -> &'static str {
        match self {
            ImageRule::Anthropic => "anthropic",
            ImageRule::OpenAi => "openai",
        }
    }

    /// The tokens an image of `size` costs (`None`: unknown).
    pub fn tokens(self, size: Option<(u32, u32)>) -> u64 {
        let (w, h) = size.unwrap_or(UNKNOWN_SIZE);
        let (w, h) = (f64::from(w.max(1)), f64::from(h.max(1)));
        match self {
            ImageRule::Anthropic => {
                let mut scale = (1568.0 / w.max(h)).min(1.0);
                let cap = 1600.0 * 750.0;
                if w * h * scale * scale > cap {
                    scale = (cap / (w * h)).sqrt();
                }
                // Resized images have whole pixels.
                let (w, h) = ((w * scale).floor(), (h * scale).floor());
                (w * h / 750.0).ceil() as u64
            }
            ImageRule::OpenAi => {
                let fit = (2048.0 / w.max(h)).min(1.0);
                let (w, h) = (w * fit, h * fit);
                let short = (768.0 / w.min(h)).min(1.0);
                let (w, h) = (w * short, h * short);
                let tiles = (w / 512.0).ceil() * (h / 512.0).ceil();
                85 + 170 * tiles as u64
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The providers' own worked examples.
    #[test]
    fn the_published_examples() {
        // Anthropic's table: 1092×1092 ≈ 1,590 tokens, 1000×1000 ≈ 1,334.
        assert_eq!(ImageRule::Anthropic.tokens(Some((1000, 1000))), 1334);
        assert!((1580..=1600).contains(&ImageRule::Anthropic.tokens(Some((1092, 1092)))));
        // Larger images cost no more than the cap.
        assert!(ImageRule::Anthropic.tokens(Some((4000, 3000))) <= 1600);
        // OpenAI: 1024×1024 high detail → 768×768, 4 tiles → 765; 2048×4096
        // → 1024×2048 → 768×1536, 6 tiles → 1105.
        assert_eq!(ImageRule::OpenAi.tokens(Some((1024, 1024))), 765);
        assert_eq!(ImageRule::OpenAi.tokens(Some((2048, 4096))), 1105);
        // A small image is one tile.
        assert_eq!(ImageRule::OpenAi.tokens(Some((200, 100))), 255);
        assert_eq!(
            ImageRule::OpenAi.tokens(None),
            ImageRule::OpenAi.tokens(Some((1920, 1080)))
        );
    }
}
