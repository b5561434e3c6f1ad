//! opencode: compactd takes part in its compactions through a plugin
//! (`integrations/opencode/compactd.ts`, plugin API V1 as opencode-ai
//! 1.18.33 loads it), which mirrors each opencode session into compactd
//! over JSON-RPC and asks `conversation/recap` what opencode's summary must
//! keep. compactd does not read opencode's storage (a SQLite database), so
//! opencode is no `AgentKind`: nothing here follows or imports it. This
//! module knows where the plugin goes (`compactd setup opencode`).

mod auto_compact;
pub(crate) mod session;
pub(crate) mod store;

use std::path::Path;

use super::setup::OwnedFile;
use super::Homes;

/// Its name for `compactd setup`.
pub const NAME: &str = "opencode";
/// Where its configuration lives (`$XDG_CONFIG_HOME/opencode`).
const CONFIG_HOME: &str = "XDG_CONFIG_HOME";
/// The variables that move its folders (`Homes::from_env` reads them).
pub(super) const ENV_VARS: &[&str] = &[CONFIG_HOME, store::DATA_HOME, store::DB_VAR];

/// The plugin, as `compactd setup opencode` writes it.
const PLUGIN: &str = include_str!("../../../integrations/opencode/compactd.ts");
/// The line of the plugin that names the compactd binary.
const PATH_LINE: &str = "const COMPACTD_PATH = 'compactd';";
/// The plugin's file recognises it as compactd's.
pub const MARK: &str = "compactd-opencode-plugin";

/// opencode's plugin folder: the project's `.opencode/plugins/`, else the
/// user's `$XDG_CONFIG_HOME/opencode/plugins/` (`~/.config` without it, or
/// with a relative one, as the XDG rules say).
pub(super) fn setup(homes: &Homes, project: Option<&Path>, compactd: &Path) -> OwnedFile {
    let dir = match project {
        Some(root) => root.join(".opencode"),
        None => homes
            .var(CONFIG_HOME)
            .filter(|p| p.is_absolute())
            .map(Path::to_path_buf)
            .unwrap_or_else(|| homes.home().join(".config"))
            .join("opencode"),
    };
    OwnedFile {
        path: dir.join("plugins").join("compactd.ts"),
        text: plugin(compactd),
        mark: MARK,
        note: Some("opencode loads it the next time it starts".into()),
    }
}

/// The plugin with this binary's path in it.
fn plugin(compactd: &Path) -> String {
    let literal = serde_json::to_string(&compactd.to_string_lossy()).unwrap_or_default();
    PLUGIN.replacen(PATH_LINE, &format!("const COMPACTD_PATH = {literal};"), 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plugin_names_this_binary_and_carries_the_mark() {
        assert!(PLUGIN.contains(PATH_LINE), "the plugin's path line moved");
        assert!(PLUGIN.contains(MARK));
        let text = plugin(Path::new("/opt/it's here/compactd"));
        assert!(text.contains(r#"const COMPACTD_PATH = "/opt/it's here/compactd";"#));
        let homes = Homes::under(Path::new("/h"));
        let user = setup(&homes, None, Path::new("/c"));
        assert_eq!(
            user.path,
            Path::new("/h/.config/opencode/plugins/compactd.ts")
        );
        let project = setup(&homes, Some(Path::new("/w")), Path::new("/c"));
        assert_eq!(project.path, Path::new("/w/.opencode/plugins/compactd.ts"));
        let moved = setup(
            &homes.clone().with_var(CONFIG_HOME, "/x"),
            None,
            Path::new("/c"),
        );
        assert_eq!(moved.path, Path::new("/x/opencode/plugins/compactd.ts"));
        let relative = setup(&homes.with_var(CONFIG_HOME, "rel"), None, Path::new("/c"));
        assert_eq!(relative.path, user.path);
    }
}
