//! Test images without an image library: a PNG whose header names its
//! size, filled to any length (compactd reads only the header), in
//! base64. Shared by `tests/it/parts.rs` and `benches/images.rs`.

const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

pub fn base64(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(B64[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A PNG of `width` × `height` as its header reads, `bytes` long (what
/// follows the header is filler: compactd reads only the header); each
/// seed gives other bytes.
pub fn png(width: u32, height: u32, bytes: usize, seed: u32) -> String {
    let mut data = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    data.extend(width.to_be_bytes());
    data.extend(height.to_be_bytes());
    data.extend([8, 6, 0, 0, 0]);
    // Odd and distinct for every seed: xorshift never leaves zero.
    let mut x = seed.wrapping_mul(2) | 1;
    while data.len() < bytes {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        data.push(x as u8);
    }
    base64(&data)
}
