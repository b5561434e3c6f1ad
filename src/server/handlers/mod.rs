//! One small file per method: params in, core call, result out. The only
//! place where wire types and core types meet.

pub mod append;
pub mod cancel;
pub mod compact;
pub mod history;
pub mod lifecycle;
pub mod open;
