//! A server-sent events decoder: bytes in (split anywhere, even inside a
//! UTF-8 sequence), events out. Pure.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event:` field; empty for the default "message" type.
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

#[derive(Debug, Default)]
pub struct SseDecoder {
    buffer: Vec<u8>,
    event: String,
    data: Vec<String>,
}

impl SseDecoder {
    /// Feeds bytes; returns every event they complete.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        self.buffer.extend_from_slice(bytes);
        let mut events = Vec::new();
        while let Some(end) = self.buffer.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.buffer.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line);
            let line = line.trim_end_matches(['\n', '\r']);
            events.extend(self.line(line));
        }
        events
    }

    /// Ends the input: an event still open is dispatched (servers that close
    /// the stream without the final blank line).
    pub fn finish(&mut self) -> Option<SseEvent> {
        if !self.buffer.is_empty() {
            let rest = std::mem::take(&mut self.buffer);
            let line = String::from_utf8_lossy(&rest)
                .trim_end_matches('\r')
                .to_string();
            if let Some(event) = self.line(&line) {
                return Some(event);
            }
        }
        self.dispatch()
    }

    fn line(&mut self, line: &str) -> Option<SseEvent> {
        if line.is_empty() {
            return self.dispatch();
        }
        if line.starts_with(':') {
            return None; // a comment, e.g. `: ping`
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = value.to_string(),
            "data" => self.data.push(value.to_string()),
            _ => {} // id, retry: nothing to do for one-shot requests
        }
        None
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = std::mem::take(&mut self.event);
        if self.data.is_empty() {
            return None;
        }
        let data = std::mem::take(&mut self.data).join("\n");
        Some(SseEvent { event, data })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_in_pieces(input: &[u8], piece: usize) -> Vec<SseEvent> {
        let mut decoder = SseDecoder::default();
        let mut events = Vec::new();
        for chunk in input.chunks(piece) {
            events.extend(decoder.push(chunk));
        }
        events.extend(decoder.finish());
        events
    }

    #[test]
    fn decodes_events_split_anywhere() {
        let input = "event: message_start\r\ndata: {\"a\":1}\r\n\r\n: ping\n\ndata: héllo\ndata: wörld\n\ndata: [DONE]\n\n".as_bytes();
        let expected = vec![
            SseEvent {
                event: "message_start".into(),
                data: "{\"a\":1}".into(),
            },
            SseEvent {
                event: String::new(),
                data: "héllo\nwörld".into(),
            },
            SseEvent {
                event: String::new(),
                data: "[DONE]".into(),
            },
        ];
        for piece in 1..=input.len() {
            assert_eq!(
                decode_in_pieces(input, piece),
                expected,
                "pieces of {piece}"
            );
        }
    }

    #[test]
    fn an_unterminated_last_event_is_dispatched_at_the_end() {
        assert_eq!(
            decode_in_pieces(b"data: {\"x\":2}", 4),
            vec![SseEvent {
                event: String::new(),
                data: "{\"x\":2}".into()
            }]
        );
        assert!(decode_in_pieces(b"event: ping\n\n", 3).is_empty());
    }
}
