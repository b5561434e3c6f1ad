//! `files/list`: a session's file ledger.

use crate::protocol::{FileInfo, FileStatus, FilesListResult, SessionParams};
use crate::server::context::Context;
use crate::server::rpc::RpcResult;

pub fn handle(context: &mut Context, params: SessionParams) -> RpcResult<FilesListResult> {
    let state = &*context.state;
    let file_ledger = &state.sessions.get(&params.session_id)?.session.file_ledger;
    let workspace = &file_ledger.workspace;
    let infos = file_ledger
        .ledger
        .records()
        .into_iter()
        .map(|r| FileInfo {
            path: r.path.display().to_string(),
            display_path: workspace.display(&r.path),
            status: r.status(),
            first_op: r.first_op,
            last_op: r.last_op,
            reads: r.reads,
            modifications: r.modifications,
            origins: r.origins.iter().copied().collect(),
            last_message_id: r.last_message_id.clone(),
            content_hash: r.read_hash.clone(),
            last_range: r.last_range,
            generation: r.generation,
            watched: state.files.is_watched(&r.path),
        })
        .collect::<Vec<_>>();
    let shown = |read: bool| {
        infos
            .iter()
            .filter(|f| (f.status == FileStatus::Read) == read)
            .map(|f| f.display_path.clone())
            .collect()
    };
    Ok(FilesListResult {
        read_files: shown(true),
        modified_files: shown(false),
        files: infos,
    })
}
