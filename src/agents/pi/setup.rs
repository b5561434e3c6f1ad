//! `compactd setup pi`: pi loads compactd's extension (`integrations/pi`
//! of compactd's source tree), named in the `extensions` list of pi's
//! settings (`~/.pi/agent/settings.json`, or a project's
//! `.pi/settings.json`). The extension then makes compactd pi's compaction
//! engine (its README).

use std::path::{Path, PathBuf};

use super::home::agent_dir;
use crate::agents::setup::SetupPlan;
use crate::agents::Homes;

/// The extension's directory below a source tree (or an install prefix's
/// `share/compactd`).
const EXTENSION: [&str; 2] = ["integrations", "pi"];

pub(super) fn setup(
    homes: &Homes,
    project: Option<&Path>,
    compactd: &Path,
) -> Result<SetupPlan, String> {
    let extension = find_extension(compactd).ok_or_else(|| {
        format!(
            "the pi extension (integrations/pi of compactd's source tree) is not beside {}; \
             run `compactd setup pi` with a compactd built in its source tree, or name the \
             directory in pi's settings by hand (integrations/pi/README.md)",
            compactd.display()
        )
    })?;
    let path = match project {
        Some(root) => root.join(".pi").join("settings.json"),
        None => agent_dir(homes).join("settings.json"),
    };
    let note = (!extension.join("node_modules/compactd-client").is_dir()).then(|| {
        format!(
            "the extension needs its dependency first: (cd {} && npm ci --omit=dev)",
            extension.display()
        )
    });
    Ok(SetupPlan {
        path,
        command: String::new(),
        hooks: Vec::new(),
        status_line: None,
        timeout: 0,
        entries: vec![("extensions", extension.display().to_string())],
        servers: Vec::new(),
        note,
        private: false,
    })
}

/// The extension for this compactd: `integrations/pi` in the nearest
/// ancestor of the binary's real path that has it (`target/debug/compactd`
/// in a checkout), or `share/compactd/integrations/pi` of its prefix.
fn find_extension(compactd: &Path) -> Option<PathBuf> {
    // `compactd` as setup writes it for PATH: this very binary.
    let program = match compactd.components().count() {
        1 => std::env::current_exe().ok()?,
        _ => compactd.to_path_buf(),
    };
    let real = program.canonicalize().ok()?;
    real.ancestors().skip(1).find_map(|dir| {
        [dir.to_path_buf(), dir.join("share").join("compactd")]
            .into_iter()
            .map(|base| EXTENSION.iter().fold(base, |p, part| p.join(part)))
            .find(|candidate| candidate.join("src").join("index.ts").is_file())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_extension_is_found_beside_a_binary_built_in_the_tree() {
        let tree = tempfile::tempdir().unwrap();
        let root = tree.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("integrations/pi/src")).unwrap();
        std::fs::write(root.join("integrations/pi/src/index.ts"), "").unwrap();
        std::fs::create_dir_all(root.join("target/debug")).unwrap();
        let binary = root.join("target/debug/compactd");
        std::fs::write(&binary, "").unwrap();
        let homes = Homes::under(&root.join("home"));
        let plan = setup(&homes, None, &binary).unwrap();
        assert_eq!(plan.path, root.join("home/.pi/agent/settings.json"));
        let dir = root.join("integrations/pi").display().to_string();
        assert_eq!(plan.entries, vec![("extensions", dir)]);
        assert!(plan.note.unwrap().contains("npm ci"));
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::write(elsewhere.path().join("compactd"), "").unwrap();
        let error = setup(&homes, None, &elsewhere.path().join("compactd")).unwrap_err();
        assert!(error.contains("integrations/pi"), "{error}");
    }
}
