//! One small file per method: params in, an engine call, the result out.
//! Handlers hold no policy (the engine does) and call no other handler;
//! they take wire types from `protocol` only.

pub mod append;
pub mod branch;
pub mod cancel;
pub mod cancel_progress;
pub mod check;
pub mod close;
pub mod compact;
pub mod compactions;
pub mod did_change;
pub mod did_change_configuration;
pub mod did_change_watched_files;
pub mod did_close;
pub mod did_open;
pub mod did_save;
pub mod files_did;
pub mod files_list;
pub mod files_unchanged_since_read;
pub mod follow;
pub mod history;
pub mod import;
pub mod lifecycle;
pub mod list_agent_sessions;
pub mod messages;
pub mod open;
pub mod pin;
pub mod preview;
pub mod recap;
pub mod report_error;
pub mod search;
pub mod set_auto_compact;
pub mod subscribe;
pub mod unfollow;
pub mod unsubscribe;
