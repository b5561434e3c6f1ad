//! The client side of the shared sidecar's WebSocket, for `compactd
//! connect`: a plain `ws://` connection with the token in the
//! `Authorization` header.

use futures_util::io::{BufReader, BufWriter};
use tokio_util::compat::{Compat, TokioAsyncReadCompatExt};

type Stream = BufReader<BufWriter<Compat<tokio::net::TcpStream>>>;
pub type Sender = soketto::Sender<Stream>;
pub type Receiver = soketto::Receiver<Stream>;

/// `host:port` and the path of a `ws://` URL.
pub fn parse_url(url: &str) -> Result<(String, String), String> {
    let rest = url.strip_prefix("ws://").ok_or_else(|| {
        format!("`{url}`: only ws:// URLs are supported (the shared sidecar speaks plain WebSocket; put TLS in front of it yourself)")
    })?;
    let (authority, path) = match rest.find('/') {
        Some(at) => (&rest[..at], &rest[at..]),
        None => (rest, "/"),
    };
    if authority.is_empty() || authority.contains('@') {
        return Err(format!("`{url}`: expected ws://host:port/"));
    }
    Ok((authority.to_string(), path.to_string()))
}

/// Connects and authenticates; the error says why not (refused, wrong
/// token, nothing listening).
pub async fn connect(url: &str, token: &str) -> Result<(Sender, Receiver), String> {
    let (authority, path) = parse_url(url)?;
    let socket = tokio::net::TcpStream::connect(&authority)
        .await
        .map_err(|e| format!("cannot connect to {authority}: {e}"))?;
    let _ = socket.set_nodelay(true);
    let stream = BufReader::new(BufWriter::new(socket.compat()));
    let bearer = format!("Bearer {token}");
    let headers = [soketto::handshake::client::Header {
        name: "Authorization",
        value: bearer.as_bytes(),
    }];
    let mut client = soketto::handshake::Client::new(stream, &authority, &path);
    client.set_headers(&headers);
    match client.handshake().await {
        Ok(soketto::handshake::ServerResponse::Accepted { .. }) => {}
        Ok(soketto::handshake::ServerResponse::Rejected { status_code }) => {
            return Err(format!("{url} refused the connection (HTTP {status_code})"))
        }
        Ok(soketto::handshake::ServerResponse::Redirect { status_code, .. }) => {
            return Err(format!("{url} redirected (HTTP {status_code})"))
        }
        Err(e) => return Err(format!("WebSocket handshake with {url} failed: {e}")),
    }
    let mut builder = client.into_builder();
    builder.set_max_message_size(usize::MAX >> 1);
    builder.set_max_frame_size(usize::MAX >> 1);
    Ok(builder.finish())
}

#[cfg(test)]
mod tests {
    use super::parse_url;

    #[test]
    fn urls() {
        assert_eq!(
            parse_url("ws://127.0.0.1:9/").unwrap(),
            ("127.0.0.1:9".into(), "/".into())
        );
        assert_eq!(
            parse_url("ws://[::1]:9").unwrap(),
            ("[::1]:9".into(), "/".into())
        );
        assert!(parse_url("wss://x:1/").is_err());
        assert!(parse_url("ws://u:p@x:1/").is_err());
        assert!(parse_url("http://x/").is_err());
    }
}
