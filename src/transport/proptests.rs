//! Property tests over the frame reader and the request decoder: arbitrary
//! bytes, garbage before valid frames, and mutated frames, cut into
//! arbitrary chunks. The same properties run under cargo-fuzz (`fuzz/`).

use std::collections::HashMap;

use lsp_server::{Message, RequestId};
use proptest::prelude::*;
use serde_json::{json, Value};

use super::decode::{answers, classify, Incoming};
use super::framing::{same_outcomes, FrameDecoder, FrameEvent, DEFAULT_MAX_FRAME_BYTES};

/// Decodes `input` cut into pieces of the given sizes (cycled), then ends
/// it. Panics if the decoder makes no progress, so a hang fails instead.
fn decode_in_chunks(input: &[u8], chunks: &[usize], cap: u64) -> Vec<FrameEvent> {
    let mut decoder = FrameDecoder::new(cap);
    let mut events = Vec::new();
    let mut rest = input;
    let mut sizes = chunks.iter().cycle();
    while !rest.is_empty() {
        let n = (*sizes.next().unwrap()).clamp(1, rest.len());
        decoder.feed(&rest[..n]);
        rest = &rest[n..];
        events.extend(std::iter::from_fn(|| decoder.next_event()));
        assert!(events.len() <= input.len() + 1, "more events than bytes");
    }
    decoder.finish();
    events.extend(std::iter::from_fn(|| decoder.next_event()));
    assert!(events.len() <= input.len() + 1, "more events than bytes");
    assert!(decoder.is_done(), "input left over after the end");
    events
}

/// Every answer is a JSON-RPC error (or an array of them) with a usable id.
fn assert_well_formed_answers(events: &[FrameEvent]) {
    for event in events {
        if let Incoming::Refused { response, .. } = classify(event.clone()) {
            for answer in answers(&response) {
                assert_eq!(answer["jsonrpc"], "2.0");
                assert!(answer["error"]["code"].is_i64(), "{answer}");
                assert!(matches!(
                    answer["id"],
                    Value::Null | Value::Number(_) | Value::String(_)
                ));
            }
        }
    }
}

/// How many times each request id is run or answered with an error.
fn answers_by_id(events: &[FrameEvent]) -> HashMap<String, usize> {
    let mut by_id = HashMap::new();
    for event in events {
        let id = match classify(event.clone()) {
            Incoming::Message(Message::Request(request)) => request.id.to_string(),
            Incoming::Refused {
                response: Value::Object(r),
                ..
            } if !r["id"].is_null() => r["id"].to_string(),
            _ => continue,
        };
        *by_id.entry(id).or_default() += 1;
    }
    by_id
}

fn probe_body(i: usize, text: &str) -> String {
    json!({"jsonrpc": "2.0", "id": 1000 + i, "method": format!("probe/{i}"), "params": {"t": text}})
        .to_string()
}

fn framed(body: &str) -> Vec<u8> {
    format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

/// The probe requests decoded, in order.
fn probes(events: &[FrameEvent]) -> Vec<i32> {
    events
        .iter()
        .filter_map(|event| match classify(event.clone()) {
            Incoming::Message(Message::Request(r)) if r.method.starts_with("probe/") => {
                Some(r.id.to_string().parse().unwrap())
            }
            _ => None,
        })
        .collect()
}

/// Bytes that exercise the reader's paths: headers, lengths, line ends,
/// JSON punctuation, and noise.
fn fragment() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..24),
        Just(b"Content-Length: ".to_vec()),
        Just(b"Content-Length:".to_vec()),
        Just(b"content-length: 3\n\n".to_vec()),
        Just(b"Content-Length: 99999999999999\r\n\r\n".to_vec()),
        Just(b"Content-Type: x\r\n".to_vec()),
        "[0-9]{1,6}".prop_map(String::into_bytes),
        Just(b"\r\n".to_vec()),
        Just(b"\r\n\r\n".to_vec()),
        Just(b"\r".to_vec()),
        Just(br#"{"jsonrpc":"2.0","id":"#.to_vec()),
        Just(b"{".to_vec()),
        Just(b"}".to_vec()),
        Just(b"\"".to_vec()),
        Just(b":".to_vec()),
    ]
}

fn garbage() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(fragment(), 0..16).prop_map(|parts| parts.concat())
}

fn chunking() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(1usize..80, 1..8)
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z ]{0,40}",
        Just("Content-Length: 5\r\n\r\n{}".to_string()),
        Just("\u{e9}\u{1F600}\\\"".to_string()),
    ]
}

/// One way to break a frame.
#[derive(Debug, Clone)]
enum Mutation {
    Intact,
    LengthOff(i64),
    NoHeader,
    OnlyContentType,
    WordLength,
    Insert(usize, Vec<u8>),
    Truncate(usize),
    SecondLength(u64),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => Just(Mutation::Intact),
        2 => (-40i64..40).prop_filter("off", |k| *k != 0).prop_map(Mutation::LengthOff),
        1 => Just(Mutation::NoHeader),
        1 => Just(Mutation::OnlyContentType),
        1 => Just(Mutation::WordLength),
        1 => (any::<usize>(), garbage()).prop_map(|(at, bytes)| Mutation::Insert(at, bytes)),
        1 => any::<usize>().prop_map(Mutation::Truncate),
        1 => (0u64..200).prop_map(Mutation::SecondLength),
    ]
}

fn apply(mutation: &Mutation, body: &str) -> Vec<u8> {
    let len = body.len() as i64;
    let bytes = |s: String| s.into_bytes();
    match mutation {
        Mutation::Intact => framed(body),
        Mutation::LengthOff(k) => bytes(format!(
            "Content-Length: {}\r\n\r\n{body}",
            (len + k).max(0)
        )),
        Mutation::NoHeader => bytes(body.to_string()),
        Mutation::OnlyContentType => bytes(format!("Content-Type: application/json\r\n\r\n{body}")),
        Mutation::WordLength => bytes(format!("Content-Length: ten\r\n\r\n{body}")),
        Mutation::Insert(at, extra) => {
            let mut frame = framed(body);
            let at = at % (frame.len() + 1);
            frame.splice(at..at, extra.iter().copied());
            frame
        }
        Mutation::Truncate(at) => {
            let mut frame = framed(body);
            frame.truncate(at % frame.len());
            frame
        }
        Mutation::SecondLength(n) => bytes(format!(
            "Content-Length: {len}\r\nContent-Length: {n}\r\n\r\n{body}"
        )),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic_or_hang(
        input in prop::collection::vec(any::<u8>(), 0..2048),
        chunks in chunking(),
        small_cap in any::<bool>(),
    ) {
        let cap = if small_cap { 4096 } else { DEFAULT_MAX_FRAME_BYTES };
        let events = decode_in_chunks(&input, &chunks, cap);
        assert_well_formed_answers(&events);
    }

    #[test]
    fn frames_after_garbage_are_all_decoded(
        before in garbage(),
        texts in prop::collection::vec(text(), 1..5),
        after in garbage(),
        chunks in chunking(),
        small_cap in any::<bool>(),
    ) {
        let cap = if small_cap { 4096 } else { DEFAULT_MAX_FRAME_BYTES };
        let mut input = before;
        for (i, text) in texts.iter().enumerate() {
            input.extend(framed(&probe_body(i, text)));
        }
        input.extend(after);
        let whole = decode_in_chunks(&input, &[usize::MAX], cap);
        let cut = decode_in_chunks(&input, &chunks, cap);
        let expected: Vec<i32> = (0..texts.len() as i32).map(|i| 1000 + i).collect();
        prop_assert_eq!(probes(&whole), expected.clone());
        prop_assert_eq!(probes(&cut), expected);
        prop_assert!(same_outcomes(&whole, &cut), "cutting the input changed what was read:
{:?}
{:?}", whole, cut);
    }

    #[test]
    fn mutated_frames_cost_only_themselves(
        frames in prop::collection::vec((mutation(), text()), 1..8),
        chunks in chunking(),
    ) {
        let mut input = Vec::new();
        for (i, (mutation, text)) in frames.iter().enumerate() {
            input.extend(apply(mutation, &probe_body(i, text)));
        }
        let whole = decode_in_chunks(&input, &[usize::MAX], DEFAULT_MAX_FRAME_BYTES);
        let cut = decode_in_chunks(&input, &chunks, DEFAULT_MAX_FRAME_BYTES);
        prop_assert!(same_outcomes(&whole, &cut), "cutting the input changed what was read:
{:?}
{:?}", whole, cut);
        assert_well_formed_answers(&cut);
        let intact: Vec<i32> = frames
            .iter()
            .enumerate()
            .filter(|(_, (m, _))| matches!(m, Mutation::Intact))
            .map(|(i, _)| 1000 + i as i32)
            .collect();
        let decoded = probes(&cut);
        let intact_decoded: Vec<i32> = decoded.iter().copied().filter(|id| intact.contains(id)).collect();
        prop_assert_eq!(intact_decoded, intact, "every intact frame, in order");
        for (id, count) in answers_by_id(&cut) {
            prop_assert_eq!(count, 1, "id {} answered {} times", id, count);
        }
    }

    #[test]
    fn any_id_is_run_once_or_refused_never_dropped(id in id_value(), method in "[a-z/]{1,12}") {
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method});
        let lsp_id = match &id {
            Value::String(s) => Some(RequestId::from(s.clone())),
            Value::Number(n) => n.as_i64().and_then(|i| i32::try_from(i).ok()).map(RequestId::from),
            _ => None,
        };
        match (super::decode::decode(message), lsp_id) {
            (Incoming::Message(Message::Request(r)), Some(expected)) => prop_assert_eq!(r.id, expected),
            (Incoming::Refused { response, .. }, None) => {
                prop_assert_eq!(&response["error"]["code"], -32600);
                let echoed = if matches!(id, Value::Number(_)) { id.clone() } else { Value::Null };
                prop_assert_eq!(&response["id"], &echoed);
            }
            (other, expected) => prop_assert!(false, "{:?} for id {} (expected {:?})", other, id, expected),
        }
    }
}

fn id_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::from),
        any::<i32>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("JSON numbers are finite", |f| f.is_finite())
            .prop_map(Value::from),
        any::<bool>().prop_map(Value::from),
        Just(Value::Null),
        "[a-z0-9-]{0,8}".prop_map(Value::from),
        Just(json!({"id": 1})),
        Just(json!([1])),
    ]
}
