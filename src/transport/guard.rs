//! Who may talk to the shared sidecar: the checks a WebSocket connection
//! passes before the dispatcher sees it. Pure functions over addresses and
//! headers, so each rule is tested alone.
//!
//! - **Where it listens.** A loopback address unless the operator names
//!   another one and also passes `--allow-remote`: a typo cannot publish it.
//! - **The token.** Every connection presents the token of the discovery
//!   file, in `Authorization: Bearer …` or as its first message
//!   (`connection/authenticate`); compared in constant time, so the time a
//!   refusal takes says nothing about how much of a guess was right.
//! - **Browsers.** A web page can open a WebSocket to 127.0.0.1 (the
//!   same-origin policy does not stop that), but it cannot hide its
//!   `Origin`. A request with an `Origin` is refused unless that origin was
//!   allowed (`--allow-origin`); programs (editors, agents, the bridge)
//!   send none.

use std::net::SocketAddr;

use subtle::ConstantTimeEq;

/// Why a listen address is refused.
pub fn check_listen_address(addr: &SocketAddr, allow_remote: bool) -> Result<(), String> {
    if addr.ip().is_loopback() || allow_remote {
        return Ok(());
    }
    Err(format!(
        "refusing to listen on {addr}: not a loopback address; anyone who can reach it could try the token (pass --allow-remote to mean it)"
    ))
}

/// True when `presented` is the token; takes the same time wherever the
/// first difference is.
pub fn token_matches(presented: &str, token: &str) -> bool {
    // Lengths are not secret (every token has the same length); contents are.
    presented.len() == token.len() && bool::from(presented.as_bytes().ct_eq(token.as_bytes()))
}

/// The token an `Authorization` header carries (`Bearer <token>`).
pub fn bearer(header: &str) -> Option<&str> {
    let (scheme, rest) = header.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| rest.trim())
        .filter(|t| !t.is_empty())
}

/// Whether a connection with this `Origin` header may proceed: none (not a
/// browser), or one of `allowed` (compared without case and trailing `/`).
pub fn origin_allowed(origin: Option<&str>, allowed: &[String]) -> bool {
    let Some(origin) = origin else {
        return true;
    };
    let norm = |o: &str| o.trim().trim_end_matches('/').to_ascii_lowercase();
    allowed.iter().any(|a| norm(a) == norm(origin))
}

/// A new token: 32 bytes from the operating system's generator, as hex.
pub fn new_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_without_allow_remote() {
        let check = |a: &str, remote| check_listen_address(&a.parse().unwrap(), remote).is_ok();
        assert!(check("127.0.0.1:0", false));
        assert!(check("127.3.4.5:9", false));
        assert!(check("[::1]:0", false));
        assert!(!check("0.0.0.0:0", false));
        assert!(!check("[::]:0", false));
        assert!(!check("192.168.1.2:80", false));
        assert!(check("0.0.0.0:0", true));
    }

    #[test]
    fn tokens_compare_whole() {
        let token = new_token().unwrap();
        assert_eq!(token.len(), 64);
        assert_ne!(token, new_token().unwrap());
        assert!(token_matches(&token, &token));
        assert!(!token_matches(&token[..63], &token));
        assert!(!token_matches("", &token));
        let mut wrong = token.clone().into_bytes();
        wrong[63] = if wrong[63] == b'0' { b'1' } else { b'0' };
        assert!(!token_matches(std::str::from_utf8(&wrong).unwrap(), &token));
    }

    #[test]
    fn bearer_headers() {
        assert_eq!(bearer("Bearer abc"), Some("abc"));
        assert_eq!(bearer("bearer  abc "), Some("abc"));
        assert_eq!(bearer("Basic abc"), None);
        assert_eq!(bearer("Bearer "), None);
        assert_eq!(bearer("abc"), None);
    }

    #[test]
    fn origins() {
        let allowed = vec!["http://localhost:3000".to_string()];
        assert!(origin_allowed(None, &[]));
        assert!(!origin_allowed(Some("https://evil.example"), &[]));
        assert!(!origin_allowed(Some("null"), &[]));
        assert!(origin_allowed(Some("HTTP://localhost:3000/"), &allowed));
        assert!(!origin_allowed(Some("http://localhost:3001"), &allowed));
    }
}
