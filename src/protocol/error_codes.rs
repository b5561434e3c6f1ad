//! Error codes compactd defines (JSON-RPC's server-defined range).

/// The session is open for writing in another process (or is being
/// written by this one under another open); the message names the
/// holder's pid. `conversation/open` with `readOnly: true` still reads it.
pub const SESSION_LOCKED: i32 = -32010;
/// The session was opened with `readOnly: true`: it cannot be changed.
pub const SESSION_READ_ONLY: i32 = -32011;
/// A shared sidecar's connection without the right token (answered to
/// its first request, then closed).
pub const UNAUTHORIZED: i32 = crate::transport::ws::UNAUTHORIZED;
