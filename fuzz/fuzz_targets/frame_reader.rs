//! The frame reader over arbitrary bytes cut into arbitrary chunks: never
//! panics, always finishes, emits at most one event per byte, answers only
//! with well-formed JSON-RPC errors, and reads the same frames however the
//! input is cut. The first two bytes choose the chunk size and the cap.
#![no_main]

use compactd::transport::decode::{answers, classify, Incoming};
use compactd::transport::framing::{
    same_outcomes, FrameDecoder, FrameEvent, DEFAULT_MAX_FRAME_BYTES,
};
use libfuzzer_sys::fuzz_target;

fn decode(input: &[u8], chunk: usize, cap: u64) -> Vec<FrameEvent> {
    let mut decoder = FrameDecoder::new(cap);
    let mut events = Vec::new();
    for piece in input.chunks(chunk) {
        decoder.feed(piece);
        events.extend(std::iter::from_fn(|| decoder.next_event()));
    }
    decoder.finish();
    events.extend(std::iter::from_fn(|| decoder.next_event()));
    assert!(decoder.is_done(), "input left over");
    assert!(events.len() <= input.len() + 1, "more events than bytes");
    for event in &events {
        if let Incoming::Refused { response, .. } = classify(event.clone()) {
            for answer in answers(&response) {
                assert_eq!(answer["jsonrpc"], "2.0");
                assert!(answer["error"]["code"].is_i64());
            }
        }
    }
    events
}

fuzz_target!(|data: &[u8]| {
    let (control, input) = data.split_at(data.len().min(2));
    let chunk = control.first().map_or(1, |&b| usize::from(b % 64) + 1);
    let cap = if control.get(1).is_some_and(|b| b & 1 == 1) {
        4096
    } else {
        DEFAULT_MAX_FRAME_BYTES
    };
    let whole = decode(input, usize::MAX, cap);
    let cut = decode(input, chunk, cap);
    assert!(
        same_outcomes(&whole, &cut),
        "the chunking changed what was read"
    );
});
