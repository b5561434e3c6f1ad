//! LSP base framing (`Content-Length` headers) over any async byte stream.
//! Messages are `lsp-server`'s types. Reading never gives up on bad input:
//! a malformed frame is reported and the reader moves on to the next one.

use std::io;

use lsp_server::Message;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

/// Frames larger than this are skipped unread (a client bug, or garbage
/// that happened to parse as a header); 256 MiB fits any real transcript.
pub const MAX_FRAME_BYTES: usize = 256 * 1024 * 1024;
const MAX_HEADER_LINE: u64 = 8 * 1024;

#[derive(Debug)]
pub enum Frame {
    Message(Message),
    /// Bad input that was skipped; the text says what was wrong.
    Malformed(String),
}

/// Reads the next frame; `Ok(None)` at end of input.
pub async fn read_frame<R: AsyncBufRead + Unpin>(reader: &mut R) -> io::Result<Option<Frame>> {
    let mut content_length: Option<usize> = None;
    let mut saw_header = false;
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = (&mut *reader)
            .take(MAX_HEADER_LINE)
            .read_until(b'\n', &mut line)
            .await?;
        if n == 0 {
            return Ok(if saw_header {
                Some(Frame::Malformed("end of input inside a header".into()))
            } else {
                None
            });
        }
        if !line.ends_with(b"\n") {
            return Ok(Some(Frame::Malformed(format!(
                "header line longer than {MAX_HEADER_LINE} bytes"
            ))));
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\r', '\n']);
        if text.is_empty() {
            if !saw_header {
                continue; // stray blank line between frames
            }
            break;
        }
        saw_header = true;
        let Some((name, value)) = text.split_once(':') else {
            return Ok(Some(Frame::Malformed(format!(
                "malformed header line {}",
                preview(text)
            ))));
        };
        if name.trim().eq_ignore_ascii_case("Content-Length") {
            match value.trim().parse::<usize>() {
                Ok(len) => content_length = Some(len),
                Err(_) => {
                    return Ok(Some(Frame::Malformed(format!(
                        "invalid Content-Length {}",
                        preview(value.trim())
                    ))))
                }
            }
        }
    }
    let Some(len) = content_length else {
        return Ok(Some(Frame::Malformed(
            "frame without Content-Length".into(),
        )));
    };
    if len > MAX_FRAME_BYTES {
        let skipped =
            tokio::io::copy(&mut (&mut *reader).take(len as u64), &mut tokio::io::sink()).await?;
        return Ok(Some(Frame::Malformed(format!(
            "frame of {len} bytes exceeds the {MAX_FRAME_BYTES}-byte limit ({skipped} bytes skipped)"
        ))));
    }
    let mut body = vec![0u8; len];
    if let Err(e) = reader.read_exact(&mut body).await {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            return Ok(Some(Frame::Malformed(
                "end of input inside a frame body".into(),
            )));
        }
        return Err(e);
    }
    Ok(Some(match serde_json::from_slice::<Message>(&body) {
        Ok(message) => Frame::Message(message),
        Err(e) => Frame::Malformed(format!(
            "invalid JSON-RPC message ({e}): {}",
            preview(&String::from_utf8_lossy(&body))
        )),
    }))
}

/// A short, single-line excerpt of bad input for the log.
fn preview(text: &str) -> String {
    let mut out: String = text.chars().take(80).collect();
    if text.chars().count() > 80 {
        out.push('…');
    }
    format!("{out:?}")
}

/// Encodes one message with its header.
pub fn encode(message: &Message) -> Vec<u8> {
    let mut buf = Vec::new();
    message
        .write(&mut buf)
        .expect("writing to a Vec cannot fail");
    buf
}

/// The one ordered sender: everything the server writes goes through it,
/// so output leaves in the order it was sent.
#[derive(Debug, Clone)]
pub struct Outbox {
    tx: mpsc::UnboundedSender<Message>,
}

impl Outbox {
    pub fn send(&self, message: impl Into<Message>) {
        // The writer only stops when the output is gone; nothing to do then.
        let _ = self.tx.send(message.into());
    }

    pub fn notify(&self, method: &str, params: impl serde::Serialize) {
        self.send(lsp_server::Notification::new(method.to_string(), params));
    }

    /// An outbox whose messages a test takes from the receiver.
    #[cfg(test)]
    pub fn channel() -> (Outbox, mpsc::UnboundedReceiver<Message>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Outbox { tx }, rx)
    }
}

/// Starts the writer task; it ends when every `Outbox` is dropped.
pub fn spawn_writer<W: AsyncWrite + Unpin + Send + 'static>(
    mut output: W,
) -> (Outbox, tokio::task::JoinHandle<io::Result<()>>) {
    let (tx, mut rx) = mpsc::unbounded_channel::<Message>();
    let handle = tokio::spawn(async move {
        while let Some(message) = rx.recv().await {
            output.write_all(&encode(&message)).await?;
            if rx.is_empty() {
                output.flush().await?;
            }
        }
        output.flush().await
    });
    (Outbox { tx }, handle)
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames(input: &[u8]) -> Vec<String> {
        let mut reader = input;
        let mut out = Vec::new();
        while let Some(frame) = read_frame(&mut reader).await.unwrap() {
            out.push(match frame {
                Frame::Message(Message::Request(r)) => format!("request {}", r.method),
                Frame::Message(Message::Notification(n)) => format!("notification {}", n.method),
                Frame::Message(Message::Response(r)) => format!("response {}", r.id),
                Frame::Malformed(why) => format!("malformed: {why}"),
            });
        }
        out
    }

    fn frame(body: &str) -> String {
        format!("Content-Length: {}\r\n\r\n{body}", body.len())
    }

    #[tokio::test]
    async fn reads_frames_and_recovers_from_garbage() {
        let input = [
            frame(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#),
            frame("not json!"),
            "garbage line\r\n".to_string(),
            "Content-Length: abc\r\n\r\n".to_string(),
            "Content-Type: x\r\n\r\n".to_string(),
            frame(r#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#),
            "\r\n".to_string(),
            frame(r#"{"jsonrpc":"2.0","id":"a","result":null}"#),
        ]
        .concat();
        let got = frames(input.as_bytes()).await;
        assert_eq!(got.len(), 7, "{got:#?}");
        assert_eq!(got[0], "request initialize");
        assert!(
            got[1].starts_with("malformed: invalid JSON-RPC message"),
            "{}",
            got[1]
        );
        assert!(
            got[2].starts_with("malformed: malformed header line"),
            "{}",
            got[2]
        );
        assert!(
            got[3].starts_with("malformed: invalid Content-Length"),
            "{}",
            got[3]
        );
        assert_eq!(got[4], "malformed: frame without Content-Length");
        assert_eq!(got[5], "notification initialized");
        assert_eq!(got[6], "response \"a\"");
    }

    #[tokio::test]
    async fn oversized_and_truncated_frames_are_reported() {
        let huge = format!("Content-Length: {}\r\n\r\n", MAX_FRAME_BYTES + 1);
        let got = frames(huge.as_bytes()).await;
        assert_eq!(got.len(), 1);
        assert!(got[0].contains("exceeds"), "{}", got[0]);
        let got = frames(b"Content-Length: 50\r\n\r\n{\"jsonrpc\"").await;
        assert_eq!(got, ["malformed: end of input inside a frame body"]);
    }

    #[tokio::test]
    async fn encode_round_trips() {
        let message: Message =
            lsp_server::Notification::new("x/y".into(), serde_json::json!({"a": 1})).into();
        let bytes = encode(&message);
        let mut reader = bytes.as_slice();
        match read_frame(&mut reader).await.unwrap() {
            Some(Frame::Message(Message::Notification(n))) => assert_eq!(n.method, "x/y"),
            other => panic!("{other:?}"),
        }
    }
}
