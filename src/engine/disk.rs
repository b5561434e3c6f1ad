//! What a change the file watcher saw means, before any ledger looks at
//! it: the editor saving one of its own open buffers is nobody else's
//! change.

use std::collections::HashMap;
use std::path::PathBuf;

use crate::files::watch::DiskChange;

/// The change as news for the ledgers, given the changed file's content
/// hash now and the editor's open buffers (the hash of each one's text,
/// `None` once unknown): `None` when the editor saved a buffer in place;
/// after an atomic save (a rename onto the file) only the source's
/// disappearance is news.
pub fn news(
    change: DiskChange,
    hash: Option<&str>,
    buffers: &HashMap<PathBuf, Option<String>>,
) -> Option<DiskChange> {
    let target = match &change {
        DiskChange::Changed(path) | DiskChange::Renamed { to: path, .. } => Some(path),
        DiskChange::Removed(_) | DiskChange::Rescan => None,
    };
    let own_save = match (target, hash) {
        (Some(path), Some(hash)) => buffers
            .get(path)
            .is_some_and(|b| b.as_deref() == Some(hash)),
        _ => false,
    };
    match change {
        DiskChange::Changed(_) if own_save => None,
        DiskChange::Renamed { from, .. } if own_save => Some(DiskChange::Removed(from)),
        change => Some(change),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_editor_saving_its_buffer_is_no_news() {
        let file = PathBuf::from("/w/a.rs");
        let buffers = HashMap::from([(file.clone(), Some("h1".to_string()))]);
        let changed = DiskChange::Changed(file.clone());
        assert_eq!(news(changed.clone(), Some("h1"), &buffers), None);
        assert_eq!(news(changed.clone(), Some("h2"), &buffers), Some(changed));
        let atomic = DiskChange::Renamed {
            from: PathBuf::from("/w/.a.rs.tmp"),
            to: file.clone(),
        };
        assert_eq!(
            news(atomic, Some("h1"), &buffers),
            Some(DiskChange::Removed(PathBuf::from("/w/.a.rs.tmp")))
        );
        let unknown = HashMap::from([(file.clone(), None)]);
        let changed = DiskChange::Changed(file);
        assert_eq!(news(changed.clone(), Some("h1"), &unknown), Some(changed));
    }
}
