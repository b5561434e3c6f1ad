//! The JSON-RPC server. The dispatcher (`dispatcher`) owns the clients
//! (`clients`, `progress`) and the state (`state`: the owners `sessions`,
//! `compactions`, `following`, `file_tracking`), routes each message
//! (`routes`) to one small handler (`handlers`) that takes a `Context`,
//! and delivers what the handler says to send (`effects`). Background work
//! reports back on one channel (`jobs`; imports run in `importer`). The
//! shared sidecar (`shared`) serves the same dispatcher over WebSocket.

mod clients;
mod compactions;
mod context;
mod dispatcher;
mod effects;
mod file_tracking;
mod following;
mod handlers;
mod importer;
mod jobs;
mod options;
mod progress;
mod recall;
mod residency;
mod routes;
mod rpc;
mod sessions;
pub mod shared;
mod state;

pub use dispatcher::serve;
pub use options::ServeOptions;
pub use residency::raise_descriptor_limit;
