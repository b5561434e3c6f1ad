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
//! An image of unknown size (a `url`, or data whose header compactd does
//! not read a size from) is counted as a 1920 × 1080 screenshot; a header
//! claiming more than a provider takes (Anthropic refuses a side over
//! 8,000 px) is counted as the rule scales it down. An append says which
//! of its images were counted on such an assumption (`image_notes`), and
//! refuses one whose `data` is not base64, which no provider could read.
//! The calibration learns what the rule misses from usage.

use crate::conversation::{image, Message, PartKind};

/// Which provider's rule counts an image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageRule {
    Anthropic,
    OpenAi,
}

/// The size an image of unknown size is counted as.
const UNKNOWN_SIZE: (u32, u32) = (1920, 1080);

/// The longest side a provider takes: Anthropic refuses an image with a
/// side over 8,000 px (vision, "Evaluate image size").
const LARGEST_SIDE: u32 = 8000;

impl ImageRule {
    pub fn name(self) -> &'static str {
        match self {
            ImageRule::Anthropic => "anthropic",
            ImageRule::OpenAi => "openai",
        }
    }

    /// Its name in a sentence.
    fn owner(self) -> &'static str {
        match self {
            ImageRule::Anthropic => "Anthropic's",
            ImageRule::OpenAi => "OpenAI's",
        }
    }

    /// The size the provider scales an image of `size` to before counting
    /// it (`None`: unknown, counted as 1920 × 1080).
    fn scaled(self, size: Option<(u32, u32)>) -> (f64, f64) {
        let (w, h) = size.unwrap_or(UNKNOWN_SIZE);
        let (w, h) = (f64::from(w.max(1)), f64::from(h.max(1)));
        match self {
            ImageRule::Anthropic => {
                let mut scale = (1568.0 / w.max(h)).min(1.0);
                let cap = 1600.0 * 750.0;
                if w * h * scale * scale > cap {
                    scale = (cap / (w * h)).sqrt();
                }
                // Resized images have whole pixels, at least one a side.
                let whole = |side: f64| (side * scale).floor().max(1.0);
                (whole(w), whole(h))
            }
            ImageRule::OpenAi => {
                let fit = (2048.0 / w.max(h)).min(1.0);
                let (w, h) = (w * fit, h * fit);
                let short = (768.0 / w.min(h)).min(1.0);
                (w * short, h * short)
            }
        }
    }

    /// The tokens an image of `size` costs (`None`: unknown).
    pub fn tokens(self, size: Option<(u32, u32)>) -> u64 {
        let (w, h) = self.scaled(size);
        match self {
            ImageRule::Anthropic => (w * h / 750.0).ceil() as u64,
            ImageRule::OpenAi => {
                let tiles = (w / 512.0).ceil() * (h / 512.0).ceil();
                85 + 170 * tiles as u64
            }
        }
    }

    /// What an image of `size` was counted as, in words: `768×768, 765
    /// tokens by OpenAI's rule`.
    fn counted_as(self, size: Option<(u32, u32)>) -> String {
        let (w, h) = self.scaled(size);
        let tokens = self.tokens(size);
        format!(
            "{}×{}, {tokens} token{} by {} rule",
            w.round().max(1.0),
            h.round().max(1.0),
            if tokens == 1 { "" } else { "s" },
            self.owner()
        )
    }
}

/// Checks the images `messages` send inline before they are appended: one
/// whose `data` is not base64 is an error naming it (no provider could
/// read it; it would fail every request its history went into). An image
/// counted on an assumption is kept and said, one line each, as
/// `messages[i].content[j]: why`: data with no header compactd reads a
/// size from (counted as 1920 × 1080), or a header claiming a side of 0 or
/// over 8,000 px (counted as the provider's rule scales it).
pub fn image_notes(rule: ImageRule, messages: &[Message]) -> Result<Vec<String>, String> {
    let mut notes = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        for (at, part) in message.parts().iter().enumerate() {
            let Some(data) = part.data().filter(|_| part.kind() == PartKind::Image) else {
                continue;
            };
            let name = format!("messages[{index}].content[{at}]");
            if let Some(problem) = image::base64_problem(data) {
                return Err(format!(
                    "invalid params at `{name}.data`: an image's data must be base64, and this \
                     is not ({problem}); no provider could read it; nothing was appended"
                ));
            }
            let note = match part.image_size() {
                None => format!(
                    "{name}: the image's data has no PNG, JPEG, GIF or WebP header compactd \
                     reads a size from; counted as a 1920×1080 image ({})",
                    rule.counted_as(None)
                ),
                Some((w, h)) if w.min(h) == 0 => format!(
                    "{name}: the image's header says {w}×{h} px, no pixels at all; counted as \
                     {}",
                    rule.counted_as(Some((w, h)))
                ),
                Some((w, h)) if w.max(h) > LARGEST_SIDE => format!(
                    "{name}: the image's header says {w}×{h} px, more than Anthropic takes (it \
                     refuses a side over {LARGEST_SIDE} px); counted as the rule scales it \
                     down, to {}",
                    rule.counted_as(Some((w, h)))
                ),
                Some(_) => continue,
            };
            notes.push(note);
        }
    }
    Ok(notes)
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

    /// A header claiming a huge image is counted as the provider scales it
    /// down before counting, never as more than its largest image, nor as
    /// nothing.
    #[test]
    fn huge_claims_are_scaled_like_any_image() {
        // OpenAI: 100000² fits 2048² then 768²: 4 tiles.
        assert_eq!(ImageRule::OpenAi.tokens(Some((100_000, 100_000))), 765);
        assert_eq!(
            ImageRule::OpenAi.counted_as(Some((100_000, 100_000))),
            "768×768, 765 tokens by OpenAI's rule"
        );
        // Anthropic: scaled to ~1,600 tokens.
        let huge = ImageRule::Anthropic.tokens(Some((100_000, 100_000)));
        assert!((1590..=1600).contains(&huge), "{huge}");
        // A sliver is scaled to one pixel's height, not to none.
        assert_eq!(ImageRule::Anthropic.tokens(Some((100_000, 1))), 3);
        assert_eq!(
            ImageRule::Anthropic.tokens(Some((u32::MAX, u32::MAX))),
            huge
        );
    }
}
