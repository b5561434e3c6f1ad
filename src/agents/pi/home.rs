//! Where pi keeps its files, and what it calls them.

use std::path::{Path, PathBuf};

use crate::agents::Homes;

/// Its name on the wire, and its transcript format's.
pub const NAME: &str = "pi";

pub(super) const AGENT_DIR: &str = "PI_CODING_AGENT_DIR";
pub(super) const SESSION_DIR: &str = "PI_CODING_AGENT_SESSION_DIR";

pub(super) fn agent_dir(homes: &Homes) -> PathBuf {
    homes
        .var(AGENT_DIR)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| homes.home().join(".pi").join("agent"))
}

/// Its directory name for a cwd.
pub fn dir_name(cwd: &str) -> String {
    let trimmed = cwd.strip_prefix(['/', '\\']).unwrap_or(cwd);
    format!("--{}--", trimmed.replace(['/', '\\', ':'], "-"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cases measured against pi 0.73.1.
    #[test]
    fn directory_names_match_the_agent() {
        assert_eq!(
            dir_name("/tmp/pi2/my.proj_v1 x:y/ünï"),
            "--tmp-pi2-my.proj_v1 x-y-ünï--"
        );
    }
}
