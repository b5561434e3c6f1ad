use super::*;

/// Decodes `input` fed in chunks of `chunk` bytes, then ended.
pub(crate) fn events(input: &[u8], chunk: usize, cap: u64) -> Vec<FrameEvent> {
    let mut decoder = FrameDecoder::new(cap);
    let mut out = Vec::new();
    for piece in input.chunks(chunk.max(1)) {
        decoder.feed(piece);
        out.extend(std::iter::from_fn(|| decoder.next_event()));
    }
    decoder.finish();
    out.extend(std::iter::from_fn(|| decoder.next_event()));
    assert!(decoder.is_done(), "input left over");
    out
}

/// One line per event, with what does not depend on how input was cut.
fn summary(event: &FrameEvent) -> String {
    match event {
        FrameEvent::Json(value) => format!("json {}", value["id"]),
        FrameEvent::InvalidJson { .. } => "invalid json".into(),
        FrameEvent::TooLarge { declared, id, .. } => {
            format!(
                "too large {declared} id={}",
                id.clone().unwrap_or(Value::Null)
            )
        }
        FrameEvent::Skipped(why) => format!("skipped: {why}"),
    }
}

fn frame(id: u32) -> String {
    let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"m","params":{{}}}}"#);
    format!("Content-Length: {}\r\n\r\n{body}", body.len())
}

fn body(id: u32) -> String {
    frame(id).split_once("\r\n\r\n").unwrap().1.to_string()
}

/// `input` decodes to `expected` (by `summary`, skip reasons by prefix)
/// whether it arrives at once or byte by byte.
fn check(name: &str, input: &str, cap: u64, expected: &[&str]) {
    for chunk in [usize::MAX, 1, 7] {
        let got: Vec<String> = events(input.as_bytes(), chunk, cap)
            .iter()
            .map(summary)
            .collect();
        let matches =
            got.len() == expected.len() && got.iter().zip(expected).all(|(g, e)| g.starts_with(e));
        assert!(
            matches,
            "{name} (chunks of {chunk}):\n got {got:#?}\n want {expected:#?}"
        );
    }
}

type Case<'a> = (&'a str, String, &'a [&'a str]);

fn check_all(cases: &[Case]) {
    for (name, input, expected) in cases {
        check(name, input, DEFAULT_MAX_FRAME_BYTES, expected);
    }
}

#[test]
fn well_formed_frames_and_what_may_surround_them() {
    let (good, next) = (frame(1), frame(2));
    let lower = format!(
        "Content-Type: x\r\ncontent-length: {}\n\n{}",
        body(1).len(),
        body(1)
    );
    let cases: &[Case] = &[
        (
            "two frames, stray blank line",
            format!("{good}\r\n{next}"),
            &["json 1", "json 2"],
        ),
        (
            "Content-Type first, lower case, bare newlines",
            lower,
            &["json 1"],
        ),
        ("only blank lines", "\r\n\r\n  \n".into(), &[]),
    ];
    check_all(cases);
}

#[test]
fn bad_headers_are_skipped_up_to_the_next_frame() {
    let good = frame(1);
    let lost = body(9);
    let cases: &[Case] = &[
        (
            "garbage line",
            format!("this is not a header\r\n{good}"),
            &["skipped: malformed header line", "json 1"],
        ),
        (
            "word length",
            format!("Content-Length: abc\r\n\r\n{lost}{good}"),
            &["skipped: invalid Content-Length", "json 1"],
        ),
        (
            "negative length",
            format!("Content-Length: -5\r\n\r\n{lost}{good}"),
            &["skipped: invalid Content-Length", "json 1"],
        ),
        (
            "signed length",
            format!("Content-Length: +5\r\n\r\n{lost}{good}"),
            &["skipped: invalid Content-Length", "json 1"],
        ),
        (
            "only Content-Type",
            format!("Content-Type: application/json\r\n\r\n{lost}{good}"),
            &["skipped: header block without Content-Length", "json 1"],
        ),
        (
            "no header at all",
            format!("{lost}{good}"),
            &["skipped: malformed header line", "json 1"],
        ),
        // The rescan starts at the second byte, so it finds the second line.
        (
            "conflicting lengths",
            format!("Content-Length: 3\r\nContent-Length: 4\r\n\r\n{good}"),
            &["skipped: conflicting", "invalid json", "json 1"],
        ),
        (
            "space before the colon",
            format!("Content-Length : 3\r\n\r\n{lost}{good}"),
            &["skipped: malformed header line", "json 1"],
        ),
        (
            "header line too long",
            format!("X-A: {}\r\n{good}", "a".repeat(MAX_HEADER_LINE)),
            &["skipped: malformed header line (longer", "json 1"],
        ),
        (
            "end of input inside a header",
            "Content-Length: 5\r\n".into(),
            &["skipped: end of input inside a header"],
        ),
    ];
    check_all(cases);
}

#[test]
fn bad_bodies_are_invalid_json_and_cost_only_themselves() {
    let good = frame(1);
    let cases: &[Case] = &[
        (
            "not JSON",
            format!("Content-Length: 9\r\n\r\nnot json!{good}"),
            &["invalid json", "json 1"],
        ),
        (
            "empty body",
            format!("Content-Length: 0\r\n\r\n{good}"),
            &["invalid json", "json 1"],
        ),
        (
            "end of input inside a body",
            "Content-Length: 50\r\n\r\n{\"jsonrpc\"".into(),
            &["skipped: end of input inside a frame body"],
        ),
    ];
    check_all(cases);
}

#[test]
fn lengths_a_few_bytes_off_lose_only_their_own_frame() {
    let b = body(9);
    let (good, next) = (frame(1), frame(2));
    for off in [-3i64, -1, 1, 3, 10, 19, 20, 21, 30, 200] {
        let declared = b.len() as i64 + off;
        let input = format!("Content-Length: {declared}\r\n\r\n{b}{good}{next}");
        check(
            &format!("off by {off}"),
            &input,
            DEFAULT_MAX_FRAME_BYTES,
            &["invalid json", "json 1", "json 2"],
        );
    }
    // A length so long it covers whole later frames: they are found inside.
    let input = format!("Content-Length: 100000\r\n\r\n{b}{good}{next}");
    check(
        "far too long",
        &input,
        DEFAULT_MAX_FRAME_BYTES,
        &["invalid json", "json 1", "json 2"],
    );
}

#[test]
fn a_too_long_body_is_cut_at_the_next_header_without_waiting() {
    let b = body(9);
    let mut decoder = FrameDecoder::default();
    decoder.feed(format!("Content-Length: {}\r\n\r\n{b}{}", b.len() + 400, frame(1)).as_bytes());
    // Not finished: the rest of the declared 400 bytes never comes.
    assert!(
        matches!(decoder.next_event(), Some(FrameEvent::InvalidJson { why, .. }) if why.contains("next header"))
    );
    assert_eq!(
        decoder.next_event().map(|e| summary(&e)),
        Some("json 1".into())
    );
    assert_eq!(decoder.next_event(), None);
}

#[test]
fn header_text_inside_a_json_string_is_not_a_header() {
    let text =
        r#"{"jsonrpc":"2.0","id":4,"method":"m","params":{"t":"Content-Length: 5\r\n\r\nx"}}"#;
    let input = format!("Content-Length: {}\r\n\r\n{text}{}", text.len(), frame(1));
    check(
        "escaped header in a string",
        &input,
        DEFAULT_MAX_FRAME_BYTES,
        &["json 4", "json 1"],
    );
}

#[test]
fn oversized_frames_are_refused_unread_with_their_id() {
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"m","params":{{"t":"{}"}}}}"#,
        "x".repeat(10_000)
    );
    let good = frame(1);
    let id7 = format!("too large {} id=7", big.len());
    let q = format!("too large {} id=\"q\"", big.len());
    let cases: &[Case] = &[
        (
            "id first",
            format!("Content-Length: {}\r\n\r\n{big}{good}", big.len()),
            &[&id7, "json 1"],
        ),
        (
            "header only, then a frame",
            format!("Content-Length: 5000\r\n\r\n{good}"),
            &["too large 5000 id=null", "json 1"],
        ),
        (
            "more digits than u64",
            format!("Content-Length: 99999999999999999999999\r\n\r\n{good}"),
            &["too large 18446744073709551615 id=null", "json 1"],
        ),
        (
            "at end of input",
            format!("Content-Length: {}\r\n\r\n{{\"id\":\"q\",", big.len()),
            &[&q],
        ),
    ];
    for (name, input, expected) in cases {
        check(name, input, 4096, expected);
    }
    let got = events(
        format!("Content-Length: {}\r\n\r\n{big}", big.len()).as_bytes(),
        1,
        4096,
    );
    assert_eq!(summary(&got[0]), format!("too large {} id=7", big.len()));
    let got = events(b"Content-Length: 99999\r\n\r\n{\"id\":\"q\",", 3, 4096);
    assert_eq!(summary(&got[0]), "too large 99999 id=\"q\"");
}

#[test]
fn skipping_buffers_little() {
    let mut decoder = FrameDecoder::new(4096);
    decoder.feed(b"Content-Length: 100000000\r\n\r\n");
    let chunk = vec![b'x'; 64 * 1024];
    let mut events = Vec::new();
    for _ in 0..100 {
        decoder.feed(&chunk);
        events.extend(std::iter::from_fn(|| decoder.next_event()));
        assert!(
            decoder.buffered() <= NAME.len(),
            "{} bytes held",
            decoder.buffered()
        );
    }
    assert_eq!(events.len(), 1, "{events:?}");
    decoder.feed(frame(1).as_bytes());
    assert_eq!(
        decoder.next_event().map(|e| summary(&e)),
        Some("json 1".into())
    );
}

#[test]
fn the_cap_can_change_between_frames() {
    let mut decoder = FrameDecoder::new(4096);
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"m","params":"{}"}}"#,
        "x".repeat(5000)
    );
    let framed = format!("Content-Length: {}\r\n\r\n{big}", big.len());
    decoder.feed(framed.as_bytes());
    assert!(matches!(
        decoder.next_event(),
        Some(FrameEvent::TooLarge { .. })
    ));
    assert_eq!(decoder.next_event(), None);
    decoder.set_max_frame_bytes(DEFAULT_MAX_FRAME_BYTES);
    decoder.feed(framed.as_bytes());
    assert!(matches!(decoder.next_event(), Some(FrameEvent::Json(_))));
}
