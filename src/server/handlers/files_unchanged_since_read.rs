//! `files/unchangedSinceRead`: the files a client need not read again
//! (after a compaction, say) because their content still hashes as it did
//! at the last read.

use crate::files::disk;
use crate::protocol::{SessionParams, UnchangedSinceReadResult};
use crate::server::{RpcResult, Server};

pub fn handle(server: &mut Server, params: SessionParams) -> RpcResult<UnchangedSinceReadResult> {
    let ledger = &server
        .session(&params.session_id)?
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
