//! `compactd setup pi`: writes compactd's pi extension, as one file the
//! binary carries (`integrations/pi`, built with `npm run bundle` into
//! `dist/compactd-pi.js`), to `compactd/compactd-pi.js` in pi's agent
//! folder (`~/.pi/agent`, or a project's `.pi`), and names it in the
//! `extensions` list of that folder's `settings.json`, by a path relative
//! to it (pi resolves it from there), so a project's settings hold no path
//! of this machine. The file names the compactd to run: this binary, or
//! `compactd` when PATH finds it (and always in a project).

use std::path::Path;

use super::home::agent_dir;
use crate::agents::setup::{OwnedFile, Setup, SetupPlan};
use crate::agents::Homes;

/// The extension as one file.
const BUNDLE: &str = include_str!("../../../integrations/pi/dist/compactd-pi.js");
/// Where the bundle names the compactd to run (`--define` in its build).
const PATH_LITERAL: &str = "\"@@COMPACTD_PATH@@\"";
/// The bundle's first line recognises it as compactd's.
const MARK: &str = "compactd-pi-extension";
/// The file, relative to pi's agent folder (and its settings).
const FILE: [&str; 2] = ["compactd", "compactd-pi.js"];

pub(super) fn setup(homes: &Homes, project: Option<&Path>, compactd: &Path) -> Vec<Setup> {
    let dir = match project {
        Some(root) => root.join(".pi"),
        None => agent_dir(homes),
    };
    let file = OwnedFile {
        path: FILE.iter().fold(dir.clone(), |p, part| p.join(part)),
        text: bundle(compactd),
        mark: MARK,
        note: None,
    };
    let settings = SetupPlan {
        path: dir.join("settings.json"),
        command: String::new(),
        hooks: Vec::new(),
        status_line: None,
        timeout: 0,
        entries: vec![("extensions", FILE.join("/"))],
        servers: Vec::new(),
        note: Some("pi loads the extension the next time it starts".into()),
        private: false,
    };
    vec![Setup::File(file), Setup::Settings(settings)]
}

/// The bundle naming `compactd`.
fn bundle(compactd: &Path) -> String {
    let literal = serde_json::to_string(&compactd.to_string_lossy()).unwrap_or_default();
    BUNDLE.replace(PATH_LITERAL, &literal)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_extension_is_written_beside_the_settings_that_name_it() {
        let homes = Homes::under(Path::new("/h"));
        let steps = setup(&homes, None, Path::new("/opt/it's here/compactd"));
        let [Setup::File(file), Setup::Settings(plan)] = &steps[..] else {
            panic!("a file and the settings");
        };
        assert_eq!(file.path, Path::new("/h/.pi/agent/compactd/compactd-pi.js"));
        assert!(file.text.starts_with("// compactd-pi-extension"));
        assert!(file.text.contains(r#""/opt/it's here/compactd""#));
        assert!(!file.text.contains("@@COMPACTD_PATH@@"));
        assert_eq!(plan.path, Path::new("/h/.pi/agent/settings.json"));
        assert_eq!(
            plan.entries,
            vec![("extensions", "compactd/compactd-pi.js".to_string())]
        );
        let project = setup(&homes, Some(Path::new("/w")), Path::new("compactd"));
        let [Setup::File(file), Setup::Settings(plan)] = &project[..] else {
            panic!("a file and the settings");
        };
        assert_eq!(file.path, Path::new("/w/.pi/compactd/compactd-pi.js"));
        assert_eq!(plan.path, Path::new("/w/.pi/settings.json"));
        assert!(file.text.contains(r#"SETUP_PATH="compactd""#));
    }
}
