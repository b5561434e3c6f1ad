//! Image parts whose size compactd cannot know, or that no provider could
//! read, through the binary: data with no image header is kept and
//! counted as a 1920×1080 screenshot, a header claiming 100000×100000 px
//! is counted as the provider's rule scales it down, and the append's
//! `warnings` says what was assumed for each; data that is not base64 is
//! refused with an error naming the part, and nothing of that append is
//! applied.

use serde_json::{json, Value};

use crate::support::Server;

/// Standard base64, padded.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            out.push(match i <= chunk.len() {
                true => ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char,
                false => '=',
            });
        }
    }
    out
}

/// A PNG whose header says `width` × `height`, `bytes` long, in base64
/// (compactd reads only the header; `seed` varies the filler).
fn png(width: u32, height: u32, bytes: usize, seed: u8) -> String {
    let mut data = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    data.extend(width.to_be_bytes());
    data.extend(height.to_be_bytes());
    data.extend([8, 6, 0, 0, 0]);
    data.resize(bytes.max(data.len()), seed);
    base64(&data)
}

fn image(data: &str) -> Value {
    json!({"type": "image", "mediaType": "image/png", "data": data})
}

/// Appends one user message holding `part`: the tokens it added to the
/// meter, and the append's `warnings` (none when absent).
fn charge(server: &mut Server, session: &str, part: Value) -> (u64, Vec<String>) {
    let meter = |result: &Value| result["meter"]["contextTokens"].as_u64().unwrap();
    let before = meter(&server.append(session, [json!({"role": "user", "content": "hi"})]));
    let result = server.append(session, [json!({"role": "user", "content": [part]})]);
    let warnings = result
        .get("warnings")
        .map(|w| serde_json::from_value(w.clone()).unwrap())
        .unwrap_or_default();
    (meter(&result) - before, warnings)
}

/// The framing a one-part message adds to its part's tokens.
const FRAMING: std::ops::RangeInclusive<u64> = 0..=12;

#[test]
fn an_image_of_unknown_or_implausible_size_is_counted_as_said() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), json!({"autoCompact": false}));
    let claude = server.open(json!({"model": "claude-sonnet-4-5", "contextWindow": 200000}));
    let gpt = server.open(json!({"model": "gpt-4o", "contextWindow": 128000}));

    // A real header: counted by its size, nothing to say.
    let (tokens, warnings) = charge(&mut server, &claude, image(&png(1280, 720, 300, 1)));
    assert!((1229..1229 + 12).contains(&tokens), "{tokens}");
    assert!(warnings.is_empty(), "{warnings:?}");

    // No image header (a short text, and 12 KB stored apart): kept,
    // counted as 1920×1080, and said.
    for data in [base64(b"hello, not an image"), base64(&[7u8; 12_000])] {
        let (tokens, warnings) = charge(&mut server, &claude, image(&data));
        assert!(FRAMING.contains(&(tokens - 1599)), "{tokens}");
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        let said = &warnings[0];
        assert!(said.starts_with("messages[0].content[0]: "), "{said}");
        assert!(said.contains("no PNG, JPEG, GIF or WebP header"), "{said}");
        assert!(
            said.contains(
                "counted as a 1920×1080 image (1460×821, 1599 tokens by Anthropic's rule)"
            ),
            "{said}"
        );
        let (tokens, warnings) = charge(&mut server, &gpt, image(&data));
        assert!(FRAMING.contains(&(tokens - 1105)), "{tokens}");
        assert!(warnings[0].contains("1365×768, 1105 tokens by OpenAI's rule"));
    }

    // A header claiming 100000×100000 px: scaled down as the provider
    // scales it, 4 tiles for OpenAI, ~1,600 tokens for Anthropic; said.
    let huge = image(&png(100_000, 100_000, 300, 2));
    let (tokens, warnings) = charge(&mut server, &gpt, huge.clone());
    assert!(FRAMING.contains(&(tokens - 765)), "{tokens}");
    let said = &warnings[0];
    assert!(said.contains("header says 100000×100000 px"), "{said}");
    assert!(said.contains("over 8000 px"), "{said}");
    assert!(
        said.contains("to 768×768, 765 tokens by OpenAI's rule"),
        "{said}"
    );
    let (tokens, warnings) = charge(&mut server, &claude, huge);
    assert!(FRAMING.contains(&(tokens - 1599)), "{tokens}");
    assert!(
        warnings[0].contains("to 1095×1095, 1599 tokens by Anthropic's rule"),
        "{warnings:?}"
    );
    // A sliver is not counted as nothing.
    let (tokens, warnings) = charge(&mut server, &claude, image(&png(100_000, 1, 300, 3)));
    assert!(FRAMING.contains(&(tokens - 3)), "{tokens}");
    assert!(warnings[0].contains("1568×1, 3 tokens"), "{warnings:?}");
}

#[test]
fn an_image_whose_data_is_not_base64_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), json!({"autoCompact": false}));
    let session = server.open(json!({"model": "claude-sonnet-4-5"}));
    let good = png(640, 480, 300, 4);
    let cases = [
        (
            format!("{}!{}", &good[..40], &good[41..]),
            "('!' at character 40)",
        ),
        (
            format!("data:image/png;base64,{good}"),
            "it is a `data:` URL; `data` holds only the base64 after its comma",
        ),
        (format!("{good}A"), "one more than whole bytes take"),
    ];
    for (data, why) in cases {
        let messages = json!([
            {"role": "user", "content": "look"},
            {"role": "user", "content": [{"type": "text", "text": "this:"}, image(&data)]},
        ]);
        let err = server
            .request(
                "conversation/append",
                json!({"sessionId": session, "messages": messages}),
            )
            .unwrap_err();
        assert_eq!(err.code, -32602, "{}", err.message);
        assert!(
            err.message.starts_with(
                "invalid params at `messages[1].content[1].data`: an image's data must be base64"
            ),
            "{}",
            err.message
        );
        assert!(err.message.contains(why), "{}", err.message);
        assert!(
            err.message.contains("nothing was appended"),
            "{}",
            err.message
        );
    }
    assert!(server.history_ids(&session).is_empty(), "nothing applied");
    // The same image as base64: taken.
    server.append(
        &session,
        [json!({"role": "user", "content": [image(&good)]})],
    );
    assert_eq!(server.history_ids(&session).len(), 1);
}
