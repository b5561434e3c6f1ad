//! `files/unchangedSinceRead`: the files a client need not read again
//! (after a compaction, say) because their content still hashes as it did
//! at the last read.

use crate::files::disk;
use crate::protocol::{SessionParams, UnchangedSinceReadResult};
use crate::server::context::Context;
use crate::server::rpc::RpcResult;

pub fn handle(context: &mut Context, params: SessionParams) -> RpcResult<UnchangedSinceReadResult> {
    let ledger = &context
        .state
        .sessions
        .get(&params.session_id)?
        .session
        .file_ledger
        .ledger;
    let files = ledger
        .records()
        .into_iter()
        .filter(|r| r.read_hash.is_some() && disk::content_hash(&r.path) == r.read_hash)
        .map(|r| r.path.display().to_string())
        .collect();
    Ok(UnchangedSinceReadResult { files })
}
