//! An image's size from its header (PNG, JPEG, GIF, WebP), without decoding
//! it, and the base64 its bytes travel in. Pure.

/// Width and height in pixels, from the first bytes of a PNG, JPEG, GIF or
/// WebP file; `None` for anything else or a header cut short.
pub fn dimensions(bytes: &[u8]) -> Option<(u32, u32)> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        // The IHDR chunk comes first: width and height, big-endian.
        return Some((be32(bytes.get(16..20)?), be32(bytes.get(20..24)?)));
    }
    if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        let le16 = |at: usize| Some(u16::from_le_bytes([*bytes.get(at)?, *bytes.get(at + 1)?]));
        return Some((le16(6)?.into(), le16(8)?.into()));
    }
    if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        return webp(bytes);
    }
    if bytes.starts_with(&[0xff, 0xd8]) {
        return jpeg(bytes);
    }
    None
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

fn webp(bytes: &[u8]) -> Option<(u32, u32)> {
    let chunk = bytes.get(12..16)?;
    let le24 = |at: usize| -> Option<u32> {
        let b = bytes.get(at..at + 3)?;
        Some(u32::from(b[0]) | u32::from(b[1]) << 8 | u32::from(b[2]) << 16)
    };
    match chunk {
        // Extended: canvas width and height minus one, 24 bits each.
        b"VP8X" => Some((le24(24)? + 1, le24(27)? + 1)),
        // Lossless: 14 bits each after the signature byte.
        b"VP8L" => {
            let b = bytes.get(21..25)?;
            let bits = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            Some(((bits & 0x3fff) + 1, ((bits >> 14) & 0x3fff) + 1))
        }
        // Lossy: after the frame tag and start code, 14 bits each.
        b"VP8 " => {
            let b = bytes.get(26..30)?;
            let w = u16::from_le_bytes([b[0], b[1]]) & 0x3fff;
            let h = u16::from_le_bytes([b[2], b[3]]) & 0x3fff;
            Some((w.into(), h.into()))
        }
        _ => None,
    }
}

/// The first start-of-frame segment's size; the segments before it (EXIF,
/// tables) are skipped by their lengths.
fn jpeg(bytes: &[u8]) -> Option<(u32, u32)> {
    let mut at = 2;
    loop {
        while *bytes.get(at)? != 0xff {
            at += 1;
        }
        while *bytes.get(at)? == 0xff {
            at += 1;
        }
        let marker = *bytes.get(at)?;
        at += 1;
        if matches!(marker, 0xd8 | 0x01 | 0xd0..=0xd7) {
            continue; // no length
        }
        let length = usize::from(u16::from_be_bytes([*bytes.get(at)?, *bytes.get(at + 1)?]));
        let frame = matches!(marker, 0xc0..=0xcf) && !matches!(marker, 0xc4 | 0xc8 | 0xcc);
        if frame {
            let h = u16::from_be_bytes([*bytes.get(at + 3)?, *bytes.get(at + 4)?]);
            let w = u16::from_be_bytes([*bytes.get(at + 5)?, *bytes.get(at + 6)?]);
            return Some((w.into(), h.into()));
        }
        if marker == 0xda || length < 2 {
            return None; // image data before any frame header
        }
        at += length;
    }
}

/// The bytes of standard base64 (`=` padding optional, whitespace ignored);
/// `None` when it is not base64.
pub fn decode_base64(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let (mut buffer, mut bits) = (0u32, 0u32);
    for c in text.bytes() {
        let value = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            b'=' => break,
            c if c.is_ascii_whitespace() => continue,
            _ => return None,
        };
        buffer = buffer << 6 | u32::from(value);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
        }
    }
    Some(out)
}

/// Why `text` is not base64 as `decode_base64` reads it (the standard or
/// the URL-safe alphabet, whitespace ignored, `=` padding only at the
/// end), naming the first character that is not; `None` when it is.
pub fn base64_problem(text: &str) -> Option<String> {
    if text.starts_with("data:") {
        return Some("it is a `data:` URL; `data` holds only the base64 after its comma".into());
    }
    let (mut symbols, mut padding) = (0usize, 0usize);
    for (at, c) in text.chars().enumerate() {
        let symbol = c.is_ascii_alphanumeric() || "+/-_".contains(c);
        let misplaced = match c {
            _ if c.is_ascii_whitespace() => false,
            '=' => {
                padding += 1;
                padding > 2
            }
            _ => !symbol || padding > 0,
        };
        if misplaced {
            return Some(format!("{c:?} at character {at}"));
        }
        symbols += usize::from(symbol);
    }
    match symbols % 4 {
        1 => Some(format!(
            "{symbols} base64 characters, one more than whole bytes take: it was cut short"
        )),
        _ => None,
    }
}

/// The first `bytes` bytes that `text` (base64) encodes: enough for a
/// header without decoding a whole image.
pub fn decode_base64_prefix(text: &str, bytes: usize) -> Option<Vec<u8>> {
    let chars = bytes.div_ceil(3) * 4;
    let end = text
        .char_indices()
        .nth(chars)
        .map_or(text.len(), |(i, _)| i);
    decode_base64(&text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(w: u32, h: u32) -> Vec<u8> {
        let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        b.extend(w.to_be_bytes());
        b.extend(h.to_be_bytes());
        b
    }

    #[test]
    fn sizes_from_headers() {
        assert_eq!(dimensions(&png(1280, 720)), Some((1280, 720)));
        assert_eq!(dimensions(b"GIF89a\x40\x01\xf0\x00"), Some((320, 240)));
        // A JPEG with an APP0 segment before its baseline frame.
        let jpeg = [
            0xff, 0xd8, 0xff, 0xe0, 0x00, 0x04, 0x00, 0x00, 0xff, 0xc0, 0x00, 0x11, 0x08, 0x02,
            0xd0, 0x05, 0x00,
        ];
        assert_eq!(dimensions(&jpeg), Some((1280, 720)));
        let mut vp8x = b"RIFF\0\0\0\0WEBPVP8X\x0a\0\0\0\0\0\0\0".to_vec();
        vp8x.extend([0xff, 0x04, 0x00, 0xcf, 0x02, 0x00]);
        assert_eq!(dimensions(&vp8x), Some((1280, 720)));
        assert_eq!(dimensions(b"not an image"), None);
        assert_eq!(dimensions(&png(1, 1)[..20]), None, "cut short");
    }

    #[test]
    fn base64_round_trips_what_encoders_write() {
        assert_eq!(decode_base64("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(decode_base64("aGVs\nbG8").unwrap(), b"hello");
        assert_eq!(decode_base64("a$b"), None);
        assert_eq!(base64_problem("aGVsbG8="), None);
        assert_eq!(base64_problem("aGVs\nbG8"), None);
        assert_eq!(base64_problem("a-_b"), None);
        assert_eq!(base64_problem(""), None);
        assert_eq!(
            base64_problem("aGVs!G8").as_deref(),
            Some("'!' at character 4")
        );
        assert_eq!(
            base64_problem("aGVsbG8=x").as_deref(),
            Some("'x' at character 8")
        );
        assert!(base64_problem("aGVsb").unwrap().contains("cut short"));
        assert!(base64_problem("data:image/png;base64,iVBO")
            .unwrap()
            .contains("`data:` URL"));
        let header = decode_base64_prefix("iVBORw0KGgoAAAANSUhEUgAABQAAAALQCAYAAAA", 24).unwrap();
        assert_eq!(dimensions(&header), Some((1280, 720)));
    }
}
